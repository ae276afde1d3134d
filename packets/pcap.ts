/**
 * Capture-file formats, bytes only: classic pcap and pcapng reading, classic pcap
 * and minimal pcapng writing. Files are read and written elsewhere: a capture is
 * streamed from disk by analysis/capture-stream.ts (through the same readers,
 * over a `CaptureBytes` source) and to disk by nic-driver/pcap-file-writer.ts
 * (with the same header encoding, `PcapEncoder`).
 *
 * Formats:
 *  - classic pcap: draft-ietf-opsawg-pcap (§4 File Header, §5 Packet Record),
 *    microsecond magic 0xA1B2C3D4 and nanosecond magic 0xA1B23C4D, either byte order.
 *  - pcapng: draft-ietf-opsawg-pcapng (§3.1 General Block Structure, §4.1 Section
 *    Header Block, §4.2 Interface Description Block, §4.3 Enhanced Packet Block,
 *    §4.4 Simple Packet Block, Appendix A obsolete Packet Block).
 *
 * The reader never throws on bad input: the first problem ends reading and is
 * returned as a `WireError` (code BadCapture or Truncated) whose offset is a
 * byte offset into the file; records read before it are kept. Record data are
 * subarray views into the file (no copies).
 */
import { WireError, WireErrorCode } from './errors';
import { secondsOfNs, timeDigitsOf } from '../base/exact-time';

/** Link-layer header types (tcpdump.org LINKTYPE_* values). */
export const LinkType = {
  Null: 0,
  Ethernet: 1,
  Raw: 101,
  LinuxSll: 113,
  /** Endace ERF (reported only, not decoded). */
  Erf: 197,
  Ipv4: 228,
  Ipv6: 229,
  LinuxSll2: 276,
} as const;

/** One frame of a capture: its number, time, link type, the bytes captured and the length it had on the wire. */
export interface CaptureRecord {
  /** 1-based frame number in the file. */
  index: number;
  /** Exact timestamp in nanoseconds since the epoch. */
  timestampNs: bigint;
  /**
   * The same timestamp as whole seconds since the epoch (rounded down) and the nanoseconds past
   * them (0 ≤ nsec < 10^9): both exact in a double, with no BigInt to divide (base/exact-time.ts).
   */
  sec: number;
  nsec: number;
  /** Decimals the timestamp has: 6 (µs) or 9 (ns) for classic pcap; for pcapng, its interface's if_tsresol (`timeDigitsOf`). */
  timeDigits: number;
  /** Link type of this record (pcapng: of its interface). */
  linkType: number;
  /** Captured bytes: a subarray view into the file (no copy). */
  data: Uint8Array;
  /** Original length on the wire. */
  origLen: number;
  /** Byte offset of the record header (pcapng: of the block) in the file. */
  fileOffset: number;
}

/** What `readCapture` found in a pcap or pcapng file: its format and records, and the first problem, if any. */
export interface CaptureReadResult {
  /** Detected format; 'pcap' when the magic is not recognised (and `error` says so). */
  format: 'pcap' | 'pcapng';
  /** Classic pcap: nanosecond resolution; pcapng: always true (timestamps are converted to ns). */
  nanosecond: boolean;
  records: CaptureRecord[];
  /** First problem met (BadCapture or Truncated, offset = file offset), or null. */
  error: WireError | null;
}

/** Classic pcap magics as read little-endian (draft-ietf-opsawg-pcap §4). */
const MAGIC_US = 0xa1b2c3d4;
const MAGIC_NS = 0xa1b23c4d;
const MAGIC_US_SWAPPED = 0xd4c3b2a1;
const MAGIC_NS_SWAPPED = 0x4d3cb2a1;

export const PCAP_HEADER_LEN = 24;
/** Length of a classic pcap record header (§5). */
export const PCAP_RECORD_HEADER_LEN = 16;

/** pcapng block types (pcapng §4, Appendix A). */
const BlockType = {
  Shb: 0x0a0d0d0a,
  Idb: 0x00000001,
  ObsoletePacket: 0x00000002,
  Spb: 0x00000003,
  Epb: 0x00000006,
} as const;
const BYTE_ORDER_MAGIC = 0x1a2b3c4d;
const BYTE_ORDER_MAGIC_SWAPPED = 0x4d3c2b1a;

/** IDB option codes (pcapng §4.2). */
const OPT_ENDOFOPT = 0;
const OPT_IF_TSRESOL = 9;
const OPT_IF_TSOFFSET = 14;

/** Largest captured length accepted for one record (and, with 64 bytes of headers, one pcapng block). */
const MAX_RECORD_LEN = 256 * 1024 * 1024;
/**
 * The largest classic pcap record Wireshark and libpcap read for Ethernet and most link types,
 * whatever the file's snaplen (WTAP_MAX_PACKET_SIZE_STANDARD, libpcap MAXIMUM_SNAPLEN).
 */
