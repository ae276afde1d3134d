/**
 * Issue 15 finding 1, at the level of one QP: what `roce attack`'s frames (apps/attack/attack-cases.ts)
 * do to the stack, scripted on a virtual clock.
 *
 * - A responder flooded with the cases that leave a QP alive (PSN outside the window, duplicates,
 *   reserved opcodes, bad ICRC, CNPs) sends one PSN sequence NAK for the gap, re-ACKs duplicates,
 *   drops the rest, stays in RTS and takes the real requester's next packet (IBTA vol. 1 §9.7.5.1,
 *   C9-105).
 * - The first wrong-R_Key frame at the expected PSN: one NAK Remote Access Error, the QP to ERR
 *   (C9-88, §9.9.3 class C), and silence after that, whatever follows.
 * - A requester whose responder died, flooded meanwhile with ghost ACKs (stale ones and ones past
 *   the highest PSN it sent) and CNPs: none of them resets its retry count or timer, and its error
 *   completion (RETRY_EXC_ERR) arrives within local ACK timeout × (retry_cnt + 1), the bound the
 *   live commands derive their own from (apps/host/no-progress-bound.ts).
 */
import { scriptedPeer, op, psnPlus, PEER_IP, PEER_MAC, LOCAL_IP, LOCAL_MAC, SYN, type ScriptedPeer } from '../../support/scripted-peer';
import { AttackCase, type AttackTarget, craftFrame } from '../../../apps/attack/attack-cases';
import { QpState } from '../../../stack/qp-type-and-state';
import { SendFlags, WrOpcode } from '../../../stack/work-request-codes';
import { WcStatus } from '../../../stack/work-completion';
import { localAckTimeoutNs } from '../../../stack/qp-attributes';

function targetOf(h: ScriptedPeer, psn: number): AttackTarget {
  return { srcMac: PEER_MAC, dstMac: LOCAL_MAC, srcIp: PEER_IP, dstIp: LOCAL_IP, qpn: h.qp.qpNum, psn, window: 4, rkey: null, va: null, udpSport: 0xc123 };
}

test('a flood of the survivable cases: one sequence NAK per gap, duplicates re-ACKed, the rest dropped; the QP stays up and takes the next real packet', () => {
  const h = scriptedPeer();
  const t = targetOf(h, h.rqPsn);
  const survivable = [AttackCase.PSN_OUTSIDE, AttackCase.DUPLICATE_PSN, AttackCase.RESERVED_OPCODE, AttackCase.BAD_ICRC, AttackCase.CNP];
  for (let i = 0; i < 200; i++) h.injectFrames(craftFrame(survivable[i % survivable.length] as AttackCase, t, i));
  const sent = h.sent();
  expect(sent.filter((s) => s.aeth?.syndrome === SYN.NAK_SEQ).map((s) => s.psn)).toEqual([h.rqPsn]);
  // Duplicates (behind the expected PSN) are answered with an ACK (with the responder's credit count) of the last PSN taken (C9-105), nothing else.
  expect(sent.filter((s) => s.aeth?.syndrome !== SYN.NAK_SEQ).every((s) => s.aeth?.kind === 'ACK' && s.psn === psnPlus(h.rqPsn, -1))).toBe(true);
  expect(h.qp.state).toBe(QpState.RTS);
  // Bad ICRCs and reserved opcodes reach no QP: the device counts them (rxe_recv.c drops them the same way).
  expect(h.dev.counters.rcvd_icrc_err).toBe(40);
  expect(h.dev.counters.rcvd_malformed).toBe(40);
  // The real requester's next WRITE at the expected PSN is taken and acknowledged.
  h.inject({
    bth: { opcode: op('RC_RDMA_WRITE_ONLY'), psn: h.rqPsn, ackReq: true },
    reth: { va: h.mr.addr(0), rkey: h.mr.rkey, dmaLength: 4 },
    payload: new Uint8Array([1, 2, 3, 4]),
  });
  expect(h.sentText()).toEqual([expect.stringMatching(new RegExp(`^RC_ACKNOWLEDGE ${h.rqPsn} ACK`))]);
  expect(Array.from(h.buf.subarray(0, 4))).toEqual([1, 2, 3, 4]);
});

test('a wrong R_Key at the expected PSN: one NAK Remote Access Error, the QP to ERR, silence after', () => {
  const h = scriptedPeer();
  const t = targetOf(h, h.rqPsn);
  h.injectFrames(craftFrame(AttackCase.WRONG_RKEY, { ...t, window: 1 }, 0));
  expect(h.sent().map((s) => [s.psn, s.aeth?.syndrome])).toEqual([[h.rqPsn, SYN.NAK_REM_ACCESS]]);
  expect(h.qp.state).toBe(QpState.ERR);
  expect(h.qp.errorReason).toMatch(/rkey 0x[0-9a-f]+ .*invalid key/);
  for (let i = 0; i < 100; i++)
    h.injectFrames(craftFrame([AttackCase.WRONG_RKEY, AttackCase.DUPLICATE_PSN, AttackCase.PSN_OUTSIDE, AttackCase.READ_2G][i % 4] as AttackCase, t, i));
  expect(h.sent()).toEqual([]);
});

test('a requester whose responder died, flooded with ghost ACKs and CNPs: RETRY_EXC_ERR within timeout x (retry_cnt + 1)', () => {
  const timeout = 8;
  const retryCnt = 3;
  const h = scriptedPeer({ timeout, retryCnt });
  const T = localAckTimeoutNs(timeout);
  for (let k = 0; k < 4; k++)
    h.qp.postSend({ wrId: k, opcode: WrOpcode.RDMA_WRITE, sgList: [h.mr.sge(0, 100)], sendFlags: SendFlags.SIGNALED, rdma: { remoteAddr: 0x1000n, rkey: 7 } });
  const first = h.sent();
  expect(first.length).toBe(4);
  const S = h.sqPsn;
  // One real ACK of the first WRITE, then the responder is gone.
  h.inject({ bth: { opcode: op('RC_ACKNOWLEDGE'), psn: S }, aeth: { syndrome: SYN.ACK, msn: 1 } });
  const start = h.clock.now();
  const ghosts = (i: number): Uint8Array[] => [
    craftFrame(AttackCase.GHOST_ACK, { ...targetOf(h, psnPlus(S, -10)), window: 8 }, i), // stale: before the retry point
    craftFrame(AttackCase.GHOST_ACK, { ...targetOf(h, psnPlus(S, 100)), window: 8 }, i), // past the highest PSN sent
    craftFrame(AttackCase.CNP, targetOf(h, S), i),
  ];
  let failedAt = -1;
  for (let i = 0; i < 10_000 && failedAt < 0; i++) {
    h.injectFrames(...ghosts(i));
    h.advance(T / 16);
    for (const wc of h.completions()) {
      if (wc.status === WcStatus.SUCCESS) continue;
      if (failedAt < 0) {
        expect(wc.status).toBe(WcStatus.RETRY_EXC_ERR);
        failedAt = h.clock.now();
      }
    }
  }
  expect(failedAt).toBeGreaterThan(0);
  expect(failedAt - start).toBeLessThanOrEqual(T * (retryCnt + 1) + T / 16);
  expect(h.qp.state).toBe(QpState.ERR);
  expect(h.qp.counters.local_ack_timeout_err).toBe(retryCnt + 1);
});
