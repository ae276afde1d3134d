/**
 * The shared NicDriver test suite: what every driver (in-memory link,
 * AF_PACKET, AF_XDP, ...) must do, whatever carries the frames.
 *
 * Test frames carry a magic and a sequence number, so a driver on a real
 * interface can ignore other traffic it happens to receive (`ours`). Two
 * kinds: Ethernet frames with the local experimental EtherType 0x88B5 (the
 * default), or IPv4/UDP frames to the RoCE port 4791 for drivers that only
 * ever see RoCE traffic (AF_XDP behind its XDP program, AF_PACKET behind its
 * socket filter).
 */
import { type NicDriver, hasZeroCopyTx } from '../../nic-driver/driver';
import type { NetnsDrivers, NetnsPair } from '../support/netns';
import { testUnless } from '../support/skip';

export interface DriverPair {
  a: NicDriver;
  b: NicDriver;
  /** Lets frames in flight arrive (memory link: run the virtual clock until idle). */
  pump: () => Promise<void>;
  close: () => Promise<void>;
}

export const TEST_ETHERTYPE = 0x88b5;
const MAGIC = 0x52545331; // 'RTS1'
const ROCE_PORT = 4791;
/** Where the magic sits: after the Ethernet header, or after Ethernet + IPv4 + UDP. */
const MAGIC_OFF_ETHERTYPE = 14;
const MAGIC_OFF_UDP = 42;

/** How the suite's frames look: EtherType 0x88B5, or IPv4/UDP to port 4791 between the given addresses. */
export type FrameKind = { kind: 'ethertype' } | { kind: 'udp'; ipOf: (d: NicDriver) => string };

const ETHERTYPE: FrameKind = { kind: 'ethertype' };

/** UDP frames between the two ends of a namespace pair (`pair` is called when a frame is made). */
export function udpBetween(pair: () => NetnsPair): FrameKind {
  return { kind: 'udp', ipOf: (d) => (d.mac === pair().macA ? pair().ipA : pair().ipB) };
}

function ipv4Bytes(ip: string): number[] {
  const b = ip.split('.').map(Number);
  if (b.length !== 4 || b.some((x) => !(x >= 0 && x <= 255))) throw new Error(`not an IPv4 address: ${ip}`);
  return b;
}

/** A test frame from `src` to `dst` carrying `seq`, `len` bytes long (at least 60). */
export function testFrame(src: NicDriver, dst: NicDriver, seq: number, len: number, kind: FrameKind = ETHERTYPE): Uint8Array {
  return makeFrame(src, dst, seq, len, kind);
}

function makeFrame(src: NicDriver, dst: NicDriver, seq: number, len: number, kind: FrameKind): Uint8Array {
  const n = Math.max(60, len);
  const f = new Uint8Array(n);
  const v = new DataView(f.buffer);
  v.setUint16(0, Math.floor(dst.mac / 0x1_0000_0000));
  v.setUint32(2, dst.mac >>> 0);
  v.setUint16(6, Math.floor(src.mac / 0x1_0000_0000));
  v.setUint32(8, src.mac >>> 0);
  let m = MAGIC_OFF_ETHERTYPE;
  if (kind.kind === 'ethertype') {
    v.setUint16(12, TEST_ETHERTYPE);
  } else {
    v.setUint16(12, 0x0800);
    f[14] = 0x45;
    v.setUint16(16, n - 14); // total length
    f[22] = 64; // TTL
    f[23] = 17; // UDP
    f.set(ipv4Bytes(kind.ipOf(src)), 26);
    f.set(ipv4Bytes(kind.ipOf(dst)), 30);
    let sum = 0;
    for (let i = 14; i < 34; i += 2) sum += v.getUint16(i);
    while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
    v.setUint16(24, ~sum & 0xffff);
    v.setUint16(34, 0xc000 + (seq & 0xfff)); // source port
    v.setUint16(36, ROCE_PORT);
    v.setUint16(38, n - 34); // UDP length; checksum 0 (none)
    m = MAGIC_OFF_UDP;
  }
  v.setUint32(m, MAGIC);
  v.setUint32(m + 4, seq >>> 0);
  for (let i = m + 8; i < n; i++) f[i] = (seq * 7 + i) & 0xff;
  return f;
}

function magicOffset(f: Uint8Array): number {
  if (f.length < 22) return -1;
  const type = (f[12]! << 8) | f[13]!;
  if (type === TEST_ETHERTYPE) return MAGIC_OFF_ETHERTYPE;
  if (type === 0x0800 && f.length >= MAGIC_OFF_UDP + 8 && f[14] === 0x45 && f[23] === 17 && ((f[36]! << 8) | f[37]!) === ROCE_PORT) {
    return MAGIC_OFF_UDP;
  }
  return -1;
}

/** The test frames among `frames` (of either kind). */
export function ours(frames: readonly Uint8Array[]): Uint8Array[] {
  return frames.filter((f) => {
    const m = magicOffset(f);
    return m >= 0 && new DataView(f.buffer, f.byteOffset).getUint32(m) === MAGIC;
  });
}