const STANDARD_MAX_RECORD_LEN = 262144;

function badCapture(off: number, msg: string): WireError {
  return new WireError(WireErrorCode.BadCapture, off, msg);
}

function truncated(off: number, len: number, count: number, what: string): WireError {
  return new WireError(WireErrorCode.Truncated, off, `${what} needs ${count} bytes but only ${Math.max(0, len - off)} remain`);
}

function viewOf(buf: Uint8Array): DataView {
  return new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
}

/**
 * Largest incl_len accepted in a classic pcap whose header declares `snaplen`: the larger of the
 * two, at most 256 MiB. Records longer than a small or wrong snaplen occur in real captures, so
 * 262144 bytes are always accepted, as Wireshark does; a header that declares more is believed.
 */
function recordLimit(snaplen: number): number {
  return Math.min(MAX_RECORD_LEN, Math.max(STANDARD_MAX_RECORD_LEN, snaplen));
}

/** Whether the first four bytes of a file, read little-endian, are a classic pcap magic (either byte order, µs or ns). */
export function isPcapMagic(magic: number): boolean {
  return magic === MAGIC_US || magic === MAGIC_NS || magic === MAGIC_US_SWAPPED || magic === MAGIC_NS_SWAPPED;
}

/**
 * The bytes of a capture, whole in memory or read from a file as they are needed (the readers
 * ask for one classic record or one pcapng block at a time, so a streamed file costs memory for
 * its largest record or block).
 */
export interface CaptureBytes {
  /** Length of the whole capture in bytes. */
  readonly length: number;
  /**
   * Makes bytes [off, off + n) of the capture (within `length`) available as one run of `buf`
   * starting at index `at`, with `view` over `buf`; the bytes that follow in the capture, up to
   * index `end` (at least `at + n`), come with them. Valid until the next call.
   */
  window(off: number, n: number): CaptureWindow;
}

export interface CaptureWindow {
  buf: Uint8Array;
  view: DataView;
  at: number;
  end: number;
}

/** A capture held whole in memory. */
function wholeBytes(file: Uint8Array): CaptureBytes {
  const w: CaptureWindow = { buf: file, view: viewOf(file), at: 0, end: file.length };
  return {
    length: file.length,
    window(off: number): CaptureWindow {
      w.at = off;
      return w;
    },
  };
}

/**
 * The format the first four bytes announce ('pcap' when they are no capture magic, as the
 * reader's error then says) and whether timestamps come at nanosecond resolution (pcapng: always,
 * as they are converted to ns).
 */
export function captureFormat(src: CaptureBytes): { format: 'pcap' | 'pcapng'; nanosecond: boolean } {
  if (src.length < 4) return { format: 'pcap', nanosecond: false };
  const w = src.window(0, 4);
  const magic = w.view.getUint32(w.at, true);
  if (magic === BlockType.Shb) return { format: 'pcapng', nanosecond: true };
  return { format: 'pcap', nanosecond: magic === MAGIC_NS || magic === MAGIC_NS_SWAPPED };
}

/**
 * Streams the records of a capture file held in memory. Yields each record; returns the first
 * problem as a WireError (or null at a clean end of file). Never throws on bad input.
 */
export function iterateCapture(file: Uint8Array): Generator<CaptureRecord, WireError | null> {
  return iterateCaptureBytes(wholeBytes(file));
}

/**
 * The records of a capture over any byte source, the format detected from its first four bytes.
 * Record data are views into the source's buffer: into the file for a capture in memory, into a
 * reused buffer for a streamed one (valid until the next record is asked for).
 * (It hands over the format's own generator rather than delegating to it: every level of
 * `yield*` costs time on every record.)
 */
export function iterateCaptureBytes(src: CaptureBytes): Generator<CaptureRecord, WireError | null> {
  if (src.length < 4) return ended(truncated(0, src.length, 4, 'capture magic'));
  const w = src.window(0, 4);
  const magic = w.view.getUint32(w.at, true);
  if (magic === BlockType.Shb) return iteratePcapngBytes(src);
  if (isPcapMagic(magic)) return iteratePcapBytes(src);
  return ended(badCapture(0, `unknown capture magic 0x${magic.toString(16).padStart(8, '0')} (not pcap or pcapng)`));
}

/** A reading that ends with `error` before any record. */
// biome-ignore lint/correctness/useYield: a reading with no record is still a reading: callers iterate it like any other
function* ended(error: WireError): Generator<CaptureRecord, WireError | null> {
  return error;
}

/** What a classic pcap file header (draft-ietf-opsawg-pcap §4) says about the records that follow it. */
export interface PcapFileHeader {
  /** Fields are little-endian. */
  le: boolean;
  /** Timestamps' fractions are nanoseconds (else microseconds). */
  nano: boolean;
  snaplen: number;
  linkType: number;
  /** Largest captured length a record may have (`recordLimit`). */
  limit: number;
}

