/** The in-memory link: timing, order, coalescing, MTU, seeded faults, targeted rules and the pcap tap (tshark reading it: test/crosscheck/memory-link-tshark.test.ts). */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { VirtualClock } from '../../base/clock';
import { Rng } from '../../base/rng';
import { type MemoryLinkOptions, MIN_FRAME_BYTES, WIRE_OVERHEAD_BYTES, createMemoryLink } from '../../nic-driver/memory-link';
import { type FaultConfig, FaultInjector, flipBit } from '../../nic-driver/faults';
import { DEFAULT_EPOCH_NS, PcapTap } from '../../nic-driver/pcap-tap';
import { LinkConfigError } from '../../nic-driver/link-config-error';
import { buildRoceV2Frame, type RoceV2Spec } from '../../packets/build';
import { decodeFrame, type RocePacket } from '../../packets/decode';
import { readCapture } from '../../packets/pcap';
import { run } from '../../cli/main';
import { memoryOutput } from '../../cli/output';

// ---------------------------------------------------------------- helpers

const MAC_A = 0x02_00_00_00_00_0a;
const MAC_B = 0x02_00_00_00_00_0b;
const OP = { SEND_FIRST: 0x00, SEND_ONLY: 0x04, WRITE_ONLY: 0x0a, ACK: 0x11 } as const;

interface FrameOpts {
  from?: 'a' | 'b';
  qpn?: number;
  psn?: number;
  opcode?: number;
  /** Frame number, carried in the payload's first 4 bytes. */
  id?: number;
  payloadLen?: number;
  ipv6?: boolean;
}

/** A RoCE v2 frame with a valid ICRC; the payload starts with `id` (big-endian). */
function frame(o: FrameOpts = {}): Uint8Array {
  const fromA = (o.from ?? 'a') === 'a';
  const opcode = o.opcode ?? OP.SEND_ONLY;
  const payload = new Uint8Array(Math.max(4, o.payloadLen ?? 64));
  new DataView(payload.buffer).setUint32(0, o.id ?? 0);
  for (let i = 4; i < payload.length; i++) payload[i] = (i * 13 + (o.id ?? 0)) & 0xff;
  const spec: RoceV2Spec = {
    eth: fromA ? { src: MAC_A, dst: MAC_B } : { src: MAC_B, dst: MAC_A },
    ip: o.ipv6
      ? { version: 6, src: fromA ? 'fd00::a' : 'fd00::b', dst: fromA ? 'fd00::b' : 'fd00::a', trafficClass: 0x02 }
      : { version: 4, src: fromA ? '10.0.0.1' : '10.0.0.2', dst: fromA ? '10.0.0.2' : '10.0.0.1', ecn: 2 },
    bth: { opcode, destQp: o.qpn ?? 0x11, psn: o.psn ?? o.id ?? 0 },
  };
  if (opcode === OP.ACK) spec.aeth = { syndrome: 0x1f, msn: 1 };
  else spec.payload = payload;
  if (opcode === OP.WRITE_ONLY) spec.reth = { va: 0x1000n, rkey: 1, dmaLength: payload.length };
  return buildRoceV2Frame(spec);
}

function decode(f: Uint8Array): RocePacket {
  const d = decodeFrame(f);
  if (!d.roce) throw new Error('not RoCE');
  return d;
}

/** Frame number of a frame built by `frame` (from the payload; ACKs: the PSN). */
function idOf(f: Uint8Array): number {
  const p = decode(f);
  if (p.payloadLength >= 4) return new DataView(f.buffer, f.byteOffset).getUint32(p.payloadOff);
  return p.bth!.psn;
}

interface Arrival {
  t: number;
  f: Uint8Array;
}

