/**
 * A `roce sim` run against the DCQCN fluid model (the oracle): the model is built from
 * the scenario (its link, its RED marking, its DCQCN parameters and the data frame size the run
 * sent), and its fixed point and its run in time are set beside the packet-level steady state.
 */
import { NP_DEFAULTS, RP_DEFAULTS } from '../../stack/congestion/parameters';
import { DEFAULT_MAX_PKTS_PER_ACK, DEFAULT_MAX_UNACKED_PSNS } from '../../stack/device';
import { type Mtu, mtuBytes } from '../../stack/mtu';
import { WIRE_OVERHEAD_BYTES } from '../../nic-driver/memory-link';
import { type FluidFixedPoint, type FluidInput, type FluidRun, dcqcnFluidFixedPoint, integrateDcqcnFluid } from './dcqcn-fluid';
import { type MarksFixedPoint, type MarksModelInput, marksModelFixedPoint } from './dcqcn-marks-model';
import { runDcqcnHybrid } from './dcqcn-hybrid-model';
import { type StarResult, type StarScenario, round3 } from './star-scenario';
import { invalid } from '../../stack/errors';

export interface FluidFigure {
  sim: number;
  fluid: number;
  /** (sim − fluid) / fluid. */
  difference: number;
}

export interface FluidComparison {
  model: FluidInput;
  fixedPoint: FluidFixedPoint | null;
  run: Omit<FluidRun, 'overTime'>;
  /** The simulation's steady state against the fixed point: per-flow rate (wire Gb/s), mean queue, marking probability. */
  rateGbps: FluidFigure | null;
  queueBytes: FluidFigure | null;
  markProbability: FluidFigure | null;
  /** CNPs per flow and ms in the steady state against the model's cut rate. */
  cnpsPerFlowPerMs: FluidFigure | null;
  /**
   * CNPs per marked packet: how many marks one CNP stands for, where the marking and the CNP rate
   * part. `sim` is the run's; `fluid` the fixed point's, whose CNP rate (1 − (1 − p)^(τ·R))/τ
   * takes marks as independent and counts τ-long slots; `independent` is what the NP's own rule
   * (a CNP at a mark at least τ after the last one) gives for independent marks at the run's own
   * mark rate λ: 1/(1 + λτ). The run below `independent` shows marks that come in clusters.
   */
  cnpsPerMark: (FluidFigure & { independent: number }) | null;
  /**
   * The second oracle (dcqcn-marks-model.ts): one reaction point kept discrete under independent
   * marks, the queue fluid. The simulation against its fixed point, figure by figure as above;
   * what separates the two is what only the switch has (clustered marks, synchronised cuts).
   */
  marks: MarksComparison;
  /**
   * The third (dcqcn-hybrid-model.ts): N discrete reaction points on one fluid queue over the
   * run's own duration and steady window, marking where the run's switch marks (`EcnMarking.at`),
   * the mean of `HYBRID_SEEDS` seeds against the run.
   */
  hybrid: HybridComparison;
}

export interface HybridComparison {
  seeds: number;
  rateGbps: FluidFigure;
  queueBytes: FluidFigure;
  markProbability: FluidFigure;
  cnpsPerFlowPerMs: FluidFigure;
  /** The model's share of packets sent while its queue was above Kmax (every one marked), and its queue's range, means over the seeds. */
  aboveKmax: number;
  queueMinBytes: number;
  queueMaxBytes: number;
}

/** Seeds of the hybrid model averaged against one run: its figures spread by about 10 % from seed to seed over a 50 ms window. */
export const HYBRID_SEEDS = 5;

export interface MarksComparison {
  model: MarksModelInput;
  fixedPoint: MarksFixedPoint | null;
  rateGbps: FluidFigure | null;
  queueBytes: FluidFigure | null;
  markProbability: FluidFigure | null;
  cnpsPerFlowPerMs: FluidFigure | null;
  cnpsPerMark: FluidFigure | null;
}

/** Why a scenario has no fluid model, or null when it has one. */
export function fluidUnfit(s: StarScenario): string | null {
  if (s.cc !== 'dcqcn') return 'the fluid model is of DCQCN: give --cc dcqcn or dcqcn-paper';
  if (s.ecn === null || s.ecn.kind !== 'red') return 'the fluid model marks by RED: give --ecn kmin=,kmax=,pmax=';
  if (s.ecn.pmax <= 0) return 'the fluid model needs pmax > 0';
  const dsts = new Set(s.flows.map((f) => f.dst));
  if (dsts.size !== 1) return 'the fluid model has one bottleneck: every flow must go to the same host';
  if (s.flows.some((f) => f.startNs !== undefined || f.durationNs !== undefined || f.bytes !== undefined))
    return 'the fluid model has long-lived flows from t = 0: no :size, :start or :duration';
  return null;
}

function figure(sim: number, fluid: number): FluidFigure {
  return { sim, fluid, difference: fluid !== 0 ? (sim - fluid) / fluid : Number.NaN };
}

