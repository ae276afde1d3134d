/**
 * The line a perftest or pingpong no-progress timeout ends with (apps/perftest/qp-state-report.ts):
 * where the requester, completer and responder stand, whether the local ACK timer is armed, the
 * counters that moved and the driver's frame counters, so a stall says what it waits for.
 */
import { scriptedPeer, op, psnPlus, SYN } from '../support/scripted-peer';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import { qpStateReport } from '../../apps/perftest/qp-state-report';

test('a requester waiting for ACKs: its PSNs, outstanding WQEs, the armed timer and the frames sent', () => {
  const h = scriptedPeer({ timeout: 14 });
  const S = h.sqPsn;
  h.qp.postSend([0, 1, 2].map((k) => ({ wrId: k, opcode: WrOpcode.SEND, sgList: [h.mr.sge(0, 10)], sendFlags: SendFlags.SIGNALED })));
  expect(h.sent()).toHaveLength(3);
  h.inject({ bth: { opcode: op('RC_ACKNOWLEDGE'), psn: S }, aeth: { syndrome: SYN.ACK, msn: 1 } });
  const r = qpStateReport(h.qp, h.driver);
  expect(r).toContain(`QP 0x${h.qp.qpNum.toString(16)} RTS`);
  expect(r).toContain(`requester: next PSN ${psnPlus(S, 3)}, highest sent ${psnPlus(S, 2)}, unacked 2 PSNs, WQE 3 of 3`);
  expect(r).toContain(
    `completer: oldest unacked PSN ${psnPlus(S, 1)}, WQE 1 (wr_id 1, PSNs ${psnPlus(S, 1)}..${psnPlus(S, 1)}), 2 started + 0 posted outstanding, retransmit timer armed (deadline in 67.1ms)`,
  );
  expect(r).toContain(`responder: expected PSN ${h.rqPsn}, 0 receives posted`);
  expect(r).toContain('counters: sent_pkts=3 rcvd_pkts=1');
  expect(r).toContain('driver scripted0: rx 1 frames (0 dropped), tx 3 frames (0 dropped)');
});

test('nothing outstanding: the timer is not armed, and no counter has moved', () => {
  const h = scriptedPeer();
  const r = qpStateReport(h.qp, h.driver);
  expect(r).toContain('0 started + 0 posted outstanding, retransmit timer not armed');
  expect(r).toContain('highest sent -, unacked 0 PSNs');
  expect(r).toContain('counters: none');
});
