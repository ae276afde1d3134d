/**
 * The shared NicDriver suite and AF_XDP-specific checks over a veth pair
 * between two network namespaces made for this file, plus the native batched
 * ICRC against packets/icrc.ts. Both driver ends live in this process and
 * reach their namespace through the `netns` option. The XDP program redirects
 * only UDP to port 4791, so the suite's frames are UDP 4791 frames. Skipped
 * with a reason when not root, without `ip netns`, or without the native addon.
 *
 * @group netns
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { icrcV2 } from '../../packets/icrc';
import { WireError } from '../../packets/errors';
import { AfXdpDriver, type AfXdpOptions } from '../../nic-driver/af-xdp-driver';
import { hasRunReceive } from '../../nic-driver/driver';
import {
  NativeErrorCode,
  NicDriverError,
  bpfObjectPath,
  icrcBurst,
  nativeIcrcV2,
  native,
  nativeAvailable,
  nativeDir,
  nativeLoadError,
  netnsPath,
} from '../../nic-driver/native-binding';
import { nativeNetnsSkipReason, netnsDrivers, runInNetns } from '../support/netns';
import { testUnless } from '../support/skip';
import { type FrameKind, netnsDriverSuite, ours, testFrame, udpBetween } from './driver-suite';

const reason = nativeNetnsSkipReason();
const t = testUnless(reason);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const PUMP_MS = 30;

const net = netnsDrivers((ifname, netns, extra: Partial<AfXdpOptions> = {}) => AfXdpDriver.open({ ifname, netns, frames: 512, ...extra }));
const { pair, open } = net;
const udp = (): FrameKind => udpBetween(pair);

function programsOn(side: 'a' | 'b'): string[] {
  const p = pair();
  return native().xdpStatus(side === 'a' ? p.ifA : p.ifB, netnsPath(side === 'a' ? p.nsA : p.nsB)).programs;
}

netnsDriverSuite('AF_XDP', net, reason, PUMP_MS);

describe('AF_XDP driver', () => {
  t('veth: copy mode (no zero-copy there) with the program in native mode; MAC and MTU of the interface', () => {
    const b = open('b');
    expect(b.mode).toBe('copy');
    expect(b.xdpMode).toBe('native');
    expect(b.mac).toBe(pair().macB);
    expect(b.mtu).toBe(1500);
    expect(b.queue).toBe(0);
    expect(programsOn('b')).toEqual(['roce_filter']);
  });

  t("xdpMode 'skb' runs the program in generic mode and still delivers", async () => {
    const a = open('a');
    const b = open('b', { xdpMode: 'skb' });
    expect(b.xdpMode).toBe('skb');
    a.txBurst([testFrame(a, b, 5, 400, udp())]);
    await sleep(PUMP_MS);
    expect(ours(b.rxBurst(64)).length).toBe(1);
  });

  t('descriptor receive (rxRun): the frames as (offset, length) pairs in the UMEM, byte for byte what was sent', async () => {
    const a = open('a');
    const b = open('b');
    expect(hasRunReceive(b)).toBe(true);
    const sent = Array.from({ length: 24 }, (_, i) => testFrame(a, b, i, 60 + i * 53, udp()));
    a.txBurst(sent);
    await sleep(PUMP_MS);
    const desc = new Uint32Array(2 * 64);
    const got: Uint8Array[] = [];
    const frames0 = b.stats.rxFrames;
    for (let n = b.rxRun(64, desc); n > 0; n = b.rxRun(64, desc)) {
      for (let i = 0; i < n; i++) got.push(b.rxRunBuffer.slice(desc[2 * i]!, desc[2 * i]! + desc[2 * i + 1]!));
    }
    const mine = ours(got);
    expect(mine.map((f) => Buffer.from(f).toString('hex'))).toEqual(sent.map((f) => Buffer.from(f).toString('hex')));
    expect(b.stats.rxFrames - frames0).toBe(got.length);
    expect(b.rxRun(64, desc)).toBe(0);
  });

  t("mode 'zerocopy' on veth is a clear NoZeroCopy error, and leaves no program behind", () => {
    expect(() => open('b', { mode: 'zerocopy' })).toThrow(expect.objectContaining({ code: NativeErrorCode.NoZeroCopy }));
    expect(programsOn('b')).toEqual([]);
  });

  t('the kernel still answers ARP and ping, and other UDP ports, with the program attached', async () => {
    const p = pair();
    const a = open('a');
    const b = open('b');
    await runInNetns(p.nsA, 'ip', ['neigh', 'flush', 'dev', p.ifA]);
    const ping = await runInNetns(p.nsA, 'ping', ['-c', '2', '-i', '0.2', '-W', '1', p.ipB], 5000);
    expect(ping.code).toBe(0);
    expect(ping.stdout).toMatch(/2 received/);
    const other = testFrame(a, b, 1, 100, udp());
    other[37] = 0x99; // UDP port 4761: not redirected
    a.txBurst([other, testFrame(a, b, 2, 100, udp())]);
    await sleep(PUMP_MS);
    const got = b.rxBurst(64);
    expect(ours(got).map((f) => (f[36]! << 8) | f[37]!)).toEqual([4791]);
  });

  t('busyPoll: the handler runs from the event-loop spin when frames are there, and only then', async () => {
    const a = open('a');
    const b = open('b', { busyPoll: true });
    let calls = 0;
    const got: Uint8Array[] = [];
    b.setRxHandler(() => {
      calls++;
      for (const f of b.rxBurst(64)) got.push(f.slice());
    });
    await sleep(20);
    expect(calls).toBe(0);
    a.txBurst([testFrame(a, b, 1, 100, udp()), testFrame(a, b, 2, 100, udp())]);
    await sleep(PUMP_MS);
    expect(ours(got)).toHaveLength(2);
    expect(calls).toBeGreaterThanOrEqual(1);
    expect(calls).toBeLessThanOrEqual(2);
    b.setRxHandler(null);
  });

  t('busyPoll on a veth: no recvfrom to drive NAPI on an empty ring (the sender runs it), and every frame still arrives; asked for, it drives it', async () => {
    const a = open('a');
    const b = open('b', { busyPoll: true });
    expect(b.ifDriver).toBe('veth');
    expect(b.napiBusyPoll).toBe(false);
    const got: Uint8Array[] = [];
    b.setRxHandler(() => {
      for (const f of b.rxBurst(64)) got.push(f.slice());
    });
    for (let i = 0; i < 50; i++) expect(b.pollRx()).toBe(false);
    expect(b.rxKicks).toBe(0);
    const sent = Array.from({ length: 20 }, (_, i) => testFrame(a, b, i, 100 + i, udp()));
    for (const f of sent) {
      const before = ours(got).length;
      a.txBurst([f]);
      // Spin on the ring, as the host device's busy-poll wait does, until the frame lands.
      const until = Date.now() + 2000;
      while (ours(got).length === before && Date.now() < until) b.pollRx();
    }
    expect(ours(got).map((f) => Buffer.from(f).toString('hex'))).toEqual(sent.map((f) => Buffer.from(f).toString('hex')));
    expect(b.rxKicks).toBe(0);
    b.setRxHandler(null);
    b.close();
    const forced = open('b', { busyPoll: true, napiBusyPoll: true });
    expect(forced.napiBusyPoll).toBe(true);
    forced.setRxHandler(() => forced.rxBurst(64));
    for (let i = 0; i < 50; i++) forced.pollRx();
    expect(forced.rxKicks).toBeGreaterThanOrEqual(50);
    forced.setRxHandler(null);
    // Without busy-poll the option has no effect: the fd's readiness wakes the process.
    a.close();
    expect(open('a', { napiBusyPoll: true }).napiBusyPoll).toBe(false);
  });

  t(
    'the program attaches under a signal storm (node --cpu-prof sampling every 20 µs), where the verifier used to give up (EAGAIN) and the fallback failed (EBADF)',
    () => {
      const p = pair();
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-xdp-prof-'));
      try {
        const driver = path.resolve(__dirname, '..', '..', 'dist', 'nic-driver', 'af-xdp-driver.js');
        const script = `const { AfXdpDriver } = require(${JSON.stringify(driver)});
        for (let i = 0; i < 4; i++) AfXdpDriver.open({ ifname: ${JSON.stringify(p.ifB)}, netns: ${JSON.stringify(p.nsB)}, frames: 512 }).close();
        process.stdout.write('attached 4 times');`;
        const r = spawnSync(process.execPath, ['--cpu-prof', '--cpu-prof-dir', dir, '--cpu-prof-interval', '20', '-e', script], {
          encoding: 'utf8',
          timeout: 60_000,
        });
        expect({ status: r.status, stdout: r.stdout, stderr: r.stderr.slice(-300) }).toEqual({ status: 0, stdout: 'attached 4 times', stderr: '' });
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  t('close() detaches the XDP program', () => {
    const b = open('b');
    expect(programsOn('b')).toEqual(['roce_filter']);
    b.close();
    expect(programsOn('b')).toEqual([]);
    const link = JSON.parse(execFileSync('ip', ['-n', pair().nsB, '-j', 'link', 'show', 'dev', pair().ifB], { encoding: 'utf8', timeout: 5000 })) as Array<
      Record<string, unknown>
    >;
    expect(link[0]?.['xdp']).toBeUndefined();
  });

  t('a second socket on the same queue is XdpBusy; the first keeps working', async () => {
    const a = open('a');
    const b = open('b');
    // A short retry bound keeps this quick (af-xdp-reopen.test.ts checks the default one).
    expect(() => open('b', { busyWaitMs: 100 })).toThrow(
      expect.objectContaining({ code: NativeErrorCode.XdpBusy, message: expect.stringMatching(/still held after retrying for 100 ms/) }),
    );
    a.txBurst([testFrame(a, b, 3, 100, udp())]);
    await sleep(PUMP_MS);
    expect(ours(b.rxBurst(64))).toHaveLength(1);
  });

  t('an XDP program attached by someone else stays: shared through the dispatcher, or a clear XdpBusy', async () => {
    const p = pair();
    const other = '/usr/lib/x86_64-linux-gnu/bpf/xdpfilt_alw_all.o';
    const load = await runInNetns(p.nsB, 'env', ['LIBXDP_BPFFS_AUTOMOUNT=1', 'xdp-loader', 'load', '-m', 'native', p.ifB, other], 10_000);
    if (load.code !== 0) throw new Error(`xdp-loader failed: ${load.stderr}`);
    try {
      expect(programsOn('b')).toContain('xdpfilt_alw_all');
      let b: AfXdpDriver | null = null;
      try {
        b = open('b');
      } catch (e) {
        // Without a working dispatcher (this kernel's freplace check fails) libxdp attaches programs
        // alone: then ours refuses rather than replacing the other one.
        expect(e).toBeInstanceOf(NicDriverError);
        expect((e as NicDriverError).code).toBe(NativeErrorCode.XdpBusy);
        expect((e as Error).message).toMatch(/already attached/);
      }
      if (b !== null) {
        expect(programsOn('b').sort()).toEqual(['roce_filter', 'xdpfilt_alw_all']);
        b.close();
      }
      expect(programsOn('b')).toEqual(['xdpfilt_alw_all']);
    } finally {
      await runInNetns(p.nsB, 'env', ['LIBXDP_BPFFS_AUTOMOUNT=1', 'xdp-loader', 'unload', '-a', p.ifB], 10_000);
    }
    expect(programsOn('b')).toEqual([]);
  });

  t('after a crash (SIGKILL) the program stays but passes everything; the next open replaces it', async () => {
    const p = pair();
    const addon = path.join(nativeDir(), 'build', 'Release', 'roce_native.node');
    const script = `
      const n = require(${JSON.stringify(addon)});
      const s = new n.XskSocket({ ifname: ${JSON.stringify(p.ifB)}, netns: ${JSON.stringify(netnsPath(p.nsB))}, umem: new ArrayBuffer(64 * 4096 + 4096),
        frameCount: 64, objectPath: ${JSON.stringify(bpfObjectPath())}, rxDesc: new Uint32Array(8), txDesc: new Uint32Array(8), txState: new Uint32Array(2) });
      console.log('READY');
      setInterval(() => {}, 1000);`;
    const child: ChildProcess = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('child did not open its socket in time')), 10_000);
        child.stdout!.on('data', (d: Buffer) => {
          if (d.toString().includes('READY')) {
            clearTimeout(timer);
            resolve();
          }
        });
        child.on('exit', (code) => reject(new Error(`child exited early (${String(code)})`)));
      });
      // A live owner: refused.
      expect(() => open('b')).toThrow(/already attached.*by process/);
    } finally {
      child.kill('SIGKILL');
      await new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r(null) : child.once('exit', r)));
    }
    expect(programsOn('b')).toEqual(['roce_filter']); // left behind
    const ping = await runInNetns(p.nsA, 'ping', ['-c', '1', '-W', '1', p.ipB], 5000);
    expect(ping.code).toBe(0);
    const a = open('a');
    const b = open('b'); // the dead owner's program is taken away, ours attached
    a.txBurst([testFrame(a, b, 4, 100, udp())]);
    await sleep(PUMP_MS);
    expect(ours(b.rxBurst(64))).toHaveLength(1);
    b.close();
    expect(programsOn('b')).toEqual([]);
  });

  t('9000-byte MTU: multi-buffer frames arrive intact in both directions', async () => {
    const p = net.newPair({ mtu: 9000 });
    const a = open('a', {}, p);
    const b = open('b', {}, p);
    expect(b.multiBuffer).toBe(true);
    const kind = udpBetween(() => p);
    const sizes = [9014, 4096, 3000, 8000, 100];
    for (const [from, to] of [
      [a, b],
      [b, a],
    ] as const) {
      const frames = sizes.map((n, i) => testFrame(from, to, i, n, kind));
      expect(from.txBurst(frames)).toBe(sizes.length);
      await sleep(PUMP_MS);
      const got = ours(to.rxBurst(64));
      expect(got.map((f) => f.length)).toEqual(sizes);
      got.forEach((f, i) => expect(Buffer.from(f).equals(Buffer.from(frames[i]!))).toBe(true));
    }
  });

  t('errors: missing interface, UMEM too small, bad mode', () => {
    const p = pair();
    expect(() => AfXdpDriver.open({ ifname: 'rvnosuch0', netns: p.nsB })).toThrow(
      expect.objectContaining({ code: NativeErrorCode.NoSuchInterface, message: expect.stringMatching(/no such interface: rvnosuch0/) }),
    );
    expect(() => AfXdpDriver.open({ ifname: p.ifB, netns: p.nsB, frames: 16 })).toThrow(expect.objectContaining({ code: NativeErrorCode.UmemTooSmall }));
    expect(() => AfXdpDriver.open({ ifname: p.ifB, netns: p.nsB, mtu: 9000, multiBuffer: false })).toThrow(
      expect.objectContaining({ code: NativeErrorCode.UmemTooSmall }),
    );
    expect(() => AfXdpDriver.open({ ifname: p.ifB, netns: p.nsB, mode: 'fast' as 'copy' })).toThrow(/mode must be/);
    expect(programsOn('b')).toEqual([]);
  });

  t('without privileges the native layer says so (child process as nobody)', () => {
    const addon = path.join(nativeDir(), 'build', 'Release', 'roce_native.node');
    const script = `
      const n = require(${JSON.stringify(addon)});
      try {
        new n.XskSocket({ ifname: 'lo', umem: new ArrayBuffer(64 * 4096 + 4096), frameCount: 64, objectPath: ${JSON.stringify(bpfObjectPath())},
          rxDesc: new Uint32Array(8), txDesc: new Uint32Array(8), txState: new Uint32Array(2) });
        console.log('OPENED');
      } catch (e) { console.log(e.code + ' ' + e.message); }`;
    const out = execFileSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, '-e', script], {
      encoding: 'utf8',
      timeout: 10_000,
    });
    expect(out).toMatch(/^ROCE_ERR_NO_PRIVILEGES /);
  });
});

const noNative = nativeAvailable() ? null : `native addon not available (${nativeLoadError()})`;

describe('native icrcBurst', () => {
  function randomFrame(rnd: () => number): { f: Uint8Array; ip: number; end: number } {
    const v6 = rnd() < 0.3;
    const ihl = v6 ? 0 : 5 + Math.floor(rnd() * 11);
    const hdr = v6 ? 40 : ihl * 4;
    // Half short (the native side copies packets of up to 256 bytes whole, one CRC pass), half long.
    const payload = rnd() < 0.5 ? Math.floor(rnd() * 200) : Math.floor(rnd() * 4200);
    const ip = 14 + (rnd() < 0.2 ? 4 : 0);
    const end = ip + hdr + 8 + 12 + payload;
    const f = new Uint8Array(end + 4 + Math.floor(rnd() * 8));
    for (let i = 0; i < f.length; i++) f[i] = Math.floor(rnd() * 256);
    f[ip] = v6 ? 0x60 | (f[ip]! & 0x0f) : 0x40 | ihl;
    return { f, ip, end };
  }

  function lcg(seed: number): () => number {
    let s = seed >>> 0;
    return () => {
      s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
      return s / 2 ** 32;
    };
  }

  testUnless(noNative)('equals packets/icrc.ts on 500 random IPv4/IPv6 frames, short and long, in bursts laid out in one buffer', () => {
    const rnd = lcg(2024);
    for (let burst = 0; burst < 10; burst++) {
      const frames = Array.from({ length: 50 }, () => randomFrame(rnd));
      const total = frames.reduce((n, x) => n + x.f.length, 0);
      const buf = new Uint8Array(total);
      const ips: number[] = [];
      const ends: number[] = [];
      let off = 0;
      for (const x of frames) {
        buf.set(x.f, off);
        ips.push(off + x.ip);
        ends.push(off + x.end);
        off += x.f.length;
      }
      const got = icrcBurst(buf, ips, ends);
      expect(Array.from(got)).toEqual(frames.map((x) => icrcV2(x.f, x.ip, x.end)));
    }
  });

  testUnless(noNative)('nativeIcrcV2 (roce decode and analyze) equals icrcV2, values and typed errors alike', () => {
    const icrc = nativeIcrcV2();
    expect(icrc).not.toBeNull();
    const rnd = lcg(77);
    for (let i = 0; i < 400; i++) {
      const x = randomFrame(rnd);
      expect(icrc!(x.f, x.ip, x.end)).toBe(icrcV2(x.f, x.ip, x.end));
    }
    // Refused by the addon or out of range: the same WireError icrcV2 throws.
    const bad = new Uint8Array(600);
    bad[14] = 0x55;
    for (const [ip, end] of [
      [14, 590],
      [14, 700],
      [-3, 400],
    ] as const) {
      let want: unknown = null;
      try {
        icrcV2(bad, ip, end);
      } catch (e) {
        want = e;
      }
      expect(want).toBeInstanceOf(WireError);
      expect(() => icrc!(bad, ip, end)).toThrow(want as Error);
    }
  });

  testUnless(noNative)('bad offsets are a NicDriverError naming the frame', () => {
    const buf = new Uint8Array(100);
    buf[14] = 0x45;
    expect(() => icrcBurst(buf, [14, 14], [80, 200])).toThrow(/frame 1: offsets out of range/);
    buf[14] = 0x35;
    expect(() => icrcBurst(buf, [14], [80])).toThrow(expect.objectContaining({ code: NativeErrorCode.BadArgument }));
    expect(() => icrcBurst(buf, [14], [])).toThrow(/1 IP offsets but 0 ICRC offsets/);
  });
});