/**
 * Reads the 24-byte classic pcap file header at `view[at]` (the magic already known to be a pcap
 * one); a WireError when the file cannot be read as pcap.
 */
export function readPcapFileHeader(view: DataView, at: number): PcapFileHeader | WireError {
  const magic = view.getUint32(at, true);
  const le = magic === MAGIC_US || magic === MAGIC_NS;
  const nano = magic === MAGIC_NS || magic === MAGIC_NS_SWAPPED;
  const major = view.getUint16(at + 4, le);
  if (major !== 2) return badCapture(4, `unsupported pcap major version ${major}`);
  // thiszone (offset 8) and sigfigs (12) are always 0 in practice and ignored, as libpcap does.
  const snaplen = view.getUint32(at + 16, le);
  // §4: LinkType is the low 16 bits; the upper bits carry FCS information.
  const linkType = view.getUint32(at + 20, le) & 0xffff;
  return { le, nano, snaplen, linkType, limit: recordLimit(snaplen) };
}

/**
 * Why the classic pcap record whose header starts at file offset `off` cannot be read in a file of
 * `len` bytes, or null when it can: `incl` is its captured length (read from the header, which must
 * then be in the file), and `index` the number of records before it.
 */
export function pcapRecordError(h: PcapFileHeader, off: number, len: number, incl: number, index: number): WireError | null {
  if (off + PCAP_RECORD_HEADER_LEN > len) return truncated(off, len, PCAP_RECORD_HEADER_LEN, 'record header');
  if (incl > h.limit) return badCapture(off + 8, `record captured length ${incl} is above the ${h.limit}-byte limit (snaplen ${h.snaplen})`);
  const start = off + PCAP_RECORD_HEADER_LEN;
  if (start + incl > len) return truncated(start, len, incl, `record ${index + 1} data`);
  return null;
}

/** Classic pcap (draft-ietf-opsawg-pcap §4 File Header, §5 Packet Record), a record at a time. */
function* iteratePcapBytes(src: CaptureBytes): Generator<CaptureRecord, WireError | null> {
  const len = src.length;
  if (len < PCAP_HEADER_LEN) return truncated(0, len, PCAP_HEADER_LEN, 'pcap file header');
  let w = src.window(0, PCAP_HEADER_LEN);
  const h = readPcapFileHeader(w.view, w.at);
  if (h instanceof WireError) return h;
  const { le, nano, linkType } = h;
  const fracNs = nano ? 1 : 1000;
  const timeDigits = nano ? 9 : 6;
  // An ERF record's time is in its own header (`erfTimestampNs`).
  const erf = linkType === LinkType.Erf;

  // The window in hand holds file offsets [shift + w.at, shift + w.end): records in it need no call.
  let shift = -w.at;
  let off = PCAP_HEADER_LEN;
  let index = 0;
  while (off < len) {
    if (off + PCAP_RECORD_HEADER_LEN > len) return pcapRecordError(h, off, len, 0, index);
    if (off + PCAP_RECORD_HEADER_LEN > shift + w.end) {
      w = src.window(off, PCAP_RECORD_HEADER_LEN);
      shift = off - w.at;
    }
    let at = off - shift;
    const sec = w.view.getUint32(at, le);
    const frac = w.view.getUint32(at + 4, le);
    const incl = w.view.getUint32(at + 8, le);
    const orig = w.view.getUint32(at + 12, le);
    const problem = pcapRecordError(h, off, len, incl, index);
    if (problem !== null) return problem;
    const start = off + PCAP_RECORD_HEADER_LEN;
    if (start + incl > shift + w.end) {
      w = src.window(off, PCAP_RECORD_HEADER_LEN + incl);
      shift = off - w.at;
      at = w.at;
    }
    at += PCAP_RECORD_HEADER_LEN;
    index++;
    if (erf && incl >= 8) {
      const timestampNs = erfTimestampNs(w.view, at);
      const whole = secondsOfNs(timestampNs);
      yield {
        index,
        timestampNs,
        sec: whole,
        nsec: Number(timestampNs - BigInt(whole) * 1_000_000_000n),
        timeDigits: 9,
        linkType,
        data: w.buf.subarray(at, at + incl),
        origLen: orig,
        fileOffset: off,
      };
      off = start + incl;
      continue;
    }
    // A fraction of 10^6 µs or more (or 10^9 ns) is kept as it is, as libpcap and Wireshark read it.
    const nsec = frac * fracNs;
    const carry = nsec < 1e9 ? 0 : Math.floor(nsec / 1e9);
    yield {
      index,
      timestampNs: BigInt(sec) * 1_000_000_000n + BigInt(nsec),
      sec: sec + carry,
      nsec: nsec - carry * 1e9,
      timeDigits,
      linkType,
      data: w.buf.subarray(at, at + incl),
      origLen: orig,
      fileOffset: off,
    };
    off = start + incl;
  }
  return null;
}

