/**
 * fast-check over MADs and CM messages: emit then parse gives back any value of
 * every field of every message (and of the MAD header and the IP CM header);
 * the decoder and its renderers never throw anything but a WireError on
 * mutated, cut or extended datagrams to the GSI, and a MAD is either decoded
 * or reported as `madError`.
 */
import fc from 'fast-check';
import { viewOf } from '../../packets/bytes';
import { WireError } from '../../packets/errors';
import { MAD_DATA_LEN, MAD_HEADER_LEN, MAD_LEN, emitMadHeader, parseMadHeader } from '../../packets/mad';
import { CM_FIELD_TABLES, type CmMessage, type CmMessageName, emitCmMessage, parseCmMessage } from '../../packets/cm/message';
import { CmAttr } from '../../packets/mad';
import { emitIpCmPrivateData, parseIpCmPrivateData } from '../../packets/cm/ip-private-data';
import { buildCmMad, decodeMad } from '../../packets/mad-payload';
import type { Field, FieldTable } from '../../packets/field-table';
import { buildRoceV2Frame } from '../../packets/build';
import { decodeFrame } from '../../packets/decode';
import { frameToJson } from '../../packets/json';
import { fieldTree, summaryLine } from '../../packets/summary';
import { cmExchanges } from '../support/make-cm-capture';
import { ZERO_FRAME_TIME } from '../../base/exact-time';

/** Any value of one field (byte strings at full length, so that parse gives them back as they are). */
function arbField(f: Field): fc.Arbitrary<unknown> {
  switch (f.kind) {
    case 'uint':
      return fc.integer({ min: 0, max: 2 ** f.width - 1 });
    case 'flag':
      return fc.boolean();
    case 'u64':
      return fc.bigInt({ min: 0n, max: (1n << 64n) - 1n });
    default:
      return fc.uint8Array({ minLength: f.width / 8, maxLength: f.width / 8 });
  }
}

function arbFields(table: FieldTable): fc.Arbitrary<Record<string, unknown>> {
  return fc.record(Object.fromEntries(Object.entries(table).map(([name, f]) => [name, arbField(f)])));
}

const names = Object.keys(CM_FIELD_TABLES) as CmMessageName[];
const arbMessage: fc.Arbitrary<CmMessage> = fc
  .constantFrom(...names)
  .chain((name) => arbFields(CM_FIELD_TABLES[name]).map((fields) => ({ name, fields }) as CmMessage));

test.each(names)('%s: emit then parse gives back every field, at any offset, touching only its 232 bytes', (name) => {
  fc.assert(
    fc.property(arbFields(CM_FIELD_TABLES[name]), fc.integer({ min: 0, max: 7 }), (fields, off) => {
      const buf = new Uint8Array(off + MAD_DATA_LEN + 8).fill(0xa5);
      const m = { name, fields } as CmMessage;
      expect(emitCmMessage(m, viewOf(buf), off)).toBe(CmAttr[name]);
      expect(buf.subarray(0, off).every((b) => b === 0xa5) && buf.subarray(off + MAD_DATA_LEN).every((b) => b === 0xa5)).toBe(true);
      expect(parseCmMessage(CmAttr[name], viewOf(buf), off)).toEqual(m);
    }),
    { numRuns: 150 },
  );
});

test('MAD header and IP CM header: emit then parse', () => {
  const u = (bits: number): fc.Arbitrary<number> => fc.integer({ min: 0, max: 2 ** bits - 1 });
  fc.assert(
    fc.property(
      fc.record({
        baseVersion: u(8),
        mgmtClass: u(8),
        classVersion: u(8),
        method: u(8),
        status: u(16),
        classSpecific: u(16),
        transactionId: fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
        attributeId: u(16),
        reserved: u(16),
        attributeModifier: u(32),
      }),
      fc.record({
        majorVersion: u(4),
        minorVersion: u(4),
        ipVersion: u(4),
        reserved: u(4),
        srcPort: u(16),
        srcAddr: fc.uint8Array({ minLength: 16, maxLength: 16 }),
        dstAddr: fc.uint8Array({ minLength: 16, maxLength: 16 }),
      }),
      (h, ip) => {
        const b = new Uint8Array(64);
        emitMadHeader(h, viewOf(b), 3);
        expect(parseMadHeader(viewOf(b), 3)).toEqual(h);
        emitIpCmPrivateData(ip, viewOf(b), 5);
        expect(parseIpCmPrivateData(viewOf(b), 5)).toEqual(ip);
      },
    ),
    { numRuns: 300 },
  );
});

test('decodeMad of a built CM MAD gives the message back', () => {
  fc.assert(
    fc.property(arbMessage, fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), (m, tid) => {
      const d = decodeMad(viewOf(buildCmMad(m, { transactionId: tid })), 0, MAD_LEN);
      expect(d.header.transactionId).toBe(tid);
      expect(d.cm).toEqual(m);
    }),
    { numRuns: 300 },
  );
});

/** Decodes and renders; false when anything throws, or the MAD is neither decoded nor reported. */
function survives(frame: Uint8Array): boolean {
  const d = decodeFrame(frame);
  JSON.stringify(frameToJson(1, ZERO_FRAME_TIME, d));
  if (!d.roce) return true;
  summaryLine(1, ZERO_FRAME_TIME, d);
  fieldTree(1, ZERO_FRAME_TIME, frame.length, d, frame);
  if (d.madError !== null && (!(d.madError instanceof WireError) || d.madError.offset < 0 || d.madError.offset > frame.length)) return false;
  if (d.mad !== null && d.madError !== null) return false;
  return true;
}

const gsiFrame = fc.tuple(arbMessage, fc.boolean()).map(([m, v6]) =>
  buildRoceV2Frame({
    eth: { src: 2, dst: 4 },
    ip: v6 ? { version: 6, src: 'fd00::1', dst: 'fd00::2' } : { version: 4, src: '198.18.0.1', dst: '198.18.0.2' },
    bth: { opcode: 0x64, destQp: 1, psn: 0, ackReq: true },
    deth: { qkey: 0x80010000, srcQp: 1 },
    payload: buildCmMad(m, { transactionId: 1n }),
  }),
);
const recorded = fc.constantFrom(...cmExchanges().map((r) => r.data));

test('mutated, cut and extended datagrams to the GSI never make the decoder throw', () => {
  fc.assert(
    fc.property(
      fc.oneof(gsiFrame, recorded),
      fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 8 }),
      fc.nat(),
      fc.boolean(),
      (frame, edits, cut, grow) => {
        const f = frame.slice();
        for (const [pos, val] of edits) f[pos % f.length] = val;
        let g: Uint8Array = f.subarray(0, f.length - (cut % 300));
        if (grow) {
          g = new Uint8Array(f.length + (cut % 40));
          g.set(f);
        }
        return survives(g);
      },
    ),
    { numRuns: 2000 },
  );
});

test('any 256 bytes with base version 1 decode as a MAD; anything else of any length is a WireError', () => {
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 0, maxLength: 300 }), fc.boolean(), (bytes, v1) => {
      const b = bytes.slice();
      if (v1 && b.length > 0) b[0] = 1;
      try {
        const d = decodeMad(viewOf(b), 0, b.length);
        return b.length === MAD_LEN && b[0] === 1 && d.header.baseVersion === 1;
      } catch (e) {
        return e instanceof WireError && (b.length !== MAD_LEN || b[0] !== 1);
      }
    }),
    { numRuns: 2000 },
  );
  expect(MAD_HEADER_LEN + MAD_DATA_LEN).toBe(MAD_LEN);
});
