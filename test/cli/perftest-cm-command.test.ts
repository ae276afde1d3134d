/**
 * `roce perftest -R`: both ends as commands in this process over the memory test mode (the
 * in-memory link on the virtual clock), the exchange over the RDMA CM communication QP and the
 * test QP connected through the CM, for every test; and a client with nobody listening.
 */
import { roce } from '../support/cli';

function cmd(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  return roce('perftest', ...argv);
}

const later = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The server on sim-b, then (once it listens) the client on sim-a, both with -R. */
async function pair(verb: string, extra: string[], port: number) {
  const common = ['-R', '--driver', 'memory', '-p', String(port), '--json', '--timeout', '20', ...extra];
  const s = cmd(verb, '--dev', 'sim-b', ...common);
  await later(20);
  const c = cmd(verb, '198.18.0.2', '--dev', 'sim-a', ...common);
  const [sr, cr] = await Promise.all([s, c]);
  return { sr, cr, s: JSON.parse(sr.out) as Record<string, unknown>, c: JSON.parse(cr.out) as Record<string, unknown> };
}

const CASES: [string, boolean, string[]][] = [
  ['write', false, ['-s', '4096', '-n', '50', '--verify']],
  ['read', false, ['-s', '4096', '-n', '50', '--verify']],
  ['send', false, ['-s', '2048', '-n', '50', '--verify']],
  ['atomic', false, ['-n', '50', '--verify']],
  ['write', true, ['-n', '20', '--verify']],
  ['read', true, ['-n', '20', '--verify']],
  ['send', true, ['-n', '20', '--verify']],
];

test.each(CASES.map(([v, l, x], i) => [`${v} ${l ? 'lat' : 'bw'}`, v, l, x, 18600 + i] as const))(
  '-R %s: both ends complete over the RDMA CM',
  async (_name, verb, lat, extra, port) => {
    const { sr, cr, s, c } = await pair(verb, lat ? ['--lat', ...extra] : extra, port);
    expect([cr.err, sr.err]).toEqual(['', '']);
    expect([cr.code, sr.code]).toEqual([0, 0]);
    for (const r of [s, c]) {
      expect(r).toMatchObject({ ok: true, rdmaCm: true, test: `ib_${verb}_${lat ? 'lat' : 'bw'}`, driver: 'memory', virtualTime: true });
      expect((r['verify'] as { mismatches: number }).mismatches).toBe(0);
    }
    // The QPNs each side learnt from the key messages are the peer's own, and the PSNs the CM set.
    const cl = c['local'] as Record<string, number>;
    const sl = s['local'] as Record<string, number>;
    expect((c['remote'] as Record<string, number>)['qpn']).toBe(sl['qpn']);
    expect((s['remote'] as Record<string, number>)['qpn']).toBe(cl['qpn']);
    // versions (16), sys data (4 + 4), MTU (2), then 56-byte struct pingpong_dest key messages.
    const oob = c['oob'] as Record<string, number>;
    expect(oob['messagesOut']).toBe(oob['messagesIn']);
    if (lat) expect((c['latencyUs'] as Record<string, number>)['p50']).toBeGreaterThan(0);
    else expect(c['gbps'] as number).toBeGreaterThan(0);
  },
  30_000,
);

test('-R text report names the RDMA CM', async () => {
  const common = ['-R', '--driver', 'memory', '-p', '18620', '-n', '20', '--timeout', '20'];
  const s = cmd('write', '--dev', 'sim-b', ...common);
  await later(20);
  const [sr, cr] = await Promise.all([s, cmd('write', '198.18.0.2', '--dev', 'sim-a', ...common)]);
  expect([cr.code, sr.code]).toEqual([0, 0]);
  expect(cr.out).toMatch(/rdma_cm QPs/);
  expect(cr.out).toMatch(/BW average\[MiB\/sec\]/);
}, 30_000);

test('-R with nobody listening on the port: REJECTED (invalid service ID) as a typed error, ok:false, exit 1; the right port then works', async () => {
  // A server on sim-b, on another port: its CM answers the REQ for 18630 with a REJ.
  const server = cmd('write', '-R', '--dev', 'sim-b', '--driver', 'memory', '-p', '18631', '-n', '20', '--json', '--timeout', '20');
  await later(20);
  const r = await cmd('write', '198.18.0.2', '-R', '--dev', 'sim-a', '--driver', 'memory', '-p', '18630', '--json', '--timeout', '5');
  expect(r.code).toBe(1);
  const j = JSON.parse(r.out) as Record<string, unknown>;
  expect(j).toMatchObject({ ok: false, role: 'client', rdmaCm: true, code: 'ROCE_ERR_PERFTEST_REJECTED' });
  expect(j['error']).toMatch(/REJ reason 8/);
  const t = await cmd('write', '198.18.0.2', '-R', '--dev', 'sim-a', '--driver', 'memory', '-p', '18630', '--timeout', '5');
  expect(t.code).toBe(1);
  expect(t.err).toMatch(/RDMA_CM_EVENT_REJECTED, REJ reason 8/);
  const ok = await cmd('write', '198.18.0.2', '-R', '--dev', 'sim-a', '--driver', 'memory', '-p', '18631', '-n', '20', '--json', '--timeout', '20');
  expect(ok.code).toBe(0);
  expect((await server).code).toBe(0);
}, 30_000);

test("-R with no peer at all: UNREACHABLE within the CM's retries, ok:false, exit 1", async () => {
  const r = await cmd('write', '198.18.0.2', '-R', '--dev', 'sim-a', '--driver', 'memory', '-p', '18632', '--json', '--timeout', '5');
  expect(r.code).toBe(1);
  expect(JSON.parse(r.out)).toMatchObject({ ok: false, rdmaCm: true, code: 'ROCE_ERR_PERFTEST_UNREACHABLE' });
  expect(r.err).toMatch(/RDMA_CM_EVENT_UNREACHABLE \(REQ not answered after 15 retries\)/);
}, 30_000);

test('-R usage errors', async () => {
  const r = await cmd('write', 'localhost', '-R', '--dev', 'sim-a', '--driver', 'memory');
  expect(r.code).toBe(2);
  expect(r.err).toMatch(/-R needs SERVER_IP as an IPv4 address/);
});
