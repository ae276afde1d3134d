/**
 * HPCC's ns-3 simulator's DCQCN at 10 Gb/s, as its run.py writes it for `--cc dcqcn --bw 10`
 * (alibaba-edu/High-Precision-Congestion-Control, simulation/run.py): RED Kmin 40 KB, Kmax 160 KB,
 * Pmax 0.2 (KMIN_MAP/KMAX_MAP of 100/400 KB at 25 Gb/s, scaled by bw/25), 1000-byte payloads, and
 * its reaction point: RP_TIMER 300 µs, RATE_AI 2 Mb/s and RATE_HAI 20 Mb/s (5 and 50 scaled by
 * bw/25), MIN_RATE 1000 Mb/s, FAST_RECOVERY_TIMES 1, CLAMP_TARGET_RATE 0, EWMA_GAIN 1/256, α
 * every 1 µs, a cut at most every 4 µs, and no byte counter (rdma-hw.cc has none). The mapping onto
 * mlx5's names is scripts/ns3-compare/compare.mjs's.
 */
import type { NpParams, RpParams } from '../../stack/congestion/parameters';

export const HPCC_DCQCN_10G: Partial<RpParams & NpParams> = {
  rpTimeReset: 300,
  rpAiRate: 2,
  rpHaiRate: 20,
  rpMinRate: 1000,
  rpThreshold: 1,
  rpClampTgtRate: 0,
  rpDceTcpG: 1020,
  rpDceTcpRtt: 1,
  rpRateReduceMonitorPeriod: 4,
  rpByteReset: 4294967295,
};

/** The same for `roce sim --cc-param`, in mlx5's names (cli/cc-args.ts ccParamsValue reads them back). */
export const HPCC_DCQCN_10G_ARG = Object.entries(HPCC_DCQCN_10G)
  .map(([k, v]) => `${k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)}=${v}`)
  .join(',');

/** RED at 10 Gb/s. */
export const HPCC_RED_10G = { kminBytes: 40_000, kmaxBytes: 160_000, pmax: 0.2 } as const;
