/**
 * Frames the capture cut short, whether the record admits it (pcap captured length < original
 * length: a snaplen) or not (the cut length written as the original length too; the IP/UDP or GRH
 * lengths say more): a truncated capture, not a malformed frame. Every header the capture holds
 * whole decodes, lengths are the wire's, the ICRC is "not captured" (null), `truncatedIn` says
 * where the capture ends, and no fault is reported unless the frame has one of its own.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { inspect, isDeepStrictEqual } from 'node:util';
import { type DecodedFrame, type RocePacket, type TruncatedPart, decodeAt, decodeFrame, frameFault, isCaptureCut, isHeaderPart } from '../../packets/decode';
import { frameToJson, writeFrameJson } from '../../packets/json';
import { summaryLine } from '../../packets/summary';
import { LinkType, readCapture } from '../../packets/pcap';
import { WireErrorCode } from '../../packets/errors';
import { HDR_ORDER, type HdrName, OPCODES, type OpcodeInfo } from '../../packets/opcodes';
import { buildRoceV1Frame, buildRoceV2Frame } from '../../packets/build';
import { textOf } from '../../base/text-bytes';
import { cutSnaplen, cutUnadmitted } from '../support/degrade';
import { transportSpecFor } from '../support/specs';
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

  test('a cut inside the extension headers keeps the BTH and names the header; the frame is not malformed', () => {
    // Frame 12 is a WRITE FIRST: Ethernet 14 + IPv4 20 + UDP 8 + BTH 12, then a 16-byte RETH.
    const rec = readCapture(whole).records[11]!;
    const view = new DataView(rec.data.buffer, rec.data.byteOffset, 60);
    const t = decodeAt(view, rec.data.subarray(0, 60), 0, 60, rec.linkType, {}, rec.origLen);
    if (!t.roce) throw new Error('not RoCE');
    expect(t.bth?.opcode).toBe(0x06);
    expect(t.reth).toBeNull();
    expect(t).toMatchObject({ truncated: true, truncatedIn: 'RETH', payloadCaptured: 0, icrc: null, icrcOk: null });
    // The error says where the capture ends (every consumer that needs whole headers skips the
    // frame), and is no fault of the frame.
    expect(t.error?.code).toBe(WireErrorCode.Truncated);
    expect(t.error?.offset).toBe(60);
    expect(isCaptureCut(t)).toBe(true);
    expect(frameFault(t)).toBeNull();
    expect(summaryLine(12, ZERO_FRAME_TIME, t)).toContain('[capture truncated inside the RETH: 0 of 1024 payload bytes, ICRC not captured]');
    expect(summaryLine(12, ZERO_FRAME_TIME, t)).not.toContain('ROCE_ERR');
    expect(frameToJson(12, ZERO_FRAME_TIME, t)).toMatchObject({ truncated: true, truncatedIn: 'RETH', reth: null, payloadLength: 1024, payloadCaptured: 0 });
    expect(frameToJson(12, ZERO_FRAME_TIME, t)['error']).toBeUndefined();
  });

  test('without the original length, a short frame is still malformed (a frame, not a capture, ends early)', () => {
    const rec = readCapture(whole).records[0]!;
    const d = decodeFrame(rec.data.subarray(0, 100));
    if (!d.roce) throw new Error('not RoCE');
    expect(d.truncated).toBe(false);
    expect(d.truncatedIn).toBeNull();
    expect(d.error?.code).toBe(WireErrorCode.Truncated);
    expect(frameFault(d)).toBe(d.error);
  });
});

describe('records that do not admit the cut (captured length = original length, the IP length larger)', () => {
  const full = decodeAll(whole);
  for (const len of [64, 100, 243]) {
    test(`cut to ${len} bytes: the same packet as the record that admits it`, () => {
      const said = decodeAll(cutSnaplen(whole, len));
      const unsaid = decodeAll(cutUnadmitted(whole, len));
      let truncated = 0;
      for (let i = 0; i < full.length; i++) {
        expect(unsaid[i]!.rec.origLen).toBe(unsaid[i]!.rec.data.byteLength);
        expect(unsaid[i]!.d).toEqual(said[i]!.d);
        const d = unsaid[i]!.d;
        if (d.roce && d.truncated) {
          truncated++;
          expect(frameFault(d)).toBeNull();
          expect(d.icrcOk).toBeNull();
          expect(d.payloadLength).toBe((full[i]!.d as RocePacket).payloadLength);
        }
      }
      expect(truncated).toBeGreaterThan(10);
    });
  }
});

/** Each extension header: the packet's field, and the name `truncatedIn` gives it (docs/decode.md). */
const HEADERS: readonly { name: HdrName; len: number; field: keyof RocePacket; part: TruncatedPart }[] = HDR_ORDER.map((h) => ({
  ...h,
  field: (
    {
      XRCETH: 'xrcEth',
      RDETH: 'rdEth',
      DETH: 'deth',
      FETH: 'feth',
      RETH: 'reth',
      ATOMIC_ETH: 'atomicEth',
      AETH: 'aeth',
      ATOMIC_ACK_ETH: 'atomicAckEth',
      IMMDT: 'immDt',
      IETH: 'ieth',
      CNP: 'cnp',
    } as const
  )[h.name],
  part: (
    {
      XRCETH: 'XRCETH',
      RDETH: 'RDETH',
      DETH: 'DETH',
      FETH: 'FETH',
      RETH: 'RETH',
      ATOMIC_ETH: 'AtomicETH',
      AETH: 'AETH',
      ATOMIC_ACK_ETH: 'AtomicAckETH',
      IMMDT: 'ImmDt',
      IETH: 'IETH',
      CNP: 'CNP',
    } as const
  )[h.name],
}));

