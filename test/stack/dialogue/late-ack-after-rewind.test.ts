/**
 * An ACK that arrives after a local ACK timeout rewound the requester (go-back-N, IBTA vol. 1
 * §9.7.5.2.6) completes WQEs the requester has not resent yet: the requester is then behind the
 * completer, and skips those WQEs when it runs. When the completer also dropped the completed
 * front of the send queue in that moment, the requester's index must stay on the queue.
 *
 * Found by the 2 % loss end-to-end run (perftest SEND over AF_PACKET, test/e2e/faults.test.ts):
 * a timer fired, the rx handler of the same event-loop turn took the late ACKs, the front of the
 * queue was dropped, and the requester's index went negative; it never sent again, and with
 * nothing started no timer was armed either: the client waited for its no-progress timeout.
 */
import { scriptedPeer, op, psnPlus, SYN, type InjectSpec } from '../../support/scripted-peer';
import { SendFlags, WrOpcode } from '../../../stack/work-request-codes';
import { WcStatus } from '../../../stack/work-completion';
import { localAckTimeoutNs } from '../../../stack/qp-attributes';

const ack = (psn: number, msn: number): InjectSpec => ({ bth: { opcode: op('RC_ACKNOWLEDGE'), psn }, aeth: { syndrome: SYN.ACK, msn } });
/** The work request the requester sends next (its index moves when the completer compacts the queue). */
const nextWr = (h: ReturnType<typeof scriptedPeer>): number | null => {
  const w = h.qp.sq[h.qp.req.next];
  return w === undefined ? null : Number(w.wrId);
};

test('an ACK taken between a timeout rewind and the requester run that drops the queue front leaves the requester able to send', () => {
  const N = 400; // single-packet SENDs: 1 PSN each
  const W = 128; // the default send window (maxUnackedPsns, as rxe)
  const h = scriptedPeer({ timeout: 10 });
  const S = h.sqPsn;
  const wrs = Array.from({ length: N }, (_, k) => ({
    wrId: k,
    opcode: WrOpcode.SEND,
    sgList: [h.mr.sge(0, 10)],
    sendFlags: k === N - 1 ? SendFlags.SIGNALED : 0,
  }));
  h.qp.postSend(wrs);
  expect(h.sent().map((s) => s.psn)).toEqual(Array.from({ length: W }, (_, i) => psnPlus(S, i)));
  // 200 messages acknowledged: the window moves on to PSNs 200..327.
  h.inject(ack(psnPlus(S, W - 1), W));
  expect(h.sent().map((s) => s.psn)).toEqual(Array.from({ length: W }, (_, i) => psnPlus(S, W + i)));
  h.inject(ack(psnPlus(S, 199), 200));
  expect(h.sent().map((s) => s.psn)).toEqual(Array.from({ length: 200 - W }, (_, i) => psnPlus(S, 2 * W + i)));
  expect(nextWr(h)).toBe(200 + W);
  // The local ACK timer fires: go back to PSN 200. Run events one at a time, so the requester's run
  // that the rewind asks for is still queued (on a real clock: a setImmediate after the poll phase).
  const until = h.clock.now() + 2 * localAckTimeoutNs(10);
  while (h.qp.counters.local_ack_timeout_err === 0 && h.clock.now() < until) h.clock.step();
  expect(h.qp.counters.local_ack_timeout_err).toBe(1);
  expect(nextWr(h)).toBe(200);
  // Before that run, the ACK of everything sent arrives (it was late, not lost): WQEs 200..327
  // complete, and the completer drops the 328 completed WQEs from the front of the queue.
  h.inject(ack(psnPlus(S, 327), 328));
  // The requester goes on with the first WQE never sent: PSN 328.
  const after = h.sent().map((s) => s.psn);
  expect(after).toEqual(Array.from({ length: N - 328 }, (_, i) => psnPlus(S, 328 + i)));
  h.inject(ack(psnPlus(S, N - 1), N));
  expect(h.completions().map((wc) => [Number(wc.wrId), wc.status])).toEqual([[N - 1, WcStatus.SUCCESS]]);
});