interface Iface {
  linkType: number;
  snaplen: number;
  /** Timestamp units per second is base ** exp (if_tsresol, pcapng §4.2). */
  base: 2 | 10;
  exp: number;
  /** if_tsoffset in seconds. */
  offsetSec: bigint;
}

/**
 * An ERF record's own timestamp, the first 8 bytes of its header: seconds since the epoch in 32.32
 * fixed point, little-endian (Endace ERF types reference, "ERF header"). A classic pcap record
 * around it holds a copy to the µs; Wireshark takes this one, to the ns rounded to nearest (wiretap
 * pcap-common.c, the ERF pseudo-header), and so does this reader. In pcapng it keeps the packet
 * block's timestamp, as Wireshark does.
 */
function erfTimestampNs(view: DataView, at: number): bigint {
  const frac = BigInt(view.getUint32(at, true));
  const sec = BigInt(view.getUint32(at + 4, true));
  return sec * 1_000_000_000n + ((frac * 1_000_000_000n + 0x80000000n) >> 32n);
}

/** Converts a pcapng timestamp in interface units to nanoseconds since the epoch. */
function ifaceTsToNs(ifc: Iface, ts: bigint): bigint {
  let ns: bigint;
  if (ifc.base === 10) {
    ns = ifc.exp <= 9 ? ts * 10n ** BigInt(9 - ifc.exp) : ts / 10n ** BigInt(ifc.exp - 9);
  } else {
    ns = (ts * 1_000_000_000n) >> BigInt(ifc.exp);
  }
  return ns + ifc.offsetSec * 1_000_000_000n;
}

/** What `PcapngWalk.block` found in a block. */
export const PcapngBlock = {
  /** A packet (an EPB, an SPB or an obsolete Packet Block): the walk's record fields describe it. */
  Record: 1,
  /** Anything else (a section or interface header, a block of another type): nothing to hand on. */
  Other: 0,
} as const;
export type PcapngBlock = (typeof PcapngBlock)[keyof typeof PcapngBlock];

/** Whether a file's first four bytes, read little-endian, are a pcapng section header block's type. */
export function isPcapngMagic(magic: number): boolean {
  return magic === BlockType.Shb;
}

/** Below this, a microsecond timestamp is exact in a double (2^53). */
const TS_HIGH_EXACT = 2 ** 21;

/**
 * A walk over pcapng blocks (draft-ietf-opsawg-pcapng §3.1 General Block Structure and §4 blocks),
 * one at a time, wherever their bytes are: the record reader below, and a reader that reads the
 * file in large pieces (capture-engine/pcapng-block-reader.ts). It keeps the section's byte order and its
 * interfaces; the checks, the errors and their offsets are the same for both readers, since they
 * are made here.
 */
export class PcapngWalk {
  private le = true;
  private ifaces: Iface[] = [];
  private first = true;
  /** The last packet block's fields, after `block` returned `PcapngBlock.Record`. */
  linkType = 0;
  /** Where its data start in the view given to `block`. */
  dataStart = 0;
  capLen = 0;
  origLen = 0;
  private iface: Iface | null = null;
  private tsHigh = 0;
  private tsLow = 0;
  /** A Simple Packet Block: no timestamp. */
  private simple = false;

  /**
   * The total length of the block at file offset `off` of a `len`-byte file, whose first
   * min(12, len − off) bytes are at `view[at…]`; or the error that ends reading there.
   */
  blockLength(view: DataView, at: number, off: number, len: number): number | WireError {
    if (off + 8 > len) return truncated(off, len, 8, 'pcapng block header');
    // The SHB type 0x0A0D0D0A reads the same in either byte order.
    const type = view.getUint32(at, this.le);
    if (type === BlockType.Shb) {
      // §4.1: the byte-order magic decides how this section (including this block's lengths) is read.
      if (off + 12 > len) return truncated(off, len, 12, 'section header block');
      const bom = view.getUint32(at + 8, true);
      if (bom === BYTE_ORDER_MAGIC) this.le = true;
      else if (bom === BYTE_ORDER_MAGIC_SWAPPED) this.le = false;
      else return badCapture(off + 8, `bad section byte-order magic 0x${bom.toString(16).padStart(8, '0')}`);
    } else if (this.first) {
      return badCapture(off, 'pcapng file does not start with a section header block');
    }
    this.first = false;
    const total = view.getUint32(at + 4, this.le);
    if (total < 12) return badCapture(off + 4, `block total length ${total} is less than 12`);
    if (total % 4 !== 0) return badCapture(off + 4, `block total length ${total} is not a multiple of 4`);
    if (total > MAX_RECORD_LEN + 64) return badCapture(off + 4, `block total length ${total} is absurd`);
    if (off + total > len) return truncated(off, len, total, `pcapng block (type 0x${type.toString(16)})`);
    return total;
  }

