/** rc_pingpong sessions: both ends in this process, a scripted ibv_rc_pingpong server, and peers that misbehave. */
import { TcpChannel } from '../../apps/oob/tcp-channel';
import { runPingpong, type PingpongConfig, type PingpongResult } from '../../apps/pingpong/pingpong';
import { connectQp } from '../../stack/connect';
import { QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import { nextTurn } from '../../apps/host/clock-pump';
import { hx, pumpedPair, scriptClient, scriptServer } from './support';

async function runBoth(extra: Partial<PingpongConfig> = {}): Promise<{ s: PingpongResult; c: PingpongResult }> {
  const p = pumpedPair(7);
  const listener = await TcpChannel.listen(0, '127.0.0.1');
  try {
    const base = { stepTimeoutMs: 5000, runTimeoutMs: 10_000, connectTimeoutMs: 5000, ...extra };
    const [s, c] = await Promise.all([
      runPingpong(p.sim.b, { ...base, role: 'server', listener }),
      runPingpong(p.sim.a, { ...base, role: 'client', server: '127.0.0.1', port: listener.port }),
    ]);
    return { s, c };
  } finally {
    listener.close();
    p.stop();
  }
}

test('defaults of the tool: 4096-byte messages, MTU 1024; both ends agree', async () => {
  const { s, c } = await runBoth({ iters: 200 });
  for (const r of [s, c]) {
    expect(r.ok).toBe(true);
    expect(r.msgSize).toBe(4096);
    expect(r.mtu).toBe(1024);
    expect(r.bytes).toBe(4096 * 200 * 2);
    expect(r.messages).toBe(400);
    expect(r.gbps).toBeGreaterThan(0);
    expect(r.latencyUs?.p50).toBeGreaterThan(4); // a round trip over a 2 us link
  }
  expect(c.remote.qpn).toBe(s.local.qpn);
  expect(s.remote.psn).toBe(c.local.psn);
  expect(c.remote.gid).toBe('::ffff:198.18.0.2');
}, 20_000);

test('more iterations than receives posted: receives are re-posted as the tool does', async () => {
  const { s, c } = await runBoth({ iters: 300, rxDepth: 16, size: 100, mtu: 256 });
  expect(s.ok && c.ok).toBe(true);
  expect(c.messages).toBe(600);
}, 20_000);

test('against a scripted ibv_rc_pingpong server: byte-exact exchange, then the traffic', async () => {
  const p = pumpedPair(9);
  const srv = await scriptServer();
  const dev = p.sim.b;
  const pd = dev.allocPd();
  const buf = new Uint8Array(512);
  const mr = dev.regMr(pd, buf, Access.LOCAL_WRITE);
  const cq = dev.createCq(64);
  const qp = dev.createQp(pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq });
  const iters = 20;
  const script = (async () => {
    const peer = await srv.peer;
    const msg = (await peer.read(52)).toString('latin1');
    const m = /^0000:([0-9a-f]{6}):([0-9a-f]{6}):([0-9a-f]{32})\0$/.exec(msg);
    expect(m).not.toBeNull();
    const gid = Buffer.from((m as RegExpExecArray)[3] as string, 'hex');
    expect(Array.from(gid)).toEqual(Array.from(p.sim.a.gids[1] as Uint8Array));
    connectQp(
      qp,
      { qpn: qp.qpNum, psn: 0x84590b, gid: dev.gids[1] as Uint8Array, mac: dev.driver.mac },
      {
        qpn: parseInt((m as RegExpExecArray)[1] as string, 16),
        psn: parseInt((m as RegExpExecArray)[2] as string, 16),
        gid: Uint8Array.from(gid),
        mac: p.sim.a.driver.mac,
      },
      { pathMtu: 3, maxRdAtomic: 1, maxDestRdAtomic: 1 },
    );
    for (let i = 0; i < iters; i++) qp.postRecv({ wrId: 2, sgList: [mr.sge(0, 512)] });
    peer.write(`0000:${hx(qp.qpNum, 6)}:84590b:${Buffer.from(dev.gids[1] as Uint8Array).toString('hex')}\0`);
    expect((await peer.read(5)).toString('latin1')).toBe('done\0');
    peer.close();
    // echo every message back, as the C server's loop does
    let echoed = 0;
    while (echoed < iters) {
      const wcs = cq.poll(4);
      for (const wc of wcs) {
        expect(wc.status).toBe(0);
        if (wc.wrId === 2n) {
          qp.postSend({ wrId: 1, opcode: WrOpcode.SEND, sgList: [mr.sge(0, 512)], sendFlags: SendFlags.SIGNALED });
          echoed++;
        }
      }
      if (wcs.length === 0) await nextTurn();
    }
    return echoed;
  })();
  try {
    const [c, echoed] = await Promise.all([
      runPingpong(p.sim.a, { role: 'client', server: '127.0.0.1', port: srv.port, iters, size: 512, stepTimeoutMs: 5000, runTimeoutMs: 10_000 }),
      script,
    ]);
    expect(echoed).toBe(iters);
    expect(c.ok).toBe(true);
    expect(c.remote.psn).toBe(0x84590b);
    expect(c.remote.qpn).toBe(qp.qpNum);
  } finally {
    srv.close();
    p.stop();
  }
}, 20_000);