/** The model of `s`, with data frames of `frameBytes` (without preamble, FCS and gap). */
export function fluidModelOf(s: StarScenario, frameBytes: number): FluidInput {
  const why = fluidUnfit(s);
  if (why !== null) throw invalid(why);
  const rp = { ...RP_DEFAULTS, ...(s.ccParams ?? {}) };
  const np = { ...NP_DEFAULTS, ...(s.ccParams ?? {}) };
  const ecn = s.ecn as { kind: 'red'; kminBytes: number; kmaxBytes: number; pmax: number };
  const wire = frameBytes + WIRE_OVERHEAD_BYTES;
  const prop = (s.propagationNs ?? 1000) / 1000;
  return {
    flows: s.flows.length,
    linkRateBps: s.linkRateBps,
    packetWireBytes: wire,
    kminBytes: ecn.kminBytes,
    kmaxBytes: ecn.kmaxBytes,
    pmax: ecn.pmax,
    // mlx5 with np_min_time_between_cnps 0 sends a CNP per marked packet; the model needs an interval, and the RP's monitor period is the next bound.
    cnpIntervalUs: Math.max(np.npMinTimeBetweenCnps, rp.rpRateReduceMonitorPeriod, 1),
    alphaPeriodUs: rp.rpDceTcpRtt,
    g: 1 - rp.rpDceTcpG / 1024,
    timerUs: rp.rpTimeReset,
    byteCounterBytes: rp.rpByteReset,
    threshold: rp.rpThreshold,
    aiRateMbps: rp.rpAiRate,
    // The base round trip: four propagation delays and a data frame's serialization at two hops.
    // No queueing delay: a mark made on departure (the switch's default) skips the queue. A run
    // with at=enqueue has q/C more in its loop, which the paper's equations leave out and the
    // hybrid model puts in.
    feedbackDelayUs: 4 * prop + (2 * wire * 8) / (s.linkRateBps / 1e6),
  };
}

/** The marks model of `s` (dcqcn-marks-model.ts), from its fluid model (fluidModelOf): the same link, RED and frames. */
export function marksModelOf(s: StarScenario, fluid: FluidInput): MarksModelInput {
  const rules = { ...RP_DEFAULTS, ...NP_DEFAULTS, ...(s.ccParams ?? {}) };
  const line = s.linkRateBps / 1e6;
  return {
    flows: fluid.flows,
    linkRateBps: fluid.linkRateBps,
    packetFrameBytes: fluid.packetWireBytes - WIRE_OVERHEAD_BYTES,
    packetWireBytes: fluid.packetWireBytes,
    kminBytes: fluid.kminBytes,
    kmaxBytes: fluid.kmaxBytes,
    pmax: fluid.pmax,
    // As the simulation's RP: rp_max_rate, or the line rate when it is 0 or above it.
    maxRateMbps: rules.rpMaxRate > 0 ? Math.min(rules.rpMaxRate, line) : line,
    rules: {
      rpRateReduceMonitorPeriod: rules.rpRateReduceMonitorPeriod,
      rpClampTgtRate: rules.rpClampTgtRate,
      rpClampTgtRateAti: rules.rpClampTgtRateAti,
      rpTimeReset: rules.rpTimeReset,
      rpByteReset: rules.rpByteReset,
      rpThreshold: rules.rpThreshold,
      rpAiRate: rules.rpAiRate,
      rpHaiRate: rules.rpHaiRate,
      rpMinDecFac: rules.rpMinDecFac,
      rpMinRate: rules.rpMinRate,
      rpRateToSetOnFirstCnp: rules.rpRateToSetOnFirstCnp,
      rpDceTcpG: rules.rpDceTcpG,
      rpDceTcpRtt: rules.rpDceTcpRtt,
      rpInitialAlphaValue: rules.rpInitialAlphaValue,
      rpGd: rules.rpGd,
      npMinTimeBetweenCnps: rules.npMinTimeBetweenCnps,
    },
  };
}

/** The marks model's fixed point beside the run's steady state (`simRate` in wire Gb/s per flow, `simPerMark` the run's CNPs per mark). */
function compareWithMarks(model: MarksModelInput, st: StarResult['steady'], simRate: number, simPerMark: number): MarksComparison {
  const fp = marksModelFixedPoint(model);
  if (fp === null) return { model, fixedPoint: null, rateGbps: null, queueBytes: null, markProbability: null, cnpsPerFlowPerMs: null, cnpsPerMark: null };
  return {
    model,
    fixedPoint: fp,
    rateGbps: figure(round3(simRate), round3(fp.rateGbps)),
    queueBytes: figure(st.queueMeanBytes, Math.round(fp.queueBytes)),
    markProbability: figure(st.markProbability, fp.markProbability),
    cnpsPerFlowPerMs: figure(st.cnpsPerFlowPerMs, round3(fp.cnpsPerMs)),
    cnpsPerMark: Number.isFinite(simPerMark) ? figure(round3(simPerMark), round3(fp.cnpsPerMark)) : null,
  };
}

