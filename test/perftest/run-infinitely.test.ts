/**
 * perftest --run_infinitely (run_iter_bw_infinitely) on the simulated link: the client reports
 * every period and runs until told to stop, then the run ends as any other (the final report
 * exchanged, both ends' results); and when the peer is lost mid-run, both ends fail within the
 * bound of the QP's timers instead of running on (the client's WRITEs exhaust their retries; the
 * server's wait sees no progress).
 */
import { TcpChannel } from '../../apps/oob/tcp-channel';
import type { PerftestConfig } from '../../apps/perftest/config';
import type { BwReport } from '../../apps/oob/perftest-messages';
import { runPerftest } from '../../apps/perftest/run';
import { PerftestError, PerftestErrorCode } from '../../apps/perftest/perftest-error';
import { pumpedPair } from '../oob/support';
import { RoceError } from '../../base/roce-error';
import { expectRefused } from './pair';

async function infinitePair(
  verb: PerftestConfig['verb'],
  onPeriod: (r: BwReport, n: number, lose: () => void) => boolean,
): Promise<[PromiseSettledResult<unknown>, PromiseSettledResult<unknown>]> {
  const p = pumpedPair();
  const listener = await TcpChannel.listen(0, '127.0.0.1');
  let stopped = false;
  let periods = 0;
  try {
    const base: PerftestConfig = { verb, lat: false, role: 'server', runInfinitely: true, durationS: 0.0005, stepTimeoutMs: 5000, connectTimeoutMs: 5000 };
    const [s, c] = await Promise.allSettled([
      runPerftest(p.sim.b, { ...base, role: 'server', listener }),
      runPerftest(p.sim.a, {
        ...base,
        role: 'client',
        server: '127.0.0.1',
        port: listener.port,
        stop: () => stopped,
        onPeriod: (r) => {
          periods++;
          if (onPeriod(r, periods, () => p.sim.link.b.close())) stopped = true;
        },
      }),
    ]);
    return [s, c];
  } finally {
    listener.close();
    p.stop();
  }
}

test.each([['write'], ['read'], ['atomic']] as const)(
  '%s: a report per period until stopped, then the final report on both ends',
  async (verb) => {
    const seen: BwReport[] = [];
    const [s, c] = await infinitePair(verb, (r, n) => {
      seen.push(r);
      return n >= 3;
    });
    expect(c.status).toBe('fulfilled');
    expect(s.status).toBe('fulfilled');
    expect(seen).toHaveLength(3);
    for (const r of seen) {
      expect(Number(r.iters)).toBeGreaterThan(0);
      expect(r.bwAvg).toBeGreaterThan(0);
      expect(r.bwPeak).toBe(0); // perftest: "BW peak won't be measured in this run"
    }
    const cr = (c as PromiseFulfilledResult<{ ok: boolean; messages: number; peakGbps: unknown }>).value;
    const sr = (s as PromiseFulfilledResult<{ ok: boolean; messages: number; measured: string }>).value;
    expect(cr.ok).toBe(true);
    expect(cr.peakGbps).toBeNull();
    expect(cr.messages).toBeGreaterThanOrEqual(seen.reduce((a, r) => a + Number(r.iters), 0));
    expect(sr).toMatchObject({ ok: true, measured: 'peer-report', messages: cr.messages });
  },
  60_000,
);

test("the peer lost mid-run: both ends fail within the bound of the QP's timers", async () => {
  const [s, c] = await infinitePair('write', (_r, n, lose) => {
    if (n === 2) lose();
    return false; // never stopped: only the loss ends the run
  });
  expect(c.status).toBe('rejected');
  const ce = (c as PromiseRejectedResult).reason as PerftestError;
  expect(ce).toBeInstanceOf(PerftestError);
  // The WRITEs' retries run out (retry_cnt 7 on a local ACK timeout of 2^14 × 4.096 µs).
  expect(ce.code).toBe(PerftestErrorCode.COMPLETION);
  expect(ce.message).toMatch(/RETRY_EXC/);
  // The server learns it as the client's process would tell it: its exchange closes (or its own wait sees no progress).
  expect(s.status).toBe('rejected');
  expect((s as PromiseRejectedResult).reason).toBeInstanceOf(RoceError);
}, 60_000);

test('refused as perftest refuses it', async () => {
  await expectRefused({ runInfinitely: true }, [
    [{ lat: true }, /run_infinitely exists only in BW tests/],
    [{ verb: 'send' }, /not send/],
    [{ iters: 100 }, /takes no iterations/],
    [{ verify: true }, /incompatible with --run_infinitely/],
    [{ marginS: 0 }, /does not apply with --run_infinitely/],
  ]);
});
