/**
 * perftest sessions: the step sequence of each binary, full runs of every
 * binary with both ends in one process (simulated link on a virtual clock,
 * out-of-band exchange over real 127.0.0.1 TCP), a scripted peer that speaks
 * a real ib_write_bw server's bytes, and peers that misbehave.
 */
import { TcpChannel } from '../../apps/oob/tcp-channel';
import { type PerftestVerb, keyMessageCount, perftestBinary, sessionSteps } from '../../apps/oob/perftest-session';
import type { PerftestConfig } from '../../apps/perftest/config';
import type { PerftestResult } from '../../apps/perftest/result';
import { runPerftest } from '../../apps/perftest/run';
import { connectQp, endpointOf } from '../../stack/connect';
import { QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { hx, keyGid, parseKeyGid, pumpedPair, scriptServer, scriptClient } from './support';

describe('step sequences (each binary main())', () => {
  const shape = (verb: PerftestVerb, lat: boolean, role: 'client' | 'server'): string =>
    sessionSteps(verb, lat, role)
      .map((s) =>
        s.kind === 'keys'
          ? 'K'
          : s.kind === 'close'
            ? s.handshake
              ? 'K.'
              : '.'
            : s.kind === 'bw-reports'
              ? 'R'
              : s.kind === 'connect'
                ? 'C'
                : s.kind === 'run'
                  ? 'run'
                  : s.kind === 'post-receives'
                    ? 'rx'
                    : s.kind,
      )
      .join(' ');
  test.each([
    ['write', false, 'client', 'versions sys-data mtu K C K K run K R K.', 5],
    ['write', false, 'server', 'versions sys-data mtu K C K K K R K.', 5],
    ['read', false, 'client', 'versions sys-data mtu K C K K run K R K.', 5],
    ['atomic', false, 'server', 'versions sys-data mtu K C K K K R K.', 5],
    ['send', false, 'client', 'versions sys-data mtu K C K K K run K.', 5],
    ['send', false, 'server', 'versions sys-data mtu K C K K rx K run K.', 5],
    ['write', true, 'client', 'versions sys-data mtu K K C K K run .', 4],
    ['read', true, 'client', 'versions sys-data mtu K K C K K run K.', 5],
    ['read', true, 'server', 'versions sys-data mtu K K C K K K.', 5],
    ['send', true, 'server', 'versions sys-data mtu K C K K rx K run K.', 5],
    ['atomic', true, 'client', 'versions sys-data mtu K K C K K run K.', 5],
    ['atomic', true, 'server', 'versions sys-data mtu K K C K K K.', 5],
  ] as const)('%s lat=%s %s', (verb, lat, role, expected, keys) => {
    expect(shape(verb, lat, role)).toBe(expected);
    expect(keyMessageCount(sessionSteps(verb, lat, role))).toBe(keys);
  });
  test('names', () => {
    expect(perftestBinary('write', false)).toBe('ib_write_bw');
    expect(perftestBinary('send', true)).toBe('ib_send_lat');
    expect(perftestBinary('atomic', true)).toBe('ib_atomic_lat');
    // atomic_lat.c runs read_lat.c's sequence.
    expect(sessionSteps('atomic', true, 'client')).toEqual(sessionSteps('read', true, 'client'));
  });
});

async function runBoth(
  verb: PerftestVerb,
  lat: boolean,
  extra: Partial<PerftestConfig> = {},
  server: Partial<PerftestConfig> = {},
): Promise<{ s: PerftestResult; c: PerftestResult }> {
  const p = pumpedPair();
  const listener = await TcpChannel.listen(0, '127.0.0.1');
  try {
    const base = { verb, lat, stepTimeoutMs: 5000, runTimeoutMs: 10_000, connectTimeoutMs: 5000, ...extra };
    const [s, c] = await Promise.all([
      runPerftest(p.sim.b, { ...base, ...server, role: 'server', listener }),
      runPerftest(p.sim.a, { ...base, role: 'client', server: '127.0.0.1', port: listener.port }),
    ]);
    return { s, c };
  } finally {
    listener.close();
    p.stop();
  }
}

describe('full runs, both ends in this process, with --verify', () => {
  test.each([
    ['write', { iters: 300, size: 1000 }],
    ['write', { iters: 100, size: 65536 }],
    ['read', { iters: 300, size: 1000 }],
    ['send', { iters: 300, size: 3000, mtu: 1024 }],
    ['atomic', { iters: 500 }],
  ] as const)(
    '%s bandwidth %j',
    async (verb, extra) => {
      const { s, c } = await runBoth(verb, false, { ...extra, verify: true });
      expect(c.ok).toBe(true);
      expect(s.ok).toBe(true);
      expect(c.test).toBe(`ib_${verb}_bw`);
      expect(c.messages).toBe(extra.iters);
      expect(s.messages).toBe(c.messages);
      expect(s.bytes).toBe(c.bytes);
      expect(c.bytes).toBe(extra.iters * ('size' in extra ? extra.size : 8));
      expect(c.gbps).toBeGreaterThan(0);
      expect(c.mpps).toBeGreaterThan(0);
      expect(s.verify.bytesChecked + c.verify.bytesChecked).toBeGreaterThan(0);
      expect(s.verify.mismatches + c.verify.mismatches).toBe(0);
      // each side connected to what the other announced
      expect(c.remote.qpn).toBe(s.local.qpn);
      expect(s.remote.psn).toBe(c.local.psn);
      expect(c.remote.rkey).toBe(s.local.rkey);
      expect(c.remote.vaddr).toBe(s.local.vaddr);
      expect(c.remote.gid).toBe('::ffff:198.18.0.2');
      expect(c.mtu).toBe('mtu' in extra ? extra.mtu : 4096);
      expect(s.measured).toBe(verb === 'send' ? 'local' : 'peer-report');
      expect(c.remote.outReads).toBe(verb === 'read' || verb === 'atomic' ? 128 : 1);
    },
    20_000,
  );

  test.each([['write'], ['read'], ['send'], ['atomic']] as const)(
    '%s latency',
    async (verb) => {
      const { s, c } = await runBoth(verb, true, { iters: 200, verify: true });
      expect(c.ok && s.ok).toBe(true);
      expect(c.test).toBe(`ib_${verb}_lat`);
      const l = c.latencyUs;
      expect(l).not.toBeNull();
      if (l === null) return;
      expect(l.p50).toBeGreaterThan(2); // one-way: at least the 2 us of the simulated link
      expect(l.p99).toBeGreaterThanOrEqual(l.p50);
      expect(l.max).toBeGreaterThanOrEqual(l.p99);
      expect(c.verify.bytesChecked).toBeGreaterThan(0);
      expect(c.verify.mismatches + s.verify.mismatches).toBe(0);
      if (verb === 'read' || verb === 'atomic') expect(s.measured).toBe('none');
      // ib_atomic_lat --verify: each fetch-and-add returned the count before it (200 checks), and the server's slot holds 200.
      if (verb === 'atomic') expect([c.verify.bytesChecked, s.verify.bytesChecked]).toEqual([200 * 8, 8]);
      if (verb !== 'read' && verb !== 'atomic') expect(s.messages).toBe(200);
    },
    20_000,
  );

  test('the smaller MTU wins; a CMP_AND_SWAP run leaves the target unchanged', async () => {
    const { s, c } = await runBoth('atomic', false, { iters: 50, verify: true, atomicType: 'CMP_AND_SWAP', mtu: 4096 }, { mtu: 512 });
    expect(c.mtu).toBe(512);
    expect(s.mtu).toBe(512);
    expect(s.ok && c.ok).toBe(true);
  }, 20_000);

  test('--dont_xchg_versions on both ends skips the first three exchanges', async () => {
    const { s, c } = await runBoth('write', false, { iters: 20, size: 64, dontXchgVersions: true });
    expect(c.ok && s.ok).toBe(true);
    expect(c.oob.messagesOut).toBe(14 - 4);
  }, 20_000);
});

describe('against a scripted ib_write_bw server (perftest 6.29 bytes)', () => {
  test('every message of the client is what perftest expects, and the test runs', async () => {
    const p = pumpedPair();
    const srv = await scriptServer();
    // The scripted server's RoCE side: a QP and a buffer on device B, as ctx_init makes them.
    const dev = p.sim.b;
    const pd = dev.allocPd();
    const buf = new Uint8Array(2 * 65536);
    const mr = dev.regMr(pd, buf, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
    const cq = dev.createCq(16);
    const qp = dev.createQp(pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq });
    const myPsn = 0x2f1a9c;
    const myKey = keyGid({ outReads: 1, qpn: qp.qpNum, psn: myPsn, rkey: mr.rkey, vaddr: mr.addr(65536), gid: dev.gids[1] as Uint8Array });
    const script = (async () => {
      const peer = await srv.peer;
      const v = await peer.read(16);
      expect(v.toString('latin1')).toBe(`6.06${'\0'.repeat(12)}`);
      peer.write('6.29'.padEnd(16, '\0'));
      expect((await peer.read(4)).toString('hex')).toBe('00001000');
      peer.write(Buffer.from('00002000', 'hex')); // this server has 8 KiB pages: both use the larger
      expect((await peer.read(4)).toString('hex')).toBe('00000040');
      peer.write(Buffer.from('00000080', 'hex'));
      expect((await peer.read(2)).toString('latin1')).toBe('5\0'); // 4096: what the simulated link carries
      peer.write('3\0'); // 1024
      const k1 = parseKeyGid(await peer.read(108));
      expect(k1.outReads).toBe(1);
      expect(k1.gid).toEqual(Array.from(p.sim.a.gids[1] as Uint8Array));
      peer.write(myKey);
      connectQp(
        qp,
        { ...endpointOf(dev, qp, myPsn), mac: dev.driver.mac },
        { qpn: k1.qpn, psn: k1.psn, gid: Uint8Array.from(k1.gid), mac: p.sim.a.driver.mac },
        { pathMtu: 3 },
      );
      for (let i = 0; i < 2; i++) {
        expect(parseKeyGid(await peer.read(108))).toEqual(k1);
        peer.write(myKey);
      }
      expect(parseKeyGid(await peer.read(108))).toEqual(k1); // client finished
      peer.write(myKey);
      const size = await peer.read(8);
      peer.write(Buffer.alloc(8, 0xcc)); // a perftest server's report is an uninitialised struct
      const iters = await peer.read(8);
      peer.write(Buffer.alloc(8, 0xcc));
      const fields: number[] = [];
      for (let i = 0; i < 3; i++) {
        fields.push((await peer.read(8)).readDoubleBE(0));
        peer.write(Buffer.alloc(8, 0xcc));
      }
      expect(parseKeyGid(await peer.read(108))).toEqual(k1); // ctx_close_connection
      peer.write(myKey);
      peer.close();
      return { size: size.readBigUInt64BE(0), iters: iters.readBigUInt64BE(0), fields, k1 };
    })();
    try {
      const [c, s] = await Promise.all([
        runPerftest(p.sim.a, {
          verb: 'write',
          lat: false,
          role: 'client',
          server: '127.0.0.1',
          port: srv.port,
          iters: 100,
          size: 2048,
          verify: true,
          stepTimeoutMs: 5000,
          runTimeoutMs: 10_000,
        }),
        script,
      ]);
      expect(c.ok).toBe(true);
      expect(c.peerVersion).toBe('6.29');
      expect(c.mtu).toBe(1024);
      expect(s.size).toBe(2048n);
      expect(s.iters).toBe(100n);
      const [peak, avg, rate] = s.fields as [number, number, number];
      expect(rate).toBeCloseTo(c.mpps, 3);
      expect(avg).toBeCloseTo((c.mpps * 1e6 * 2048) / 0x100000, 0); // MB/s, perftest's default unit
      expect(peak).toBeGreaterThan(0);
      // 8 KiB cycle buffer, 2 KiB messages: four slots, every one written
      for (let slot = 0; slot < 4; slot++) expect(buf.subarray(65536 + slot * 2048, 65536 + slot * 2048 + 2048).some((b) => b !== 0)).toBe(true);
      expect(c.remote.qpn).toBe(qp.qpNum);
      expect(c.remote.psn).toBe(myPsn);
      expect(c.remote.vaddr).toBe(`0x${hx(mr.addr(65536), 1)}`);
    } finally {
      srv.close();
      p.stop();
    }
  }, 20_000);
});

describe('peers that misbehave get a clear error naming the field, never a hang', () => {
  // Timers long enough that a peer's scripted answer, late on a loaded machine, is still an answer:
  // each test expects the error its peer's misbehaviour gives, not a timeout. The silent peer's
  // test sets short ones.
  const client = (port: number, o: Partial<PerftestConfig> = {}): Promise<PerftestResult> => {
    const p = pumpedPair();
    return runPerftest(p.sim.a, {
      verb: 'write',
      lat: false,
      role: 'client',
      server: '127.0.0.1',
      port,
      iters: 10,
      stepTimeoutMs: 5000,
      runTimeoutMs: 10_000,
      ...o,
    }).finally(() => p.stop());
  };
  async function fails(run: Promise<unknown>): Promise<Error & { code?: string; field?: string }> {
    try {
      await run;
    } catch (e) {
      return e as Error & { code?: string; field?: string };
    }
    throw new Error('expected a failure');
  }

  test('a version that is not a number', async () => {
    const srv = await scriptServer();
    void srv.peer.then(async (peer) => {
      await peer.read(16);
      peer.write('perftest!'.padEnd(16, '\0'));
    });
    const e = await fails(client(srv.port));
    expect(e.code).toBe('ROCE_ERR_OOB_MALFORMED');
    expect(e.field).toBe('version');
    srv.close();
  });

  test('a version older than 5.70', async () => {
    const srv = await scriptServer();
    void srv.peer.then(async (peer) => {
      await peer.read(16);
      peer.write('5.60'.padEnd(16, '\0'));
    });
    const e = await fails(client(srv.port));
    expect(e.code).toBe('ROCE_ERR_OOB_INCOMPATIBLE');
    expect(e.message).toMatch(/older than 5.70/);
    srv.close();
  });

  test('a peer that closes in the middle of its key message', async () => {
    const srv = await scriptServer();
    void srv.peer.then(async (peer) => {
      await peer.read(16);
      peer.write('6.29'.padEnd(16, '\0'));
      await peer.read(4);
      peer.write(Buffer.from('00001000', 'hex'));
      await peer.read(4);
      peer.write(Buffer.from('00000040', 'hex'));
      await peer.read(2);
      peer.write('5\0');
      await peer.read(108);
      peer.write('0000:0001:000011:');
      peer.close();
    });
    const e = await fails(client(srv.port));
    expect(e.code).toBe('ROCE_ERR_OOB_CLOSED');
    expect(e.message).toMatch(/after 17 of 108 bytes of perftest key message \(exchange QP attributes\)/);
    srv.close();
  });

  test('a peer whose QPN changes between key messages', async () => {
    const p = pumpedPair();
    const srv = await scriptServer();
    const gid = p.sim.b.gids[1] as Uint8Array;
    void srv.peer.then(async (peer) => {
      await peer.read(16);
      peer.write('6.29'.padEnd(16, '\0'));
      await peer.read(4);
      peer.write(Buffer.from('00001000', 'hex'));
      await peer.read(4);
      peer.write(Buffer.from('00000040', 'hex'));
      await peer.read(2);
      peer.write('5\0');
      await peer.read(108);
      peer.write(keyGid({ outReads: 1, qpn: 0x11, psn: 5, rkey: 0x100, vaddr: 0x1000n, gid }));
      await peer.read(108);
      peer.write(keyGid({ outReads: 1, qpn: 0x12, psn: 5, rkey: 0x100, vaddr: 0x1000n, gid }));
    });
    const e = await fails(
      runPerftest(p.sim.a, {
        verb: 'write',
        lat: false,
        role: 'client',
        server: '127.0.0.1',
        port: srv.port,
        iters: 10,
        stepTimeoutMs: 5000,
        runTimeoutMs: 10_000,
      }),
    );
    p.stop();
    expect(e.code).toBe('ROCE_ERR_OOB_MALFORMED');
    expect(e.field).toBe('qpn');
    expect(e.message).toMatch(/field qpn changed from 0x11 to 0x12/);
    srv.close();
  });

  test('a silent server times out at the first read', async () => {
    const srv = await scriptServer();
    const t0 = Date.now();
    const e = await fails(client(srv.port, { stepTimeoutMs: 500, runTimeoutMs: 1000 }));
    expect(e.code).toBe('ROCE_ERR_OOB_TIMEOUT');
    expect(e.message).toMatch(/perftest version/);
    // Ended by its own timer (500 ms), far inside the 5 s the other tests' peers are given.
    expect(Date.now() - t0).toBeLessThan(5000);
    srv.close();
  });

  test('a client that sends a garbage MTU to our server', async () => {
    const p = pumpedPair();
    const listener = await TcpChannel.listen(0, '127.0.0.1');
    const run = runPerftest(p.sim.b, { verb: 'read', lat: false, role: 'server', listener, stepTimeoutMs: 5000, runTimeoutMs: 10_000 });
    const peer = await scriptClient(listener.port);
    peer.write('6.29'.padEnd(16, '\0'));
    await peer.read(16);
    peer.write(Buffer.from('00001000', 'hex'));
    await peer.read(4);
    peer.write(Buffer.from('00000040', 'hex'));
    await peer.read(4);
    peer.write('x\0');
    const e = await fails(run);
    expect(e.code).toBe('ROCE_ERR_OOB_MALFORMED');
    expect(e.field).toBe('mtu');
    listener.close();
    p.stop();
  });

  test('two different binaries (write_bw client, send_bw server) fail instead of hanging', async () => {
    const p = pumpedPair();
    const listener = await TcpChannel.listen(0, '127.0.0.1');
    const t0 = Date.now();
    const o = { lat: false, iters: 10, size: 64, stepTimeoutMs: 400, runTimeoutMs: 800, connectTimeoutMs: 2000 } as const;
    const [s, c] = await Promise.allSettled([
      runPerftest(p.sim.b, { ...o, verb: 'send', role: 'server', listener }),
      runPerftest(p.sim.a, { ...o, verb: 'write', role: 'client', server: '127.0.0.1', port: listener.port }),
    ]);
    expect(s.status).toBe('rejected');
    expect(c.status).toBe('rejected');
    expect(Date.now() - t0).toBeLessThan(5000);
    listener.close();
    p.stop();
  }, 10_000);
});