/** A link on a fresh VirtualClock whose two ends record what they receive and when. */
function setup(opts: Partial<MemoryLinkOptions> = {}) {
  const clock = new VirtualClock();
  const link = createMemoryLink({ clock, ...opts });
  const atA: Arrival[] = [];
  const atB: Arrival[] = [];
  const calls = { a: 0, b: 0 };
  link.a.setRxHandler(() => {
    calls.a++;
    for (const f of link.a.rxBurst(1 << 30)) atA.push({ t: clock.now(), f });
  });
  link.b.setRxHandler(() => {
    calls.b++;
    for (const f of link.b.rxBurst(1 << 30)) atB.push({ t: clock.now(), f });
  });
  return { clock, link, atA, atB, calls };
}

/** Sends `n` frames a→b, one every `gapNs`, and runs the clock until idle. */
function sendSpaced(s: ReturnType<typeof setup>, n: number, gapNs = 1000, o: FrameOpts = {}): void {
  for (let i = 0; i < n; i++) {
    s.clock.schedule(i * gapNs, () => s.link.a.txBurst([frame({ ...o, id: i })]));
  }
  s.clock.runUntilIdle();
}

const hex = (f: Uint8Array): string => Buffer.from(f).toString('hex');

// ---------------------------------------------------------------- delivery and timing

describe('delivery and timing', () => {
  test('one-way latency without serialization', () => {
    const s = setup({ bandwidthBps: 0, faults: { aToB: { delayNs: 5000 }, bToA: { delayNs: 7000 } } });
    const f = frame({ id: 1 });
    s.link.a.txBurst([f]);
    s.link.b.txBurst([frame({ from: 'b', id: 2 })]);
    s.clock.runUntilIdle();
    expect(s.atB.map((x) => x.t)).toEqual([5000]);
    expect(hex(s.atB[0]!.f)).toBe(hex(f));
    expect(s.atA.map((x) => x.t)).toEqual([7000]);
  });

  test('serialization delay: back-to-back frames queue behind each other at the line rate', () => {
    const s = setup({ bandwidthBps: 10e9, faults: { aToB: { delayNs: 100 } } });
    const f = frame({ payloadLen: 1000 });
    const small = new Uint8Array(42); // an ARP-sized frame is padded to 60 bytes on the wire
    const nsPer = (len: number): number => ((Math.max(len, MIN_FRAME_BYTES) + WIRE_OVERHEAD_BYTES) * 8) / 10;
    s.link.a.txBurst([f, f, small]);
    s.clock.runUntilIdle();
    const t1 = nsPer(f.length);
    expect(s.atB.map((x) => x.t)).toEqual([Math.round(t1 + 100), Math.round(2 * t1 + 100), Math.round(2 * t1 + nsPer(42) + 100)]);
    // The port is idle again later: a frame sent after a pause is not queued.
    s.clock.schedule(1_000_000, () => s.link.a.txBurst([f]));
    s.clock.runUntilIdle();
    expect(s.atB[3]!.t).toBe(Math.round(1_000_000 + t1 + 100));
  });

  test('FIFO order is kept, even with jitter', () => {
    const s = setup({ seed: 3, faults: { aToB: { delayNs: 2000, jitterNs: 50_000 } } });
    sendSpaced(s, 2000, 100);
    expect(s.atB.map((x) => idOf(x.f))).toEqual(Array.from({ length: 2000 }, (_, i) => i));
    const ts = s.atB.map((x) => x.t);
    for (let i = 1; i < ts.length; i++) expect(ts[i]!).toBeGreaterThanOrEqual(ts[i - 1]!);
    expect(ts[0]!).toBeGreaterThanOrEqual(2000);
    expect(ts[0]!).toBeLessThanOrEqual(2000 + 50_000 + 100);
  });

  test('jitter stays within delay .. delay + jitter for spaced frames', () => {
    const s = setup({ seed: 5, bandwidthBps: 0, faults: { aToB: { delayNs: 1000, jitterNs: 400 } } });
    sendSpaced(s, 1000, 10_000);
    const lat = s.atB.map((x, i) => x.t - i * 10_000);
    expect(Math.min(...lat)).toBeGreaterThanOrEqual(1000);
    expect(Math.max(...lat)).toBeLessThanOrEqual(1400);
    expect(new Set(lat).size).toBeGreaterThan(100); // it does vary
  });

  test('the rx handler runs once per instant, however many frames arrive then', () => {
    const s = setup({ bandwidthBps: 0, faults: { aToB: { delayNs: 100 } } });
    s.link.a.txBurst([frame({ id: 0 }), frame({ id: 1 }), frame({ id: 2 }), frame({ id: 3 }), frame({ id: 4 })]);
    s.clock.runUntilIdle();
    expect(s.calls.b).toBe(1);
    expect(s.atB.map((x) => idOf(x.f))).toEqual([0, 1, 2, 3, 4]);
    sendSpaced(s, 3, 1000);
    expect(s.calls.b).toBe(4);
  });

  test('frames over the MTU are dropped and counted; an 802.1Q tag is allowed for', () => {
    const s = setup({ mtu: 1500 });
    const raw = (len: number, vlan: boolean): Uint8Array => {
      const f = new Uint8Array(len);
      f.set(vlan ? [0x81, 0x00, 0x00, 0x01, 0x08, 0x00] : [0x08, 0x00], 12);
      return f;
    };
    expect(s.link.a.txBurst([raw(1514, false), raw(1515, false), raw(1518, true), raw(1519, true)])).toBe(4);
    s.clock.runUntilIdle();
    expect(s.atB.map((x) => x.f.length)).toEqual([1514, 1518]);
    expect(s.link.a.stats).toMatchObject({ txFrames: 2, txBytes: 1514 + 1518, txDropped: 2 });
    expect(s.link.b.stats).toMatchObject({ rxFrames: 2, rxBytes: 1514 + 1518 });
  });

  test('a full receive queue drops and counts arrivals', () => {
    const clock = new VirtualClock();
    const link = createMemoryLink({ clock, rxRing: 4 });
    link.a.txBurst(Array.from({ length: 6 }, (_, i) => frame({ id: i })));
    clock.runUntilIdle();
    expect(link.b.rxBurst(100).map(idOf)).toEqual([0, 1, 2, 3]);
    expect(link.b.stats.rxDropped).toBe(2);
  });

  test('link.close() discards frames in flight', () => {
    const s = setup({ faults: { aToB: { delayNs: 1000 } } });
    s.link.a.txBurst([frame()]);
    s.link.close();
    s.clock.runUntilIdle();
    expect(s.atB).toEqual([]);
    expect(s.link.a.txBurst([frame()])).toBe(0);
  });
});