/** The hybrid model over the run's duration and steady window, `HYBRID_SEEDS` seeds averaged, beside the run. */
function compareWithHybrid(s: StarScenario, r: StarResult, marks: MarksModelInput, feedbackDelayUs: number, simRate: number): HybridComparison {
  const st = r.steady;
  // The requester keeps up to 128 PSNs unacknowledged and asks for an ACK every 64 packets or at a
  // message's end (rxe's rules, the stack's defaults): its window frees in steps of that many, so
  // it keeps the window less half a step in flight on average.
  const perMessage = Math.ceil((s.messageBytes ?? 65536) / mtuBytes(s.pathMtu ?? (5 as Mtu)));
  const windowPackets = DEFAULT_MAX_UNACKED_PSNS - Math.min(DEFAULT_MAX_PKTS_PER_ACK, perMessage) / 2;
  // The model marks where the run's switch marks: on departure unless the scenario says otherwise.
  const marking = s.ecn?.at ?? 'dequeue';
  const runs = Array.from({ length: HYBRID_SEEDS }, (_, i) =>
    runDcqcnHybrid({ ...marks, feedbackDelayUs, bufferBytes: s.bufferBytes, windowPackets, marking }, r.durationUs, st.fromUs, i + 1),
  );
  const mean = (f: (x: (typeof runs)[number]) => number): number => runs.reduce((a, x) => a + f(x), 0) / runs.length;
  const rate = mean((x) => x.flowsGbps.reduce((a, g) => a + g, 0) / x.flowsGbps.length);
  return {
    seeds: HYBRID_SEEDS,
    rateGbps: figure(round3(simRate), round3(rate)),
    queueBytes: figure(st.queueMeanBytes, Math.round(mean((x) => x.queueMeanBytes))),
    markProbability: figure(
      st.markProbability,
      mean((x) => x.markProbability),
    ),
    cnpsPerFlowPerMs: figure(st.cnpsPerFlowPerMs, round3(mean((x) => x.cnpsPerFlowPerMs))),
    aboveKmax: mean((x) => x.aboveKmax),
    queueMinBytes: Math.round(mean((x) => x.queueMinBytes)),
    queueMaxBytes: Math.round(mean((x) => x.queueMaxBytes)),
  };
}

/** The fluid model of scenario `s` beside its result `r`. */
export function compareWithFluid(s: StarScenario, r: StarResult): FluidComparison {
  const st = r.steady;
  const model = fluidModelOf(s, st.frames > 0 ? Math.round(st.meanFrameBytes) : 1024);
  const marks = marksModelOf(s, model);
  const fixedPoint = dcqcnFluidFixedPoint(model);
  const { overTime: _, ...run } = integrateDcqcnFluid(model, Math.max(10_000, r.durationUs));
  // The simulation counts frame bytes; the model's rate is of wire bytes.
  const toWire = model.packetWireBytes / (model.packetWireBytes - WIRE_OVERHEAD_BYTES);
  const simRate = (st.flowsGbps.reduce((a, x) => a + x, 0) / Math.max(1, st.flowsGbps.length)) * toWire;
  // Marks per flow and µs in the steady state: the busiest port's frames are the flows' data frames.
  const steadyUs = Math.max(1, st.toUs - st.fromUs);
  const marksPerUs = (st.markProbability * st.frames) / Math.max(1, model.flows) / steadyUs;
  const simPerMark = marksPerUs > 0 ? st.cnpsPerFlowPerMs / 1000 / marksPerUs : Number.NaN;
  const r0 = fixedPoint === null ? 0 : (fixedPoint.rateGbps * 1e3) / (8 * model.packetWireBytes);
  const cnpsPerMark =
    fixedPoint === null || !(marksPerUs > 0)
      ? null
      : {
          ...figure(round3(simPerMark), round3(fixedPoint.cnpsPerMs / 1000 / (fixedPoint.markProbability * r0))),
          independent: round3(1 / (1 + marksPerUs * model.cnpIntervalUs)),
        };
  return {
    model,
    fixedPoint,
    run,
    rateGbps: fixedPoint !== null ? figure(round3(simRate), round3(fixedPoint.rateGbps)) : null,
    queueBytes: fixedPoint !== null ? figure(st.queueMeanBytes, Math.round(fixedPoint.queueBytes)) : null,
    markProbability: fixedPoint !== null ? figure(st.markProbability, fixedPoint.markProbability) : null,
    cnpsPerFlowPerMs: fixedPoint !== null ? figure(st.cnpsPerFlowPerMs, round3(fixedPoint.cnpsPerMs)) : null,
    cnpsPerMark,
    marks: compareWithMarks(marks, st, simRate, simPerMark),
    hybrid: compareWithHybrid(s, r, marks, model.feedbackDelayUs, simRate),
  };
}