/** The frame `frame` as a capture record cut to `n` bytes; `admitted`: its original length is the frame's, else `n`. */
function cutRecord(frame: Uint8Array, n: number, linkType: number, admitted: boolean): DecodedFrame {
  const bytes = frame.slice(0, n);
  return decodeAt(new DataView(bytes.buffer), bytes, 0, n, linkType, {}, admitted ? frame.length : n);
}

const KNOWN = OPCODES.filter((e): e is OpcodeInfo => e !== undefined);

describe('every opcode, cut at every length', () => {
  const eth = { src: 2, dst: 4 };
  const forms: readonly { name: string; build: (info: OpcodeInfo, seed: number) => Uint8Array; linkType: number; bthOff: number; minRoce: number }[] = [
    {
      name: 'RoCE v2 over IPv4',
      build: (info, seed) => buildRoceV2Frame({ ...transportSpecFor(info, seed), eth, ip: { version: 4, src: 1, dst: 2 } }),
      linkType: LinkType.Ethernet,
      bthOff: 42,
      minRoce: 42,
    },
    {
      name: 'RoCE v2 over IPv6',
      build: (info, seed) => buildRoceV2Frame({ ...transportSpecFor(info, seed), eth, ip: { version: 6, src: 'fd00::1', dst: 'fd00::2' } }),
      linkType: LinkType.Ethernet,
      bthOff: 62,
      minRoce: 62,
    },
    // Raw IP (link type 101): no link header.
    {
      name: 'RoCE v2, raw IPv4',
      build: (info, seed) => buildRoceV2Frame({ ...transportSpecFor(info, seed), eth, ip: { version: 4, src: 1, dst: 2 } }).slice(14),
      linkType: LinkType.Raw,
      bthOff: 28,
      minRoce: 28,
    },
    // RoCE v1: the EtherType says RoCE; the GRH follows.
    {
      name: 'RoCE v1',
      build: (info, seed) => buildRoceV1Frame({ ...transportSpecFor(info, seed), eth, grh: { sgid: 'fe80::1', dgid: 'fe80::2' } }),
      linkType: LinkType.Ethernet,
      bthOff: 54,
      minRoce: 14,
    },
  ];
  for (const form of forms) {
    test(`${form.name}: every header the capture holds whole, the part where it ends, never a fault`, () => {
      // Differences are gathered and compared once: an expect per cut made the test take a minute.
      const problems: string[] = [];
      const same = (where: string, what: string, got: unknown, want: unknown): void => {
        if (!isDeepStrictEqual(got, want)) problems.push(`${where}: ${what} is ${inspect(got)}, not ${inspect(want)}`);
      };
      let cuts = 0;
      for (const info of KNOWN) {
        const frame = form.build(info, info.opcode + 1);
        const w = decodeAt(new DataView(frame.buffer), frame, 0, frame.length, form.linkType, {}, frame.length);
        if (!w.roce || w.bth === null) throw new Error(`${info.name}: the whole frame does not decode`);
        same(info.name, "the whole frame's fault", frameFault(w), null);
        // Every length up to 8 bytes into the payload, then a few within it and inside the ICRC.
        const hdrEnd = form.bthOff + info.headerLen;
        const lengths = new Set<number>();
        for (let n = 0; n <= Math.min(hdrEnd + 8, frame.length - 1); n++) lengths.add(n);
        for (const n of [(hdrEnd + frame.length) >> 1, frame.length - 5, frame.length - 4, frame.length - 3, frame.length - 1])
          if (n > 0 && n < frame.length) lengths.add(n);
        for (const n of lengths) {
          const where = `${info.name} cut to ${n}`;
          const d = cutRecord(frame, n, form.linkType, true);
          // Whether the record admits the cut or not changes nothing.
          same(where, 'the packet of a record that does not admit the cut', cutRecord(frame, n, form.linkType, false), d);
          if (n < form.minRoce) {
            same(where, 'roce', d.roce, false); // cut inside the link, IP or UDP header: nothing says RoCE (tshark: not InfiniBand either)
            continue;
          }
          if (!d.roce) {
            problems.push(`${where}: not RoCE`);
            continue;
          }
          cuts++;
          same(where, 'truncated, ICRC, fault', [d.truncated, d.icrc, d.icrcOk, frameFault(d)], [true, null, null, null]);
          const json = frameToJson(1, ZERO_FRAME_TIME, d);
          same(
            where,
            'JSON text',
            textOf((t) => writeFrameJson(t, 1, ZERO_FRAME_TIME, d)),
            JSON.stringify(json),
          );
          same(where, 'JSON error', json['error'], undefined);
          const line = summaryLine(1, ZERO_FRAME_TIME, d);
          same(where, 'summary line', / \[capture truncated( inside the [A-Za-z]+)?[:\]]/.test(line) && !line.includes('ROCE_ERR'), true);
          if (n < form.bthOff + 12) {
            same(where, 'part, BTH, cut', [d.truncatedIn, d.bth, isCaptureCut(d)], [n < form.bthOff ? 'GRH' : 'BTH', null, true]);
            continue;
          }
          same(where, 'BTH', d.bth, w.bth);
          same(where, 'payload length', d.payloadLength, w.payloadLength);
          let part: TruncatedPart | null = null;
          for (const h of HEADERS) {
            const off = info.offsets[h.name];
            if (off === undefined) {
              same(where, h.name, d[h.field], null);
              continue;
            }
            const whole = form.bthOff + off + h.len <= n;
            if (!whole) part ??= h.part;
            same(where, h.name, d[h.field], whole && part === null ? w[h.field] : null);
          }
          same(where, 'payload captured', d.payloadCaptured, Math.max(0, Math.min(w.payloadLength, n - hdrEnd)));
          part ??= d.payloadCaptured < d.payloadLength ? 'payload' : 'ICRC';
          same(where, 'part, cut', [d.truncatedIn, isCaptureCut(d)], [part, isHeaderPart(part)]);
          same(where, 'error offset', d.error?.offset ?? null, isHeaderPart(part) ? n : null);
        }
      }
      expect(problems).toEqual([]);
      expect(cuts).toBeGreaterThan(1000);
    });
  }

  test('a fault of the frame itself still shows through a cut: a payload the opcode forbids', () => {
    // An ACK with 8 payload bytes (its own lengths say so), cut inside its AETH.
    const frame = buildRoceV2Frame({ eth, ip: { version: 4, src: 1, dst: 2 }, bth: { opcode: 0x11, destQp: 1, psn: 1 }, aeth: { syndrome: 0x1f, msn: 1 } });
    const long = new Uint8Array(frame.length + 8);
    long.set(frame.subarray(0, frame.length - 4));
    const v = new DataView(long.buffer);
    v.setUint16(16, v.getUint16(16) + 8); // IPv4 total length
    v.setUint16(38, v.getUint16(38) + 8); // UDP length
    const d = cutRecord(long, 56, LinkType.Ethernet, false);
    if (!d.roce) throw new Error('not RoCE');
    expect(d.truncatedIn).toBe('AETH');
    expect(d.error?.code).toBe(WireErrorCode.BadLength);
    expect(isCaptureCut(d)).toBe(false);
    expect(frameFault(d)).toBe(d.error);
  });

  test('a cut inside the IP or UDP header is not RoCE; a UDP length past the IP packet stays malformed', () => {
    const frame = buildRoceV2Frame({ eth, ip: { version: 4, src: 1, dst: 2 }, bth: { opcode: 0x04, destQp: 1, psn: 1 }, payload: new Uint8Array(100) });
    for (let n = 0; n < 42; n++) expect(cutRecord(frame, n, LinkType.Ethernet, false).roce).toBe(false);
    const bad = frame.slice();
    new DataView(bad.buffer).setUint16(38, 4000);
    const d = cutRecord(bad, 100, LinkType.Ethernet, false);
    if (!d.roce) throw new Error('not RoCE');
    expect(d.error?.code).toBe(WireErrorCode.BadLength);
    expect(frameFault(d)).toBe(d.error);
  });
});
