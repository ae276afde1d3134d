/**
 * `roce perftest` takes perftest's command lines: -F, -i/--ib-port, -I/--inline_size,
 * -l/--post_list, --run_infinitely and --report_gbits, each checked as perftest checks it (a usage
 * error, exit 2, naming the command and its -h); and its bandwidth table has perftest's columns,
 * BW peak and BW average in MiB/sec or Gb/sec, from a real run of both ends over the memory test
 * mode (simulated time: the figures do not depend on the machine's speed).
 */
import { freePort } from '../oob/support';
import { roce } from '../support/cli';

function cmd(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  return roce('perftest', ...argv);
}

async function both(verb: string, extra: string[]): Promise<{ s: { code: number; out: string; err: string }; c: { code: number; out: string; err: string } }> {
  const port = String(await freePort());
  const common = ['--driver', 'memory', '-p', port, '--timeout', '20', ...extra];
  const [s, c] = await Promise.all([cmd(verb, '--dev', 'sim-b', '--bind', '127.0.0.1', ...common), cmd(verb, '127.0.0.1', '--dev', 'sim-a', ...common)]);
  return { s, c };
}

/** The figures of the table's row under `header`: [bytes, iterations, peak, average, Mpps]. */
function row(out: string): number[] {
  const lines = out.split('\n');
  const h = lines.findIndex((l) => /^ #bytes\s+#iterations\s+BW peak/.test(l));
  expect(h).toBeGreaterThanOrEqual(0);
  return (lines[h + 1] as string).trim().split(/\s+/).map(Number);
}

test("the bandwidth table: perftest's columns in MiB/sec, a measured peak not below the average", async () => {
  const { s, c } = await both('write', ['-s', '4096', '-n', '400', '-F']);
  expect(c.code).toBe(0);
  expect(s.code).toBe(0);
  expect(c.out).toMatch(/^ #bytes {5}#iterations {4}BW peak\[MiB\/sec\] {4}BW average\[MiB\/sec\] {3}MsgRate\[Mpps\]$/m);
  const [bytes, iters, peak, avg, mpps] = row(c.out) as [number, number, number, number, number];
  expect([bytes, iters]).toEqual([4096, 400]);
  expect(avg).toBeGreaterThan(0);
  // The whole run is one of the stretches the peak is taken over: the peak is at least the average.
  expect(peak).toBeGreaterThanOrEqual(avg);
  // MiB/sec is bytes / 2^20 per second: the average and the message rate agree.
  expect(avg).toBeCloseTo((mpps * 1e6 * 4096) / 0x100000, 0);
  // The server prints the client's report, peak included.
  const sr = row(s.out);
  expect(sr[2]).toBeCloseTo(peak, 1);
  expect(s.out).not.toMatch(/WARNING: BW peak/);
}, 30_000);

test("--report_gbits: Gb/sec columns, the same run's figures in 10^9 bits", async () => {
  const { s, c } = await both('read', ['-s', '8192', '-n', '300', '--report_gbits']);
  expect(c.code).toBe(0);
  expect(s.code).toBe(0);
  expect(c.out).toMatch(/^ #bytes {5}#iterations {4}BW peak\[Gb\/sec\] {4}BW average\[Gb\/sec\] {3}MsgRate\[Mpps\]$/m);
  const [, , peak, avg, mpps] = row(c.out) as [number, number, number, number, number];
  expect(avg).toBeCloseTo((mpps * 1e6 * 8192 * 8) / 1e9, 1);
  expect(peak).toBeGreaterThanOrEqual(avg);
  expect(s.out).toMatch(/BW average\[Gb\/sec\]/);
}, 30_000);

test("duration mode: no peak (perftest's noPeak), said as perftest says it, 0.00 in the column and null in the JSON", async () => {
  const { c } = await both('write', ['-s', '65536', '-D', '0.004', '-f', '0']);
  expect(c.code).toBe(0);
  expect(c.out).toMatch(/WARNING: BW peak won't be measured in this run\./);
  expect(row(c.out)[2]).toBe(0);
  const j = await both('write', ['-s', '65536', '-D', '0.004', '-f', '0', '--json']);
  expect((JSON.parse(j.c.out) as { peakGbps: unknown }).peakGbps).toBeNull();
}, 30_000);

test("-l: lists of N WRs per post call, the CQ moderation N; echoed as perftest's header does", async () => {
  const { s, c } = await both('write', ['-s', '2048', '-n', '500', '-l', '10', '--verify', '--json']);
  expect(c.code).toBe(0);
  expect(s.code).toBe(0);
  const r = JSON.parse(c.out) as { ok: boolean; messages: number; postList: number; peakGbps: number; gbps: number; verify: { mismatches: number } };
  expect(r).toMatchObject({ ok: true, messages: 500, postList: 10 });
  expect(r.peakGbps).toBeGreaterThanOrEqual(r.gbps);
  expect((JSON.parse(s.out) as { verify: { mismatches: number } }).verify.mismatches).toBe(0);
  const t = await both('send', ['-s', '64', '-n', '200', '-l', '20']);
  expect(t.c.code).toBe(0);
  expect(t.s.code).toBe(0);
  expect(t.c.out).toMatch(/^ Post List {7}: 20$/m);
}, 30_000);

test('-I: messages up to SIZE bytes go inline and arrive intact; echoed as "Max inline data"', async () => {
  const { s, c } = await both('send', ['-s', '64', '-n', '200', '-I', '64', '--verify']);
  expect(c.code).toBe(0);
  expect(s.code).toBe(0);
  expect(c.out).toMatch(/^ Max inline data : 64\[B\]$/m);
  expect(s.out).toMatch(/verify: \d+ bytes checked, 0 mismatches/);
  const w = await both('write', ['-s', '100', '-n', '100', '--inline_size=128', '--verify', '--json']);
  expect(w.c.code).toBe(0);
  expect((JSON.parse(w.c.out) as { inlineSize: number; ok: boolean }).inlineSize).toBe(128);
  expect((JSON.parse(w.s.out) as { verify: { mismatches: number } }).verify.mismatches).toBe(0);
}, 30_000);

test('-i 1 and --ib-port=1 are accepted; -F is accepted and changes nothing', async () => {
  const { s, c } = await both('atomic', ['-n', '100', '-i', '1', '-F']);
  expect(c.code).toBe(0);
  expect(s.code).toBe(0);
  const l = await both('write', ['--lat', '-n', '100', '--ib-port=1', '--CPU-freq']);
  expect(l.c.code).toBe(0);
  expect(l.c.out).toMatch(/t_typical\[usec\]/);
}, 30_000);

test.each([
  [['-i', '2'], /--ib-port must be 1 \(this stack's devices have port 1 only\), not 2/],
  [['--ib-port', '0'], /--ib-port must be 1/],
  [['-i', 'x'], /ib-port/],
  [['-I', '2000'], /inline_size/],
  [['-I', '-1'], /inline_size|unknown option/],
  [['--verb-read', '-I', '16'], /--inline_size applies to write and send, not read/],
  [['--verb-atomic', '-I', '16'], /--inline_size applies to write and send, not atomic/],
  [['-l', '0'], /post_list/],
  [['-l', '3', '-n', '100'], /--iters 100 is not a multiple of --post_list 3/],
  [['-l', '7'], /--iters 5000 is not a multiple of --post_list 7/],
  [['--lat', '-l', '2'], /Post list is supported in BW tests only/],
  [['-l', '256', '-n', '512'], /--post_list 256 is more than the tx depth 128/],
  [['-l', '2', '-b'], /--post_list with -b, -R or -a is not implemented/],
  [['--run_infinitely', '--lat'], /run_infinitely exists only in BW tests/],
  [['--verb-send', '--run_infinitely'], /--run_infinitely is implemented for write, read and atomic, not send/],
  [['--run_infinitely', '-n', '100'], /takes no --iters or --all/],
  [['--run_infinitely', '--verify'], /incompatible with --run_infinitely/],
  [['--run_infinitely', '-D', '2', '-f', '0'], /--margin does not apply with --run_infinitely/],
  [['--run_infinitely', '-b'], /not implemented/],
])('%j is a usage error naming the command and its -h, exit 2', async (args, message) => {
  const verbArg = args.find((a) => a.startsWith('--verb-'));
  const verb = verbArg === undefined ? 'write' : verbArg.slice('--verb-'.length);
  const rest = args.filter((a) => !a.startsWith('--verb-'));
  const r = await cmd(verb, '127.0.0.1', '--dev', 'sim-a', '--driver', 'memory', ...rest);
  expect(r.code).toBe(2);
  expect(r.out).toBe('');
  expect(r.err).toMatch(message);
  expect(r.err).toMatch(/^roce perftest: .* \(roce perftest -h\)\n$/);
});

test('-d: a name that is neither an interface nor an RDMA device is a usage error saying where it looked', async () => {
  const r = await cmd('write', '--dev', 'no-such-dev9', '--driver', 'packet');
  expect(r.code).toBe(2);
  expect(r.err).toMatch(
    /roce perftest: --dev: no network interface or RDMA device named no-such-dev9: tried \/sys\/class\/net\/no-such-dev9 and \/sys\/class\/infiniband\/no-such-dev9/,
  );
  expect(r.err).toMatch(/\(roce perftest -h\)/);
});

test("every option of -h is perftest's or documented; the new ones are listed", async () => {
  const r = await cmd('-h');
  expect(r.code).toBe(0);
  for (const o of [
    '-F, --CPU-freq',
    '-i, --ib-port PORT',
    '-I, --inline_size SIZE',
    '-l, --post_list N',
    '--run_infinitely',
    '--report_gbits',
    '-d, --dev NAME',
  ])
    expect(r.out).toContain(o);
  expect(r.out).toMatch(/MiB\/sec/);
});
