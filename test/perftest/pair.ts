/**
 * Two `roce perftest` ends in this process over the simulated link (virtual clock), the
 * out-of-band exchange over 127.0.0.1 TCP; and a check that configurations are refused.
 */
import { TcpChannel } from '../../apps/oob/tcp-channel';
import type { PerftestConfig } from '../../apps/perftest/config';
import type { PerftestResult } from '../../apps/perftest/result';
import { runPerftest } from '../../apps/perftest/run';
import { PerftestError } from '../../apps/perftest/perftest-error';
import { pumpedPair } from '../oob/support';

/** Runs `cfg` (with --verify unless it says otherwise) on both ends; returns the server's and the client's results. */
export async function runPerftestPair(cfg: Pick<PerftestConfig, 'verb' | 'lat'> & Partial<PerftestConfig>): Promise<{ s: PerftestResult; c: PerftestResult }> {
  const p = pumpedPair();
  const listener = await TcpChannel.listen(0, '127.0.0.1');
  try {
    const base = { stepTimeoutMs: 5000, runTimeoutMs: 20_000, connectTimeoutMs: 5000, verify: true, ...cfg };
    const [s, c] = await Promise.all([
      runPerftest(p.sim.b, { ...base, role: 'server', listener }),
      runPerftest(p.sim.a, { ...base, role: 'client', server: '127.0.0.1', port: listener.port }),
    ]);
    return { s, c };
  } finally {
    listener.close();
    p.stop();
  }
}

/** Each of `cases` (on top of a write bandwidth client) is refused with a PerftestError whose message matches. */
export async function expectRefused(base: Partial<PerftestConfig>, cases: readonly (readonly [Partial<PerftestConfig>, RegExp])[]): Promise<void> {
  const p = pumpedPair();
  try {
    for (const [cfg, msg] of cases) {
      const e = await runPerftest(p.sim.a, {
        verb: 'write',
        lat: false,
        role: 'client',
        server: '127.0.0.1',
        port: 9,
        ...base,
        ...cfg,
      } as PerftestConfig).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(PerftestError);
      expect((e as PerftestError).message).toMatch(msg);
    }
  } finally {
    p.stop();
  }
}
