/**
 * Frames cut by the capture's snap length (pcap captured length < original length): a truncated
 * capture, not a malformed frame. Every header present decodes, lengths are the wire's, the ICRC
 * is "not captured" (null), and a cut inside the transport headers is still an error.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { decodeAt, decodeFrame } from '../../packets/decode';
import { frameToJson } from '../../packets/json';
import { summaryLine } from '../../packets/summary';
import { readCapture } from '../../packets/pcap';
import { WireErrorCode } from '../../packets/errors';
import { cutSnaplen } from '../support/degrade';
import { ZERO_FRAME_TIME } from '../../base/exact-time';

const whole = fs.readFileSync(path.join(__dirname, '..', '..', 'captures', 'rc-conversation.pcap'));

function decodeAll(file: Uint8Array) {
  const cap = readCapture(file);
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  return cap.records.map((r) => {
    const start = r.data.byteOffset - file.byteOffset;
    return { rec: r, d: decodeAt(view, file, start, start + r.data.byteLength, r.linkType, {}, r.origLen) };
  });
}

describe('snaplen-truncated frames', () => {
  const full = decodeAll(whole);
  const cut = decodeAll(cutSnaplen(whole, 100));

  test('every header of a cut frame decodes as in the whole frame, with the wire lengths', () => {
    let truncated = 0;
    for (let i = 0; i < full.length; i++) {
      const a = full[i]!.d;
      const b = cut[i]!.d;
      if (!a.roce || !b.roce) {
        expect(b.roce).toBe(a.roce);
        continue;
      }
      expect(b.bth).toEqual(a.bth);
      expect(b.reth).toEqual(a.reth);
      expect(b.aeth).toEqual(a.aeth);
      expect(b.immDt).toEqual(a.immDt);
      expect(b.ieth).toEqual(a.ieth);
      expect(b.payloadLength).toBe(a.payloadLength);
      if (cut[i]!.rec.data.byteLength < cut[i]!.rec.origLen) {
        truncated++;
        expect(b.truncated).toBe(true);
        expect(b.error).toBeNull();
        expect(b.icrc).toBeNull();
        expect(b.icrcOk).toBeNull();
        expect(b.payloadCaptured).toBeLessThan(b.payloadLength);
      } else {
        expect(b.truncated).toBe(false);
        expect(b.icrcOk).toBe(true);
        expect(b.payloadCaptured).toBe(b.payloadLength);
      }
    }
    expect(truncated).toBeGreaterThan(5);
  });

  test('summary and JSON say the capture was truncated and the ICRC not captured', () => {
    const first = cut[0]!;
    expect(first.d.roce).toBe(true);
    if (!first.d.roce) return;
    expect(summaryLine(1, ZERO_FRAME_TIME, first.d)).toContain('[capture truncated: 46 of 1024 payload bytes, ICRC not captured]');
    const j = frameToJson(1, ZERO_FRAME_TIME, first.d);
    expect(j).toMatchObject({ truncated: true, payloadLength: 1024, payloadCaptured: 46, icrc: null, icrcOk: null, opcodeName: 'RC_SEND_FIRST' });
    expect(j['error']).toBeUndefined();
  });

  test('a cut inside the extension headers is an error, with the BTH kept', () => {
    // Frame 12 is a WRITE FIRST: Ethernet 14 + IPv4 20 + UDP 8 + BTH 12, then a 16-byte RETH.
    const rec = readCapture(whole).records[11]!;
    const view = new DataView(rec.data.buffer, rec.data.byteOffset, 60);
    const t = decodeAt(view, rec.data.subarray(0, 60), 0, 60, rec.linkType, {}, rec.origLen);
    if (!t.roce) throw new Error('not RoCE');
    expect(t.bth?.opcode).toBe(0x06);
    expect(t.reth).toBeNull();
    expect(t.error?.code).toBe(WireErrorCode.Truncated);
    expect(t.icrcOk).toBeNull();
  });

  test('without the original length, a short frame is still malformed (a frame, not a capture, ends early)', () => {
    const rec = readCapture(whole).records[0]!;
    const d = decodeFrame(rec.data.subarray(0, 100));
    if (!d.roce) throw new Error('not RoCE');
    expect(d.truncated).toBe(false);
    expect(d.error?.code).toBe(WireErrorCode.Truncated);
  });
});
