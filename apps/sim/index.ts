/**
 * `roce-ts/sim`: two devices over the in-memory link on a virtual clock (the setting of
 * `roce demo`), and the demo's mixed RC workload with every byte checked.
 */
export { createSimPair, SIM_IP_A, SIM_IP_B, SIM_MAC_A, SIM_MAC_B, type SimPair, type SimPairOptions } from './sim-pair';
export { runWorkload, type QpSummary, type WorkloadOptions, type WorkloadResult } from './workload';
