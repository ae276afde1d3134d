/**
 * `roce decode --json` writes each frame's JSON straight into bytes (writeFrameJson). Its text must
 * be JSON.stringify(frameToJson(...)), the documented object, byte for byte, with and without the
 * runs that repeat within a flow copied (packets/json-frame-pieces.ts): over every frame of the
 * bundled captures, over valid frames of every opcode with random damage, and over many flows and
 * BTHs interleaved.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import fc from 'fast-check';
import { textOf } from '../../base/text-bytes';
import { type ExactTime, type FrameTime, frameTimeOf } from '../../base/exact-time';
import { buildRoceV1Frame, buildRoceV2Frame } from '../../packets/build';
import { decodeAt, decodeFrame, type DecodedFrame } from '../../packets/decode';
import { frameToJson, writeFrameJson } from '../../packets/json';
import { JsonFramePieces } from '../../packets/json-frame-pieces';
import { Rng } from '../../base/rng';
import { OPCODES, Opcode } from '../../packets/opcodes';
import { LinkType, iterateCapture } from '../../packets/pcap';
import { transportSpecFor } from '../support/specs';
import { noPublicCaptures, publicCapturesDir, testUnless } from '../support/skip';

/** One table of pieces for the whole file: entries are replaced again and again by other flows and BTHs. */
const pieces = new JsonFramePieces();

/** `got` is `want`; jest's matcher runs only to show a difference (thousands of frames are compared). */
const expectText = (got: string, want: string): void => {
  if (got !== want) expect(got).toBe(want);
};

const same = (frame: number, time: FrameTime, d: DecodedFrame): void => {
  const want = JSON.stringify(frameToJson(frame, time, d));
  expectText(
    textOf((t) => writeFrameJson(t, frame, time, d)),
    want,
  );
  expectText(
    textOf((t) => writeFrameJson(t, frame, time, d, pieces)),
    want,
  );
};

/** A frame's time: any capture time, any decimals, and any time since the first frame below 2^53 ns (the object's number is exact there). */
const frameTimes = fc.record({
  sec: fc.oneof(fc.integer({ min: 0, max: 2 ** 32 - 1 }), fc.integer({ min: -(2 ** 34), max: 2 ** 34 })),
  nsec: fc.integer({ min: 0, max: 999_999_999 }),
  digits: fc.integer({ min: 0, max: 9 }),
  relSec: fc.integer({ min: -8_999_999, max: 8_999_999 }),
  relNsec: fc.integer({ min: 0, max: 999_999_999 }),
});

function captureFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    // captures/interop holds what the interop tests write, perhaps while this test runs.
    if (e.isDirectory()) return e.name === 'interop' ? [] : captureFiles(p);
    return /\.pcap(ng)?$/.test(e.name) ? [p] : [];
  });
}

const FRAMES_PER_FILE = 3000;

/** Compares the first frames of each file; returns how many. */
function compareFiles(files: readonly string[]): number {
  let frames = 0;
  for (const file of files) {
    const bytes = new Uint8Array(fs.readFileSync(file));
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const records = iterateCapture(bytes);
    let kept = 0;
    let first: ExactTime | null = null;
    for (let next = records.next(); next.done !== true && kept < FRAMES_PER_FILE; next = records.next(), kept++) {
      const r = next.value;
      const start = r.data.byteOffset - bytes.byteOffset;
      const at = { sec: r.sec, nsec: r.nsec, digits: r.timeDigits };
      first ??= at;
      for (const verifyIcrc of [true, false]) {
        same(r.index, frameTimeOf(at, first), decodeAt(view, bytes, start, start + r.data.byteLength, r.linkType, { verifyIcrc }, r.origLen));
      }
      frames++;
    }
  }
  return frames;
}

test('the frames of the bundled captures, with and without the ICRC check', () => {
  const files = captureFiles(path.join(__dirname, '..', '..', 'captures'));
  expect(files.length).toBeGreaterThan(5);
  expect(compareFiles(files)).toBeGreaterThan(100);
});

testUnless(noPublicCaptures)('the frames of the shared public captures (real NICs, rxe, scapy)', () => {
  const files = captureFiles(publicCapturesDir() as string);
  expect(compareFiles(files)).toBeGreaterThan(100);
});

const known = OPCODES.filter((e) => e !== undefined).map((e) => e!);

test('valid frames of every opcode, damaged at random', () => {
  fc.assert(
    fc.property(
      fc.record({ op: fc.constantFrom(...known), seed: fc.nat(), v6: fc.boolean(), v1: fc.boolean() }),
      fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 6 }),
      fc.nat(),
      frameTimes,
      ({ op, seed, v6, v1 }, edits, cut, time) => {
        const t = transportSpecFor(op, seed);
        const eth = { src: 2, dst: 4 };
        const frame = v1
          ? buildRoceV1Frame({ ...t, eth, grh: { sgid: 'fe80::1', dgid: 'fe80::2' } })
          : buildRoceV2Frame({ ...t, eth, ip: v6 ? { version: 6, src: 'fd00::1', dst: 'fd00::2' } : { version: 4, src: 1, dst: 2 } });
        same(1 + (seed % 100000), time, decodeFrame(frame));
        const f = frame.slice();
        for (const [pos, val] of edits) f[pos % f.length] = val;
        same(2, time, decodeFrame(f.subarray(0, f.length - (cut % 40)), LinkType.Ethernet));
      },
    ),
    { numRuns: 3000 },
  );
});