  /**
   * Reads the block of `total` bytes (as `blockLength` gave it) at `view[at…]`, file offset `off`:
   * a packet, another block, or the error that ends reading there.
   */
  block(view: DataView, at: number, total: number, off: number): PcapngBlock | WireError {
    const le = this.le;
    // `shift + pos` is the file offset of position `pos` of the view (for errors).
    const shift = off - at;
    const type = view.getUint32(at, le);
    const trailer = view.getUint32(at + total - 4, le);
    if (trailer !== total) {
      return badCapture(off + total - 4, `block trailing length ${trailer} differs from leading length ${total}`);
    }
    const body = at + 8;
    const bodyEnd = at + total - 4;
    switch (type) {
      case BlockType.Shb: {
        // §4.1: magic, major, minor, section length (8); options follow.
        if (bodyEnd - body < 16) return badCapture(off + 4, `section header block too short (${total} bytes)`);
        const major = view.getUint16(body + 4, le);
        if (major !== 1) return badCapture(shift + body + 4, `unsupported pcapng major version ${major}`);
        this.ifaces = [];
        return PcapngBlock.Other;
      }
      case BlockType.Idb: {
        // §4.2: LinkType u16, reserved u16, SnapLen u32, options.
        if (bodyEnd - body < 8) return badCapture(off + 4, `interface description block too short (${total} bytes)`);
        const ifc: Iface = {
          linkType: view.getUint16(body, le),
          snaplen: view.getUint32(body + 4, le),
          base: 10,
          exp: 6,
          offsetSec: 0n,
        };
        const err = readIdbOptions(view, body + 8, bodyEnd, le, ifc, shift);
        if (err !== null) return err;
        this.ifaces.push(ifc);
        return PcapngBlock.Other;
      }
      case BlockType.Epb:
      case BlockType.ObsoletePacket: {
        // §4.3 EPB: interface id u32, ts high u32, ts low u32, captured len u32, original len u32, data.
        // Appendix A Packet Block: interface id u16, drops u16, then the same fields.
        if (bodyEnd - body < 20) return badCapture(off + 4, `packet block too short (${total} bytes)`);
        const ifId = type === BlockType.Epb ? view.getUint32(body, le) : view.getUint16(body, le);
        const ifc = this.ifaces[ifId];
        if (ifc === undefined) return badCapture(shift + body, `packet block refers to undefined interface ${ifId}`);
        const cap = view.getUint32(body + 12, le);
        const start = body + 20;
        if (cap > bodyEnd - start) {
          return badCapture(shift + body + 12, `captured length ${cap} exceeds the block body (${bodyEnd - start} bytes left)`);
        }
        this.iface = ifc;
        this.simple = false;
        this.tsHigh = view.getUint32(body + 4, le);
        this.tsLow = view.getUint32(body + 8, le);
        this.linkType = ifc.linkType;
        this.dataStart = start;
        this.capLen = cap;
        this.origLen = view.getUint32(body + 16, le);
        return PcapngBlock.Record;
      }
      case BlockType.Spb: {
        // §4.4: original len u32, data; captured length = min(original, snaplen of interface 0, body); no timestamp.
        if (bodyEnd - body < 4) return badCapture(off + 4, `simple packet block too short (${total} bytes)`);
        const ifc = this.ifaces[0];
        if (ifc === undefined) return badCapture(off, 'simple packet block before any interface description block');
        const orig = view.getUint32(body, le);
        const start = body + 4;
        let cap = Math.min(orig, bodyEnd - start);
        if (ifc.snaplen > 0) cap = Math.min(cap, ifc.snaplen);
        this.iface = ifc;
        this.simple = true;
        this.linkType = ifc.linkType;
        this.dataStart = start;
        this.capLen = cap;
        this.origLen = orig;
        return PcapngBlock.Record;
      }
      default:
        // §3.1: unknown block types are skipped.
        return PcapngBlock.Other;
    }
  }

  /** The last packet's timestamp in ns since the epoch (0 for a Simple Packet Block, which has none). */
  timestampNs(): bigint {
    if (this.simple || this.iface === null) return 0n;
    return ifaceTsToNs(this.iface, (BigInt(this.tsHigh) << 32n) | BigInt(this.tsLow));
  }

  /** Decimals of the last packet's timestamp, from its interface's if_tsresol (`timeDigitsOf`). */
  timeDigits(): number {
    return timeDigitsOf(this.iface?.exp ?? 6);
  }

