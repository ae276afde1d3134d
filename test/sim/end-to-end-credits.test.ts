/**
 * End-to-end credits over the memory link (IBTA vol. 1 §9.7.7.2): a responder whose application
 * keeps only three receives posted and reposts one shortly after each message it takes, and a
 * requester with 40 SENDs to make. With credits the requester sends what the responder's counts
 * allow and no RNR NAK happens; the same responder on a shared receive queue (code 31, no credits:
 * what rxe sends on every QP) takes the burst and answers it with RNR NAKs. Virtual clock: the
 * counts are exact for the seed.
 */
import { createSimPair } from '../../apps/sim/sim-pair';
import { connectQp, endpointOf } from '../../stack/connect';
import { QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import { WcStatus } from '../../stack/work-completion';

interface Outcome {
  delivered: number;
  rnrNaksSent: number;
  rnrNaksReceived: number;
  creditWaits: number;
  sendsOk: number;
}

function run(receiveQueue: 'own' | 'srq'): Outcome {
  const sim = createSimPair({ seed: 3 });
  const pdA = sim.a.allocPd();
  const pdB = sim.b.allocPd();
  const bufA = new Uint8Array(4096).fill(0x5a);
  const bufB = new Uint8Array(64 * 1024);
  const mrA = sim.a.regMr(pdA, bufA, Access.LOCAL_WRITE);
  const mrB = sim.b.regMr(pdB, bufB, Access.LOCAL_WRITE);
  const cqA = sim.a.createCq(256);
  const cqB = sim.b.createCq(256);
  const srq = receiveQueue === 'srq' ? sim.b.createSrq(pdB, { maxWr: 64 }) : null;
  const a = sim.a.createQp(pdA, { qpType: QpType.RC, sendCq: cqA, recvCq: cqA });
  const b = sim.b.createQp(pdB, { qpType: QpType.RC, sendCq: cqB, recvCq: cqB, ...(srq !== null ? { srq } : {}) });
  const ea = endpointOf(sim.a, a, 100);
  const eb = endpointOf(sim.b, b, 200);
  // rnr_retry 7 (infinite) and the shortest RNR timer (code 1, 10 us): RNR NAKs cost little but are counted.
  connectQp(a, ea, eb, { rnrRetry: 7, minRnrTimer: 1 });
  connectQp(b, eb, ea, { rnrRetry: 7, minRnrTimer: 1 });
  let next = 0;
  const post = (): void => {
    const wr = { wrId: next, sgList: [mrB.sge((next % 64) * 1024, 1024)] };
    next++;
    if (srq !== null) srq.postRecv(wr);
    else b.postRecv(wr);
  };
  // The application: three receives posted, then it looks at its CQ every microsecond and reposts
  // one receive per message it finds. The requester posts 40 SENDs at once.
  for (let i = 0; i < 3; i++) post();
  const MESSAGES = 40;
  const POLL_NS = 1_000;
  let delivered = 0;
  const poll = (): void => {
    for (const wc of cqB.poll(64)) {
      expect(wc.status).toBe(WcStatus.SUCCESS);
      delivered++;
      post();
    }
    if (delivered < MESSAGES) sim.clock.schedule(sim.clock.now() + POLL_NS, poll);
  };
  sim.clock.schedule(sim.clock.now() + POLL_NS, poll);
  a.postSend(Array.from({ length: MESSAGES }, (_, i) => ({ wrId: i, opcode: WrOpcode.SEND, sgList: [mrA.sge(0, 512)], sendFlags: SendFlags.SIGNALED })));
  sim.clock.runUntilIdle(1_000_000);
  const sends = cqA.poll(256);
  return {
    delivered,
    rnrNaksSent: b.counters.send_rnr_err,
    rnrNaksReceived: a.counters.rcvd_rnr_err,
    creditWaits: a.counters.rc_crwaits,
    sendsOk: sends.filter((w) => w.status === WcStatus.SUCCESS).length,
  };
}

test('with credits the requester waits for receives instead of drawing RNR NAKs', () => {
  const r = run('own');
  expect(r.delivered).toBe(40);
  expect(r.sendsOk).toBe(40);
  expect(r.creditWaits).toBeGreaterThan(0);
  expect(r.rnrNaksSent).toBe(0);
  expect(r.rnrNaksReceived).toBe(0);
});

test('the same responder on an SRQ (credit code 31) draws RNR NAKs', () => {
  const r = run('srq');
  expect(r.delivered).toBe(40);
  expect(r.sendsOk).toBe(40);
  expect(r.creditWaits).toBe(1); // before the first ACK, which says there are no credits to honour
  expect(r.rnrNaksSent).toBeGreaterThan(0);
  expect(r.rnrNaksReceived).toBe(r.rnrNaksSent);
});
