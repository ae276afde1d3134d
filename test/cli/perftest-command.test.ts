/** `roce perftest`: both ends run as commands in this process over the memory test mode, and usage errors. */
import { freePort } from '../oob/support';
import { roce } from '../support/cli';
import { defaultMarginS } from '../../apps/perftest/config';

/** `roce perftest ARGS`: exit status and output (a usage error is status 2 and one line, as from the shell). */
function cmd(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  return roce('perftest', ...argv);
}

async function both(
  verb: string,
  extra: string[],
): Promise<{ s: Record<string, unknown>; c: Record<string, unknown>; sr: { code: number; err: string }; cr: { code: number; err: string } }> {
  const port = String(await freePort());
  const common = ['--driver', 'memory', '-p', port, '--json', '--timeout', '20', ...extra];
  const [sr, cr] = await Promise.all([cmd(verb, '--dev', 'sim-b', '--bind', '127.0.0.1', ...common), cmd(verb, '127.0.0.1', '--dev', 'sim-a', ...common)]);
  return { s: JSON.parse(sr.out) as Record<string, unknown>, c: JSON.parse(cr.out) as Record<string, unknown>, sr, cr };
}

test('write bandwidth: one JSON summary per end with the documented keys', async () => {
  const { s, c, sr, cr } = await both('write', ['-s', '4096', '-n', '200', '-m', '1024', '--verify']);
  expect(cr.code).toBe(0);
  expect(sr.code).toBe(0);
  for (const r of [s, c]) {
    for (const k of ['ok', 'test', 'msgSize', 'iterations', 'bytes', 'gbps', 'mpps']) expect(r).toHaveProperty(k);
    expect(r['ok']).toBe(true);
    expect(r['test']).toBe('ib_write_bw');
    expect(r['msgSize']).toBe(4096);
    expect(r['iterations']).toBe(200);
    expect(r['bytes']).toBe(4096 * 200);
    expect(r['mtu']).toBe(1024);
    expect(r['gbps'] as number).toBeGreaterThan(0);
    expect(r).not.toHaveProperty('latencyUs');
  }
  expect(c['role']).toBe('client');
  expect(s['role']).toBe('server');
  expect((s['verify'] as { mismatches: number }).mismatches).toBe(0);
}, 20_000);

test('send latency: latencyUs with p50, p99 and max', async () => {
  const { s, c } = await both('send', ['--lat', '-n', '100', '--verify']);
  for (const r of [s, c]) {
    expect(r['ok']).toBe(true);
    expect(r['test']).toBe('ib_send_lat');
    expect(r['msgSize']).toBe(2);
    const l = r['latencyUs'] as Record<string, number>;
    for (const k of ['p50', 'p99', 'max']) expect(l[k]).toBeGreaterThan(0);
  }
}, 20_000);

test('text report of an atomic run', async () => {
  const port = String(await freePort());
  const common = ['--driver', 'memory', '-p', port, '-n', '100', '--timeout', '20'];
  const [sr, cr] = await Promise.all([
    cmd('atomic', '--dev', 'sim-b', '--bind', '127.0.0.1', ...common),
    cmd('atomic', '127.0.0.1', '--dev', 'sim-a', ...common),
  ]);
  expect(cr.code).toBe(0);
  expect(sr.code).toBe(0);
  expect(sr.out).toMatch(/ib_atomic_bw: waiting for a client on port/);
  expect(cr.out).toMatch(/ib_atomic_bw \(roce-ts\), client/);
  expect(cr.out).toMatch(/BW peak\[MiB\/sec\]\s+BW average\[MiB\/sec\]\s+MsgRate\[Mpps\]/);
  expect(sr.out).toMatch(/as reported by the client/);
}, 20_000);

test('a client with nobody to talk to fails with a JSON error, exit 1', async () => {
  const port = String(await freePort());
  const r = await cmd('read', '127.0.0.1', '--dev', 'sim-a', '--driver', 'memory', '-p', port, '--json', '--timeout', '1');
  expect(r.code).toBe(1);
  const s = JSON.parse(r.out) as Record<string, unknown>;
  expect(s['ok']).toBe(false);
  expect(s['code']).toBe('ROCE_ERR_OOB_CONNECT');
  expect(r.err).toMatch(/could not connect to 127.0.0.1/);
}, 10_000);

test('an unknown interface is a usage error (exit 2), a memory end that does not exist an error (exit 1)', async () => {
  const r = await cmd('write', '--dev', 'no-such-if0', '--driver', 'packet');
  expect(r.code).toBe(2);
  expect(r.err).toMatch(/no network interface or RDMA device named no-such-if0/);
  const r2 = await cmd('write', '--dev', 'eth9', '--driver', 'memory');
  expect(r2.code).toBe(1);
  expect(r2.err).toMatch(/two ends, sim-a .* and sim-b/);
});

