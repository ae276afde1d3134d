/**
 * A batch of capture records being filled on `roce decode`'s thread, and the printer that decodes
 * and prints a batch on whichever thread it lands (capture-engine/decode-batch-layout.ts: the format).
 */
import type { DecodedFrame, DecodeOptions } from '../packets/decode';
import { icrcV2 as icrcV2Js } from '../packets/icrc';
import { BatchIcrc, type IcrcBurst } from './batch-icrc';
import { TextBytes } from '../base/text-bytes';
import { FramePrinter, type PrintSettings } from './decode-printer';
import { SummaryPieces } from '../packets/summary-pieces';
import { JsonFramePieces } from '../packets/json-frame-pieces';
import type { ExactTime } from '../base/exact-time';
import type { UlpHit } from './ulp-decoding';
import { BATCH_BYTES, BATCH_RECORDS, type BatchMessage, type BatchResult, META_FIELDS, OUT_CHUNK } from './decode-batch-layout';

/**
 * Records decoded before they are printed: enough that each loop keeps its code in the caches (64
 * did as well as 512), few enough that the garbage collector rarely finds them alive.
 */
const PHASE_RUN = 128;
/** Output chunks a printer keeps to write into again, at most. */
const MAX_SPARES = 4;

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

  /** The batch's bytes, for a reader that fills them itself and then names its records with `put`. */
  get buffer(): Uint8Array {
    return this.bytes;
  }

  /** Copies a record in after the last one (`time`, `nsec` and `digits` as decode-batch-layout.ts says). */
  add(index: number, time: number, linkType: number, origLen: number, data: Uint8Array, nsec: number, digits: number): void {
    const start = this.used;
    this.bytes.set(data, start);
    this.put(index, time, linkType, origLen, start, start + data.length, nsec, digits);
  }

  /** Names a record that lies at `buffer[start, end)` already (after the last one named). */
  put(index: number, time: number, linkType: number, origLen: number, start: number, end: number, nsec: number, digits: number): void {
    this.used = end;
    const k = this.count * META_FIELDS;
    const m = this.metaView;
    m[k] = index;
    m[k + 1] = time;
    m[k + 2] = linkType;
    m[k + 3] = origLen;
    m[k + 4] = start;
    m[k + 5] = end;
    m[k + 6] = nsec;
    m[k + 7] = digits;
    this.count++;
  }

  /** The time of record `i` (0-based, below `count`) of a batch of epoch times. */
  timeAt(i: number): ExactTime {
    const k = i * META_FIELDS;
    const m = this.metaView;
    return { sec: m[k + 1] as number, nsec: m[k + 6] as number, digits: m[k + 7] as number };
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
  /** A run of records decoded, before they are printed, and what an upper-layer protocol made of each. */
  private readonly decoded: (DecodedFrame | null)[] = new Array<DecodedFrame | null>(PHASE_RUN).fill(null);
  private readonly ulps: (UlpHit | null)[] = new Array<UlpHit | null>(PHASE_RUN).fill(null);
  private readonly pieces = new SummaryPieces();
  private readonly jsonPieces = new JsonFramePieces();

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
    const printer = new FramePrinter(this.text, this.settings, icrc === null ? this.icrcV2 : icrc.icrcV2, this.pieces, this.jsonPieces, m.ulpStates ?? null);
    printer.startAt(m.first, m.prev);
    const bytes = new Uint8Array(m.data);
    const view = new DataView(m.data);
    const meta = new Float64Array(m.meta);
    icrc?.prepare(bytes, meta, m.count);
    // Records are decoded a run at a time, then printed (FramePrinter.decode says why). A field
    // tree costs far more to print than to decode: it gains nothing, and goes a record at a time.
    const run = this.settings.verbose ? 1 : PHASE_RUN;
    const decoded = this.decoded;
    const ulps = this.ulps;
    for (let from = 0; from < m.count; from += run) {
      const to = Math.min(m.count, from + run);
      for (let i = from; i < to; i++) {
        if (icrc !== null) icrc.current = i;
        const k = i * META_FIELDS;
        decoded[i - from] = printer.decode(view, bytes, meta[k + 4] as number, meta[k + 5] as number, meta[k + 2] as number, meta[k + 3] as number);
        ulps[i - from] = printer.lastUlp;
      }
      for (let i = from; i < to; i++) {
        const k = i * META_FIELDS;
        printer.emit(
          decoded[i - from] as DecodedFrame,
          meta[k] as number,
          meta[k + 1] as number,
          meta[k + 6] as number,
          meta[k + 7] as number,
          bytes,
          meta[k + 4] as number,
          meta[k + 5] as number,
          meta[k + 2] as number,
          meta[k + 3] as number,
          ulps[i - from] ?? null,
        );
      }
    }
    decoded.fill(null);
    ulps.fill(null);
    this.text.end();
    const freshChunks = this.freshChunks;
    this.freshChunks = 0;
    return { seq: m.seq, out: this.chunks, counts: printer.counts, freshChunks, data: m.data, meta: m.meta };
  }
}