  /**
   * The last packet's timestamp in whole microseconds, when its interface counts in them from the
   * epoch (the default if_tsresol, no if_tsoffset) and a double holds it exactly; else -1. Then
   * `microsSec` of it and the microseconds past that are the seconds and nanoseconds of
   * `timestampNs()`, without a BigInt.
   */
  exactMicros(): number {
    const ifc = this.iface;
    if (this.simple || ifc === null || ifc.base !== 10 || ifc.exp !== 6 || ifc.offsetSec !== 0n || this.tsHigh >= TS_HIGH_EXACT) return -1;
    return this.tsHigh * 2 ** 32 + this.tsLow;
  }
}

/**
 * The whole seconds in `us` microseconds, for 0 ≤ `us` < 2^53, without a BigInt: the floor of the
 * rounded quotient by 10^6 is the true one. The quotient is below 2^34, where half an ulp is at most
 * 2^-20, less than the 10^-6 by which a quotient that is not whole falls short of the next
 * integer. The microseconds past them, `us − sec · 10^6`, are then exact too.
 */
export function microsSec(us: number): number {
  return Math.floor(us / 1e6);
}

/** pcapng (draft-ietf-opsawg-pcapng §3.1 General Block Structure and §4 blocks), a block at a time. */
function* iteratePcapngBytes(src: CaptureBytes): Generator<CaptureRecord, WireError | null> {
  const len = src.length;
  const walk = new PcapngWalk();
  let off = 0;
  let index = 0;
  while (off < len) {
    const head = src.window(off, Math.min(12, len - off));
    const total = walk.blockLength(head.view, head.at, off, len);
    if (total instanceof WireError) return total;
    const w = src.window(off, total);
    const kind = walk.block(w.view, w.at, total, off);
    if (kind instanceof WireError) return kind;
    if (kind === PcapngBlock.Record) {
      const timestampNs = walk.timestampNs();
      const sec = secondsOfNs(timestampNs);
      index++;
      yield {
        index,
        timestampNs,
        sec,
        nsec: Number(timestampNs - BigInt(sec) * 1_000_000_000n),
        timeDigits: walk.timeDigits(),
        linkType: walk.linkType,
        data: w.buf.subarray(walk.dataStart, walk.dataStart + walk.capLen),
        origLen: walk.origLen,
        fileOffset: off,
      };
    }
    off += total;
  }
  return null;
}

/** Reads IDB options (pcapng §3.5 Options, §4.2); returns an error (at `off + shift` in the file) or null. */
function readIdbOptions(view: DataView, off: number, end: number, le: boolean, ifc: Iface, shift: number): WireError | null {
  while (off + 4 <= end) {
    const code = view.getUint16(off, le);
    const olen = view.getUint16(off + 2, le);
    if (code === OPT_ENDOFOPT) return null;
    const val = off + 4;
    if (val + olen > end) return badCapture(shift + off + 2, `option ${code} length ${olen} runs past the end of its block`);
    if (code === OPT_IF_TSRESOL) {
      if (olen < 1) return badCapture(shift + off + 2, 'if_tsresol option is empty');
      const r = view.getUint8(val);
      // MSB clear: 10^-n; MSB set: 2^-n.
      const base = r & 0x80 ? 2 : 10;
      const exp = r & 0x7f;
      if ((base === 10 && exp > 18) || (base === 2 && exp > 63)) {
        return badCapture(shift + val, `if_tsresol 0x${r.toString(16)} is out of range`);
      }
      ifc.base = base;
      ifc.exp = exp;
    } else if (code === OPT_IF_TSOFFSET) {
      if (olen < 8) return badCapture(shift + off + 2, `if_tsoffset option has length ${olen}, want 8`);
      ifc.offsetSec = view.getBigInt64(val, le);
    }
    off = val + ((olen + 3) & ~3);
  }
  return null;
}

/** Reads a whole capture file into memory records. Never throws on bad input. */
export function readCapture(file: Uint8Array): CaptureReadResult {
  const src = wholeBytes(file);
  const { format, nanosecond } = captureFormat(src);
  const records: CaptureRecord[] = [];
  const it = iterateCaptureBytes(src);
  let error: WireError | null = null;
  let offset = 0;
  try {
    for (;;) {
      const step = it.next();
      if (step.done === true) {
        error = step.value;
        break;
      }
      records.push(step.value);
      offset = step.value.fileOffset;
    }
  } catch (e) {
    // Defensive: the iterator returns its errors; anything thrown is a bug, reported rather than raised.
    error = e instanceof WireError ? e : badCapture(offset, `internal error while reading capture: ${String(e)}`);
  }
  return { format, nanosecond, records, error };
}

/**
 * One line describing how reading ended, e.g.
 * "capture truncated at byte 5123 after 41 complete frames: record header needs 16 bytes but only 3 remain".
 */
