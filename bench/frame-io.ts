/**
 * Frame I/O rate of the real drivers (AF_PACKET, AF_XDP) over a veth pair between two network
 * namespaces it creates (and removes) itself. Needs root and the native addon.
 *
 *   npm run build && node dist/bench/frame-io.js [--seconds S] [--json]
 *
 * One process drives both ends on one thread: each round sends a burst of 64 frames from a and
 * drains b. The figure is frames received per second, so it includes the sender's work and the
 * kernel's veth receive work, which runs in the sender's system call (as in docs' C figures, the
 * sending core is the limit).
 *
 * Then the receive path's cost of the AF_PACKET kernel timestamps, measured on the same frames: two
 * AF_PACKET drivers on b, one with `rxTimestamps` and one without, each get every frame a sends;
 * each round times both drains (in alternating order), and the figure is ns per received frame of
 * each, for bursts of 1 and 64 frames (a burst of 1 carries the per-call clock check alone).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { AfPacketDriver } from '../nic-driver/af-packet-driver';
import { AfXdpDriver } from '../nic-driver/af-xdp-driver';
import type { NicDriver } from '../nic-driver/driver';
import { nativeAvailable, nativeLoadError } from '../nic-driver/native-binding';
import { applyNativeSwitch } from '../apps/host/environment';

const args = process.argv.slice(2);
const si = args.indexOf('--seconds');
const seconds = si >= 0 && Number(args[si + 1]) > 0 ? Number(args[si + 1]) : 1;
const json = args.includes('--json');

function ip(a: string[]): void {
  execFileSync('ip', a, { timeout: 10_000, stdio: 'pipe' });
}

function frame(src: NicDriver, dst: NicDriver, len: number): Uint8Array {
  const f = new Uint8Array(len);
  const v = new DataView(f.buffer);
  v.setUint16(0, Math.floor(dst.mac / 2 ** 32));
  v.setUint32(2, dst.mac >>> 0);
  v.setUint16(6, Math.floor(src.mac / 2 ** 32));
  v.setUint32(8, src.mac >>> 0);
  v.setUint16(12, 0x0800);
  f[14] = 0x45;
  v.setUint16(16, len - 14);
  f[22] = 64;
  f[23] = 17;
  f.set([198, 18, 0, 1], 26);
  f.set([198, 18, 0, 2], 30);
  v.setUint16(36, 4791);
  v.setUint16(38, len - 34);
  return f;
}

async function measure(a: NicDriver, b: NicDriver, len: number): Promise<number> {
  const burst = Array.from({ length: 64 }, () => frame(a, b, len));
  let got = 0;
  const drain = (): void => {
    for (;;) {
      const n = b.rxBurst(256).length;
      if (n === 0) return;
      got += n;
    }
  };
  // warm up
  for (let i = 0; i < 50; i++) {
    a.txBurst(burst);
    drain();
  }
  await new Promise((r) => setTimeout(r, 20));
  drain();
  got = 0;
  const t0 = process.hrtime.bigint();
  const end = t0 + BigInt(Math.round(seconds * 1e9));
  while (process.hrtime.bigint() < end) {
    a.txBurst(burst);
    drain();
  }
  await new Promise((r) => setTimeout(r, 5));
  drain();
  const dt = Number(process.hrtime.bigint() - t0) / 1e9;
  return got / dt;
}

/** ns per received frame of `rxBurst` drains on `with` and `without`, which receive the same frames. */
async function rxCost(a: NicDriver, withTs: NicDriver, withoutTs: NicDriver, burstLen: number): Promise<[number, number]> {
  const burst = Array.from({ length: burstLen }, () => frame(a, withTs, 128));
  const spent = [0n, 0n];
  const frames = [0, 0];
  const drain = (d: NicDriver, k: number): void => {
    const t0 = process.hrtime.bigint();
    let n = 0;
    for (;;) {
      const got = d.rxBurst(256).length;
      if (got === 0) break;
      n += got;
    }
    spent[k]! += process.hrtime.bigint() - t0;
    frames[k]! += n;
  };
  const end = process.hrtime.bigint() + BigInt(Math.round(seconds * 1e9));
  for (let round = 0; process.hrtime.bigint() < end; round++) {
    a.txBurst(burst);
    if (round % 2 === 0) {
      drain(withTs, 0);
      drain(withoutTs, 1);
    } else {
      drain(withoutTs, 1);
      drain(withTs, 0);
    }
  }
  await new Promise((r) => setTimeout(r, 5));
  return [Number(spent[0]!) / Math.max(1, frames[0]!), Number(spent[1]!) / Math.max(1, frames[1]!)];
}