// ---------------------------------------------------------------- random faults

describe('random faults at their rates (10k frames)', () => {
  const N = 10_000;

  test('drop', () => {
    const s = setup({ seed: 11, faults: { aToB: { drop: 0.1 } } });
    sendSpaced(s, N, 100);
    const c = s.link.faults.aToB.counters;
    expect(c.frames).toBe(N);
    expect(c.dropped).toBeGreaterThan(800);
    expect(c.dropped).toBeLessThan(1200);
    expect(s.atB).toHaveLength(N - c.dropped);
    expect(s.link.b.stats.rxFrames).toBe(N - c.dropped);
  });

  test('drop bursts (Gilbert-Elliott) have the configured mean length', () => {
    const s = setup({ seed: 12, faults: { aToB: { dropBurst: { enter: 0.01, meanLength: 5 } } } });
    sendSpaced(s, N, 100);
    const got = new Set(s.atB.map((x) => idOf(x.f)));
    const bursts: number[] = [];
    let run = 0;
    for (let i = 0; i <= N; i++) {
      if (i < N && !got.has(i)) run++;
      else if (run > 0) {
        bursts.push(run);
        run = 0;
      }
    }
    const lost = bursts.reduce((a, b) => a + b, 0);
    expect(lost).toBe(s.link.faults.aToB.counters.dropped);
    const mean = lost / bursts.length;
    expect(bursts.length).toBeGreaterThan(50);
    expect(mean).toBeGreaterThan(3.5);
    expect(mean).toBeLessThan(6.5);
    expect(Math.max(...bursts)).toBeGreaterThan(8);
  });

  test('duplicate: every duplicated frame arrives twice, back to back', () => {
    const s = setup({ seed: 13, faults: { aToB: { duplicate: 0.05 } } });
    sendSpaced(s, N, 100);
    const c = s.link.faults.aToB.counters;
    expect(c.duplicated).toBeGreaterThan(400);
    expect(c.duplicated).toBeLessThan(600);
    expect(s.atB).toHaveLength(N + c.duplicated);
    const ids = s.atB.map((x) => idOf(x.f));
    let twice = 0;
    let bad = 0;
    for (let i = 1; i < ids.length; i++) {
      if (ids[i]! < ids[i - 1]!) bad++;
      if (ids[i] === ids[i - 1]) {
        twice++;
        if (hex(s.atB[i]!.f) !== hex(s.atB[i - 1]!.f)) bad++;
        if (s.atB[i]!.f === s.atB[i - 1]!.f) bad++; // each copy is its own buffer
      }
    }
    expect(bad).toBe(0);
    expect(twice).toBe(c.duplicated);
  });

  /** For each arrival, how many frames sent after it arrived before it. */
  function overtakes(ids: number[], n: number): number[] {
    const bit = new Int32Array(n + 1); // Fenwick tree over ids seen so far
    const out: number[] = [];
    ids.forEach((id, pos) => {
      let le = 0;
      for (let i = id + 1; i > 0; i -= i & -i) le += bit[i]!;
      out.push(pos - le);
      for (let i = id + 1; i <= n; i += i & -i) bit[i]!++;
    });
    return out;
  }

  test.each([1, 3, 8])('reorder never exceeds the window (window %i)', (window) => {
    const s = setup({ seed: 14 + window, faults: { aToB: { reorder: { probability: 0.05, window }, jitterNs: 300 } } });
    sendSpaced(s, N, 100);
    const c = s.link.faults.aToB.counters;
    expect(c.reordered).toBeGreaterThan(400);
    expect(c.reordered).toBeLessThan(600);
    const ids = s.atB.map((x) => idOf(x.f));
    expect([...ids].sort((x, y) => x - y)).toEqual(Array.from({ length: N }, (_, i) => i)); // nothing lost
    const ov = overtakes(ids, N);
    expect(Math.max(...ov)).toBe(window);
    expect(ov.filter((x) => x > 0).length).toBeGreaterThan(300);
  });

  test('a held frame is released after the hold timeout when traffic stops', () => {
    const s = setup({ bandwidthBps: 0, faults: { aToB: { reorder: { probability: 1, window: 4, maxHoldNs: 20_000 }, delayNs: 500 } } });
    s.link.a.txBurst([frame({ id: 7 })]);
    s.clock.runUntilIdle();
    expect(s.atB.map((x) => x.t)).toEqual([20_500]);
    expect(s.link.faults.aToB.heldCount).toBe(0);
  });

  test('corrupt: corrupted frames fail the ICRC, the others pass', () => {
    const s = setup({ seed: 15, faults: { aToB: { corrupt: 0.02 } } });
    sendSpaced(s, N, 100, { payloadLen: 200 });
    const c = s.link.faults.aToB.counters;
    expect(c.corrupted).toBeGreaterThan(140);
    expect(c.corrupted).toBeLessThan(260);
    const bad = s.atB.filter((x) => decode(x.f).icrcOk === false);
    expect(bad).toHaveLength(c.corrupted);
    expect(s.atB.filter((x) => decode(x.f).icrcOk === true)).toHaveLength(N - c.corrupted);
    // Only the BTH and what follows change: L2, IP and UDP headers are intact.
    for (const x of bad) expect(decode(x.f).ipChecksumOk).toBe(true);
  });

  test('ecnCe: marked frames carry CE with a valid IPv4 checksum and a valid ICRC', () => {
    const s = setup({ seed: 16, faults: { aToB: { ecnCe: 0.1 } } });
    sendSpaced(s, N, 100);
    const c = s.link.faults.aToB.counters;
    expect(c.ecnMarked).toBeGreaterThan(800);
    expect(c.ecnMarked).toBeLessThan(1200);
    const ps = s.atB.map((x) => decode(x.f));
    expect(ps.filter((p) => p.ipv4!.ecn === 3)).toHaveLength(c.ecnMarked);
    expect(ps.filter((p) => p.ipv4!.ecn === 2)).toHaveLength(N - c.ecnMarked);
    expect(ps.filter((p) => p.ipChecksumOk !== true || p.icrcOk !== true || p.error !== null)).toEqual([]);
  });

  test('corruption can hit any bit the ICRC covers, and never BTH byte 4 (masked)', () => {
    const f = frame({ payloadLen: 64 });
    const p = decode(f);
    const bits = (p.icrcOff - p.bthOff - 1) * 8;
    const hit = new Set<number>();
    let missed = 0;
    for (let k = 0; k < bits; k++) {
      const g = f.slice();
      const off = flipBit(g, p, (k + 0.5) / bits);
      hit.add(off);
      if (off === p.bthOff + 4 || decode(g).icrcOk !== false) missed++;
    }
    expect(missed).toBe(0);
    expect(hit.size).toBe(p.icrcOff - p.bthOff - 1);
    expect(Math.min(...hit)).toBe(p.bthOff);
    expect(Math.max(...hit)).toBe(p.icrcOff - 1);
  });

  test('setEcnCe: marking starts and stops mid-run (a congestion episode), deterministically', () => {
    const run = (): number[] => {
      const s = setup({ seed: 21 });
      sendSpaced(s, 1000, 100);
      s.link.faults.aToB.setEcnCe(0.5);
      sendSpaced(s, 1000, 100);
      s.link.faults.aToB.setEcnCe(0);
      sendSpaced(s, 1000, 100);
      const ce = s.atB.map((x) => (decode(x.f).ipv4!.ecn === 3 ? 1 : 0));
      expect(ce).toHaveLength(3000);
      expect(ce.slice(0, 1000).some((x) => x === 1)).toBe(false);
      expect(ce.slice(2000).some((x) => x === 1)).toBe(false);
      const marked = ce.slice(1000, 2000).filter((x) => x === 1).length;
      expect(marked).toBe(s.link.faults.aToB.counters.ecnMarked);
      expect(marked).toBeGreaterThan(400);
      expect(marked).toBeLessThan(600);
      return ce;
    };
    expect(run()).toEqual(run());
    const s = setup();
    expect(() => s.link.faults.aToB.setEcnCe(1.5)).toThrow(/ecnCe must be a probability/);
  });

  test('ecnCe on IPv6 sets the traffic-class ECN bits; the ICRC still verifies', () => {
    const s = setup({ faults: { aToB: { ecnCe: 1 } } });
    s.link.a.txBurst([frame({ ipv6: true })]);
    s.clock.runUntilIdle();
    const p = decode(s.atB[0]!.f);
    expect(p.ipv6!.trafficClass & 3).toBe(3);
    expect(p.ipv6!.trafficClass >>> 2).toBe(0); // DSCP untouched
    expect(p.icrcOk).toBe(true);
  });
});