test.each([
  [[], /needs a test: write, read, send or atomic/],
  [['copy', '--dev', 'x'], /unknown perftest test "copy"/],
  [['write'], /--dev IFACE is required/],
  [['write', '--dev', 'x', '--driver', 'dpdk'], /--driver must be xdp or packet/],
  [['write', '--dev', 'x', '-m', '1500'], /--mtu must be 256, 512, 1024, 2048 or 4096/],
  [['write', '--dev', 'x', '-n', 'lots'], /--iters must be an integer/],
  [['write', '--dev', 'x', '-n', '3'], /--iters must be an integer from 5/],
  [['atomic', '--dev', 'x', '-s', '16'], /cannot be changed for atomic tests/],
  [['write', '--dev', 'x', '-A', 'CMP_AND_SWAP'], /--atomic_type applies to the atomic test only/],
  [['write', '1.2.3.4', '5.6.7.8', '--dev', 'x'], /at most one SERVER_IP/],
  [['write', '1.2.3.4', '--dev', 'x', '--bind', '127.0.0.1'], /--bind applies to the server/],
  [['write', '--dev', 'x', '--bogus'], /unknown option --bogus/],
])('usage error %j', async (argv, msg) => {
  const r = await cmd(...(argv as string[]));
  expect(r.code).toBe(2);
  expect(r.err).toMatch(msg);
});

test('-h prints the usage', async () => {
  const r = await cmd('-h');
  expect(r.code).toBe(0);
  expect(r.out).toMatch(/usage: roce perftest write\|read\|send\|atomic \[--lat\] \[SERVER_IP\] --dev NAME/);
  expect(r.out).not.toMatch(/memory/);
});

test('duration mode (-D/-f): the figures count the messages completed inside the measuring window', async () => {
  const { s, c, sr, cr } = await both('write', ['-s', '1024', '-m', '1024', '-D', '0.004', '-f', '0.001', '--verify']);
  expect(cr.code).toBe(0);
  expect(sr.code).toBe(0);
  for (const r of [s, c]) {
    expect(r['ok']).toBe(true);
    expect(r['durationS']).toBe(0.004);
  }
  const measured = c['messages'] as number;
  const posted = c['iterations'] as number;
  expect(measured).toBeGreaterThan(0);
  expect(posted).toBeGreaterThan(measured); // the margins are left out
  // The window is 2 ms of the 4 ms run (simulated time; its ends fall on the first poll past each mark).
  expect(c['seconds'] as number).toBeGreaterThan(0.0019);
  expect(c['seconds'] as number).toBeLessThan(0.0025);
  expect(c['bytes']).toBe(measured * 1024);
  // The server reports what the client measured.
  expect(s['messages']).toBe(measured);
  expect((s['verify'] as { mismatches: number; bytesChecked: number }).mismatches).toBe(0);
  expect((s['verify'] as { bytesChecked: number }).bytesChecked).toBeGreaterThan(0);
}, 30_000);

test('duration mode usage errors', async () => {
  const base = ['--dev', 'sim-a', '--driver', 'memory'];
  expect((await cmd('write', ...base, '-D', '3', '-n', '100')).err).toMatch(/--duration and --iters cannot be combined/);
  expect((await cmd('write', ...base, '-D', '3', '-f', '2')).err).toMatch(/--margin 2 leaves nothing to measure of a 3-second run/);
  // Without -f the margin is a quarter of the duration in whole seconds, as perftest's force_dependecies sets it.
  expect([2, 3, 8, 10].map(defaultMarginS)).toEqual([0, 0, 2, 2]);
  expect((await cmd('write', ...base, '-D', '5', '-f', '-1')).err).toMatch(/--margin must be a number of seconds 0..86400/);
  expect((await cmd('write', ...base, '-D', 'soon')).err).toMatch(/--duration must be a number of seconds/);
  expect((await cmd('write', ...base, '-f', '1')).err).toMatch(/--margin applies with --duration only/);
  expect((await cmd('write', ...base, '--lat', '-D', '5')).err).toMatch(/--duration applies to bandwidth tests/);
  for (const argv of [['write', ...base, '-D', '3', '-n', '100']]) expect((await cmd(...argv)).code).toBe(2);
});

test('duration mode of the send test: each side measures its window; the server receives until the client is done', async () => {
  const { s, c, sr, cr } = await both('send', ['-s', '2048', '-m', '1024', '-D', '0.004', '-f', '0.001', '--verify']);
  expect(cr.code).toBe(0);
  expect(sr.code).toBe(0);
  for (const r of [s, c]) {
    expect(r['ok']).toBe(true);
    expect(r['durationS']).toBe(0.004);
    expect(r['messages'] as number).toBeGreaterThan(0);
    expect(r['seconds'] as number).toBeGreaterThan(0.0015);
    expect(r['seconds'] as number).toBeLessThan(0.0025);
  }
  // Every SEND the client posted was received and checked.
  const sv = s['verify'] as { bytesChecked: number; mismatches: number };
  expect(sv.mismatches).toBe(0);
  expect(sv.bytesChecked).toBe((c['iterations'] as number) * 2048);
}, 30_000);