function seqOf(f: Uint8Array): number {
  return new DataView(f.buffer, f.byteOffset).getUint32(magicOffset(f) + 4);
}

/** Everything `d` has received, taken in bursts of up to `max`. */
function drain(d: NicDriver, max = 64): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (;;) {
    const got = d.rxBurst(max);
    if (got.length === 0) return out;
    // Copy: a returned frame is only valid until the next rxBurst.
    for (const f of got) out.push(f.slice());
  }
}

export interface DriverSuiteOptions {
  /** The suite's frames (default: EtherType 0x88B5). */
  frames?: FrameKind;
  /** Timeout of each test in ms (jest's default when absent). */
  timeoutMs?: number;
}

export function driverSuite(name: string, makePair: () => Promise<DriverPair>, opts: DriverSuiteOptions = {}): void {
  const kind = opts.frames ?? ETHERTYPE;
  const testFrame = (src: NicDriver, dst: NicDriver, seq: number, len: number): Uint8Array => makeFrame(src, dst, seq, len, kind);
  const test = (title: string, fn: () => Promise<void>): void => globalThis.test(title, fn, opts.timeoutMs);
  describe(`NicDriver suite: ${name}`, () => {
    async function withPair(fn: (p: DriverPair) => Promise<void>): Promise<void> {
      const p = await makePair();
      try {
        await fn(p);
      } finally {
        await p.close();
      }
    }

    async function burstArrives(p: DriverPair, from: NicDriver, to: NicDriver): Promise<void> {
      const sizes = [60, 61, 64, 128, 333, 1000, 1514];
      const frames = Array.from({ length: 32 }, (_, i) => testFrame(from, to, i, sizes[i % sizes.length]!));
      expect(from.txBurst(frames)).toBe(frames.length);
      await p.pump();
      const got = ours(drain(to));
      expect(got.map(seqOf)).toEqual(frames.map((_, i) => i));
      got.forEach((f, i) => expect(Buffer.from(f).equals(Buffer.from(frames[i]!))).toBe(true));
    }

    test('a burst from a to b arrives intact and in order', () => withPair((p) => burstArrives(p, p.a, p.b)));

    test('a burst from b to a arrives intact and in order', () => withPair((p) => burstArrives(p, p.b, p.a)));

    test('stats count frames and bytes', () =>
      withPair(async (p) => {
        const before = { a: { ...p.a.stats }, b: { ...p.b.stats } };
        const frames = [testFrame(p.a, p.b, 1, 100), testFrame(p.a, p.b, 2, 200), testFrame(p.a, p.b, 3, 300)];
        p.a.txBurst(frames);
        await p.pump();
        expect(ours(drain(p.b))).toHaveLength(3);
        expect(p.a.stats.txFrames - before.a.txFrames).toBe(3);
        expect(p.a.stats.txBytes - before.a.txBytes).toBe(600);
        // A real interface may also receive other traffic: at least ours.
        expect(p.b.stats.rxFrames - before.b.rxFrames).toBeGreaterThanOrEqual(3);
        expect(p.b.stats.rxBytes - before.b.rxBytes).toBeGreaterThanOrEqual(600);
        expect(p.a.stats.txDropped).toBe(before.a.txDropped);
        expect(p.b.stats.rxDropped).toBe(before.b.rxDropped);
      }));

    test('frames are copied on tx: changing the buffer after txBurst changes nothing', () =>
      withPair(async (p) => {
        const f = testFrame(p.a, p.b, 9, 200);
        const orig = f.slice();
        p.a.txBurst([f]);
        f.fill(0xee, 14);
        await p.pump();
        const got = ours(drain(p.b));
        expect(got).toHaveLength(1);
        expect(Buffer.from(got[0]!).equals(Buffer.from(orig))).toBe(true);
      }));

    test('rxBurst(max) returns at most max frames, and the rest on later calls', () =>
      withPair(async (p) => {
        const frames = Array.from({ length: 10 }, (_, i) => testFrame(p.a, p.b, i, 80));
        p.a.txBurst(frames);
        await p.pump();
        expect(p.b.rxBurst(0)).toEqual([]);
        const seqs: number[] = [];
        for (;;) {
          const got = p.b.rxBurst(3);
          expect(got.length).toBeLessThanOrEqual(3);
          if (got.length === 0) break;
          seqs.push(...ours(got).map(seqOf));
        }
        expect(seqs).toEqual(frames.map((_, i) => i));
      }));

    test('the rx handler runs when frames arrive, not more often than frames', () =>
      withPair(async (p) => {
        let calls = 0;
        const got: Uint8Array[] = [];
        p.b.setRxHandler(() => {
          calls++;
          got.push(...drain(p.b));
        });
        p.a.txBurst(Array.from({ length: 8 }, (_, i) => testFrame(p.a, p.b, i, 90)));
        await p.pump();
        expect(ours(got).map(seqOf)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
        expect(calls).toBeGreaterThanOrEqual(1);
        expect(calls).toBeLessThanOrEqual(got.length);
        p.b.setRxHandler(null);
        p.a.txBurst([testFrame(p.a, p.b, 99, 90)]);
        await p.pump();
        expect(calls).toBeLessThanOrEqual(got.length);
        expect(ours(drain(p.b)).map(seqOf)).toEqual([99]);
      }));

    test('close stops delivery', () =>
      withPair(async (p) => {
        let calls = 0;
        p.b.setRxHandler(() => calls++);
        p.a.txBurst([testFrame(p.a, p.b, 1, 100)]);
        p.b.close();
        p.a.txBurst([testFrame(p.a, p.b, 2, 100)]);
        await p.pump();
        expect(calls).toBe(0);
        expect(p.b.rxBurst(100)).toEqual([]);
        p.a.close();
        expect(p.a.txBurst([testFrame(p.a, p.b, 3, 100)])).toBe(0);
      }));

    // The zero-copy transmit extension (driver.ts), for the drivers that have it.
    test('zero-copy transmit: reserved frames arrive intact and in order, with txBurst mixed in; over the MTU is dropped', () =>
      withPair(async (p) => {
        const a = p.a;
        if (!hasZeroCopyTx(a)) {
          expect(a.txSpace === undefined || typeof a.txReserve !== 'function').toBe(true);
          return;
        }
        const tooLong = a.mtu + 14 + 1;
        const sizes = [60, 61, 333, 1000, a.mtu + 14, tooLong, 200];
        const expected: number[] = [];
        const got: Uint8Array[] = [];
        let seq = 0;
        const dropped0 = a.stats.txDropped;
        for (let round = 0; round < 12; round++) {
          for (let k = 0; k < 5; k++) {
            const len = sizes[(round * 5 + k) % sizes.length]!;
            const f = testFrame(a, p.b, seq, len);
            let off = a.txReserve(f.length);
            if (off < 0) {
              a.txCommit();
              await p.pump();
              off = a.txReserve(f.length);
            }
            expect(off).toBeGreaterThanOrEqual(0);
            a.txSpace.buf.set(f, off);
            if (len < tooLong) expected.push(seq);
            seq++;
          }
          if (round % 3 === 0) {
            expected.push(seq); // txBurst sends what is reserved first
            a.txBurst([testFrame(a, p.b, seq++, 100)]);
          } else {
            a.txCommit();
          }
          await p.pump();
          got.push(...drain(p.b));
        }
        const deadline = Date.now() + 2000;
        while (ours(got).length < expected.length && Date.now() < deadline) {
          await p.pump();
          got.push(...drain(p.b));
        }
        const mine = ours(got);
        expect(mine.map(seqOf)).toEqual(expected);
        for (const f of mine) expect(Buffer.from(f).equals(Buffer.from(testFrame(a, p.b, seqOf(f), f.length)))).toBe(true);
        expect(a.stats.txDropped - dropped0).toBe(seq - expected.length);
      }));
  });
}

/**
 * The suite over a veth pair between two namespaces, a driver opened on each end (`net`), with UDP
 * 4791 frames (what the socket drivers receive) and `pumpMs` for frames to arrive; when `reason`
 * says why it cannot run, one skipped test naming it instead.
 */
export function netnsDriverSuite<D extends NicDriver, O>(name: string, net: NetnsDrivers<D, O>, reason: string | null, pumpMs: number): void {
  if (reason !== null) {
    testUnless(reason)(`NicDriver suite: ${name}`, () => undefined);
    return;
  }
  const makePair = async (): Promise<DriverPair> => {
    const a = net.open('a');
    const b = net.open('b');
    return {
      a,
      b,
      pump: () => new Promise((r) => setTimeout(r, pumpMs)),
      close: async () => {
        a.close();
        b.close();
      },
    };
  };
  driverSuite(`${name} over a veth pair between two namespaces`, makePair, { frames: udpBetween(net.pair), timeoutMs: 10_000 });
  // A local ACK timer that comes due polls the driver before it acts (stack/completer.ts): pollRx
  // must work without busy-poll too.
  test(`${name}: pollRx without busy-poll runs the handler at once on frames already in the ring, else says false`, async () => {
    const p = await makePair();
    try {
      const got: Uint8Array[] = [];
      p.b.setRxHandler(() => {
        for (const f of p.b.rxBurst(64)) got.push(f.slice());
      });
      expect(p.b.pollRx?.()).toBe(false);
      const kind = udpBetween(net.pair);
      p.a.txBurst([testFrame(p.a, p.b, 1, 100, kind), testFrame(p.a, p.b, 2, 100, kind)]);
      // Synchronously, so the event loop (whose poll would run the handler too) never gets a turn.
      const until = Date.now() + 2000;
      while (ours(got).length < 2 && Date.now() < until) p.b.pollRx?.();
      expect(ours(got)).toHaveLength(2);
      p.b.setRxHandler(null);
    } finally {
      await p.close();
    }
  }, 10_000);
}
