/**
 * Frames decoded on one thread and analysed on another (capture-engine/analyze-workers.ts): a batch holds,
 * per record, what `Analyzer.pushRoce` and `pushNotRoce` take, as numbers in one Float64Array,
 * with the strings (addresses, opcode names) sent once each and referred to by number. A frame the
 * analyzer needs whole, a CM MAD, travels as its bytes and is decoded again by the reader.
 *
 * `ViewBatchWriter` fills a batch from capture records; `ViewBatchReader` hands a batch to an
 * `Analyzer`. The analysis is the same as `Analyzer.push` on each record: the writer decodes with
 * the same options and makes the same views, and the reader rebuilds them field for field.
 */
import { type DecodeOptions, decodeAt, packetAddresses } from '../packets/decode';
import { decodeSyndrome } from '../packets/aeth';
import { ipv4ToString } from '../packets/bytes';
import { internalError } from '../base/programming-error';
import type { ExactTime } from '../base/exact-time';
import { AddressNames } from './address-names';
import { type Analyzer, frameTotalsBits, isCmMad } from './analyzer';
import { type WireFacts, wireFacts } from './connection-doctor';
import { type FrameView, ecnCe, isMalformed, opcodeView, viewFrame } from './frame-view';
import { perftestAnnouncement, tcpConnectionRequest } from './oob';
import { icmpUnreachable } from './icmp-unreachable';

/** What a record of a batch is. */
export const RecordKind = {
  /** A RoCE frame with a BTH: its view follows. */
  VIEW: 1,
  /** A RoCE frame without a BTH (malformed, or cut by the capture before it). */
  NO_BTH: 2,
  NOT_ROCE: 3,
  /** Not RoCE, a TCP SYN: its two addresses follow. */
  NOT_ROCE_SYN: 4,
  /** The frame's bytes follow, for the reader to decode (a CM MAD). */
  RAW: 5,
} as const;

/** Slots of a record; the slots after HEAD depend on its kind. */
const S = {
  KIND: 0,
  INDEX: 1,
  TIME_NS: 2,
  TOTALS: 3,
  // VIEW, and NOT_ROCE_SYN's two addresses
  SRC: 4,
  DST: 5,
  OPCODE: 6,
  DEST_QP: 7,
  SRC_QP: 8,
  PSN: 9,
  BITS: 10,
  /** The AETH syndrome, or -1 without an AETH. */
  SYNDROME: 11,
  MSN: 12,
  DMA_LENGTH: 13,
  PAYLOAD_LENGTH: 14,
  ICRC: 15,
  SPORT: 16,
  /** connection-doctor.ts `WireFacts`: version | ecn << 2, and the two MACs (-1 without Ethernet). */
  VERSION_ECN: 17,
  SRC_MAC: 18,
  DST_MAC: 19,
} as const;
/** RAW's slots after the head. */
const RAW = { LINK_TYPE: 4, ORIG_LEN: 5, OFFSET: 6, LENGTH: 7 } as const;
/** Slots per record. */
export const RECORD_SLOTS = 20;
/** Records per batch at most. */
export const VIEW_BATCH_RECORDS = 2048;
/** Bytes of RAW records per batch at first (a larger record gets a larger area of its own). */
export const VIEW_BATCH_RAW_BYTES = 64 << 10;

/** BITS: the view's booleans, and whether the packet's opcode `info` was set (frame-view.ts `opcodeView`). */
const Bit = { ACK_REQ: 1, ICRC_BAD: 2, MALFORMED: 4, ECN_CE: 8, BECN: 16, OPCODE_KNOWN: 32 } as const;
/** Strings a writer numbers before it starts over (at the next batch), as AddressNames does. */
export const STRING_LIMIT = 65_536;

/** A batch as it crosses between threads (its buffers are transferred). */
export interface ViewBatch {
  /** The batch's number, from 0. */
  seq: number;
  count: number;
  slots: Float64Array;
  raw: Uint8Array;
  /** Strings referred to for the first time in this batch, numbered on from the last batch's. */
  strings: string[];
  /** The numbering starts over with this batch (at 0). */
  restart: boolean;
  /** The capture time of the first frame, in the batch that holds it. */
  start: ExactTime | null;
}