// ---------------------------------------------------------------- determinism

describe('determinism', () => {
  const all: FaultConfig = {
    drop: 0.03,
    dropBurst: { enter: 0.005, meanLength: 3 },
    duplicate: 0.03,
    reorder: { probability: 0.05, window: 4 },
    delayNs: 3000,
    jitterNs: 2000,
    corrupt: 0.02,
    ecnCe: 0.05,
  };

  function runScenario(seed: number, withReverse = true): { ab: string[]; ba: string[] } {
    const s = setup({ seed, faults: { aToB: all, bToA: all } });
    for (let i = 0; i < 2000; i++) {
      s.clock.schedule(i * 150, () => s.link.a.txBurst([frame({ id: i })]));
      if (withReverse && i % 2 === 0) s.clock.schedule(i * 150 + 7, () => s.link.b.txBurst([frame({ from: 'b', opcode: OP.ACK, psn: i })]));
    }
    s.clock.runUntilIdle();
    return { ab: s.atB.map((x) => `${x.t} ${hex(x.f)}`), ba: s.atA.map((x) => `${x.t} ${hex(x.f)}`) };
  }

  test('the same seed gives the same frames at the same times', () => {
    const r1 = runScenario(42);
    const r2 = runScenario(42);
    expect(r1.ab.length).toBeGreaterThan(1500);
    expect(r2.ab).toEqual(r1.ab);
    expect(r2.ba).toEqual(r1.ba);
  });

  test('a different seed gives a different schedule', () => {
    expect(runScenario(43).ab).not.toEqual(runScenario(42).ab);
  });

  test("one direction's traffic does not change the other direction's faults", () => {
    expect(runScenario(42, false).ab).toEqual(runScenario(42, true).ab);
  });

  test('a targeted rule does not shift the random faults of other frames', () => {
    const base = setup({ seed: 9, faults: { aToB: { drop: 0.1 } } });
    sendSpaced(base, 1000, 100);
    const withRule = setup({ seed: 9, faults: { aToB: { drop: 0.1, rules: [{ action: 'drop', match: { psn: 500 } }] } } });
    sendSpaced(withRule, 1000, 100);
    const ids1 = base.atB.map((x) => idOf(x.f)).filter((i) => i !== 500);
    const ids2 = withRule.atB.map((x) => idOf(x.f));
    expect(ids2).toEqual(ids1);
  });
});

