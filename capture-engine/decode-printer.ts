/**
 * What `roce decode` does with one capture record: decode it, count it, filter it and print it
 * (a summary line, a JSON object or a field tree) into a `TextBytes`. The command runs it on its
 * own thread, or one per worker thread over batches of records (capture-engine/decode-workers.ts); the
 * settings are plain data so that they cross to a worker as they are.
 */
import { decodeAt, frameFault, type DecodeOptions, type DecodedFrame } from '../packets/decode';
import { writeFrameJson } from '../packets/json';
import { fieldTree, writeSummaryLine } from '../packets/summary';
import type { TextBytes } from '../base/text-bytes';
import { SummaryPieces } from '../packets/summary-pieces';
import { JsonFramePieces } from '../packets/json-frame-pieces';
import { type ExactTime, type FrameTime, timeDifference } from '../base/exact-time';
import { type DisplayFilter, compileDisplayFilter } from '../packets/display-filter';
import type { FieldDef, FieldFrame } from '../packets/frame-fields';
import { frameLayers } from '../packets/frame-layers';
import { type FieldsFormat, clockText, fieldsLine, hexDump } from './tshark-output';
import type { UlpDecoder, UlpText } from '../ulp/ulp-decoder';
import { ULP_PROTOCOLS, type UlpRuleSet, defaultRuleSet } from '../ulp/protocols';
import { type UlpHit, decodeField, observeAll, ulpDecoders } from './ulp-decoding';

const NEWLINE = 0x0a;

/**
 * The time column: since the first frame (`rel`, tshark's `r`), since the epoch (`abs`, `e`), since
 * the frame before (`delta`, `d`), since the frame shown before (`dd`); the date and time of day in
 * local time (`ad`) or UTC (`ud`), or the time of day alone (`a`, `u`).
 */
export type TimeMode = 'rel' | 'abs' | 'delta' | 'dd' | 'ad' | 'a' | 'ud' | 'u';

/** The command's settings, as structured-clonable data. */
export interface PrintSettings {
  json: boolean;
  verbose: boolean;
  timeMode: TimeMode;
  rocePort: number;
  verifyIcrc: boolean;
  /** Only frames to or from these QPs (null: all). */
  qpns: readonly number[] | null;
  /** Only these opcodes (null: all). */
  opcodes: readonly number[] | null;
  /** Frame numbers, inclusive. */
  first: number;
  last: number;
  errorsOnly: boolean;
  /** A display filter in Wireshark's syntax (-Y), or null. */
  displayFilter: string | null;
  /** -T fields: the fields to print and how, or null for the output above. */
  fields: FieldsFormat | null;
  /** -x: each frame's bytes as a hex dump after what it prints. */
  hexDump: boolean;
  /** -w: the frames that pass are counted (and written by the command), none printed. */
  silent: boolean;
  /** Which frames are each upper-layer protocol's: the IP CM ports of its CM connections, and QPNs named with --decode-as. */
  ulp: UlpRuleSet;
}

/** What `roce decode FILE` does without options: summary lines, times since the first frame, every ICRC checked. */
export const DEFAULT_PRINT_SETTINGS: Readonly<PrintSettings> = Object.freeze({
  json: false,
  verbose: false,
  timeMode: 'rel',
  rocePort: 4791,
  verifyIcrc: true,
  qpns: null,
  opcodes: null,
  first: 1,
  last: Number.MAX_SAFE_INTEGER,
  errorsOnly: false,
  displayFilter: null,
  fields: null,
  hexDump: false,
  silent: false,
  ulp: defaultRuleSet(),
});

/** Counts over the records seen, for the closing line on stderr. */
export interface DecodeCounts {
  roce: number;
  malformed: number;
  badIcrc: number;
  truncated: number;
  printed: number;
}

export function zeroCounts(): DecodeCounts {
  return { roce: 0, malformed: 0, badIcrc: 0, truncated: 0, printed: 0 };
}

export function addCounts(to: DecodeCounts, from: DecodeCounts): void {
  to.roce += from.roce;
  to.malformed += from.malformed;
  to.badIcrc += from.badIcrc;
  to.truncated += from.truncated;
  to.printed += from.printed;
}

const NS = 1_000_000_000n;
const CLOCK_MODES: ReadonlySet<TimeMode> = new Set(['ad', 'a', 'ud', 'u']);

