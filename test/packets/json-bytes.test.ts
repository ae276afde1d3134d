/**
 * `roce decode --json` writes each frame's JSON straight into bytes (writeFrameJson). Its text must
 * be JSON.stringify(frameToJson(...)), the documented object, byte for byte: over every frame of
 * the bundled captures, and over valid frames of every opcode with random damage.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import fc from 'fast-check';
import { textOf } from '../../base/text-bytes';
import { buildRoceV1Frame, buildRoceV2Frame } from '../../packets/build';
import { decodeAt, decodeFrame, type DecodedFrame } from '../../packets/decode';
import { frameToJson, writeFrameJson } from '../../packets/json';
import { OPCODES } from '../../packets/opcodes';
import { LinkType, iterateCapture } from '../../packets/pcap';
import { transportSpecFor } from '../support/specs';
import { noPublicCaptures, publicCapturesDir, testUnless } from '../support/skip';

const same = (frame: number, time: number, d: DecodedFrame): void => {
  expect(textOf((t) => writeFrameJson(t, frame, time, d))).toBe(JSON.stringify(frameToJson(frame, time, d)));
};

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
    for (let next = records.next(); next.done !== true && kept < FRAMES_PER_FILE; next = records.next(), kept++) {
      const r = next.value;
      const start = r.data.byteOffset - bytes.byteOffset;
      for (const verifyIcrc of [true, false]) {
        same(r.index, r.timeSec, decodeAt(view, bytes, start, start + r.data.byteLength, r.linkType, { verifyIcrc }, r.origLen));
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
      fc.oneof(fc.double({ min: 0, max: 2e9, noNaN: true }), fc.double()),
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
    fc.property(fc.uint8Array({ maxLength: 200 }), fc.constantFrom(...links), (b, link) => same(3, 0.5, decodeFrame(b, link))),
    { numRuns: 2000 },
  );
});