/** An empty batch's buffers. */
export function newViewBatch(): ViewBatch {
  return {
    seq: 0,
    count: 0,
    slots: new Float64Array(VIEW_BATCH_RECORDS * RECORD_SLOTS),
    raw: new Uint8Array(VIEW_BATCH_RAW_BYTES),
    strings: [],
    restart: false,
    start: null,
  };
}

/** Decodes records into batches. */
export class ViewBatchWriter {
  private readonly ids = new Map<string, number>();
  /** IPv4 addresses' string numbers, by address. */
  private readonly v4 = new Map<number, number>();
  private seq = 0;
  private batch: ViewBatch | null = null;
  private rawUsed = 0;

  /** @param stringLimit strings numbered before the numbering starts over (a test makes it small) */
  constructor(
    private readonly decode: DecodeOptions,
    private readonly stringLimit = STRING_LIMIT,
  ) {}

  /** Starts filling `b` (its old contents are dropped). */
  begin(b: ViewBatch): void {
    b.seq = this.seq++;
    b.count = 0;
    b.strings = [];
    b.start = null;
    b.restart = this.ids.size >= this.stringLimit;
    if (b.restart) {
      this.ids.clear();
      this.v4.clear();
    }
    this.batch = b;
    this.rawUsed = 0;
  }

  /** True when the batch being filled has no room for another record. */
  get full(): boolean {
    return this.batch === null || this.batch.count >= VIEW_BATCH_RECORDS;
  }

  /** The batch filled, to send. */
  end(): ViewBatch {
    const b = this.batch;
    if (b === null) throw internalError('ViewBatchWriter.end without begin');
    this.batch = null;
    return b;
  }

  /**
   * Decodes frame `index`, `timeNs` after the first, into the batch being filled (which must not be
   * full). Its bytes are `bytes[start, end)`, `view` is over the same buffer; `startTime` is the
   * capture time of the first frame, given with it.
   */
  add(
    index: number,
    timeNs: number,
    linkType: number,
    origLen: number,
    view: DataView,
    bytes: Uint8Array,
    start: number,
    end: number,
    startTime?: ExactTime,
  ): void {
    const b = this.batch;
    if (b === null || b.count >= VIEW_BATCH_RECORDS) throw internalError('ViewBatchWriter.add with no room');
    if (startTime !== undefined) b.start = startTime;
    const d = decodeAt(view, bytes, start, end, linkType, this.decode, origLen);
    const s = b.slots;
    const o = b.count * RECORD_SLOTS;
    s[o + S.INDEX] = index;
    s[o + S.TIME_NS] = timeNs;
    b.count++;
    if (!d.roce) {
      const frame = bytes.subarray(start, end);
      // The diagnosis reads an ICMP unreachable for the RoCE port and perftest's key message whole.
      if (icmpUnreachable(frame, linkType, this.decode.rocePort ?? 4791) !== null || perftestAnnouncement(frame, linkType) !== null) {
        this.addRaw(o, linkType, origLen, frame);
        return;
      }
      const syn = tcpConnectionRequest(frame, linkType);
      if (syn === null) s[o + S.KIND] = RecordKind.NOT_ROCE;
      else {
        s[o + S.KIND] = RecordKind.NOT_ROCE_SYN;
        s[o + S.SRC] = this.id(syn.src);
        s[o + S.DST] = this.id(syn.dst);
      }
      return;
    }
    s[o + S.TOTALS] = frameTotalsBits(d);
    const bth = d.bth;
    if (bth === null) {
      s[o + S.KIND] = RecordKind.NO_BTH;
      return;
    }
    const known = d.info !== undefined;
    if (isCmMad(opcodeView(bth.opcode, known).transport, bth.destQp)) {
      // The analyzer reads a CM MAD's message from the packet.
      this.addRaw(o, linkType, origLen, bytes.subarray(start, end));
      return;
    }
    // The fields of frame-view.ts `viewFrame`, from which the reader makes the same view.
    s[o + S.KIND] = RecordKind.VIEW;
    const ip = d.ipv4;
    if (ip !== null) {
      s[o + S.SRC] = this.v4Id(ip.src);
      s[o + S.DST] = this.v4Id(ip.dst);
    } else {
      const a = packetAddresses(d);
      s[o + S.SRC] = this.id(a.src);
      s[o + S.DST] = this.id(a.dst);
    }
    s[o + S.OPCODE] = bth.opcode;
    s[o + S.DEST_QP] = bth.destQp;
    s[o + S.SRC_QP] = d.deth?.srcQp ?? -1;
    s[o + S.PSN] = bth.psn;
    s[o + S.BITS] =
      (bth.ackReq ? Bit.ACK_REQ : 0) |
      (d.icrcOk === false ? Bit.ICRC_BAD : 0) |
      (isMalformed(d) ? Bit.MALFORMED : 0) |
      (ecnCe(d) ? Bit.ECN_CE : 0) |
      (bth.becn ? Bit.BECN : 0) |
      (known ? Bit.OPCODE_KNOWN : 0);
    s[o + S.SYNDROME] = d.aeth === null ? -1 : d.aeth.syndrome;
    s[o + S.MSN] = d.aeth?.msn ?? 0;
    s[o + S.DMA_LENGTH] = d.reth?.dmaLength ?? -1;
    s[o + S.PAYLOAD_LENGTH] = d.payloadLength;
    s[o + S.ICRC] = d.icrc ?? -1;
    s[o + S.SPORT] = d.udp?.srcPort ?? -1;
    const f = wireFacts(d);
    s[o + S.VERSION_ECN] = f.version | (f.ecn << 2);
    s[o + S.SRC_MAC] = f.srcMac;
    s[o + S.DST_MAC] = f.dstMac;
  }