// ---------------------------------------------------------------- targeted rules

describe('targeted rules (Lumina-style: QPN, opcode, PSN, retransmission round)', () => {
  test('drop the second retransmission of PSN X: the third copy is dropped, the others arrive', () => {
    const X = 0x123456;
    const s = setup({ faults: { aToB: { rules: [{ action: 'drop', match: { psn: X, round: 2 } }] } } });
    const send = (psn: number, id: number): void => {
      s.link.a.txBurst([frame({ psn, id })]);
      s.clock.runUntilIdle();
    };
    send(X - 1, 1);
    send(X, 2); // round 0
    send(X + 1, 3);
    send(X, 4); // round 1: first retransmission
    send(X, 5); // round 2: second retransmission -> dropped
    send(X, 6); // round 3
    expect(s.atB.map((x) => idOf(x.f))).toEqual([1, 2, 3, 4, 6]);
    expect(s.link.faults.aToB.counters.dropped).toBe(1);
    expect(s.link.faults.aToB.ruleHits()).toEqual([1]);
  });

  test('rounds are counted per QP and per PSN space (requests apart from responses)', () => {
    const s = setup({ faults: { aToB: { rules: [{ action: 'drop', match: { psn: 10, round: 1 } }] } } });
    s.link.a.txBurst([
      frame({ psn: 10, id: 1, qpn: 1 }),
      frame({ psn: 10, id: 2, qpn: 2 }), // another QP: round 0
      frame({ psn: 10, opcode: OP.ACK, qpn: 1 }), // a response at the same PSN: round 0
      frame({ psn: 10, id: 4, qpn: 1 }), // round 1 -> dropped
    ]);
    s.clock.runUntilIdle();
    expect(s.atB.map((x) => [decode(x.f).bth!.destQp, decode(x.f).bth!.opcode])).toEqual([
      [1, OP.SEND_ONLY],
      [2, OP.SEND_ONLY],
      [1, OP.ACK],
    ]);
  });

  test('drop by opcode name: a suffix names the opcode in every transport, a full name one', () => {
    const s = setup({
      faults: {
        bToA: { rules: [{ action: 'drop', match: { opcode: 'ACKNOWLEDGE' } }] },
        aToB: { rules: [{ action: 'drop', match: { opcode: 'RC_RDMA_WRITE_ONLY' } }] },
      },
    });
    s.link.b.txBurst([frame({ from: 'b', opcode: OP.ACK, psn: 1 }), frame({ from: 'b', id: 2 }), frame({ from: 'b', opcode: OP.ACK, psn: 3 })]);
    s.link.a.txBurst([frame({ opcode: OP.WRITE_ONLY, id: 1 }), frame({ opcode: OP.SEND_ONLY, id: 2 })]);
    s.clock.runUntilIdle();
    expect(s.atA.map((x) => decode(x.f).bth!.opcode)).toEqual([OP.SEND_ONLY]);
    expect(s.atB.map((x) => decode(x.f).bth!.opcode)).toEqual([OP.SEND_ONLY]);
    expect(s.link.faults.bToA.counters.dropped).toBe(2);
  });

  test('an opcode name that names nothing is an error', () => {
    expect(() =>
      createMemoryLink({ clock: new VirtualClock(), faults: { aToB: { rules: [{ action: 'drop', match: { opcode: 'RC_SEND_EVERYTHING' } }] } } }),
    ).toThrow(/names no opcode/);
    expect(() =>
      createMemoryLink({ clock: new VirtualClock(), faults: { aToB: { rules: [{ action: 'drop', match: { opcode: 'RC_SEND_EVERYTHING' } }] } } }),
    ).toThrow(LinkConfigError);
  });

  test('count limits how many matching frames a rule hits', () => {
    const s = setup({ faults: { aToB: { rules: [{ action: 'drop', match: { qpn: 0x11 }, count: 2 }] } } });
    s.link.a.txBurst([0, 1, 2, 3].map((i) => frame({ id: i, qpn: 0x11 })).concat([frame({ id: 9, qpn: 0x22 })]));
    s.clock.runUntilIdle();
    expect(s.atB.map((x) => idOf(x.f))).toEqual([2, 3, 9]);
    expect(s.link.faults.aToB.ruleHits()).toEqual([2]);
  });

  test('a rule for the other direction does not fire', () => {
    const s = setup({ faults: { aToB: { rules: [{ action: 'drop', match: { direction: 'b->a' } }] } } });
    s.link.a.txBurst([frame()]);
    s.clock.runUntilIdle();
    expect(s.atB).toHaveLength(1);
  });

  test('corrupt, ecnCe and duplicate one PSN', () => {
    const s = setup({
      faults: {
        aToB: {
          rules: [
            { action: 'corrupt', match: { psn: 1 } },
            { action: 'ecnCe', match: { psn: 2 } },
            { action: 'duplicate', match: { psn: 3 } },
          ],
        },
      },
    });
    s.link.a.txBurst([0, 1, 2, 3, 4].map((i) => frame({ id: i, psn: i })));
    s.clock.runUntilIdle();
    const ps = s.atB.map((x) => decode(x.f));
    expect(ps.map((p) => p.icrcOk)).toEqual([true, false, true, true, true, true]);
    expect(ps.map((p) => p.ipv4!.ecn)).toEqual([2, 2, 3, 2, 2, 2]);
    expect(ps.map((p) => p.bth!.psn)).toEqual([0, 1, 2, 3, 3, 4]);
    expect(s.link.faults.aToB.counters).toMatchObject({ corrupted: 1, ecnMarked: 1, duplicated: 1, dropped: 0 });
  });

  test('delay one frame: later frames overtake it', () => {
    const s = setup({ bandwidthBps: 0, faults: { aToB: { delayNs: 1000, rules: [{ action: 'delay', match: { psn: 1 }, delayNs: 50_000 }] } } });
    sendSpaced(s, 5, 1000);
    expect(s.atB.map((x) => [idOf(x.f), x.t])).toEqual([
      [0, 1000],
      [2, 3000],
      [3, 4000],
      [4, 5000],
      [1, 52_000],
    ]);
    expect(s.link.faults.aToB.counters.delayed).toBe(1);
  });

  test('non-RoCE frames never match a rule that names a transport field', () => {
    const inj = new FaultInjector('a->b', new Rng(1), { rules: [{ action: 'drop', match: { qpn: 0 } }] });
    const arp = new Uint8Array(60);
    arp.set([0x08, 0x06], 12);
    expect(inj.process(arp, 0)).toHaveLength(1);
    expect(inj.counters.dropped).toBe(0);
  });
});

