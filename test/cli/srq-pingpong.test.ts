/**
 * `roce pingpong --srq` (ibv_srq_pingpong): both ends as commands in this process over the memory
 * test mode (simulated link, virtual clock, the exchange over 127.0.0.1 TCP): 16 QPs on one SRQ,
 * every QP carrying its share; the exchange's 256 messages each way; and usage errors.
 */
import { freePort } from '../oob/support';
import { roce } from '../support/cli';

async function both(extra: string[]): Promise<{ s: Record<string, unknown>; c: Record<string, unknown>; sc: number; cc: number; err: string }> {
  const port = String(await freePort());
  const common = ['--srq', '--driver', 'memory', '-p', port, '--json', '--timeout', '20', ...extra];
  const [sr, cr] = await Promise.all([
    roce('pingpong', '--dev', 'sim-b', '--bind', '127.0.0.1', ...common),
    roce('pingpong', '127.0.0.1', '--dev', 'sim-a', ...common),
  ]);
  return { s: JSON.parse(sr.out) as Record<string, unknown>, c: JSON.parse(cr.out) as Record<string, unknown>, sc: sr.code, cc: cr.code, err: sr.err + cr.err };
}

test('16 QPs on one SRQ (the defaults): every QP ping-pongs, the counts cover -n over all QPs', async () => {
  const { s, c, sc, cc, err } = await both(['-n', '200', '-s', '1024']);
  expect({ sc, cc, err }).toEqual({ sc: 0, cc: 0, err: '' });
  for (const r of [s, c]) {
    expect(r).toMatchObject({ ok: true, test: 'srq_pingpong', numQp: 16, iterations: 200, msgSize: 1024, bytes: 1024 * 200 * 2 });
    const per = r['receivesPerQp'] as number[];
    expect(per).toHaveLength(16);
    // Each QP carried its share, and together at least -n (the tool may send up to num_qp - 1 more).
    for (const n of per) expect(n).toBeGreaterThan(0);
    expect(r['receives'] as number).toBeGreaterThanOrEqual(200);
    expect(r['receives'] as number).toBeLessThan(200 + 16);
    expect(r['sends'] as number).toBeGreaterThanOrEqual(200);
  }
  // Each QP of one side is connected to the QP the other announced for it.
  const cq = c['qpPairs'] as { local: { qpn: number; psn: number }; remote: { qpn: number; psn: number } }[];
  const sq = s['qpPairs'] as typeof cq;
  cq.forEach((q, i) => {
    expect(q.remote).toEqual(sq[i]?.local);
    expect(sq[i]?.remote).toEqual(q.local);
  });
  // Every SEND the client saw complete was received (a few more may complete after its loop ended).
  expect(s['receives'] as number).toBeGreaterThanOrEqual(c['sends'] as number);
}, 60_000);

test('-q 4 -r 8: a small SRQ is topped up as it drains', async () => {
  const { s, c, sc, cc } = await both(['-q', '4', '-r', '8', '-n', '300', '-s', '64']);
  expect([sc, cc]).toEqual([0, 0]);
  expect(c['numQp']).toBe(4);
  expect((s['receivesPerQp'] as number[]).every((n) => n > 0)).toBe(true);
}, 60_000);

test.each([
  [['--srq', '-q', '300'], /--num-qp must be an integer from 1 to 255/],
  [['--srq', '-q', '16', '-r', '8'], /rx_depth is too small/],
  [['--srq', '--type', 'ud'], /RC only/],
  [['-q', '4'], /--num-qp goes with --srq/],
] as const)('%j is refused', async (argv, msg) => {
  const r = await roce('pingpong', '127.0.0.1', '--dev', 'sim-a', '--driver', 'memory', '--json', ...argv);
  expect(r.code).not.toBe(0);
  expect(r.err + r.out).toMatch(msg);
});