test('random bytes on every link type', () => {
  const links = [LinkType.Ethernet, LinkType.Raw, LinkType.LinuxSll, LinkType.LinuxSll2, LinkType.Null, LinkType.Ipv6];
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 200 }), fc.constantFrom(...links), frameTimes, (b, link, time) => same(3, time, decodeFrame(b, link))),
    { numRuns: 2000 },
  );
});

test('the time: with the decimals of the capture, and the time since the first frame exact beyond 2^53 ns', () => {
  const d = decodeFrame(buildRoceV2Frame({ eth: { src: 2, dst: 4 }, ip: { version: 4, src: 1, dst: 2 }, bth: { opcode: 4, destQp: 5, psn: 0 } }));
  const json = (time: FrameTime): string => textOf((t) => writeFrameJson(t, 1, time, d));
  expect(json({ sec: 1_705_320_000, nsec: 1184, digits: 9, relSec: 0, relNsec: 1184 })).toMatch(
    /^\{"frame":1,"time":"1705320000.000001184","timeRelativeNs":1184,"roce":true,/,
  );
  expect(json({ sec: 1_705_320_000, nsec: 1000, digits: 6, relSec: 0, relNsec: 1000 })).toMatch(
    /^\{"frame":1,"time":"1705320000.000001","timeRelativeNs":1000,/,
  );
  // 300 days after the first frame, and 300 days before it (a pcapng whose clock jumped back).
  for (const [relSec, relNsec, text] of [
    [25_920_000, 123_456_789, '25920000123456789'],
    [-25_920_001, 876_543_211, '-25920000123456789'],
  ] as const) {
    const time = { sec: 1_705_320_000, nsec: 0, digits: 9, relSec, relNsec };
    expect(json(time)).toContain(`"timeRelativeNs":${text},`);
    expect(String(BigInt(relSec) * 1_000_000_000n + BigInt(relNsec))).toBe(text);
  }
});

test('many flows and BTHs interleaved: entries replaced by other keys are never mistaken for them', () => {
  const rng = new Rng(7);
  const ops = [Opcode.RC_SEND_ONLY, Opcode.RC_ACKNOWLEDGE, Opcode.RC_RDMA_WRITE_MIDDLE, Opcode.UC_SEND_FIRST];
  const frames: DecodedFrame[] = [];
  for (let i = 0; i < 3000; i++) {
    // Few distinct values per field, so that keys differing in one field only are common.
    const host = (n: number): string => `198.18.${n % 3}.${n % 7}`;
    const op = ops[rng.u32() % ops.length]!;
    const bit = (): boolean => rng.u32() % 2 === 0;
    const bth = {
      opcode: op,
      destQp: rng.u32() % 5 === 0 ? 0xabcdef : rng.u32() % 300,
      psn: i,
      se: bit(),
      migReq: bit(),
      tver: rng.u32() % 2,
      pkey: rng.u32() % 3 === 0 ? 0x7fff : 0xffff,
      fecn: bit(),
      becn: bit(),
      ackReq: bit(),
    };
    // The Ethernet and IP members are part of the endpoints' piece: they vary as the addresses do.
    const vlan = rng.u32() % 3 === 0 ? { vid: 100 + (rng.u32() % 2), pcp: rng.u32() % 2, dei: 0, tpid: 0x8100 } : null;
    const spec = {
      eth: { src: 2 + (rng.u32() % 2) * 0x0200c6120000, dst: 4, vlan },
      ip: {
        version: 4 as const,
        src: host(rng.u32()),
        dst: host(rng.u32()),
        ecn: rng.u32() % 4,
        dscp: rng.u32() % 2 === 0 ? 26 : 0,
        ttl: 63 + (rng.u32() % 2),
      },
      udp: { srcPort: 49152 + (rng.u32() % 5) },
      bth,
      ...(op === Opcode.RC_ACKNOWLEDGE
        ? { aeth: { syndrome: 0x1f, msn: i } }
        : { payload: new Uint8Array(op === Opcode.RC_RDMA_WRITE_MIDDLE ? 256 : 8 + (rng.u32() % 4)) }),
    };
    frames.push(decodeFrame(buildRoceV2Frame(spec), LinkType.Ethernet));
  }
  const table = new JsonFramePieces();
  for (let round = 0; round < 3; round++) {
    for (const [i, d] of frames.entries()) {
      const time = { sec: 1_705_320_000, nsec: i * 1000, digits: 6, relSec: 0, relNsec: i * 1000 };
      expectText(
        textOf((t) => writeFrameJson(t, i + 1, time, d, table)),
        JSON.stringify(frameToJson(i + 1, time, d)),
      );
    }
  }
});
