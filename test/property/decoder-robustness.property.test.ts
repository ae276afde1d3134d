/**
 * fast-check: the decoder never throws, whatever the bytes. Random frames,
 * and valid frames with random byte mutations, truncations and extensions,
 * always come back as a result; any problem is a WireError on the frame.
 */
import fc from 'fast-check';
import { buildRoceV2Frame, buildRoceV1Frame } from '../../packets/build';
import { decodeFrame } from '../../packets/decode';
import { WireError } from '../../packets/errors';
import { OPCODES } from '../../packets/opcodes';
import { LinkType } from '../../packets/pcap';
import { frameToJson } from '../../packets/json';
import { fieldTree, summaryLine } from '../../packets/summary';
import { transportSpecFor } from '../support/specs';
import { ZERO_FRAME_TIME } from '../../base/exact-time';

const known = OPCODES.filter((e) => e !== undefined).map((e) => e!);
const links = [LinkType.Ethernet, LinkType.Raw, LinkType.LinuxSll, LinkType.LinuxSll2, LinkType.Null, LinkType.Ipv6];

/** Decodes and renders in every form; returns false if anything threw or an error is not a WireError. */
function survives(frame: Uint8Array, link: number): boolean {
  const d = decodeFrame(frame, link);
  JSON.stringify(frameToJson(1, ZERO_FRAME_TIME, d));
  if (d.roce) {
    summaryLine(1, ZERO_FRAME_TIME, d);
    fieldTree(1, ZERO_FRAME_TIME, frame.length, d, frame);
    if (d.error !== null && !(d.error instanceof WireError)) return false;
    if (d.error !== null && (d.error.offset < 0 || d.error.offset > frame.length)) return false;
  }
  return true;
}

const validFrame = fc
  .record({ op: fc.constantFrom(...known), seed: fc.nat(), v6: fc.boolean(), v1: fc.boolean(), vlan: fc.boolean() })
  .map(({ op, seed, v6, v1, vlan }) => {
    const t = transportSpecFor(op, seed);
    const eth = { src: 2, dst: 4, vlan: vlan ? { pcp: 3, dei: 0, vid: 7, tpid: 0x8100 } : null };
    if (v1) return buildRoceV1Frame({ ...t, eth, grh: { sgid: 'fe80::1', dgid: 'fe80::2' } });
    return buildRoceV2Frame({ ...t, eth, ip: v6 ? { version: 6, src: 'fd00::1', dst: 'fd00::2' } : { version: 4, src: 1, dst: 2 } });
  });

test('random bytes never make the decoder throw', () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 300 }), fc.constantFrom(...links), (b, link) => survives(b, link)),
    { numRuns: 3000 },
  );
});

test('mutated valid frames never make the decoder throw', () => {
  fc.assert(
    fc.property(
      validFrame,
      fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 8 }),
      fc.nat(),
      fc.boolean(),
      (frame, edits, cut, grow) => {
        const f = frame.slice();
        for (const [pos, val] of edits) f[pos % f.length] = val;
        let g: Uint8Array = f.subarray(0, f.length - (cut % 40));
        if (grow) {
          g = new Uint8Array(f.length + (cut % 40));
          g.set(f);
        }
        return survives(g, LinkType.Ethernet);
      },
    ),
    { numRuns: 3000 },
  );
});

test('a flipped bit decodes cleanly only when the ICRC does not cover it (L2) or masks it', () => {
  fc.assert(
    fc.property(validFrame, fc.nat(), fc.integer({ min: 0, max: 7 }), (frame, pos, bit) => {
      const f = frame.slice();
      const i = pos % f.length;
      f[i] = (f[i] ?? 0) ^ (1 << bit);
      const d = decodeFrame(f);
      if (!d.roce || d.error !== null) return true;
      // A clean decode after a flip means the bit was outside the ICRC's coverage (L2 header) or masked.
      const l3 = d.l3Off;
      const bth = d.bthOff;
      const masked =
        i < l3 ||
        (d.ipv4 !== null && [l3 + 1, l3 + 8, l3 + 10, l3 + 11].includes(i)) ||
        (d.ipv6 !== null && i >= l3 && i < l3 + 4) ||
        (d.ipv6 !== null && i === l3 + 7) ||
        (d.udp !== null && (i === bth - 2 || i === bth - 1)) ||
        i === bth + 4 ||
        (d.grh !== null && (i < l3 + 4 || i === l3 + 7));
      return masked;
    }),
    { numRuns: 3000 },
  );
});