export class FramePrinter {
  readonly counts: DecodeCounts = zeroCounts();
  /** Time of the file's first record (the `rel` column's zero, and JSON's `timeRelativeNs`), once known. */
  private first: ExactTime | null = null;
  /** Time of the record before the next one (the `delta` column's reference), once there is one. */
  private readonly prev: ExactTime = { sec: 0, nsec: 0, digits: 0 };
  private hasPrev = false;
  /** The record's time, and its time column: written again for each record (no object per record). */
  private readonly time: FrameTime = { sec: 0, nsec: 0, digits: 0, relSec: 0, relNsec: 0 };
  private readonly column: ExactTime = { sec: 0, nsec: 0, digits: 0 };
  private readonly opts: DecodeOptions;
  private readonly qpns: Set<number> | null;
  private readonly opcodes: Set<number> | null;
  private readonly unfiltered: boolean;
  private readonly filter: DisplayFilter | null;
  private readonly fieldDefs: readonly FieldDef[] | null;
  /** Time of the frame shown before (the `dd` column's reference and frame.time_delta_displayed's), once there is one. */
  private shown: ExactTime | null = null;
  /** Which frames are each registered protocol's and what they carry, frame after frame (ulp/protocols.ts's order). */
  private readonly ulps: UlpDecoder<unknown, unknown>[];
  /** How each protocol's frames are shown, in the same order. */
  private readonly ulpTexts: UlpText<unknown>[];
  /** What a protocol made of the record `decode` decoded last (null: none did). */
  lastUlp: UlpHit | null = null;
  /** The protocol frame `writeUlpJson` and `writeUlpWords` write, and its protocol's text (set before each use: no closure per record). */
  private ulpWriteFrame: unknown = null;
  private ulpWriteText: UlpText<unknown> | null = null;
  private readonly writeUlpJson = (t: TextBytes): void => {
    this.ulpWriteText?.writeJsonMember?.(t, this.ulpWriteFrame);
  };
  /** The same for `writeWords` (a summary line's words). */
  private readonly writeUlpWords = (t: TextBytes): void => {
    this.ulpWriteText?.writeWords?.(t, this.ulpWriteFrame);
  };

  /**
   * @param icrcV2 the routine that checks a RoCE v2 ICRC (the native addon's when it is built)
   */
  constructor(
    private readonly text: TextBytes,
    private readonly s: PrintSettings,
    icrcV2: DecodeOptions['icrcV2'],
    /** The summary's runs that repeat within a flow, encoded once (kept across a printer per batch). */
    private readonly pieces = new SummaryPieces(),
    /** The same for the JSON objects. */
    private readonly jsonPieces = new JsonFramePieces(),
    /**
     * Each protocol's state as the frames before this printer's first left it (a batch's,
     * capture-engine/ulp-decoding.ts; null: from nothing); each is changed in place.
     */
    ulpStates: readonly (unknown | null)[] | null = null,
  ) {
    this.ulps = ulpDecoders(ULP_PROTOCOLS, s.ulp, ulpStates);
    this.ulpTexts = ULP_PROTOCOLS.map((p) => p.text);
    // A summary line shows neither the Ethernet header nor the IP checksum: the common frame is
    // decoded without them (same verdicts, packets/decode.ts `lean`).
    const summary = !s.json && !s.verbose;
    this.opts = { rocePort: s.rocePort, verifyIcrc: s.verifyIcrc, icrcV2, lean: summary, leanWithIp: summary };
    this.qpns = s.qpns === null ? null : new Set(s.qpns);
    this.opcodes = s.opcodes === null ? null : new Set(s.opcodes);
    this.filter = s.displayFilter === null ? null : compileDisplayFilter(s.displayFilter, decodeField);
    this.fieldDefs = s.fields === null ? null : s.fields.names.map((n) => decodeField(n) as FieldDef);
    this.unfiltered = this.qpns === null && this.opcodes === null && !s.errorsOnly && this.filter === null;
  }

  /**
   * For a printer that starts inside the capture (a batch on a worker thread): the time of the
   * file's first record, and of the record before this printer's first (null: there is none).
   */
  startAt(first: ExactTime, prev: ExactTime | null): void {
    this.first = { ...first };
    this.hasPrev = prev !== null;
    if (prev !== null) Object.assign(this.prev, prev);
  }

