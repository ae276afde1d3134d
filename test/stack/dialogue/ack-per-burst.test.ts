/**
 * A device that drains a long backlog of received frames sends the responses of each burst
 * before it reads the next, as rxe transmits each response as it makes it: while frames keep
 * coming, the ACKs must not wait until the ring is empty. Found by the 2 % loss end-to-end run
 * (test/e2e/faults.test.ts): a perftest server catching up on a backlog that the requester's
 * resends kept refilling answered nothing for 65-120 ms, and the requester spent its retries.
 */
import { scriptedPeer, op, pattern, psnPlus } from '../../support/scripted-peer';

test('the ACKs of each receive burst go to the driver before the next burst is read', () => {
  const h = scriptedPeer();
  const P = h.rqPsn;
  const N = 150; // more than two of the device's 64-frame receive bursts
  for (let i = 0; i < N; i++) h.postRecv(i, 0, 64);
  // What the device asks of its driver, in order.
  const calls: string[] = [];
  const rx = h.driver.rxBurst.bind(h.driver);
  const tx = h.driver.txBurst.bind(h.driver);
  h.driver.rxBurst = (max: number): Uint8Array[] => {
    const f = rx(max);
    calls.push(`rx ${f.length}`);
    return f;
  };
  h.driver.txBurst = (frames: readonly Uint8Array[]): number => {
    calls.push(`tx ${frames.length}`);
    return tx(frames);
  };
  const frames = Array.from({ length: N }, (_, i) =>
    h.frame({ bth: { opcode: op('RC_SEND_ONLY'), psn: psnPlus(P, i), ackReq: true }, payload: pattern(16, i) }),
  );
  h.injectFrames(...frames); // one arrival of N frames: one run of the receive handler
  expect(calls).toEqual(['rx 64', 'tx 64', 'rx 64', 'tx 64', 'rx 22', 'tx 22', 'rx 0']);
  expect(h.sent().map((s) => s.psn)).toEqual(Array.from({ length: N }, (_, i) => psnPlus(P, i)));
  expect(h.completions()).toHaveLength(N);
});