test('-q 4: four QPs, each named in the text report, the count in the JSON', async () => {
  const port = String(await freePort());
  const common = ['--driver', 'memory', '-p', port, '-n', '50', '-s', '1024', '-q', '4', '--timeout', '20'];
  const [sr, cr] = await Promise.all([
    cmd('write', '--dev', 'sim-b', '--bind', '127.0.0.1', ...common, '--json'),
    cmd('write', '127.0.0.1', '--dev', 'sim-a', ...common),
  ]);
  expect(sr.code).toBe(0);
  expect(cr.code).toBe(0);
  expect(cr.out).toMatch(/RC, 4 QPs/);
  expect(cr.out.match(/ local address: {2}LID 0000 QPN/g)?.length).toBe(4);
  expect(cr.out.match(/ remote address: LID 0000 QPN/g)?.length).toBe(4);
  const s = JSON.parse(sr.out) as { qps: number; messages: number; ok: boolean };
  expect(s).toMatchObject({ ok: true, qps: 4, messages: 200 });
  expect((await cmd('write', '--dev', 'sim-a', '--driver', 'memory', '--lat', '-q', '2')).err).toMatch(/only available on bw tests/);
}, 30_000);

test('--perform_warm_up: requests before the measured loop, reported apart and left out of its figures', async () => {
  const { s, c, sr, cr } = await both('write', ['-s', '4096', '-n', '200', '-m', '1024', '--verify', '--perform_warm_up']);
  expect(cr.code).toBe(0);
  expect(sr.code).toBe(0);
  const w = c['warmUp'] as { messages: number; seconds: number; settled: boolean };
  expect(w.messages).toBeGreaterThan(0);
  expect(w.seconds).toBeGreaterThan(0);
  expect(w.seconds).toBeLessThan(5);
  // The measured loop is the 200 messages asked for, whatever the warm-up sent.
  expect(c).toMatchObject({ ok: true, iterations: 200, messages: 200, bytes: 200 * 4096 });
  expect(s['warmUp']).toBeNull();
  expect((s['verify'] as { mismatches: number }).mismatches).toBe(0);
  // Every packet the client sent is a measured or a warm-up WRITE (4 packets each at MTU 1024).
  expect((c['counters'] as Record<string, number>)['sent_pkts']).toBe((200 + w.messages) * 4);
}, 30_000);

test('--perform_warm_up applies to write, read and atomic bandwidth, as perftest says', async () => {
  expect((await cmd('send', '--dev', 'sim-a', '--driver', 'memory', '--perform_warm_up')).err).toMatch(/valid in Atomic, Read and Write BW tests/);
  expect((await cmd('write', '--dev', 'sim-a', '--driver', 'memory', '--lat', '--perform_warm_up')).err).toMatch(/valid in Atomic, Read and Write BW tests/);
});

test('latency text report: the percentiles up to p99.9 and a histogram of every sample', async () => {
  const port = String(await freePort());
  const common = ['--driver', 'memory', '-p', port, '--lat', '-n', '300', '--timeout', '20'];
  const [sr, cr] = await Promise.all([
    cmd('write', '--dev', 'sim-b', '--bind', '127.0.0.1', ...common),
    cmd('write', '127.0.0.1', '--dev', 'sim-a', ...common),
  ]);
  expect(sr.code).toBe(0);
  expect(cr.code).toBe(0);
  // perftest's columns, in its order.
  const header =
    / #bytes #iterations +t_min\[usec\] +t_max\[usec\] +t_typical\[usec\] +t_avg\[usec\] +t_stdev\[usec\] +99% percentile\[usec\] +99\.9% percentile\[usec\]\n(.*)\n/.exec(
      cr.out,
    );
  expect(header).not.toBeNull();
  const cols = (header?.[1] ?? '').trim().split(/ +/).map(Number);
  expect(cols.length).toBe(9);
  const [bytes, iters, tmin, tmax, typical, avg, , p99, p999] = cols as number[];
  expect({ bytes, iters }).toEqual({ bytes: 2, iters: 300 });
  for (const v of [typical, avg, p99, p999] as number[]) {
    expect(v).toBeGreaterThanOrEqual(tmin as number);
    expect(v).toBeLessThanOrEqual(tmax as number);
  }
  expect(cr.out).toMatch(/latency histogram \(half round trips, as perftest reports them\)/);
  const counts = [...cr.out.matchAll(/us +(\d+) +[\d.]+ % #+/g)].map((m) => Number(m[1]));
  expect(counts.length).toBeGreaterThan(0);
  // Every sample the percentiles come from is in one bucket: the time between two iterations, as
  // perftest takes it (iterations - 1 of them).
  expect(counts.reduce((a, b) => a + b, 0)).toBe(299);
}, 30_000);
