/**
 * The local ACK timer (IBTA vol. 1 §9.7.6.1.3) stops when nothing is outstanding and starts
 * afresh with the next request: a request sent while the timer's lazy event from the previous,
 * acknowledged period is still queued gets the full 4.096 us * 2^timeout. Found on the rxe lab's
 * captures: after an idle spell longer than the timeout, roce-ts resent a whole message 2 us
 * after sending it (the real-time clock ran the overdue event against the last ACK's deadline).
 */
import { scriptedPeer, op, psnPlus, SYN, type InjectSpec, type Sent } from '../../support/scripted-peer';
import { SendFlags, WrOpcode } from '../../../stack/work-request-codes';
import { localAckTimeoutNs } from '../../../stack/qp-attributes';

const ack = (psn: number, msn = 1): InjectSpec => ({ bth: { opcode: op('RC_ACKNOWLEDGE'), psn }, aeth: { syndrome: SYN.ACK, msn } });
const psns = (ss: Sent[]): number[] => ss.map((s) => s.psn);

test('a request sent after everything was acknowledged waits a full timeout, not what was left of the last one', () => {
  const T = localAckTimeoutNs(10);
  const h = scriptedPeer({ timeout: 10 });
  const S = h.sqPsn;
  const send = (wrId: number): void => h.qp.postSend({ wrId, opcode: WrOpcode.SEND, sgList: [h.mr.sge(0, 10)], sendFlags: SendFlags.SIGNALED });
  send(1);
  expect(psns(h.sent())).toEqual([S]);
  h.advance(T / 2);
  h.inject(ack(S)); // nothing outstanding now
  h.advance(T * 0.4); // t = 0.9 T: the timer event armed at t = 0 is still queued
  send(2);
  expect(psns(h.sent())).toEqual([psnPlus(S, 1)]);
  h.advance(T - 1); // one timeout after the second send, less 1 ns
  expect(h.sent()).toEqual([]);
  expect(h.qp.counters.local_ack_timeout_err).toBe(0);
  h.advance(1);
  expect(psns(h.sent())).toEqual([psnPlus(S, 1)]);
  expect(h.qp.counters.local_ack_timeout_err).toBe(1);
});