export function describeCaptureError(result: Pick<CaptureReadResult, 'format' | 'error'> & { records: { readonly length: number } }): string {
  const n = result.records.length;
  const frames = `${n} complete frame${n === 1 ? '' : 's'}`;
  const err = result.error;
  if (err === null) return `${result.format} capture read completely: ${frames}`;
  const reason = err.reason;
  const what = err.code === WireErrorCode.Truncated ? 'truncated' : 'malformed';
  return `capture ${what} at byte ${err.offset} after ${frames}: ${reason}`;
}

// ---------------------------------------------------------------- writers

/** How `writePcap` writes a classic pcap file. */
export interface PcapWriteOptions {
  /** Link type of every record (default Ethernet). */
  linkType?: number;
  /** Nanosecond-resolution magic 0xA1B23C4D (default true); false writes microseconds. */
  nanosecond?: boolean;
  /** Snapshot length (default 262144); longer frames are cut to it, keeping their original length. */
  snaplen?: number;
}

interface ResolvedOptions {
  linkType: number;
  nanosecond: boolean;
  snaplen: number;
}

function checkU32(v: number, what: string): void {
  if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) {
    throw new WireError(WireErrorCode.BadValue, 0, `${what} ${v} does not fit in 32 bits`);
  }
}

function resolveOptions(opts: PcapWriteOptions): ResolvedOptions {
  const r = {
    linkType: opts.linkType ?? LinkType.Ethernet,
    nanosecond: opts.nanosecond ?? true,
    snaplen: opts.snaplen ?? 262144,
  };
  if (!Number.isInteger(r.linkType) || r.linkType < 0 || r.linkType > 0xffff) {
    throw new WireError(WireErrorCode.BadValue, 0, `link type ${r.linkType} does not fit in 16 bits`);
  }
  checkU32(r.snaplen, 'snaplen');
  return r;
}

/** Writes the 24-byte classic pcap file header, little-endian (draft-ietf-opsawg-pcap §4). */
function putPcapHeader(view: DataView, o: ResolvedOptions): void {
  view.setUint32(0, o.nanosecond ? MAGIC_NS : MAGIC_US, true);
  view.setUint16(4, 2, true);
  view.setUint16(6, 4, true);
  view.setInt32(8, 0, true);
  view.setUint32(12, 0, true);
  view.setUint32(16, o.snaplen, true);
  view.setUint32(20, o.linkType, true);
}

/** Writes a 16-byte record header (§5) at `off`; returns the captured length. */
function putRecordHeader(view: DataView, off: number, o: ResolvedOptions, dataLen: number, timestampNs: bigint, origLen: number | undefined): number {
  if (timestampNs < 0n) throw new WireError(WireErrorCode.BadValue, 0, `negative timestamp ${timestampNs}`);
  const sec = timestampNs / 1_000_000_000n;
  if (sec > 0xffffffffn) throw new WireError(WireErrorCode.BadValue, 0, `timestamp ${timestampNs} ns is past 2106`);
  const subNs = timestampNs % 1_000_000_000n;
  const frac = o.nanosecond ? subNs : subNs / 1000n;
  const incl = Math.min(dataLen, o.snaplen);
  const orig = origLen ?? dataLen;
  checkU32(orig, 'original length');
  if (orig < incl) throw new WireError(WireErrorCode.BadValue, 0, `original length ${orig} is less than the captured length ${incl}`);
  view.setUint32(off, Number(sec), true);
  view.setUint32(off + 4, Number(frac), true);
  view.setUint32(off + 8, incl, true);
  view.setUint32(off + 12, orig, true);
  return incl;
}

/**
 * The pieces of a classic little-endian pcap file: its header and one record header per frame,
 * for a writer that puts them elsewhere than in memory (nic-driver/pcap-file-writer.ts streams
 * them to disk). The bytes are those `PcapWriter` builds.
 */
export class PcapEncoder {
  private readonly opts: ResolvedOptions;

  /** Throws WireError (BadValue) for options that do not fit the format. */
  constructor(opts: PcapWriteOptions = {}) {
    this.opts = resolveOptions(opts);
  }

  /** The 24-byte file header. */
  fileHeader(): Uint8Array {
    const head = new Uint8Array(PCAP_HEADER_LEN);
    putPcapHeader(viewOf(head), this.opts);
    return head;
  }

  /**
   * Writes the 16-byte record header of a `dataLen`-byte frame at `off` in `view`; returns the
   * captured length, the count of the frame's first bytes that follow the header in the file.
   */
  putRecordHeader(view: DataView, off: number, dataLen: number, timestampNs: bigint, origLen?: number): number {
    return putRecordHeader(view, off, this.opts, dataLen, timestampNs, origLen);
  }
}

/** Builds a classic little-endian pcap file in memory. */
export class PcapWriter {
  private readonly opts: ResolvedOptions;
  private buf: Uint8Array;
  private view: DataView;
  private len: number;

  constructor(opts: PcapWriteOptions = {}) {
    this.opts = resolveOptions(opts);
    this.buf = new Uint8Array(64 * 1024);
    this.view = viewOf(this.buf);
    putPcapHeader(this.view, this.opts);
    this.len = PCAP_HEADER_LEN;
  }

