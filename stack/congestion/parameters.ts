/**
 * The congestion-control parameters, named after the mlx5 debugfs files
 * (/sys/kernel/debug/mlx5/<pci>/cc_params/<name>, drivers/infiniband/hw/mlx5/cong.c,
 * `mlx5_ib_dbg_cc_name[]`), in camelCase, with the units and defaults the ConnectX firmware
 * uses. The kernel only forwards them to the firmware (MODIFY_CONG_PARAMS), so the defaults come
 * from NVIDIA's "DCQCN CC Parameters" table (ConnectX-4 and later) and, for
 * np_min_time_between_cnps and rp_max_rate, from the commit that added them to cong.c
 * ("IB/mlx5: Add np_min_time_between_cnps and rp_max_rate debug params", Parav Pandit, 2020).
 * docs/congestion.md lists each with its source.
 *
 * Reaction point (RP): DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA
 * Deployments", SIGCOMM 2015) as mlx5 exposes it. Notification point (NP): the CNP generator.
 */
import { invalid } from '../errors';

/** The DCQCN reaction point's parameters (mlx5 `rp_*`). Rates in Mb/s, times in µs. */
export interface RpParams {
  /** rp_clamp_tgt_rate: 1 = every rate decrease sets the target rate to the current rate (paper: R_T ← R_C always). Default 0. */
  readonly rpClampTgtRate: 0 | 1;
  /** rp_clamp_tgt_rate_ati: 1 = a decrease also clamps the target after an increase by the timer, not only by the byte counter. Default 1. */
  readonly rpClampTgtRateAti: 0 | 1;
  /** rp_time_reset: µs between rate increases by the timer (paper: T = 55 µs). Default 300. */
  readonly rpTimeReset: number;
  /** rp_byte_reset: bytes sent between rate increases by the byte counter (paper: B = 10 MB). Default 32767. */
  readonly rpByteReset: number;
  /** rp_threshold: increase events by one counter before leaving fast recovery (paper: F = 5). Default 1. */
  readonly rpThreshold: number;
  /** rp_ai_rate: Mb/s added to the target rate per additive increase (paper: R_AI = 40 Mb/s). Default 5. */
  readonly rpAiRate: number;
  /** rp_max_rate: Mb/s; 0 = the line rate ("full speed"). Default 0. */
  readonly rpMaxRate: number;
  /** rp_hai_rate: Mb/s added to the target rate per hyper increase (the paper adds i·R_HAI at hyper stage i; mlx5 a fixed step). Default 50. */
  readonly rpHaiRate: number;
  /** rp_min_dec_fac: % — one decrease leaves at least this share of the current rate (100 = never decrease). Default 50. */
  readonly rpMinDecFac: number;
  /** rp_min_rate: Mb/s, the lowest rate a QP is limited to. Default 1. */
  readonly rpMinRate: number;
  /** rp_rate_to_set_on_first_cnp: Mb/s, current and target rate on the first CNP; 0 = decrease as on any CNP. Default 0. */
  readonly rpRateToSetOnFirstCnp: number;
  /** rp_dce_tcp_g: alpha gain G in 1/1024: α ← (G/1024)·α + (1024−G)/1024 per period with a CNP; the paper's g = (1024−G)/1024. Default 1019. */
  readonly rpDceTcpG: number;
  /** rp_dce_tcp_rtt: µs, the alpha update period (paper: K = 55 µs). Default 1. */
  readonly rpDceTcpRtt: number;
  /** rp_rate_reduce_monitor_period: µs, at most one rate decrease per period. Default 4. */
  readonly rpRateReduceMonitorPeriod: number;
  /** rp_initial_alpha_value: α on the first CNP, in 1/1024. Default 1023. */
  readonly rpInitialAlphaValue: number;
  /** rp_gd: the decrease is R_C·α/2^(rp_gd−10) (α as a fraction): 11 gives the paper's R_C(1 − α/2). Default 11. */
  readonly rpGd: number;
}

/** The notification point's parameters (mlx5 `np_*`). */
export interface NpParams {
  /** np_min_time_between_cnps: µs between two CNPs for one QP; 0 = a CNP for every CE-marked packet. Default 0. */
  readonly npMinTimeBetweenCnps: number;
  /** np_cnp_dscp: DSCP of CNPs (the ConnectX-4 Lx capture carries 48). Default 48. */
  readonly npCnpDscp: number;
  /** np_cnp_prio_mode: 0 = CNPs carry `npCnpPrio` as VLAN priority; 1 = the priority of the QP's own path. Default 1. */
  readonly npCnpPrioMode: 0 | 1;
  /** np_cnp_prio: 802.1p priority of CNPs in mode 0 (writing np_cnp_prio sets mode 0 in cong.c). Default 6. */
  readonly npCnpPrio: number;
}

export const RP_DEFAULTS: RpParams = Object.freeze({
  rpClampTgtRate: 0,
  rpClampTgtRateAti: 1,
  rpTimeReset: 300,
  rpByteReset: 32767,
  rpThreshold: 1,
  rpAiRate: 5,
  rpMaxRate: 0,
  rpHaiRate: 50,
  rpMinDecFac: 50,
  rpMinRate: 1,
  rpRateToSetOnFirstCnp: 0,
  rpDceTcpG: 1019,
  rpDceTcpRtt: 1,
  rpRateReduceMonitorPeriod: 4,
  rpInitialAlphaValue: 1023,
  rpGd: 11,
} as const);

export const NP_DEFAULTS: NpParams = Object.freeze({
  npMinTimeBetweenCnps: 0,
  npCnpDscp: 48,
  npCnpPrioMode: 1,
  npCnpPrio: 6,
} as const);

