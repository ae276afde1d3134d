/**
 * RC conversations made of legal edge cases, run by the stack on a simulated pair (no loss) and
 * captured on both hosts: RDMA WRITEs and READs of length 0 with VA 0 and R_Key 0 (a zero-length
 * RDMA operation names no memory, C9-88; rxe_resp.c check_rkey()), zero-length SENDs, messages of
 * exactly k path MTUs and one byte either side of that, up to 16 packets, atomics, SEND with
 * immediate or invalidate, and start PSNs just below 2^24 so that the PSNs wrap. Replay of such a
 * capture has nothing to blame on either side: test/property/replay-edge-cases.property.test.ts
 * replays them in both roles, and fuzz/seed-corpus.ts puts small ones among the seeds of the
 * replay fuzz target, whose mutations then start from these shapes.
 */
import { createSimPair } from '../apps/sim/sim-pair';
import { PcapTap, type TapPoint } from '../nic-driver/pcap-tap';
import { connectQp, endpointOf } from '../stack/connect';
import { QpType } from '../stack/qp-type-and-state';
import { Access } from '../stack/access-flags';
import { SendFlags, WrOpcode } from '../stack/work-request-codes';
import { WcStatus } from '../stack/work-completion';
import { type Mtu, mtuBytes } from '../stack/mtu';
import type { SendWr } from '../stack/work-request';

export const EDGE_OP_KINDS = ['write', 'writeImm', 'read', 'send', 'sendImm', 'sendInv', 'compareSwap', 'fetchAdd'] as const;
export type EdgeOpKind = (typeof EDGE_OP_KINDS)[number];

export interface EdgeOp {
  kind: EdgeOpKind;
  /** Message length in bytes (atomics: ignored). */
  length: number;
  /** A zero-length WRITE or READ names VA 0 and R_Key 0 (any other length names the responder's region). */
  zeroKey: boolean;
}

export interface EdgeSpec {
  seed: number;
  mtu: Mtu;
  /** The requester's first PSN (its send PSN; the responder expects it). */
  psn: number;
  ops: readonly EdgeOp[];
}

/** The lengths at the edges for path MTU `mtu`: 0, 1, and k MTUs and one byte either side, k = 1, 2, 3, 16. */
export function edgeLengths(mtu: number): number[] {
  const out = new Set<number>([0, 1]);
  for (const k of [1, 2, 3, 16]) for (const d of [-1, 0, 1]) out.add(k * mtu + d);
  return [...out].sort((a, b) => a - b);
}

/** Bytes of the responder's region and of the requester's buffer: the longest message fits. */
const REGION = 16 * 4096 + 64;

export interface EdgeRun {
  /** The capture on the requester's host and on the responder's. */
  requesterSide: Uint8Array;
  responderSide: Uint8Array;
  /** Every work request and every receive completed successfully. */
  ok: boolean;
  /** Why not, when not: the first failed completion. */
  failure: string | null;
}

