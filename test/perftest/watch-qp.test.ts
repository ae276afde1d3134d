/**
 * A connected perftest side's out-of-band waits watch its QP: a QP in the error state is
 * the cause it reports, not the read that failed or timed out. (The no-progress bound of such a
 * wait runs on wall time; test/e2e/attack.test.ts checks it with a peer stopped by SIGSTOP.)
 */
import { CompletionWaits } from '../../apps/perftest/completion-waits';
import { PerftestError, PerftestErrorCode } from '../../apps/perftest/perftest-error';
import { OobError, OobErrorCode } from '../../apps/oob/tcp-channel';
import { scriptedPeer } from '../support/scripted-peer';

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

function waitsOn(h: ReturnType<typeof scriptedPeer>, ms: number): CompletionWaits {
  return new CompletionWaits('ib_write_bw', { ms, why: 'test bound' }, turn, { qps: [h.qp], sendCq: null, recvCq: null, dev: h.dev });
}

test('the read fails while the QP is in ERR: the QP error is the cause', async () => {
  const h = scriptedPeer();
  h.qp.enterError('responder: WRITE rkey 0xbad va 0x1000 len 64: invalid key');
  const read = Promise.reject(new OobError(OobErrorCode.CLOSED, 'peer closed the connection'));
  const e = (await waitsOn(h, 60_000)
    .watch(read, 'perftest key message (barrier: client finished)', true)
    .catch((x: unknown) => x)) as PerftestError;
  expect(e).toBeInstanceOf(PerftestError);
  expect(e.code).toBe(PerftestErrorCode.COMPLETION);
  expect(e.message).toMatch(/QP 0x[0-9a-f]+ (is in|went to) the error state.*invalid key/);
});

test('the QP goes to ERR while the read is pending: the wait ends at once, naming it', async () => {
  const h = scriptedPeer();
  const never = new Promise<number>(() => undefined);
  const w = waitsOn(h, 60_000)
    .watch(never, 'perftest key message', true)
    .catch((x: unknown) => x);
  await turn();
  h.qp.enterError('responder: atomic at unaligned address 0x1003');
  const e = (await w) as PerftestError;
  expect(e.message).toMatch(/went to the error state while waiting for perftest key message: responder: atomic at unaligned address/);
});

test('a read that succeeds returns its value; a read that fails with the QP alive fails as itself', async () => {
  const h = scriptedPeer();
  expect(await waitsOn(h, 60_000).watch(Promise.resolve(7), 'x', true)).toBe(7);
  const oob = new OobError(OobErrorCode.CLOSED, 'peer closed the connection');
  await expect(waitsOn(h, 60_000).watch(Promise.reject(oob), 'x', true)).rejects.toBe(oob);
});

test('the wait ends when the read does, without waiting for the idle wait to wake (perftest -q: one read per QP)', async () => {
  const h = scriptedPeer();
  // An idle wait that sleeps until frames arrive: none will, as on a quiet link during the exchange.
  let idles = 0;
  const sleepsOn = (): Promise<void> => {
    idles++;
    return new Promise<void>(() => undefined);
  };
  const waits = new CompletionWaits('ib_write_bw', { ms: 60_000, why: 'test bound' }, sleepsOn, { qps: [h.qp], sendCq: null, recvCq: null, dev: h.dev });
  let reply!: (v: number) => void;
  const read = new Promise<number>((r) => (reply = r));
  const w = waits.watch(read, 'perftest key message', false);
  await turn();
  reply(42);
  expect(await w).toBe(42);
  expect(idles).toBe(1);
});
