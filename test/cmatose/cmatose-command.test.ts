/**
 * `roce cmatose`: both ends as commands in this process over the memory test mode (the in-memory
 * link on the virtual clock): ucmatose's lines and order, -c 4, the echo, -S 0, a request beyond
 * -c refused as ucmatose's server refuses it, a port nobody listens on (REJ reason 8 from the
 * wire), peers that go away (a bounded end with a typed error and ok:false), and usage errors.
 */
import { roce } from '../support/cli';
import { commandContext } from '../../cli/command';
import { run } from '../../cli/main';
import { memoryOutput } from '../../cli/output';
import { RdmaCm, type RdmaCmEvent } from '../../stack/cm/rdma-cm';
import { QpState, QpType } from '../../stack/qp-type-and-state';
import { nextTurn } from '../../apps/host/clock-pump';

function cmd(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  return roce('cmatose', ...argv);
}

const later = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The server on sim-b, then (once it listens) the client on sim-a. */
async function pair(serverArgs: string[], clientArgs: string[]) {
  const s = cmd('-d', 'sim-b', '--driver', 'memory', ...serverArgs);
  await later(20);
  const c = cmd('-s', '198.18.0.2', '-d', 'sim-a', '--driver', 'memory', ...clientArgs);
  return Promise.all([s, c]);
}

const SERVER_LINES = [
  'cmatose: starting server',
  'initiating data transfers',
  'completing sends',
  'receiving data transfers',
  'data transfers complete',
  'cmatose: disconnecting',
  'disconnected',
  'test complete',
  'return status 0',
];
const CLIENT_LINES = [
  'cmatose: starting client',
  'cmatose: connecting',
  'receiving data transfers',
  'sending replies',
  'data transfers complete',
  'test complete',
  'return status 0',
];

test("-c 4: ucmatose's lines on both sides, in its order", async () => {
  const [sr, cr] = await pair(['-c', '4'], ['-c', '4']);
  expect({ code: cr.code, err: cr.err }).toEqual({ code: 0, err: '' });
  expect({ code: sr.code, err: sr.err }).toEqual({ code: 0, err: '' });
  expect(sr.out.trimEnd().split('\n')).toEqual(SERVER_LINES);
  expect(cr.out.trimEnd().split('\n')).toEqual(CLIENT_LINES);
}, 60_000);

test("-c 4 --json: four connections, ten 100-byte messages each way on each, every reply the echo of the server's message", async () => {
  const [sr, cr] = await pair(['-c', '4', '--json'], ['-c', '4', '--json']);
  expect(cr.code).toBe(0);
  expect(sr.code).toBe(0);
  const c = JSON.parse(cr.out) as Record<string, unknown>;
  const s = JSON.parse(sr.out) as Record<string, unknown>;
  expect(c).toMatchObject({ ok: true, test: 'cmatose', role: 'client', connections: 4, messageCount: 10, messageSize: 100, established: 4, driver: 'memory' });
  expect(s).toMatchObject({ ok: true, test: 'cmatose', role: 'server', connections: 4, established: 4, refused: 0, echoed: 4 });
  expect(c['lines']).toEqual(CLIENT_LINES);
  const cc = c['perConnection'] as Array<{
    received: number;
    sent: number;
    local: { qpn: number; port: number };
    remote: { qpn: number; port: number; addr: string };
  }>;
  const sc = s['perConnection'] as typeof cc;
  expect(cc).toHaveLength(4);
  for (const x of [...cc, ...sc]) expect({ received: x.received, sent: x.sent }).toEqual({ received: 10, sent: 10 });
  // Every client QP is paired with one server QP, on port 7471.
  expect(new Set(cc.map((x) => x.remote.qpn))).toEqual(new Set(sc.map((x) => x.local.qpn)));
  expect(new Set(sc.map((x) => x.remote.qpn))).toEqual(new Set(cc.map((x) => x.local.qpn)));
  for (const x of cc) expect(x.remote).toMatchObject({ addr: '198.18.0.2', port: 7471 });
}, 60_000);