  private reserve(n: number): void {
    if (this.len + n <= this.buf.length) return;
    let cap = this.buf.length * 2;
    while (cap < this.len + n) cap *= 2;
    const next = new Uint8Array(cap);
    next.set(this.buf.subarray(0, this.len));
    this.buf = next;
    this.view = viewOf(next);
  }

  /** Appends one record; `origLen` defaults to `data.length`. */
  add(data: Uint8Array, timestampNs: bigint, origLen?: number): void {
    const incl = Math.min(data.length, this.opts.snaplen);
    this.reserve(PCAP_RECORD_HEADER_LEN + incl);
    putRecordHeader(this.view, this.len, this.opts, data.length, timestampNs, origLen);
    this.buf.set(data.subarray(0, incl), this.len + PCAP_RECORD_HEADER_LEN);
    this.len += PCAP_RECORD_HEADER_LEN + incl;
  }

  /** The file so far (a copy). */
  toBytes(): Uint8Array {
    return this.buf.slice(0, this.len);
  }
}

/** Writes records as a classic little-endian pcap file. */
export function writePcap(records: { data: Uint8Array; timestampNs: bigint }[], opts: PcapWriteOptions = {}): Uint8Array {
  const w = new PcapWriter(opts);
  for (const r of records) w.add(r.data, r.timestampNs);
  return w.toBytes();
}

/** How `writePcapng` writes a pcapng file (one section, one interface). */
export interface PcapngWriteOptions {
  /** Link type of the single interface (default Ethernet). */
  linkType?: number;
  /** Interface snaplen (default 0 = no limit). */
  snaplen?: number;
}

/**
 * Minimal little-endian pcapng writer: one Section Header Block, one Interface
 * Description Block with if_tsresol = 9 (nanoseconds), and one Enhanced Packet
 * Block per record (pcapng §4.1, §4.2, §4.3).
 */
export function writePcapng(records: { data: Uint8Array; timestampNs: bigint }[], opts: PcapngWriteOptions = {}): Uint8Array {
  const linkType = opts.linkType ?? LinkType.Ethernet;
  const snaplen = opts.snaplen ?? 0;
  if (!Number.isInteger(linkType) || linkType < 0 || linkType > 0xffff) {
    throw new WireError(WireErrorCode.BadValue, 0, `link type ${linkType} does not fit in 16 bits`);
  }
  checkU32(snaplen, 'snaplen');
  const SHB_LEN = 28;
  const IDB_LEN = 20 + 8 + 4; // header + body + if_tsresol option (4 + 1 padded to 4) + opt_endofopt
  let size = SHB_LEN + IDB_LEN;
  for (const r of records) size += 32 + ((r.data.length + 3) & ~3);
  const out = new Uint8Array(size);
  const v = viewOf(out);

  v.setUint32(0, BlockType.Shb, true);
  v.setUint32(4, SHB_LEN, true);
  v.setUint32(8, BYTE_ORDER_MAGIC, true);
  v.setUint16(12, 1, true);
  v.setUint16(14, 0, true);
  v.setBigInt64(16, -1n, true); // section length unknown
  v.setUint32(24, SHB_LEN, true);

  let o = SHB_LEN;
  v.setUint32(o, BlockType.Idb, true);
  v.setUint32(o + 4, IDB_LEN, true);
  v.setUint16(o + 8, linkType, true);
  v.setUint16(o + 10, 0, true);
  v.setUint32(o + 12, snaplen, true);
  v.setUint16(o + 16, OPT_IF_TSRESOL, true);
  v.setUint16(o + 18, 1, true);
  v.setUint8(o + 20, 9);
  v.setUint16(o + 24, OPT_ENDOFOPT, true);
  v.setUint16(o + 26, 0, true);
  v.setUint32(o + 28, IDB_LEN, true);
  o += IDB_LEN;

  for (const r of records) {
    if (r.timestampNs < 0n || r.timestampNs > 0xffffffffffffffffn) {
      throw new WireError(WireErrorCode.BadValue, 0, `timestamp ${r.timestampNs} does not fit in 64 bits`);
    }
    const total = 32 + ((r.data.length + 3) & ~3);
    v.setUint32(o, BlockType.Epb, true);
    v.setUint32(o + 4, total, true);
    v.setUint32(o + 8, 0, true);
    v.setUint32(o + 12, Number(r.timestampNs >> 32n), true);
    v.setUint32(o + 16, Number(r.timestampNs & 0xffffffffn), true);
    v.setUint32(o + 20, r.data.length, true);
    v.setUint32(o + 24, r.data.length, true);
    out.set(r.data, o + 28);
    v.setUint32(o + total - 4, total, true);
    o += total;
  }
  return out;
}