// ---------------------------------------------------------------- pcap tap

describe('pcap tap', () => {
  function traffic(s: ReturnType<typeof setup>, n: number): void {
    for (let i = 0; i < n; i++) {
      s.clock.schedule(i * 1000, () => s.link.a.txBurst([frame({ id: i, payloadLen: 32 + i })]));
      s.clock.schedule(i * 1000 + 500, () => s.link.b.txBurst([frame({ from: 'b', opcode: OP.ACK, psn: i })]));
    }
    s.clock.runUntilIdle();
  }

  test('records every frame of both directions, each with a valid ICRC', () => {
    const tap = new PcapTap();
    const s = setup({ tap, faults: { aToB: { delayNs: 700 } } });
    traffic(s, 50);
    const r = readCapture(tap.bytes());
    expect(r.error).toBeNull();
    expect(r.nanosecond).toBe(true);
    expect(r.records).toHaveLength(100);
    const ps = r.records.map((x) => decode(x.data));
    expect(ps.every((p) => p.icrcOk === true && p.error === null)).toBe(true);
    expect(ps.filter((p) => p.bth!.opcode === OP.ACK)).toHaveLength(50);
    expect(r.records[0]!.timestampNs).toBe(DEFAULT_EPOCH_NS);
    expect(r.records[1]!.timestampNs).toBe(DEFAULT_EPOCH_NS + 500n);
  });

  test("'sent' shows frames the link drops; 'delivered' shows what arrived, corruption included", () => {
    const sent = new PcapTap({ where: 'sent' });
    const s1 = setup({ seed: 21, tap: sent, faults: { aToB: { drop: 0.3 } } });
    traffic(s1, 200);
    expect(readCapture(sent.bytes()).records).toHaveLength(400);
    expect(s1.link.faults.aToB.counters.dropped).toBeGreaterThan(30);

    const got = new PcapTap({ where: 'delivered', epochNs: 0 });
    const s2 = setup({ seed: 21, tap: got, faults: { aToB: { drop: 0.3, corrupt: 0.2 } } });
    traffic(s2, 200);
    const recs = readCapture(got.bytes()).records;
    const c = s2.link.faults.aToB.counters;
    expect(recs).toHaveLength(400 - c.dropped);
    expect(recs.filter((x) => decode(x.data).icrcOk === false)).toHaveLength(c.corrupted);
    // Timestamps are arrival times.
    expect(recs.map((x) => Number(x.timestampNs))).toEqual([...s2.atA, ...s2.atB].map((x) => x.t).sort((p, q) => p - q));
  });

  describe('to a file', () => {
    let dir: string;
    beforeAll(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-tap-'));
    });
    afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

    function writeCapture(): string {
      const file = path.join(dir, 'link.pcap');
      const tap = PcapTap.toFile(file);
      const s = setup({ tap, faults: { bToA: { ecnCe: 0.5 } }, seed: 4 });
      traffic(s, 20);
      expect(() => tap.bytes()).toThrow(expect.objectContaining({ code: 'ROCE_ERR_MISUSE' }));
      tap.close();
      return file;
    }

    test('readCapture and `roce decode` read it', async () => {
      const file = writeCapture();
      const r = readCapture(new Uint8Array(fs.readFileSync(file)));
      expect(r.error).toBeNull();
      expect(r.records).toHaveLength(40);
      expect(r.records.every((x) => decode(x.data).icrcOk === true)).toBe(true);
      const o = memoryOutput();
      expect(await run(['decode', file], o)).toBe(0);
      expect(o.out.trim().split('\n')).toHaveLength(40);
      expect(o.out).not.toMatch(/ICRC BAD/);
    });
  });
});