  /** Record `o` is RAW: the frame's bytes follow in the batch's raw area. */
  private addRaw(o: number, linkType: number, origLen: number, frame: Uint8Array): void {
    const b = this.batch;
    if (b === null) throw internalError('ViewBatchWriter.addRaw with no batch');
    const s = b.slots;
    const n = frame.byteLength;
    s[o + S.KIND] = RecordKind.RAW;
    s[o + RAW.LINK_TYPE] = linkType;
    s[o + RAW.ORIG_LEN] = origLen;
    s[o + RAW.OFFSET] = this.rawUsed;
    s[o + RAW.LENGTH] = n;
    if (this.rawUsed + n > b.raw.byteLength) {
      const bigger = new Uint8Array(Math.max(b.raw.byteLength * 2, this.rawUsed + n));
      bigger.set(b.raw.subarray(0, this.rawUsed));
      b.raw = bigger;
    }
    b.raw.set(frame, this.rawUsed);
    this.rawUsed += n;
  }

  private v4Id(addr: number): number {
    let n = this.v4.get(addr);
    if (n === undefined) {
      n = this.id(ipv4ToString(addr));
      this.v4.set(addr, n);
    }
    return n;
  }

  /** The number of `text`, sent with the batch the first time. */
  private id(text: string): number {
    let n = this.ids.get(text);
    if (n === undefined) {
      n = this.ids.size;
      this.ids.set(text, n);
      (this.batch as ViewBatch).strings.push(text);
    }
    return n;
  }
}

/** Hands batches, in order, to an analyzer. */
export class ViewBatchReader {
  private readonly strings: string[] = [];
  private readonly names = new AddressNames();
  private next = 0;
  private rawView: DataView = new DataView(new ArrayBuffer(0));

  constructor(
    private readonly analyzer: Analyzer,
    private readonly decode: DecodeOptions,
  ) {}

