/**
 * A batch of capture records as `roce decode` hands it to a worker thread: the records' bytes
 * copied one after another into one buffer, and six numbers per record beside them. Both buffers
 * are transferred (not copied) to the worker and back, and reused.
 */
import type { DecodeOptions } from '../packets/decode';
import { type IcrcBatch, icrcV2 as icrcV2Js } from '../packets/icrc';
import { LinkType } from '../packets/pcap';
import { TextBytes } from '../base/text-bytes';
import { type DecodeCounts, FramePrinter, type PrintSettings } from './decode-printer';

/** Numbers per record in `meta`: index, timeSec, linkType, origLen, start, end. */
export const META_FIELDS = 6;
/** Bytes of records per batch (a larger record gets a batch of its own size). */
export const BATCH_BYTES = 256 * 1024;
/** Records per batch at most. */
export const BATCH_RECORDS = 1024;
/** Output chunk size in a worker (a batch's output usually fits in one). */
export const OUT_CHUNK = 1 << 20;
/** Output chunks a printer keeps to write into again, at most. */
const MAX_SPARES = 4;

export interface BatchMessage {
  seq: number;
  count: number;
  /** Time of the file's first record. */
  firstTime: number;
  /** Time of the record before this batch's first (the `delta` column's reference). */
  prevTime: number;
  data: ArrayBuffer;
  meta: ArrayBuffer;
  /** Output chunks written out and handed back, for the printer to write into again. */
  spare: ArrayBuffer[];
}

export interface BatchResult {
  seq: number;
  /** The batch's output, in order. */
  out: Uint8Array[];
  counts: DecodeCounts;
  /** Output chunks the printer had to allocate for this batch (none while chunks come back to it). */
  freshChunks: number;
  /** The batch's buffers, handed back for reuse. */
  data: ArrayBuffer;
  meta: ArrayBuffer;
}

/** A batch being filled on the command's thread. */
export class RecordBatch {
  count = 0;
  private used = 0;
  private bytes: Uint8Array;
  private metaView: Float64Array;

  constructor(
    public data: ArrayBuffer,
    public meta: ArrayBuffer,
  ) {
    this.bytes = new Uint8Array(data);
    this.metaView = new Float64Array(meta);
  }

  static fresh(minBytes: number): RecordBatch {
    return new RecordBatch(new ArrayBuffer(Math.max(BATCH_BYTES, minBytes)), new ArrayBuffer(BATCH_RECORDS * META_FIELDS * 8));
  }

  /** Whether a record of `n` bytes fits. */
  fits(n: number): boolean {
    return this.count < BATCH_RECORDS && this.used + n <= this.bytes.length;
  }

  add(index: number, timeSec: number, linkType: number, origLen: number, data: Uint8Array): void {
    const start = this.used;
    this.bytes.set(data, start);
    this.used += data.length;
    const k = this.count * META_FIELDS;
    const m = this.metaView;
    m[k] = index;
    m[k + 1] = timeSec;
    m[k + 2] = linkType;
    m[k + 3] = origLen;
    m[k + 4] = start;
    m[k + 5] = this.used;
    this.count++;
  }
}

/** The ICRCs of `count` frames in one call (the native addon's `IcrcBatch.compute`). */
export type IcrcBurst = IcrcBatch['compute'];

const ETHERNET_LEN = 14;
const ETHERTYPE_IPV4 = 0x0800;
const ETHERTYPE_IPV6 = 0x86dd;
/** IPv6 header, UDP header and BTH: the least an ICRC covers. */
const IPV6_UDP_BTH = 40 + 8 + 12;
const UDP_BTH = 8 + 12;

/**
 * The ICRCs of a batch's frames, computed in one native call before they are decoded (a call per
 * frame costs about three times as much at 1 KiB). Each value is kept with the offsets it was
 * computed over, the IP header's and the ICRC field's: the decoder's ICRC routine takes it only
 * when the decoder asks for exactly those offsets, and computes any other frame itself. The offsets
 * are guessed (an untagged Ethernet or a raw IP frame, the ICRC in its last four bytes), so a guess
 * that is wrong costs a lookup, never a wrong verdict: an ICRC depends on nothing but the bytes
 * between the two offsets.
 */
class BatchIcrc {
  private desc = new Uint32Array(2 * BATCH_RECORDS);
  private values = new Uint32Array(BATCH_RECORDS);
  /** Per record: its index in `values`, or -1 when none was computed. */
  private slot = new Int32Array(BATCH_RECORDS);
  /** The record being decoded. */
  current = 0;
  /** The routine the decoder calls. */
  readonly icrcV2: (frame: Uint8Array, ipOff: number, end: number) => number;