test('-S 0: no messages, only the connects and disconnects (create_message() sets the count to 0)', async () => {
  const [sr, cr] = await pair(['-c', '2', '-S', '0', '--json'], ['-c', '2', '-S', '0', '--json']);
  expect(cr.code).toBe(0);
  expect(sr.code).toBe(0);
  const s = JSON.parse(sr.out) as Record<string, unknown>;
  expect(s).toMatchObject({ ok: true, messageCount: 0, established: 2 });
  expect(s['lines']).toEqual(['cmatose: starting server', 'cmatose: disconnecting', 'disconnected', 'test complete', 'return status 0']);
}, 30_000);

test('a client with more connections than the server takes: the extra request is refused (REJ reason 28), the client exits 1 with it', async () => {
  const [sr, cr] = await pair(['-c', '1', '-C', '2', '--json'], ['-c', '2', '-C', '2', '--json', '--timeout', '2']);
  const c = JSON.parse(cr.out) as Record<string, unknown>;
  expect(cr.code).toBe(1);
  expect(c).toMatchObject({ ok: false, test: 'cmatose', role: 'client', code: 'ROCE_ERR_CMATOSE_REJECTED' });
  expect(String(c['error'])).toMatch(/RDMA_CM_EVENT_REJECTED, error: 28 \(REJ reason 28: consumer/i);
  // The server printed ucmatose's line for the refusal; it then served its one connection, whose
  // client went away when it failed: how the server ends depends on when the client's DREQ came.
  const s = JSON.parse(sr.out) as Record<string, unknown>;
  if (sr.code === 0) expect(s).toMatchObject({ refused: 1, established: 1 });
  else expect(s).toMatchObject({ ok: false, code: expect.stringMatching(/^ROCE_ERR_CMATOSE_/) });
}, 30_000);

test('a port nobody listens on: REJECTED with reason 8 from the wire, exit 1, ok:false; text mode says it on stderr', async () => {
  const server = cmd('-d', 'sim-b', '--driver', 'memory', '-p', '7471', '-C', '1', '--json');
  await later(20);
  const cr = await cmd('-s', '198.18.0.2', '-d', 'sim-a', '--driver', 'memory', '-p', '7472', '-c', '4', '--json');
  expect(cr.code).toBe(1);
  const c = JSON.parse(cr.out) as Record<string, unknown>;
  expect(c).toMatchObject({ ok: false, test: 'cmatose', role: 'client', code: 'ROCE_ERR_CMATOSE_REJECTED' });
  expect(c['error']).toMatch(/REJ reason 8: invalid service ID/i);
  const tr = await cmd('-s', '198.18.0.2', '-d', 'sim-a', '--driver', 'memory', '-p', '7472');
  expect(tr.code).toBe(1);
  expect(tr.out).toBe('cmatose: starting client\ncmatose: connecting\n');
  expect(tr.err).toMatch(/^roce cmatose: event: RDMA_CM_EVENT_REJECTED, error: 8 \(REJ reason 8: .+\)\n$/);
  const ok = await cmd('-s', '198.18.0.2', '-d', 'sim-a', '--driver', 'memory', '-p', '7471', '-C', '1');
  expect(ok.code).toBe(0);
  expect((await server).code).toBe(0);
}, 30_000);

/** Peers that are not commands: an RdmaCm on the other end of a testbed of their own context, driven by hand. */
describe('peers that go away', () => {
  const ctx = commandContext(process.env);
  const ours = async (...argv: string[]) => {
    const o = memoryOutput();
    const code = await run(['cmatose', ...argv], o, ctx);
    return { code, out: o.out, err: o.err };
  };
  const until = async (cond: () => boolean): Promise<void> => {
    for (let i = 0; i < 100_000 && !cond(); i++) await nextTurn();
  };

  test("a client that connects and then falls silent: the server's SENDs run out of transport retries, exit 1 with the completion error", async () => {
    const server = ours('-d', 'sim-b', '--driver', 'memory', '-c', '1', '-C', '3', '--json');
    await later(20);
    const host = ctx.testbed.open('sim-a');
    const dev = host.device;
    const rcm = new RdmaCm(dev);
    const pd = dev.allocPd();
    const cq = dev.createCq(8);
    const qp = dev.createQp(pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq });
    const events: RdmaCmEvent[] = [];
    rcm.connect({ dst: '198.18.0.2', port: 7471, qp, param: { responderResources: 1, initiatorDepth: 1, retryCount: 5, rnrRetryCount: 0 } }, (e) =>
      events.push(e),
    );
    await until(() => events.some((e) => e.type === 'ESTABLISHED'));
    // The client's host stops answering: its QP drops everything in the error state, and no DREQ goes out.
    qp.modify({ qpState: QpState.ERR });
    const r = await server;
    rcm.close();
    host.close();
    expect(r.code).toBe(1);
    expect(JSON.parse(r.out)).toMatchObject({ ok: false, test: 'cmatose', role: 'server', code: 'ROCE_ERR_CMATOSE_COMPLETION' });
    expect(JSON.parse(r.out).error).toMatch(/RETRY_EXC_ERR/);
  }, 30_000);

  test('a server that accepts and then falls silent: the client ends at its --timeout with TIMEOUT, ok:false', async () => {
    const host = ctx.testbed.open('sim-b');
    const dev = host.device;
    const rcm = new RdmaCm(dev);
    const pd = dev.allocPd();
    const cq = dev.createCq(16);
    const qp = dev.createQp(pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq });
    const l = rcm.listen(7471, (e) => {
      if (e.type === 'CONNECT_REQUEST') e.id.accept(qp);
    });
    const r = await ours('-s', '198.18.0.2', '-d', 'sim-a', '--driver', 'memory', '-c', '1', '--json', '--timeout', '1');
    l.close();
    rcm.close();
    host.close();
    expect(r.code).toBe(1);
    expect(JSON.parse(r.out)).toMatchObject({ ok: false, test: 'cmatose', role: 'client', code: 'ROCE_ERR_CMATOSE_TIMEOUT' });
    expect(JSON.parse(r.out).error).toMatch(/receiving data transfers/);
  }, 30_000);

  test('a server whose process ends after the connect (its kernel sends the DREQ): the client exits 1 with a protocol error at once', async () => {
    const host = ctx.testbed.open('sim-b');
    const dev = host.device;
    const rcm = new RdmaCm(dev);
    const pd = dev.allocPd();
    const cq = dev.createCq(16);
    const qp = dev.createQp(pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq });
    const l = rcm.listen(7471, (e) => {
      if (e.type === 'CONNECT_REQUEST') e.id.accept(qp);
      if (e.type === 'ESTABLISHED') e.id.disconnect();
    });
    const r = await ours('-s', '198.18.0.2', '-d', 'sim-a', '--driver', 'memory', '-c', '1', '--json', '--timeout', '60');
    l.close();
    rcm.close();
    host.close();
    expect(r.code).toBe(1);
    expect(JSON.parse(r.out)).toMatchObject({ ok: false, code: 'ROCE_ERR_CMATOSE_PROTOCOL' });
    expect(JSON.parse(r.out).error).toMatch(/disconnected connection 0 while receiving \(0 of 10 messages received/);
  }, 30_000);
});

test.each([
  [['-s', '1.2.3.4', '-b', '1.2.3.4'], /-b applies to the server/],
  [['-s', 'fe80::1'], /-s must be an IPv4 address/],
  [['-c', '0', '-d', 'x'], /--connections must be an integer from 1/],
  [['-p', '0', '-d', 'x'], /--port must be an integer from 1/],
  [['-t', '4', '-d', 'x'], /-t applies to the client/],
  [[], /give -d IFACE/],
  [['-s', '1.2.3.4', '--driver', 'memory'], /-d sim-a or -d sim-b is required/],
])('usage error %j', async (argv, msg) => {
  const r = await cmd(...(argv as string[]));
  expect(r.code).toBe(2);
  expect(r.err).toMatch(msg);
});