/** Runs `spec` once, captured at `where`. */
function runOnce(spec: EdgeSpec, where: TapPoint): { bytes: Uint8Array; failure: string | null } {
  const tap = new PcapTap({ where });
  const sim = createSimPair({ seed: spec.seed, tap });
  const mtu = mtuBytes(spec.mtu);
  const pdA = sim.a.allocPd();
  const pdB = sim.b.allocPd();
  const cqA = sim.a.createCq(1024);
  const cqB = sim.b.createCq(1024);
  const bufA = new Uint8Array(REGION);
  const bufB = new Uint8Array(REGION);
  for (let i = 0; i < REGION; i++) {
    bufA[i] = (i * 7 + spec.seed) & 0xff;
    bufB[i] = (i * 13 + 1) & 0xff;
  }
  const mrA = sim.a.regMr(pdA, bufA, Access.LOCAL_WRITE);
  const all = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
  const mrB = sim.b.regMr(pdB, bufB, all);
  const recvB = sim.b.regMr(pdB, new Uint8Array(REGION), Access.LOCAL_WRITE);
  const n = spec.ops.length;
  const qpA = sim.a.createQp(pdA, { qpType: QpType.RC, sendCq: cqA, recvCq: cqA, cap: { maxSendWr: n + 4 } });
  const qpB = sim.b.createQp(pdB, { qpType: QpType.RC, sendCq: cqB, recvCq: cqB, cap: { maxRecvWr: n + 4 } });
  const responderPsn = (spec.psn + 0x800000) & 0xffffff;
  connectQp(qpA, endpointOf(sim.a, qpA, spec.psn), endpointOf(sim.b, qpB, responderPsn), { pathMtu: spec.mtu });
  connectQp(qpB, endpointOf(sim.b, qpB, responderPsn), endpointOf(sim.a, qpA, spec.psn), { pathMtu: spec.mtu });
  let recvs = 0;
  const wrs: SendWr[] = spec.ops.map((op, i) => {
    const len = Math.min(op.length, 16 * mtu + 1);
    const sgList = len === 0 ? [] : [mrA.sge(0, len)];
    const base = { wrId: i, sendFlags: SendFlags.SIGNALED };
    const rdma = len === 0 && op.zeroKey ? { remoteAddr: 0n, rkey: 0 } : { remoteAddr: mrB.addr(0), rkey: mrB.rkey };
    switch (op.kind) {
      case 'write':
        return { ...base, opcode: WrOpcode.RDMA_WRITE, sgList, rdma };
      case 'writeImm':
        recvs++;
        return { ...base, opcode: WrOpcode.RDMA_WRITE_WITH_IMM, sgList, rdma, immData: 0xc0ffee00 + i };
      case 'read':
        return { ...base, opcode: WrOpcode.RDMA_READ, sgList, rdma };
      case 'send':
        recvs++;
        return { ...base, opcode: WrOpcode.SEND, sgList };
      case 'sendImm':
        recvs++;
        return { ...base, opcode: WrOpcode.SEND_WITH_IMM, sgList, immData: i };
      case 'sendInv': {
        recvs++;
        // A fast-registration region of its own for each invalidation (the only kind a SEND with
        // Invalidate revokes, as in rxe), bound by a REG_MR of the responder's QP: a key is invalidated once.
        const victim = sim.b.allocMr(pdB, 1);
        sim.b.mapMrSg(victim, new Uint8Array(64));
        qpB.postSend({ wrId: 1000 + i, opcode: WrOpcode.REG_MR, reg: { mr: victim, key: victim.lkey, access: all } });
        return { ...base, opcode: WrOpcode.SEND_WITH_INV, sgList, invalidateRkey: victim.rkey };
      }
      case 'compareSwap':
      case 'fetchAdd':
        return {
          ...base,
          opcode: op.kind === 'compareSwap' ? WrOpcode.ATOMIC_CMP_AND_SWP : WrOpcode.ATOMIC_FETCH_AND_ADD,
          sgList: [mrA.sge(0, 8)],
          atomic: { remoteAddr: mrB.addr(8 * (i % 8)), rkey: mrB.rkey, compareAdd: BigInt(i), swap: BigInt(i + 1) },
        };
    }
  });
  for (let i = 0; i < recvs; i++) qpB.postRecv({ wrId: i, sgList: [recvB.sge()] });
  qpA.postSend(wrs);
  sim.clock.runUntilIdle(1_000_000);
  let failure: string | null = null;
  let done = 0;
  for (const [who, cq] of [
    ['requester', cqA],
    ['responder', cqB],
  ] as const) {
    for (let wcs = cq.poll(256); wcs.length > 0; wcs = cq.poll(256)) {
      for (const wc of wcs) {
        if (who === 'requester') done++;
        if (wc.status !== WcStatus.SUCCESS && failure === null) failure = `${who} work request ${wc.wrId} completed with status ${wc.status}: ${wc.vendorErr}`;
      }
    }
  }
  if (failure === null && done !== n) failure = `${done} of ${n} work requests completed`;
  return { bytes: tap.bytes(), failure };
}

/** Runs `spec` twice (deterministically), captured on the requester's host and on the responder's. */
export function edgeConversation(spec: EdgeSpec): EdgeRun {
  const a = runOnce(spec, 'host-a');
  const b = runOnce(spec, 'host-b');
  const failure = a.failure ?? b.failure;
  return { requesterSide: a.bytes, responderSide: b.bytes, ok: failure === null, failure };
}
