/**
 * `roce rdma-server` and `roce rdma-client`: both ends as commands in this process over the memory
 * test mode (the in-memory link on the virtual clock): the tools' lines, the 16-byte exchange
 * (inline SENDs of the zeroed static buffers), what rdma_connect(NULL)/rdma_accept(NULL) offer, a
 * port nobody listens on (REJ reason 8 from the wire), peers that go away (a bounded end with a
 * typed error and ok:false), and usage errors.
 */
import { roce } from '../support/cli';
import { commandContext } from '../../cli/command';
import { run } from '../../cli/main';
import { memoryOutput } from '../../cli/output';
import { RdmaCm, type RdmaCmEvent } from '../../stack/cm/rdma-cm';
import { QpState, QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import { nextTurn } from '../../apps/host/clock-pump';

const later = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const ZERO16 = '00'.repeat(16);

async function pair(serverArgs: string[], clientArgs: string[]) {
  const s = roce('rdma-server', '-d', 'sim-b', '--driver', 'memory', ...serverArgs);
  await later(20);
  const c = roce('rdma-client', '-s', '198.18.0.2', '-d', 'sim-a', '--driver', 'memory', ...clientArgs);
  return Promise.all([s, c]);
}

test("the exchange: the tools' lines, exit 0 on both sides", async () => {
  const [sr, cr] = await pair([], []);
  expect({ code: cr.code, out: cr.out, err: cr.err }).toEqual({ code: 0, out: 'rdma_client: start\nrdma_client: end 0\n', err: '' });
  expect({ code: sr.code, out: sr.out, err: sr.err }).toEqual({ code: 0, out: 'rdma_server: start\nrdma_server: end 0\n', err: '' });
}, 30_000);

test('--json: 16 zero bytes each way, inline; the client offers 128/128 (rdma_connect(NULL)), the server accepts with what was offered', async () => {
  const [sr, cr] = await pair(['--json'], ['--json']);
  expect(cr.code).toBe(0);
  expect(sr.code).toBe(0);
  const c = JSON.parse(cr.out) as Record<string, unknown>;
  const s = JSON.parse(sr.out) as Record<string, unknown>;
  expect(c).toMatchObject({
    ok: true,
    test: 'rdma_client',
    role: 'client',
    port: 7471,
    inline: true,
    sent: ZERO16,
    received: ZERO16,
    responderResources: 128,
    initiatorDepth: 128,
    disconnected: true,
  });
  expect(s).toMatchObject({
    ok: true,
    test: 'rdma_server',
    role: 'server',
    port: 7471,
    inline: true,
    sent: ZERO16,
    received: ZERO16,
    responderResources: 128,
    initiatorDepth: 128,
    disconnected: true,
  });
  const cl = c['local'] as { qpn: number; addr: string };
  const sl = s['local'] as { qpn: number };
  expect((c['remote'] as { qpn: number }).qpn).toBe(sl.qpn);
  expect((s['remote'] as { qpn: number; addr: string }).qpn).toBe(cl.qpn);
  expect((s['remote'] as { addr: string }).addr).toBe('198.18.0.1');
}, 30_000);

test('-p: both ends on another port', async () => {
  const [sr, cr] = await pair(['-p', '20000', '--json'], ['-p', '20000', '--json']);
  expect([sr.code, cr.code]).toEqual([0, 0]);
  expect(JSON.parse(cr.out)).toMatchObject({ ok: true, port: 20000, remote: { port: 20000 } });
}, 30_000);

test('a port nobody listens on: exit 1, REJECTED with reason 8 from the wire (rdma_connect: Connection refused), ok:false', async () => {
  const server = roce('rdma-server', '-d', 'sim-b', '--driver', 'memory', '--json');
  await later(20);
  const cr = await roce('rdma-client', '-s', '198.18.0.2', '-d', 'sim-a', '--driver', 'memory', '-p', '7472', '--json');
  expect(cr.code).toBe(1);
  const c = JSON.parse(cr.out) as Record<string, unknown>;
  expect(c).toMatchObject({ ok: false, test: 'rdma_client', role: 'client', code: 'ROCE_ERR_RDMA_EXAMPLE_REJECTED' });
  expect(c['error']).toMatch(/^rdma_connect: Connection refused \(RDMA_CM_EVENT_REJECTED, REJ reason 8: invalid service ID\)$/i);
  const tr = await roce('rdma-client', '-s', '198.18.0.2', '-d', 'sim-a', '--driver', 'memory', '-p', '7472');
  expect(tr.code).toBe(1);
  expect(tr.out).toBe('rdma_client: start\n');
  expect(tr.err).toMatch(/^roce rdma-client: rdma_connect: Connection refused \(.*REJ reason 8/);
  const ok = await roce('rdma-client', '-s', '198.18.0.2', '-d', 'sim-a', '--driver', 'memory');
  expect(ok.code).toBe(0);
  expect((await server).code).toBe(0);
}, 30_000);

/** Peers that are not commands: an RdmaCm on the other end of a testbed of their own context, driven by hand. */
describe('peers that go away', () => {
  const ctx = commandContext(process.env);
  const ours = async (...argv: string[]) => {
    const o = memoryOutput();
    const code = await run(argv, o, ctx);
    return { code, out: o.out, err: o.err };
  };
  const until = async (cond: () => boolean): Promise<void> => {
    for (let i = 0; i < 100_000 && !cond(); i++) await nextTurn();
  };
  const peer = (end: 'sim-a' | 'sim-b') => {
    const host = ctx.testbed.open(end);
    const dev = host.device;
    const rcm = new RdmaCm(dev);
    const pd = dev.allocPd();
    const cq = dev.createCq(16);
    const qp = dev.createQp(pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq });
    const mr = dev.regMr(pd, new Uint8Array(16), Access.LOCAL_WRITE);
    const events: RdmaCmEvent[] = [];
    return { host, dev, rcm, qp, cq, mr, events, close: () => (rcm.close(), host.close()) };
  };

  test('a client that connects and never sends: the server ends at its --timeout with TIMEOUT, ok:false', async () => {
    const server = ours('rdma-server', '-d', 'sim-b', '--driver', 'memory', '--json', '--timeout', '1');
    await later(20);
    const p = peer('sim-a');
    p.rcm.connect({ dst: '198.18.0.2', port: 7471, qp: p.qp }, (e) => p.events.push(e));
    await until(() => p.events.some((e) => e.type === 'ESTABLISHED'));
    const r = await server;
    p.close();
    expect(r.code).toBe(1);
    expect(JSON.parse(r.out)).toMatchObject({ ok: false, test: 'rdma_server', code: 'ROCE_ERR_RDMA_EXAMPLE_TIMEOUT' });
    expect(JSON.parse(r.out).error).toMatch(/no receive completion within 1000 ms/);
  }, 30_000);

  test("a client that sends and then falls silent: the server's SEND runs out of transport retries, exit 1 with the completion error", async () => {
    const server = ours('rdma-server', '-d', 'sim-b', '--driver', 'memory', '--json', '--timeout', '60');
    await later(20);
    const p = peer('sim-a');
    p.rcm.connect({ dst: '198.18.0.2', port: 7471, qp: p.qp }, (e) => p.events.push(e));
    await until(() => p.events.some((e) => e.type === 'ESTABLISHED'));
    p.qp.postSend({ wrId: 1, opcode: WrOpcode.SEND, sgList: [p.mr.sge(0, 16)], sendFlags: SendFlags.SIGNALED });
    await until(() => p.cq.poll(1).length > 0);
    // Its QP drops everything in the error state, and no DREQ goes out.
    p.qp.modify({ qpState: QpState.ERR });
    const r = await server;
    p.close();
    expect(r.code).toBe(1);
    expect(JSON.parse(r.out)).toMatchObject({ ok: false, code: 'ROCE_ERR_RDMA_EXAMPLE_COMPLETION' });
    expect(JSON.parse(r.out).error).toMatch(/send completion failed .*RETRY_EXC_ERR/);
  }, 30_000);

  test('a server that accepts and disconnects at once: the client exits 1 with a protocol error', async () => {
    const p = peer('sim-b');
    const l = p.rcm.listen(7471, (e) => {
      if (e.type === 'CONNECT_REQUEST') e.id.accept(p.qp);
      if (e.type === 'ESTABLISHED') e.id.disconnect();
    });
    const r = await ours('rdma-client', '-s', '198.18.0.2', '-d', 'sim-a', '--driver', 'memory', '--json', '--timeout', '60');
    l.close();
    p.close();
    expect(r.code).toBe(1);
    expect(JSON.parse(r.out)).toMatchObject({ ok: false, test: 'rdma_client', code: 'ROCE_ERR_RDMA_EXAMPLE_PROTOCOL' });
  }, 30_000);
});

test.each([
  [['rdma-client'], /-s ADDR is required/],
  [['rdma-client', '-s', 'fe80::1'], /-s must be an IPv4 address/],
  [['rdma-client', '-s', '1.2.3.4', '-p', '0'], /--port must be an integer from 1/],
  [['rdma-client', '-s', '1.2.3.4', '--driver', 'memory'], /-d sim-a or -d sim-b is required/],
  [['rdma-server'], /give -d IFACE/],
  [['rdma-server', '-s', 'x'], /-s must be an IPv4 address/],
])('usage error %j', async (argv, msg) => {
  const r = await roce(...(argv as string[]));
  expect(r.code).toBe(2);
  expect(r.err).toMatch(msg);
});
