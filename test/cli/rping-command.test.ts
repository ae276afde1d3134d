/**
 * `roce rping`: both ends as commands in this process over the memory test mode (the in-memory
 * link on the virtual clock), with rping's output, -V verification, a wrong port refused with the
 * reason from the wire, and usage errors.
 */
import { roce } from '../support/cli';
import { fillPingData } from '../../apps/rping/ping-data';
import { cString } from '../../apps/rping/ping-data';

function cmd(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  return roce('rping', ...argv);
}

const later = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The server on sim-b, then (once it listens) the client on sim-a. */
async function pair(serverArgs: string[], clientArgs: string[]) {
  const s = cmd('-s', '-a', '0.0.0.0', '-d', 'sim-b', '--driver', 'memory', ...serverArgs);
  await later(20);
  const c = cmd('-c', '-a', '198.18.0.2', '-d', 'sim-a', '--driver', 'memory', ...clientArgs);
  return Promise.all([s, c]);
}

/** What rping's client prints with -v for ping n of size bytes. */
function expectedLine(n: number, size: number): string {
  const b = new Uint8Array(size);
  fillPingData(b, n);
  return `ping data: ${cString(b)}`;
}

test.each([64, 65535])(
  "-C 10 -S %p -v -V: ten pings, rping's lines on both sides, verified",
  async (size) => {
    const [sr, cr] = await pair(['-S', String(size), '-v'], ['-C', '10', '-S', String(size), '-v', '-V']);
    expect(cr.err).toBe('');
    expect(cr.code).toBe(0);
    expect(sr.code).toBe(0);
    const lines = cr.out.trimEnd().split('\n');
    expect(lines).toHaveLength(10);
    lines.forEach((l, n) => expect(l).toBe(expectedLine(n, size)));
    const slines = sr.out.trimEnd().split('\n');
    expect(slines).toEqual(lines.map((l) => `server ${l}`));
    if (size === 64) {
      expect(lines[0]).toBe('ping data: rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqr');
      expect(lines[1]).toBe('ping data: rdma-ping-1: BCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrs');
    }
  },
  60_000,
);

test('--json: a summary per side; the server serves until the client disconnects', async () => {
  const [sr, cr] = await pair(['--json'], ['-C', '3', '-V', '--json']);
  expect(cr.code).toBe(0);
  expect(sr.code).toBe(0);
  const c = JSON.parse(cr.out) as Record<string, unknown>;
  const s = JSON.parse(sr.out) as Record<string, unknown>;
  expect(c).toMatchObject({ ok: true, test: 'rping', role: 'client', size: 64, pings: 3, verified: 3, driver: 'memory', virtualTime: true });
  expect(s).toMatchObject({ ok: true, test: 'rping', role: 'server', pings: 3 });
  expect((c['remote'] as Record<string, unknown>)['port']).toBe(7174);
  expect((c['remote'] as Record<string, unknown>)['qpn']).toBe((s['local'] as Record<string, unknown>)['qpn']);
  expect((s['remote'] as Record<string, unknown>)['addr']).toBe('198.18.0.1');
}, 30_000);

test('a port nobody listens on: REJECTED with the reason from the wire, exit 1, ok:false in --json; the right port then works', async () => {
  const server = cmd('-s', '-a', '0.0.0.0', '-d', 'sim-b', '--driver', 'memory', '-p', '7174', '--json');
  await later(20);
  const cr = await cmd('-c', '-a', '198.18.0.2', '-d', 'sim-a', '--driver', 'memory', '-p', '7175', '-C', '1', '--json');
  expect(cr.code).toBe(1);
  const c = JSON.parse(cr.out) as Record<string, unknown>;
  expect(c).toMatchObject({ ok: false, test: 'rping', role: 'client', code: 'ROCE_ERR_RPING_REJECTED' });
  expect(c['error']).toMatch(/REJ reason 8 \(invalid service ID\)/i);
  expect(cr.err).toMatch(/roce rping: cma event RDMA_CM_EVENT_REJECTED: REJ reason 8/);
  // Text mode says the same on stderr.
  const tr = await cmd('-c', '-a', '198.18.0.2', '-d', 'sim-a', '--driver', 'memory', '-p', '7175', '-C', '1');
  expect(tr.code).toBe(1);
  expect(tr.out).toBe('');
  expect(tr.err).toMatch(/^roce rping: cma event RDMA_CM_EVENT_REJECTED: REJ reason 8 \(.+\)\n$/);
  const ok = await cmd('-c', '-a', '198.18.0.2', '-d', 'sim-a', '--driver', 'memory', '-p', '7174', '-C', '1');
  expect(ok.code).toBe(0);
  expect((await server).code).toBe(0);
}, 30_000);

test('an address nobody answers for: exit 1, unreachable, before any CM message', async () => {
  const r = await cmd('-c', '-a', '198.18.0.9', '-d', 'sim-a', '--driver', 'memory', '-C', '1', '--json');
  expect(r.code).toBe(1);
  expect(JSON.parse(r.out)).toMatchObject({ ok: false, test: 'rping', role: 'client', code: 'ROCE_ERR_HOST_NO_NEIGHBOR' });
  expect(r.err).toMatch(/198\.18\.0\.9 is not the other end of the in-memory link/);
});

test.each([
  [[], /give one of -s \(server\) and -c \(client\)/],
  [['-s', '-c', '-a', '1.2.3.4'], /give one of -s/],
  [['-c'], /-a ADDR is required/],
  [['-c', '-a', 'fe80::1'], /-a must be an IPv4 address/],
  [['-c', '-a', '1.2.3.4', '-S', '65536'], /--size must be an integer from 26 to 65535/],
  [['-c', '-a', '1.2.3.4', '-S', '25'], /--size must be an integer from 26/],
  [['-c', '-a', '1.2.3.4', '-p', '0'], /--port must be an integer from 1/],
  [['-s', '-a', '0.0.0.0'], /give -d IFACE/],
  [['-c', '-a', '1.2.3.4', '--driver', 'memory'], /-d sim-a or -d sim-b is required/],
])('usage error %j', async (argv, msg) => {
  const r = await cmd(...(argv as string[]));
  expect(r.code).toBe(2);
  expect(r.err).toMatch(msg);
});
