/**
 * The flags of the commands that drive a real link: the live capture (`--pcap`, `--pcap-count`,
 * `--pcap-size`, `--pcap-snap`) and the AF_XDP queues (`--queues`, `--steer`): each command lists them, and
 * bad combinations and values are usage errors (exit 2) before any device is opened. Recording itself is tested over veth in test/e2e/live-pcap.test.ts.
 */
import { roce } from '../support/cli';

const COMMANDS: readonly (readonly string[])[] = [
  ['pingpong'],
  ['perftest', 'write'],
  ['rping', '-c', '-a', '198.18.0.2'],
  ['cmatose'],
  ['udaddy'],
  ['rdma-server'],
  ['rdma-client'],
];

test.each(COMMANDS)('roce %s --help lists --pcap, --pcap-count, --pcap-size and --pcap-snap', async (...c) => {
  const r = await roce(c[0]!, '--help');
  expect(r.code).toBe(0);
  for (const o of ['--pcap FILE', '--pcap-count N', '--pcap-size BYTES', '--pcap-snap BYTES']) expect(r.out).toContain(o);
});

test.each([
  [['--pcap-count', '10'], /--pcap-count needs --pcap FILE/],
  [['--pcap-size', '1M'], /--pcap-size needs --pcap FILE/],
  [['--pcap-snap', '128'], /--pcap-snap needs --pcap FILE/],
  [['--pcap', 'x.pcap', '--pcap-snap', '20'], /--pcap-snap must be an integer from 64 to 262144/],
  [['--pcap', 'x.pcap', '--pcap-count', '0'], /--pcap-count must be an integer from 1 to 10000000/],
  [['--pcap', 'x.pcap', '--pcap-size', '10'], /--pcap-size must be a byte count of at least 24/],
  [['--pcap', 'x.pcap', '--pcap-size', '1T'], /--pcap-size must be a byte count/],
  [['--pcap', 'x.pcap', '--driver', 'memory', '-d', 'sim-a'], /--pcap records a real link/],
])('pingpong %j: usage error', async (argv, msg) => {
  const r = await roce('pingpong', '-d', 'x', ...(argv as string[]));
  expect(r.code).toBe(2);
  expect(r.err).toMatch(msg);
});

test('a capture file that cannot be created: exit 1, the JSON error names it and it fails before any socket is opened', async () => {
  const r = await roce('pingpong', '-d', 'lo', '--driver', 'packet', '--json', '--pcap', '/nonexistent-dir/x.pcap');
  expect(r.code).toBe(1);
  const j = JSON.parse(r.out.trim().split('\n').pop()!) as Record<string, unknown>;
  expect(j).toMatchObject({ ok: false, code: 'ROCE_ERR_CAPTURE_FILE' });
  expect(String(j['error'])).toMatch(/cannot write the capture \/nonexistent-dir\/x.pcap/);
});

test.each([
  [['--queues', 'x'], /--queues must be queue numbers and ranges like 0,2-3/],
  [['--queues', '3-1'], /--queues 3-1: the range ends before it starts/],
  [['--queues', '0', '--driver', 'packet'], /--queues chooses AF_XDP receive queues: it goes with --driver xdp/],
  [['--steer', '--driver', 'packet'], /--steer sends RoCE to one AF_XDP receive queue: it goes with --driver xdp/],
])('pingpong %j: usage error', async (argv, msg) => {
  const r = await roce('pingpong', '-d', 'lo', ...(argv as string[]));
  expect(r.code).toBe(2);
  expect(r.err).toMatch(msg);
});

test.each(COMMANDS)('roce %s --help lists --queues and --steer', async (...c) => {
  const r = await roce(c[0]!, '--help');
  expect(r.out).toContain('--queues LIST');
  expect(r.out).toMatch(/--steer\s+AF_XDP: steer RoCE \(UDP 4791, IPv4 and IPv6\) to queue 0/);
});

test.each([
  [['--tclass', '256'], /--tclass must be an integer from 0 to 255/],
  [['--ecn', 'ce'], /--ecn must be ect0, ect1 or off, not "ce" \(CE is for switches to set\)/],
])('pingpong %j: usage error', async (argv, msg) => {
  const r = await roce('pingpong', '-d', 'lo', ...(argv as string[]));
  expect(r.code).toBe(2);
  expect(r.err).toMatch(msg);
});

test.each([['pingpong'], ['perftest', 'write']])('roce %s --help lists --tclass and --ecn', async (...c) => {
  const r = await roce(c[0]!, '--help');
  for (const o of ['--tclass N', '--ecn MODE']) expect(r.out).toContain(o);
});
