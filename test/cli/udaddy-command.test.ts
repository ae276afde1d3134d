/**
 * `roce udaddy`: both ends as commands in this process over the memory test mode (the in-memory
 * link on the virtual clock): udaddy's lines and exchange, --json, -c and -C/-S, a server that
 * refuses (SIDR_REP status 2), a port nobody listens on (status 1), an unanswered SIDR_REQ
 * (the CM's retries, then -ETIMEDOUT), and usage errors.
 */
import { roce } from '../support/cli';

function cmd(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  return roce('udaddy', ...argv);
}

const later = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The server on sim-b, then (once it listens) the client on sim-a. */
async function pair(serverArgs: string[], clientArgs: string[]) {
  const s = cmd('-d', 'sim-b', '--driver', 'memory', ...serverArgs);
  await later(20);
  const c = cmd('-s', '198.18.0.2', '-d', 'sim-a', '--driver', 'memory', ...clientArgs);
  return Promise.all([s, c]);
}

test("defaults: udaddy's lines on both sides, ten datagrams of 100 bytes each way", async () => {
  const [sr, cr] = await pair([], []);
  expect(cr.err).toBe('');
  expect(sr.err).toBe('');
  expect(cr.code).toBe(0);
  expect(sr.code).toBe(0);
  expect(cr.out).toBe(
    [
      'udaddy: starting client',
      'udaddy: connecting',
      'initiating data transfers',
      'receiving data transfers',
      'data transfers complete',
      'test complete',
      'return status 0',
      '',
    ].join('\n'),
  );
  expect(sr.out).toBe(
    ['udaddy: starting server', 'receiving data transfers', 'sending replies', 'data transfers complete', 'test complete', 'return status 0', ''].join('\n'),
  );
}, 30_000);

test("--json: a summary per side with both ends' QPNs and Q_Keys and udaddy's lines", async () => {
  const [sr, cr] = await pair(['--json'], ['--json']);
  expect(cr.code).toBe(0);
  expect(sr.code).toBe(0);
  const c = JSON.parse(cr.out) as Record<string, unknown>;
  const s = JSON.parse(sr.out) as Record<string, unknown>;
  expect(c).toMatchObject({
    ok: true,
    test: 'udaddy',
    role: 'client',
    port: 7174,
    connections: 1,
    messageCount: 10,
    messageSize: 100,
    returnStatus: 0,
    connected: 1,
    driver: 'memory',
    virtualTime: true,
  });
  expect(s).toMatchObject({ ok: true, test: 'udaddy', role: 'server', returnStatus: 0, connected: 1, rejected: 0 });
  const [cn] = c['nodes'] as {
    local: { addr: string; port: number; qpn: number; qkey: number };
    remote: { addr: string; port: number; qpn: number; qkey: number };
  }[];
  const [sn] = s['nodes'] as (typeof cn)[];
  expect(cn?.remote).toEqual({ addr: '198.18.0.2', port: 7174, qpn: sn?.local.qpn, qkey: 0x01234567 });
  expect(sn?.remote).toEqual({ addr: '198.18.0.1', port: cn?.local.port, qpn: cn?.local.qpn, qkey: 0x01234567 });
  expect(sn?.local).toMatchObject({ addr: '198.18.0.2', port: 7174 });
  expect(c['lines']).toEqual([
    'udaddy: starting client',
    'udaddy: connecting',
    'initiating data transfers',
    'receiving data transfers',
    'data transfers complete',
    'test complete',
    'return status 0',
  ]);
}, 30_000);

test('-c 2 -C 3 -S 4096 (the MTU): two connections, each with its own QP, three datagrams each way', async () => {
  const [sr, cr] = await pair(['-c', '2', '-C', '3', '-S', '4096', '--json'], ['-c', '2', '-C', '3', '-S', '4096', '--json']);
  expect(cr.code).toBe(0);
  expect(sr.code).toBe(0);
  const c = JSON.parse(cr.out) as { connected: number; nodes: { received: number; receivedBytes: number; remote: { qpn: number } }[] };
  const s = JSON.parse(sr.out) as { connected: number; nodes: { received: number; sent: number; local: { qpn: number } }[] };
  expect(c.connected).toBe(2);
  expect(s.connected).toBe(2);
  expect(c.nodes.map((n) => [n.received, n.receivedBytes])).toEqual([
    [3, 3 * 4136],
    [3, 3 * 4136],
  ]);
  expect(c.nodes.map((n) => n.remote.qpn).sort()).toEqual(s.nodes.map((n) => n.local.qpn).sort());
  expect(new Set(s.nodes.map((n) => n.local.qpn)).size).toBe(2);
}, 30_000);

test('-S 0: no messages (create_message() sets the count to 0), only the resolution', async () => {
  const [sr, cr] = await pair(['-S', '0'], ['-S', '0']);
  expect(cr.code).toBe(0);
  expect(sr.code).toBe(0);
  expect(cr.out).toBe(['udaddy: starting client', 'udaddy: connecting', 'test complete', 'return status 0', ''].join('\n'));
  expect(sr.out).toBe(['udaddy: starting server', 'test complete', 'return status 0', ''].join('\n'));
}, 30_000);