  /**
   * Analyses the records of `b`, which must be the batch after the last one read. False when the
   * analyzer asked to stop (`Analyzer.wantsStop`): the records after that one are left.
   */
  read(b: ViewBatch): boolean {
    if (b.seq !== this.next) throw internalError(`view batch ${b.seq} arrived where ${this.next} was due`);
    this.next++;
    if (b.restart) this.strings.length = 0;
    for (const t of b.strings) this.strings.push(t);
    const a = this.analyzer;
    if (b.start !== null) a.setStartTime(b.start);
    const s = b.slots;
    for (let i = 0; i < b.count; i++) {
      const o = i * RECORD_SLOTS;
      const kind = s[o + S.KIND];
      const index = s[o + S.INDEX] as number;
      const timeNs = s[o + S.TIME_NS] as number;
      switch (kind) {
        case RecordKind.VIEW:
          a.pushRoce(index, timeNs, s[o + S.TOTALS] as number, this.view(s, o, index, timeNs), null, this.facts(s, o));
          break;
        case RecordKind.NO_BTH:
          a.pushRoce(index, timeNs, s[o + S.TOTALS] as number, null, null);
          break;
        case RecordKind.NOT_ROCE:
          a.pushNotRoce(index, timeNs, null);
          break;
        case RecordKind.NOT_ROCE_SYN:
          a.pushNotRoce(index, timeNs, { src: this.text(s[o + S.SRC]), dst: this.text(s[o + S.DST]) });
          break;
        case RecordKind.RAW:
          this.raw(b, o, index, timeNs);
          break;
        default:
          throw internalError(`view batch ${b.seq} record ${i} has kind ${String(kind)}`);
      }
      if (a.wantsStop) return false;
    }
    return true;
  }

  private raw(b: ViewBatch, o: number, index: number, timeNs: number): void {
    const s = b.slots;
    if (this.rawView.buffer !== b.raw.buffer) this.rawView = new DataView(b.raw.buffer);
    const from = b.raw.byteOffset + (s[o + RAW.OFFSET] as number);
    const to = from + (s[o + RAW.LENGTH] as number);
    const d = decodeAt(this.rawView, new Uint8Array(b.raw.buffer), from, to, s[o + RAW.LINK_TYPE] as number, this.decode, s[o + RAW.ORIG_LEN] as number);
    // Not RoCE: an ICMP unreachable or a perftest key message, for the diagnosis.
    if (!d.roce) {
      this.analyzer.pushNotRoceFrame(index, timeNs, new Uint8Array(b.raw.buffer, from, to - from), s[o + RAW.LINK_TYPE] as number);
      return;
    }
    this.analyzer.pushRoce(index, timeNs, frameTotalsBits(d), viewFrame(index, timeNs, d, this.names), d);
  }

  /** The wire facts of VIEW record `o`. */
  private facts(s: Float64Array, o: number): WireFacts {
    const ve = s[o + S.VERSION_ECN] as number;
    return { version: (ve & 3) === 1 ? 1 : 2, ecn: ve >>> 2, srcMac: s[o + S.SRC_MAC] as number, dstMac: s[o + S.DST_MAC] as number };
  }

  private text(n: number | undefined): string {
    const t = this.strings[n as number];
    if (t === undefined) throw internalError(`view batch string ${String(n)} was never sent`);
    return t;
  }

  /** The view `viewFrame` makes of the frame the writer wrote, field for field. */
  private view(s: Float64Array, o: number, frame: number, timeNs: number): FrameView {
    const bits = s[o + S.BITS] as number;
    const opcode = s[o + S.OPCODE] as number;
    const op = opcodeView(opcode, (bits & Bit.OPCODE_KNOWN) !== 0);
    const syndrome = s[o + S.SYNDROME] as number;
    const syn = syndrome < 0 ? null : decodeSyndrome(syndrome);
    return {
      frame,
      timeNs,
      src: this.text(s[o + S.SRC]),
      dst: this.text(s[o + S.DST]),
      role: op.role,
      transport: op.transport,
      opcode,
      opName: op.opName,
      opFlags: op.opFlags,
      destQp: s[o + S.DEST_QP] as number,
      srcQp: s[o + S.SRC_QP] as number,
      psn: s[o + S.PSN] as number,
      ackReq: (bits & Bit.ACK_REQ) !== 0,
      aethKind: syn?.kind ?? null,
      aethValue: syn?.value ?? 0,
      msn: s[o + S.MSN] as number,
      dmaLength: s[o + S.DMA_LENGTH] as number,
      payloadLength: s[o + S.PAYLOAD_LENGTH] as number,
      icrc: s[o + S.ICRC] as number,
      icrcBad: (bits & Bit.ICRC_BAD) !== 0,
      malformed: (bits & Bit.MALFORMED) !== 0,
      ecnCe: (bits & Bit.ECN_CE) !== 0,
      becn: (bits & Bit.BECN) !== 0,
      sport: s[o + S.SPORT] as number,
    };
  }
}