/**
 * Congestion control of a device or a QP. The NP and the RP are switched on separately, as the
 * mlx5 sysfs `ecn/roce_np/enable` and `ecn/roce_rp/enable` do; either one makes the QP's
 * packets ECN-capable (ECT(0)).
 */
/**
 * The DCQCN paper's settings (Zhu et al., SIGCOMM 2015, §3.2 and its evaluation): the target rate
 * clamped on every cut, T = 55 µs, B = 10 MB, F = 5, R_AI = 40 Mb/s, g = 1/256 (1 − g = 1020/1024),
 * α updated every K = 55 µs, and at most one CNP per flow per N = 50 µs (the NP), which the RP
 * matches with a 50 µs monitor period. R_HAI keeps the mlx5 default (50 Mb/s), the paper naming no
 * value we could confirm.
 */
export const DCQCN_PAPER_PARAMS: Readonly<Partial<RpParams & NpParams>> = Object.freeze({
  rpClampTgtRate: 1,
  rpTimeReset: 55,
  rpByteReset: 10 * 1024 * 1024,
  rpThreshold: 5,
  rpAiRate: 40,
  rpDceTcpG: 1020,
  rpDceTcpRtt: 55,
  rpRateReduceMonitorPeriod: 50,
  npMinTimeBetweenCnps: 50,
});

export interface CongestionConfig {
  /** Answer CE-marked packets with CNPs (default false). */
  np?: boolean;
  /** Run DCQCN and pace the requester (default false). */
  rp?: boolean;
  /** The rate the RP starts from and recovers to when rp_max_rate is 0, in Mb/s (default 100000). */
  lineRateMbps?: number;
  /** How late the clock's timers may fire, in µs: the pacer lets a QP catch up that much (default 0, the virtual clock's). */
  pacerSlackUs?: number;
  /**
   * Space a QP's packets at its rate also while DCQCN has not limited it (then the line rate), as a
   * NIC's transmit scheduler never runs ahead of its wire (default false: the link serializes).
   * The star simulation sets it: its host uplinks would otherwise queue whatever the requester
   * posts in one burst, out of the reaction point's reach.
   */
  paceUnlimited?: boolean;
  params?: Partial<RpParams & NpParams>;
}

/** A congestion configuration with every value filled in and checked. */
export interface CongestionSettings {
  readonly np: boolean;
  readonly rp: boolean;
  readonly lineRateMbps: number;
  readonly pacerSlackUs: number;
  readonly paceUnlimited: boolean;
  readonly params: Readonly<RpParams & NpParams>;
}

export const DEFAULT_LINE_RATE_MBPS = 100_000;

const INTEGER_RANGES: Readonly<Record<keyof (RpParams & NpParams), readonly [number, number]>> = {
  rpClampTgtRate: [0, 1],
  rpClampTgtRateAti: [0, 1],
  rpTimeReset: [1, 0xffffffff],
  rpByteReset: [1, 0xffffffff],
  rpThreshold: [0, 31],
  rpAiRate: [0, 0xffffffff],
  rpMaxRate: [0, 0xffffffff],
  rpHaiRate: [0, 0xffffffff],
  rpMinDecFac: [0, 100],
  rpMinRate: [1, 0xffffffff],
  rpRateToSetOnFirstCnp: [0, 0xffffffff],
  rpDceTcpG: [0, 1023],
  rpDceTcpRtt: [1, 131071],
  rpRateReduceMonitorPeriod: [1, 0xffffffff],
  rpInitialAlphaValue: [0, 1023],
  rpGd: [10, 11],
  npMinTimeBetweenCnps: [0, 0xffffffff],
  npCnpDscp: [0, 63],
  npCnpPrioMode: [0, 1],
  npCnpPrio: [0, 7],
};

/** `over` applied on `base` (a device's settings, or the defaults), checked; throws VerbsError (EINVAL) on a bad value. */
export function resolveCongestion(over: CongestionConfig, base?: CongestionSettings): CongestionSettings {
  const params = { ...RP_DEFAULTS, ...NP_DEFAULTS, ...base?.params };
  for (const [k, v] of Object.entries(over.params ?? {})) {
    const range = INTEGER_RANGES[k as keyof typeof INTEGER_RANGES];
    if (range === undefined) throw invalid(`congestion: unknown parameter ${k}`);
    if (typeof v !== 'number' || !Number.isInteger(v) || v < range[0] || v > range[1])
      throw invalid(`congestion: ${k} must be an integer ${range[0]}..${range[1]}, not ${String(v)}`);
    (params as Record<string, number>)[k] = v;
  }
  const lineRateMbps = over.lineRateMbps ?? base?.lineRateMbps ?? DEFAULT_LINE_RATE_MBPS;
  if (!(Number.isFinite(lineRateMbps) && lineRateMbps > 0)) throw invalid(`congestion: lineRateMbps must be a positive number of Mb/s, not ${lineRateMbps}`);
  const pacerSlackUs = over.pacerSlackUs ?? base?.pacerSlackUs ?? 0;
  if (!(Number.isFinite(pacerSlackUs) && pacerSlackUs >= 0)) throw invalid(`congestion: pacerSlackUs must be a non-negative number of µs, not ${pacerSlackUs}`);
  return Object.freeze({
    np: over.np ?? base?.np ?? false,
    rp: over.rp ?? base?.rp ?? false,
    lineRateMbps,
    pacerSlackUs,
    paceUnlimited: over.paceUnlimited ?? base?.paceUnlimited ?? false,
    params: Object.freeze(params),
  });
}
