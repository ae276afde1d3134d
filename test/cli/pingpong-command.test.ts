/** `roce pingpong`: both ends as commands in this process over the memory test mode, and usage errors. */
import { freePort } from '../oob/support';
import { roce } from '../support/cli';

/** `roce pingpong ARGS`: exit status and output (a usage error is status 2 and one line, as from the shell). */
function cmd(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  return roce('pingpong', ...argv);
}

test('client and server: --json summaries with bytes, messages, Gbit/s and latency percentiles', async () => {
  const port = String(await freePort());
  const common = ['--driver', 'memory', '-p', port, '-n', '100', '-s', '1024', '-m', '512', '--json', '--timeout', '20'];
  const [sr, cr] = await Promise.all([cmd('-d', 'sim-b', '--bind', '127.0.0.1', ...common), cmd('127.0.0.1', '-d', 'sim-a', '-g', '1', ...common)]);
  expect(sr.code).toBe(0);
  expect(cr.code).toBe(0);
  for (const out of [sr.out, cr.out]) {
    const r = JSON.parse(out) as Record<string, unknown>;
    expect(r['ok']).toBe(true);
    expect(r['test']).toBe('rc_pingpong');
    expect(r['bytes']).toBe(1024 * 100 * 2);
    expect(r['messages']).toBe(200);
    expect(r['mtu']).toBe(512);
    expect(r['gbps'] as number).toBeGreaterThan(0);
    const l = r['latencyUs'] as Record<string, number>;
    for (const k of ['p50', 'p99', 'max']) expect(l[k]).toBeGreaterThan(0);
  }
}, 20_000);

test('text output like the tool', async () => {
  const port = String(await freePort());
  const common = ['--driver', 'memory', '-p', port, '-n', '50', '--timeout', '20'];
  const [sr, cr] = await Promise.all([cmd('-d', 'sim-b', '--bind', '127.0.0.1', ...common), cmd('127.0.0.1', '-d', 'sim-a', ...common)]);
  expect(sr.code).toBe(0);
  expect(cr.code).toBe(0);
  expect(cr.out).toMatch(/local address: {2}LID 0x0000, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID ::ffff:198\.18\.0\.1/);
  expect(cr.out).toMatch(/409600 bytes in [\d.]+ seconds = [\d.]+ Mbit\/sec/);
  expect(cr.out).toMatch(/50 iters in [\d.]+ seconds = [\d.]+ usec\/iter/);
  expect(cr.out).toMatch(/round trip \[usec\]: min [\d.]+, p50 [\d.]+, p90 [\d.]+, p99 [\d.]+, p99\.9 [\d.]+, max [\d.]+/);
  // The histogram: a header, then one line per bucket; its counts add up to the 49 round trips timed.
  const rows = [...cr.out.matchAll(/^ +([\d.]+)–([\d.]+) us +(\d+) +[\d.]+ % #+$/gm)];
  expect(cr.out).toMatch(/round trip histogram \(four buckets per octave\):/);
  expect(rows.reduce((n, m) => n + Number(m[3]), 0)).toBe(49);
}, 20_000);

test.each([
  [[], /-d\/--dev IFACE is required/],
  [['-d', 'x', 'a', 'b'], /at most one SERVER/],
  [['-d', 'x', '-m', '9000'], /--mtu must be an integer from 256 to 4096/],
  [['-d', 'x', '-m', '1000'], /--mtu must be 256, 512, 1024, 2048 or 4096/],
  [['-d', 'x', '-r', '1'], /--rx-depth must be an integer from 2/],
  [['-d', 'x', '--driver', 'rdma'], /--driver must be xdp or packet/],
  [['-d', 'x', '-p', '70000'], /--port must be an integer from 1 to 65535/],
  [['-d', 'x', '--warm-up', '-3'], /--warm-up must be an integer from 0/],
  [['-d', 'x', '--warm-up', '10', '--type', 'ud'], /--warm-up goes with RC ping-pong/],
  [['-d', 'x', '--warm-up', '10', '--srq'], /--warm-up goes with RC ping-pong/],
])('usage error %j', async (argv, msg) => {
  const r = await cmd(...(argv as string[]));
  expect(r.code).toBe(2);
  expect(r.err).toMatch(msg);
});

test('an interface that does not exist: exit 1 with the reason', async () => {
  const r = await cmd('-d', 'no-such-if0', '--driver', 'packet', '--json');
  expect(r.code).toBe(1);
  expect(JSON.parse(r.out)).toMatchObject({ ok: false, test: 'rc_pingpong' });
});

test('--warm-up: the in-memory round trips run before the run, which then completes as usual', async () => {
  const port = String(await freePort());
  const common = ['--driver', 'memory', '-p', port, '-n', '50', '-s', '64', '--json', '--timeout', '20'];
  const [sr, cr] = await Promise.all([cmd('-d', 'sim-b', '--bind', '127.0.0.1', ...common), cmd('127.0.0.1', '-d', 'sim-a', '--warm-up', '300', ...common)]);
  expect(sr.code).toBe(0);
  expect(cr.code).toBe(0);
  expect(cr.err).toMatch(/JIT warm-up: 300 round trips in memory, \d+ ms/);
  expect(JSON.parse(cr.out)).toMatchObject({ ok: true, messages: 100 });
}, 20_000);