  constructor(
    private readonly burst: IcrcBurst,
    fallback: (frame: Uint8Array, ipOff: number, end: number) => number,
  ) {
    this.icrcV2 = (frame, ipOff, end) => {
      const k = this.slot[this.current] as number;
      if (k >= 0 && this.desc[2 * k] === ipOff && this.desc[2 * k + 1] === end) return this.values[k] as number;
      return fallback(frame, ipOff, end);
    };
  }

  /** Computes what it can of the batch's ICRCs. */
  prepare(bytes: Uint8Array, meta: Float64Array, count: number): void {
    let n = 0;
    for (let i = 0; i < count; i++) {
      this.slot[i] = -1;
      const k = i * META_FIELDS;
      const start = meta[k + 4] as number;
      const end = meta[k + 5] as number;
      if (end - start !== meta[k + 3]) continue; // cut by the capture: no ICRC to check
      const linkType = meta[k + 2] as number;
      let ip: number;
      if (linkType === LinkType.Ethernet) {
        const type = ((bytes[start + 12] as number) << 8) | (bytes[start + 13] as number);
        if (type !== ETHERTYPE_IPV4 && type !== ETHERTYPE_IPV6) continue;
        ip = start + ETHERNET_LEN;
      } else if (linkType === LinkType.Raw || linkType === LinkType.Ipv4 || linkType === LinkType.Ipv6) ip = start;
      else continue;
      if (ip >= end) continue;
      const icrcOff = end - 4;
      const first = bytes[ip] as number;
      const version = first >> 4;
      const least = version === 4 ? (first & 0x0f) * 4 + UDP_BTH : version === 6 ? IPV6_UDP_BTH : Infinity;
      if ((version === 4 && (first & 0x0f) < 5) || icrcOff - ip < least) continue;
      this.desc[2 * n] = ip;
      this.desc[2 * n + 1] = icrcOff;
      this.slot[i] = n++;
    }
    if (n === 0) return;
    try {
      this.burst(bytes, this.desc, n, this.values);
    } catch {
      this.slot.fill(-1, 0, count); // the addon refused one: every frame is checked on its own
    }
  }
}

/** Decodes and prints batches, on a worker thread or on the command's own. */
export class BatchPrinter {
  private chunks: Uint8Array[] = [];
  private freshChunks = 0;
  /**
   * Output chunks to write into again: a batch's output leaves in its chunks (transferred, not
   * copied) and the chunks come back once written out. A fresh allocation per batch, freed on
   * another thread, made the process's memory creep up with the file (glibc's arenas).
   */
  private readonly spares: ArrayBuffer[] = [];
  private readonly text = new TextBytes(
    (chunk) => {
      this.chunks.push(chunk);
      return false;
    },
    OUT_CHUNK,
    (size) => {
      for (let b = this.spares.pop(); b !== undefined; b = this.spares.pop()) if (b.byteLength >= size) return new Uint8Array(b, 0, size);
      this.freshChunks++;
      return new Uint8Array(size);
    },
  );

  private readonly icrc: BatchIcrc | null;

  /**
   * @param icrcV2 the decoder's routine for one frame's ICRC (undefined: packets/icrc.ts `icrcV2`)
   * @param burst the native addon's routine for many, when it is loaded
   */
  constructor(
    private readonly settings: PrintSettings,
    private readonly icrcV2: DecodeOptions['icrcV2'],
    burst: IcrcBurst | null,
  ) {
    this.icrc = burst === null || !settings.verifyIcrc ? null : new BatchIcrc(burst, icrcV2 ?? icrcV2Js);
  }

  print(m: BatchMessage): BatchResult {
    // A few spares are enough (a batch takes one chunk, a long one two); the rest are let go.
    for (const b of m.spare) if (this.spares.length < MAX_SPARES) this.spares.push(b);
    this.chunks = [];
    const icrc = this.icrc;
    const printer = new FramePrinter(this.text, this.settings, icrc === null ? this.icrcV2 : icrc.icrcV2);
    printer.firstTime = m.firstTime;
    printer.prevTime = m.prevTime;
    const bytes = new Uint8Array(m.data);
    const view = new DataView(m.data);
    const meta = new Float64Array(m.meta);
    icrc?.prepare(bytes, meta, m.count);
    for (let i = 0; i < m.count; i++) {
      if (icrc !== null) icrc.current = i;
      const k = i * META_FIELDS;
      printer.record(view, bytes, meta[k + 4] as number, meta[k + 5] as number, meta[k + 2] as number, meta[k + 3] as number, meta[k] as number, meta[k + 1] as number);
    }
    this.text.end();
    const freshChunks = this.freshChunks;
    this.freshChunks = 0;
    return { seq: m.seq, out: this.chunks, counts: printer.counts, freshChunks, data: m.data, meta: m.meta };
  }
}