  /**
   * One record: its bytes are `bytes[start, end)` (`view` over the same buffer), captured from a
   * frame of `origLen` bytes on the wire, at `sec` seconds and `nsec` nanoseconds since the epoch
   * (a timestamp of `digits` decimals).
   */
  record(
    view: DataView,
    bytes: Uint8Array,
    start: number,
    end: number,
    linkType: number,
    origLen: number,
    index: number,
    sec: number,
    nsec: number,
    digits: number,
  ): boolean {
    return this.emit(this.decode(view, bytes, start, end, linkType, origLen), index, sec, nsec, digits, bytes, start, end, linkType, origLen);
  }

  /**
   * The first half of `record`: decodes and counts a record. A batch decodes all its records before
   * it prints any: the two loops each keep their own code in the core's caches, which one loop
   * doing both did not (docs/performance.md, "roce decode end to end").
   */
  decode(view: DataView, bytes: Uint8Array, start: number, end: number, linkType: number, origLen: number): DecodedFrame {
    const d = decodeAt(view, bytes, start, end, linkType, this.opts, origLen);
    const c = this.counts;
    this.lastUlp = d.roce ? observeAll(this.ulps, d, view, start) : null;
    if (d.roce) {
      c.roce++;
      // A frame the capture cut is truncated, not malformed (docs/decode.md, "Truncated frames").
      if (frameFault(d) !== null || d.madError !== null) c.malformed++;
      if (d.icrcOk === false) c.badIcrc++;
      if (d.truncated) c.truncated++;
    }
    return d;
  }

  /**
   * A record outside the time window: the time columns' references move on (the first record
   * stays the `rel` column's zero, the `delta` column measures from the last record), nothing is printed.
   */
  passOver(sec: number, nsec: number, digits: number): void {
    this.first ??= { sec, nsec, digits };
    const prev = this.prev;
    prev.sec = sec;
    prev.nsec = nsec;
    prev.digits = digits;
    this.hasPrev = true;
  }

