/**
 * What each workload mix of the sweep runs (apps/sim/workload.ts options). `mix` is exactly
 * `roce demo`'s workload, so a case of it is the demo's run; the others lean on one part of the
 * protocol each: RNR NAKs (a receive queue one deep, reposted slowly), READ responses and their
 * implied NAKs, atomics and their saved results.
 */
import { OpKind, type WorkloadOptions } from '../sim/workload';
import type { Mtu } from '../../stack/mtu';
import { mtuFromBytes } from '../../stack/mtu';
import type { SweepCase, WorkloadMix } from './sweep-case';

/**
 * How long the SEND-heavy mix's receiver takes to repost a receive: 30 us, three times the RNR
 * timer the workload asks for (min_rnr_timer 1 = 0.01 ms, IBTA table 45), so a requester with
 * one receive posted at the peer meets RNR NAKs and waits out several of them.
 */
export const RNR_REPOST_DELAY_NS = 30_000;

const MIX_OPTIONS: Record<WorkloadMix, Omit<WorkloadOptions, 'seed' | 'qps' | 'bytes' | 'pathMtu'>> = {
  // roce demo's workload: every operation, the workload's defaults.
  mix: {},
  // SENDs into a receive queue one WQE deep: RNR NAKs and their waits.
  'send-rnr': {
    ops: [OpKind.SEND, OpKind.SEND, OpKind.SEND_WITH_IMM, OpKind.WRITE_WITH_IMM],
    initialRecvs: 1,
    repostDelayNs: RNR_REPOST_DELAY_NS,
    maxMessage: 8 * 1024,
  },
  // Mostly READs: READ responses lost, READs resent from their middle, implied NAKs.
  read: { ops: [OpKind.READ, OpKind.READ, OpKind.READ, OpKind.WRITE], maxMessage: 16 * 1024 },
  // Mostly atomics among WRITEs (which carry most of the bytes): atomics resent, answered from the saved result.
  atomic: { ops: [OpKind.CMP_AND_SWP, OpKind.FETCH_AND_ADD, OpKind.CMP_AND_SWP, OpKind.FETCH_AND_ADD, OpKind.WRITE], maxMessage: 16 * 1024 },
};

/** The workload options of a case. */
export function workloadOptions(c: SweepCase): WorkloadOptions {
  return { seed: c.seed, qps: c.qps, bytes: c.bytes, pathMtu: mtuFromBytes(c.mtu) as Mtu, ...MIX_OPTIONS[c.mix] };
}
