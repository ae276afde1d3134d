/** Shared receive queues and completion notification (event mode). */
import { createSimPair } from '../../apps/sim/sim-pair';
import { connectQp, endpointOf } from '../../stack/connect';
import { QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import { WcStatus } from '../../stack/work-completion';
import { CompletionQueue } from '../../stack/completion-queue';
import { VerbsError } from '../../stack/errors';

test('two RC QPs draw their receives from one SRQ, and the limit event fires once', async () => {
  const sim = createSimPair({ seed: 2 });
  const pdA = sim.a.allocPd();
  const pdB = sim.b.allocPd();
  const bufA = new Uint8Array(8192).fill(7);
  const bufB = new Uint8Array(8192);
  const mrA = sim.a.regMr(pdA, bufA, Access.LOCAL_WRITE);
  const mrB = sim.b.regMr(pdB, bufB, Access.LOCAL_WRITE);
  const cqA = sim.a.createCq(64);
  const cqB = sim.b.createCq(64);
  const srq = sim.b.createSrq(pdB, { maxWr: 16 });
  for (let i = 0; i < 4; i++) srq.postRecv({ wrId: i, sgList: [mrB.sge(i * 1024, 1024)] });
  let limitFired = 0;
  srq.setLimit(2, () => limitFired++);
  const qps = [0, 1].map(() => {
    const a = sim.a.createQp(pdA, { qpType: QpType.RC, sendCq: cqA, recvCq: cqA });
    const b = sim.b.createQp(pdB, { qpType: QpType.RC, sendCq: cqB, recvCq: cqB, srq });
    const ea = endpointOf(sim.a, a, 100);
    const eb = endpointOf(sim.b, b, 200);
    connectQp(a, ea, eb);
    connectQp(b, eb, ea);
    expect(() => b.postRecv({ sgList: [] })).toThrow(VerbsError);
    return a;
  });
  qps[0]?.postSend({ wrId: 1, opcode: WrOpcode.SEND, sgList: [mrA.sge(0, 100)], sendFlags: SendFlags.SIGNALED });
  qps[1]?.postSend({ wrId: 2, opcode: WrOpcode.SEND, sgList: [mrA.sge(0, 200)], sendFlags: SendFlags.SIGNALED });
  qps[0]?.postSend({ wrId: 3, opcode: WrOpcode.SEND, sgList: [mrA.sge(0, 300)], sendFlags: SendFlags.SIGNALED });
  sim.clock.runUntilIdle();
  await Promise.resolve(); // the limit event is delivered as a microtask
  const rx = cqB.poll(10);
  expect(rx.map((w) => w.byteLen).sort()).toEqual([100, 200, 300]);
  expect(new Set(rx.map((w) => w.qpNum)).size).toBe(2);
  expect(srq.size).toBe(1);
  expect(limitFired).toBe(1);
});

test('completion notification: armed, fires once, async iteration', async () => {
  const cq = new CompletionQueue(8);
  let fired = 0;
  cq.onNotify(() => fired++);
  const wc = { wrId: 1n, status: WcStatus.SUCCESS, opcode: 0 as const, byteLen: 0, qpNum: 1, srcQp: 0, wcFlags: 0, immData: 0, vendorErr: '' };
  cq.push(wc);
  await Promise.resolve();
  expect(fired).toBe(0); // not armed
  cq.reqNotify();
  cq.push({ ...wc, wrId: 2n });
  cq.push({ ...wc, wrId: 3n });
  await Promise.resolve();
  expect(fired).toBe(1); // one-shot
  expect(cq.poll(10).map((w) => w.wrId)).toEqual([1n, 2n, 3n]);
  const it = cq[Symbol.asyncIterator]();
  const next = it.next();
  cq.push({ ...wc, wrId: 4n });
  expect((await next).value).toMatchObject({ wrId: 4n });
});

test('a full CQ is an overrun, reported as an error', () => {
  const cq = new CompletionQueue(2);
  const wc = { wrId: 1n, status: WcStatus.SUCCESS, opcode: 0 as const, byteLen: 0, qpNum: 1, srcQp: 0, wcFlags: 0, immData: 0, vendorErr: '' };
  expect(cq.push(wc)).toBe(true);
  expect(cq.push(wc)).toBe(true);
  expect(cq.push(wc)).toBe(false);
  expect(cq.overrun).toBe(true);
  expect(() => cq.assertUsable()).toThrow(/overrun/);
});