  /**
   * The second half of `record`, in capture order: filters and prints a decoded record; true when it
   * passed the filters (printed, or written by -w). `linkType` and `origLen` are needed by a display
   * filter and -T fields only.
   */
  emit(
    d: DecodedFrame,
    index: number,
    sec: number,
    nsec: number,
    digits: number,
    bytes: Uint8Array,
    start: number,
    end: number,
    linkType = 1,
    origLen = end - start,
    /** What a protocol made of the record (FramePrinter.lastUlp after its `decode`). */
    ulp: UlpHit | null = this.lastUlp,
  ): boolean {
    const time = this.time;
    time.sec = sec;
    time.nsec = nsec;
    time.digits = digits;
    const first = (this.first ??= { sec, nsec, digits });
    // Exact: whole seconds and nanoseconds apart (base/exact-time.ts `timeDifference`).
    let relSec = sec - first.sec;
    let relNsec = nsec - first.nsec;
    if (relNsec < 0) {
      relNsec += 1e9;
      relSec -= 1;
    }
    time.relSec = relSec;
    time.relNsec = relNsec;
    const c = this.counts;
    const mode = this.s.timeMode;
    const column = this.column;
    if (mode === 'abs' || CLOCK_MODES.has(mode)) {
      column.sec = sec;
      column.nsec = nsec;
      column.digits = digits;
    } else if (mode === 'rel' || mode === 'dd') {
      column.sec = relSec;
      column.nsec = relNsec;
      column.digits = digits > first.digits ? digits : first.digits;
    } else if (this.hasPrev) timeDifference(time, this.prev, column);
    else {
      // The first record has no record before it: 0, as tshark's frame.time_delta.
      column.sec = 0;
      column.nsec = 0;
      column.digits = digits;
    }
    const prev = this.prev;
    const hadPrev = this.hasPrev;
    const prevSec = prev.sec;
    const prevNsec = prev.nsec;
    prev.sec = sec;
    prev.nsec = nsec;
    prev.digits = digits;
    this.hasPrev = true;
    let ff: FieldFrame | null = null;
    if (this.filter !== null || this.fieldDefs !== null) {
      // Exact nanoseconds (BigInt) only for a filter or fields: three per record cost a summary line's worth.
      const prevNs = BigInt(prevSec) * NS + BigInt(prevNsec);
      const frameBytes = bytes.subarray(start, end);
      const epochNs = BigInt(sec) * NS + BigInt(nsec);
      const shown = this.shown;
      ff = {
        number: index,
        origLen,
        bytes: frameBytes,
        epochNs,
        relativeNs: BigInt(relSec) * NS + BigInt(relNsec),
        deltaNs: hadPrev ? epochNs - prevNs : 0n,
        deltaDisplayedNs: shown === null ? 0n : epochNs - (BigInt(shown.sec) * NS + BigInt(shown.nsec)),
        decoded: d,
        layers: frameLayers(frameBytes, linkType),
        ulp,
      };
    }
    if (!this.passes(index, d, ff)) return false;
    if (mode === 'dd') {
      // Since the frame shown before: 0 for the first (tshark's frame.time_delta_displayed).
      if (this.shown === null) {
        column.sec = 0;
        column.nsec = 0;
        column.digits = digits;
      } else timeDifference(time, this.shown, column);
    }
    this.shown = { sec, nsec, digits };
    if (this.s.silent) {
      c.printed++;
      return true;
    }
    const text = this.text;
    const ulpText = ulp === null ? undefined : this.ulpTexts[ulp.index];
    let printed = true;
    if (this.fieldDefs !== null && this.s.fields !== null && ff !== null) {
      text.text(fieldsLine(this.fieldDefs, ff, this.s.fields));
      text.byte(NEWLINE);
    } else if (this.s.json) {
      let member: string | ((t: TextBytes) => void) | undefined;
      if (ulp !== null && ulpText !== undefined) {
        if (ulpText.writeJsonMember === undefined) member = ulpText.jsonMember(ulp.frame);
        else {
          this.ulpWriteText = ulpText;
          this.ulpWriteFrame = ulp.frame;
          member = this.writeUlpJson;
        }
      }
      writeFrameJson(text, index, time, d, this.jsonPieces, member);
      text.byte(NEWLINE);
    } else if (d.roce) {
      if (this.s.verbose) {
        text.text(fieldTree(index, column, end - start, d, bytes.subarray(start, end), ulp === null ? undefined : ulpText?.treeLines(ulp.frame)));
        text.byte(NEWLINE);
      } else {
        let words: string | ((t: TextBytes) => void) | undefined;
        if (ulp !== null && ulpText !== undefined) {
          if (ulpText.writeWords === undefined) words = ulpText.words(ulp.frame);
          else {
            this.ulpWriteText = ulpText;
            this.ulpWriteFrame = ulp.frame;
            words = this.writeUlpWords;
          }
        }
        writeSummaryLine(
          text,
          index,
          column,
          d,
          this.pieces,
          CLOCK_MODES.has(mode) ? clockText(sec, nsec, digits, mode as 'ad' | 'a' | 'ud' | 'u') : undefined,
          words,
        );
      }
      text.byte(NEWLINE);
    } else printed = false;
    if (printed) {
      c.printed++;
      if (this.s.hexDump) {
        // tshark -x: the frame's bytes, then a blank line.
        text.text(hexDump(bytes.subarray(start, end)));
        text.byte(NEWLINE);
      }
    }
    return true;
  }

  private passes(index: number, d: DecodedFrame, ff: FieldFrame | null): boolean {
    if (index < this.s.first || index > this.s.last) return false;
    if (this.unfiltered) return true;
    // A display filter judges every frame, RoCE or not, as tshark's -Y does.
    if (this.filter !== null && ff !== null && !this.filter.matches(ff)) return false;
    if (this.qpns === null && this.opcodes === null && !this.s.errorsOnly) return true;
    if (!d.roce) return false;
    if (this.s.errorsOnly && frameFault(d) === null && d.madError === null) return false;
    if (this.qpns !== null) {
      const dest = d.bth?.destQp;
      const src = d.deth?.srcQp;
      if (!((dest !== undefined && this.qpns.has(dest)) || (src !== undefined && this.qpns.has(src)))) return false;
    }
    if (this.opcodes !== null && (d.bth === null || !this.opcodes.has(d.bth.opcode))) return false;
    return true;
  }
}