async function main(): Promise<void> {
  applyNativeSwitch(process.env);
  if (process.getuid?.() !== 0) throw new Error('frame-io: needs root (network namespaces, raw sockets)');
  if (!nativeAvailable()) throw new Error(`frame-io: ${nativeLoadError()}`);
  const id = randomBytes(3).toString('hex');
  const nsA = `roce-bench-${id}-a`;
  const nsB = `roce-bench-${id}-b`;
  const ifA = `rb${id}a`;
  const ifB = `rb${id}b`;
  const rows: Array<{ driver: string; bytes: number; pps: number }> = [];
  const costs: Array<{ burst: number; withNs: number; withoutNs: number }> = [];
  try {
    ip(['netns', 'add', nsA]);
    ip(['netns', 'add', nsB]);
    ip(['-n', nsA, 'link', 'add', ifA, 'type', 'veth', 'peer', 'name', ifB, 'netns', nsB]);
    for (const [ns, dev, addr] of [
      [nsA, ifA, '198.18.0.1/24'],
      [nsB, ifB, '198.18.0.2/24'],
    ] as const) {
      ip(['-n', ns, 'link', 'set', 'dev', dev, 'mtu', '9000']);
      ip(['-n', ns, 'addr', 'add', addr, 'dev', dev]);
      ip(['-n', ns, 'link', 'set', 'dev', dev, 'up']);
    }
    const drivers: Array<[string, () => [NicDriver, NicDriver]]> = [
      ['af-packet', () => [AfPacketDriver.open({ ifname: ifA, netns: nsA }), AfPacketDriver.open({ ifname: ifB, netns: nsB })]],
      // The same without the kernel receive timestamps, for the same-run comparison of their cost.
      [
        'af-packet-nots',
        () => [AfPacketDriver.open({ ifname: ifA, netns: nsA, rxTimestamps: false }), AfPacketDriver.open({ ifname: ifB, netns: nsB, rxTimestamps: false })],
      ],
      ['af-xdp', () => [AfXdpDriver.open({ ifname: ifA, netns: nsA }), AfXdpDriver.open({ ifname: ifB, netns: nsB })]],
    ];
    for (const [name, make] of drivers) {
      const [a, b] = make();
      try {
        for (const bytes of [64, 1024, 4096]) rows.push({ driver: name, bytes, pps: await measure(a, b, bytes) });
      } finally {
        a.close();
        b.close();
      }
    }
    const a = AfPacketDriver.open({ ifname: ifA, netns: nsA });
    const withTs = AfPacketDriver.open({ ifname: ifB, netns: nsB });
    const withoutTs = AfPacketDriver.open({ ifname: ifB, netns: nsB, rxTimestamps: false });
    try {
      for (const burst of [1, 64]) {
        await rxCost(a, withTs, withoutTs, burst); // warm up
        const [withNs, withoutNs] = await rxCost(a, withTs, withoutTs, burst);
        costs.push({ burst, withNs, withoutNs });
      }
    } finally {
      a.close();
      withTs.close();
      withoutTs.close();
    }
  } finally {
    for (const ns of [nsA, nsB]) {
      try {
        ip(['netns', 'del', ns]);
      } catch {
        // not created
      }
    }
  }
  if (json) {
    console.log(JSON.stringify({ rows, rxTimestampCost: costs }));
    return;
  }
  console.log('driver          frame B   packets/s   Gbit/s');
  for (const r of rows) {
    console.log(
      `${r.driver.padEnd(15)} ${String(r.bytes).padStart(7)} ${Math.round(r.pps).toLocaleString('en-US').padStart(11)} ${((r.pps * r.bytes * 8) / 1e9).toFixed(2).padStart(8)}`,
    );
  }
  console.log('\nAF_PACKET receive, ns per frame (same frames)   burst   stamps   no stamps');
  for (const c of costs)
    console.log(`${' '.repeat(47)}${String(c.burst).padStart(6)} ${c.withNs.toFixed(0).padStart(8)} ${c.withoutNs.toFixed(0).padStart(11)}`);
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : String(e));
  process.exit(1);
});