test('a server that refuses (-S larger than the MTU): SIDR_REP status 2; the client ends UNREACHABLE, status 2, exit 1; the server 0', async () => {
  const [sr, cr] = await pair(['-S', '5000'], ['--json']);
  expect(sr.code).toBe(0);
  expect(sr.out).toBe(
    [
      'udaddy: starting server',
      'udaddy: message_size 5000 is larger than active mtu 4096',
      'udaddy: failing connection request',
      'receiving data transfers',
      'sending replies',
      'data transfers complete',
      'test complete',
      'return status 0',
      '',
    ].join('\n'),
  );
  expect(cr.code).toBe(1);
  expect(JSON.parse(cr.out)).toMatchObject({ ok: false, test: 'udaddy', role: 'client', code: 'ROCE_ERR_UDADDY_UNREACHABLE', returnStatus: 2 });
  expect(cr.err).toBe('roce udaddy: event RDMA_CM_EVENT_UNREACHABLE, error: 2 (SIDR_REP status 2 (rejected by the service))\n');
}, 30_000);

test('a client with -S larger than the MTU stops before any SIDR_REQ: status -22, exit 1', async () => {
  const r = await cmd('-s', '198.18.0.2', '-d', 'sim-a', '--driver', 'memory', '-S', '5000');
  expect(r.code).toBe(1);
  expect(r.out).toBe(
    [
      'udaddy: starting client',
      'udaddy: connecting',
      'udaddy: message_size 5000 is larger than active mtu 4096',
      'test complete',
      'return status -22',
      '',
    ].join('\n'),
  );
  expect(r.err).toMatch(/^roce udaddy: message_size 5000 is larger than active mtu 4096\n$/);
});

test("a port nobody listens on: the server's CM answers SIDR_REP status 1; exit 1; the right port then works", async () => {
  const server = cmd('-d', 'sim-b', '--driver', 'memory', '--json');
  await later(20);
  const cr = await cmd('-s', '198.18.0.2', '-d', 'sim-a', '--driver', 'memory', '--port', '7175');
  expect(cr.code).toBe(1);
  expect(cr.out).toBe(
    ['udaddy: starting client', 'udaddy: connecting', 'udaddy: event: RDMA_CM_EVENT_UNREACHABLE, error: 1', 'test complete', 'return status 1', ''].join('\n'),
  );
  expect(cr.err).toMatch(/SIDR_REP status 1 \(service ID not supported\)/);
  const ok = await cmd('-s', '198.18.0.2', '-d', 'sim-a', '--driver', 'memory');
  expect(ok.code).toBe(0);
  expect((await server).code).toBe(0);
}, 30_000);

test("nobody at all: the SIDR_REQ goes unanswered through the CM's retries, then UNREACHABLE -110, ok:false, exit 1", async () => {
  const r = await cmd('-s', '198.18.0.2', '-d', 'sim-a', '--driver', 'memory', '--json');
  expect(r.code).toBe(1);
  const j = JSON.parse(r.out) as Record<string, unknown>;
  expect(j).toMatchObject({ ok: false, test: 'udaddy', role: 'client', code: 'ROCE_ERR_UDADDY_UNREACHABLE', returnStatus: -110 });
  expect(j['error']).toBe('event RDMA_CM_EVENT_UNREACHABLE, error: -110 (SIDR_REQ not answered after 15 retries)');
}, 30_000);

test('an address nobody answers for: exit 1, no neighbour, before any CM message', async () => {
  const r = await cmd('-s', '198.18.0.9', '-d', 'sim-a', '--driver', 'memory', '--json');
  expect(r.code).toBe(1);
  expect(JSON.parse(r.out)).toMatchObject({ ok: false, test: 'udaddy', role: 'client', code: 'ROCE_ERR_HOST_NO_NEIGHBOR' });
});

test('-b must be an address of the device: udaddy\'s "bind address failed", status -1', async () => {
  const r = await cmd('-b', '198.18.0.1', '-d', 'sim-b', '--driver', 'memory', '--json');
  expect(r.code).toBe(1);
  expect(JSON.parse(r.out)).toMatchObject({ ok: false, role: 'server', code: 'ROCE_ERR_UDADDY_CONFIG', returnStatus: -1 });
});

test.each([
  [['-s', 'fe80::1'], /-s must be an IPv4 address/],
  [['-b', 'host'], /-b must be an IPv4 address/],
  [['-s', '1.2.3.4', '-p', '0x2'], /only the UDP port space \(0x111\)/],
  [['-s', '1.2.3.4', '-P', 'ipoib'], /only the udp port space/],
  [['-s', '1.2.3.4', '-c', '0'], /--connections must be an integer from 1/],
  [['-s', '1.2.3.4', '-t', '256'], /--tos must be an integer from 0 to 255/],
  [['-s', '1.2.3.4', '--port', '0'], /--port must be an integer from 1/],
  [[], /give -b ADDR or -d IFACE/],
  [['-s', '1.2.3.4', '--driver', 'memory'], /-d sim-a or -d sim-b is required/],
])('usage error %j', async (argv, msg) => {
  const r = await cmd(...(argv as string[]));
  expect(r.code).toBe(2);
  expect(r.err).toMatch(msg);
});

test("-p 0x111 and -P udp are accepted (udaddy's default port space)", async () => {
  const [sr, cr] = await pair(['-p', '0x111', '-C', '1'], ['-P', 'udp', '-C', '1', '-t', '0x20']);
  expect(cr.code).toBe(0);
  expect(sr.code).toBe(0);
}, 30_000);
