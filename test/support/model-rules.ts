/** The DCQCN paper's settings (stack/congestion/parameters.ts: DCQCN_PAPER_PARAMS over the mlx5 defaults), written out for the model oracles' tests. */
import type { MarksModelInput } from '../../apps/sim/dcqcn-marks-model';
import type { ModelRules } from '../../apps/sim/model-reaction-point';

export const paperModelRules: ModelRules = {
  rpRateReduceMonitorPeriod: 50,
  rpClampTgtRate: 1,
  rpClampTgtRateAti: 1,
  rpTimeReset: 55,
  rpByteReset: 10 * 1024 * 1024,
  rpThreshold: 5,
  rpAiRate: 40,
  rpHaiRate: 50,
  rpMinDecFac: 50,
  rpMinRate: 1,
  rpRateToSetOnFirstCnp: 0,
  rpDceTcpG: 1020,
  rpDceTcpRtt: 55,
  rpInitialAlphaValue: 1023,
  rpGd: 11,
  npMinTimeBetweenCnps: 50,
};

/** The DCQCN paper's 40 Gb/s port with 1 KiB payloads (1082-byte frames), N flows, for the marks model. */
export function paperMarksInput(flows: number): MarksModelInput {
  return {
    flows,
    linkRateBps: 40e9,
    packetFrameBytes: 1082,
    packetWireBytes: 1106,
    kminBytes: 5_000,
    kmaxBytes: 200_000,
    pmax: 0.01,
    maxRateMbps: 40_000,
    rules: paperModelRules,
  };
}