async function fails(run: Promise<unknown>): Promise<Error & { code?: string; field?: string }> {
  try {
    await run;
  } catch (e) {
    return e as Error & { code?: string; field?: string };
  }
  throw new Error('expected a failure');
}

test('a server answering with a malformed message: the field is named', async () => {
  const p = pumpedPair();
  const srv = await scriptServer();
  void srv.peer.then(async (peer) => {
    await peer.read(52);
    peer.write('0000:000011:zz590b:00000000000000000000ffffc6120002\0');
  });
  const e = await fails(runPingpong(p.sim.a, { role: 'client', server: '127.0.0.1', port: srv.port, stepTimeoutMs: 1000 }));
  expect(e.code).toBe('ROCE_ERR_OOB_MALFORMED');
  expect(e.field).toBe('psn');
  srv.close();
  p.stop();
});

test('a server run without -g (all-zero GID): a clear error instead of an unreachable QP', async () => {
  const p = pumpedPair();
  const srv = await scriptServer();
  void srv.peer.then(async (peer) => {
    await peer.read(52);
    peer.write(`0000:000011:00abcd:${'0'.repeat(32)}\0`);
  });
  const e = await fails(runPingpong(p.sim.a, { role: 'client', server: '127.0.0.1', port: srv.port, stepTimeoutMs: 1000 }));
  expect(e.field).toBe('gid');
  expect(e.message).toMatch(/run the peer with -g/);
  srv.close();
  p.stop();
});

test('a client that does not say "done" properly, or goes silent', async () => {
  const p = pumpedPair();
  const listener = await TcpChannel.listen(0, '127.0.0.1');
  const run = runPingpong(p.sim.b, { role: 'server', listener, stepTimeoutMs: 300 });
  const peer = await scriptClient(listener.port);
  peer.write(`0000:000011:00abcd:00000000000000000000ffffc6120001\0`);
  await peer.read(52);
  peer.write('dome\0');
  const e = await fails(run);
  expect(e.field).toBe('done');

  const run2 = runPingpong(p.sim.b, { role: 'server', listener, stepTimeoutMs: 300 });
  const peer2 = await scriptClient(listener.port);
  peer2.write('0000:0000');
  const e2 = await fails(run2);
  expect(e2.code).toBe('ROCE_ERR_OOB_TIMEOUT');
  expect(e2.message).toMatch(/rc_pingpong address message .*\(9 of 52 bytes arrived\)/);
  peer2.close();
  listener.close();
  p.stop();
});
