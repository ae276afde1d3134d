/**
 * Reading a capture file from disk in fixed-size chunks, so analysing a
 * capture takes memory that does not grow with the file. Classic pcap
 * (draft-ietf-opsawg-pcap §4-5) is read chunk by chunk; pcapng
 * (draft-ietf-opsawg-pcapng) a block at a time through the same reader
 * `iterateCapture` uses for a file in memory (`iteratePcapngBytes`), which keeps
 * only the section's interface descriptions between blocks.
 *
 * Each yielded record's `data` is a view into a reused buffer: valid only
 * until the next record is requested.
 */
import * as fs from 'node:fs';
import { WireError, WireErrorCode } from '../packets/errors';
import { type CaptureBytes, type CaptureRecord, type CaptureWindow, iterateCapture, iteratePcapngBytes } from '../packets/pcap';

const CHUNK = 1 << 20;
const MAGIC_US = 0xa1b2c3d4;
const MAGIC_NS = 0xa1b23c4d;
const MAGIC_US_SWAPPED = 0xd4c3b2a1;
const MAGIC_NS_SWAPPED = 0x4d3cb2a1;
const SHB = 0x0a0d0d0a;
/** Largest record accepted (the same bound as packets/pcap.ts). */
const MAX_RECORD = 256 * 1024 * 1024;

export interface StreamResult {
  format: 'pcap' | 'pcapng';
  error: WireError | null;
}

/**
 * Streams the records of the capture at `path`. The generator's return value
 * says how reading ended. Throws only when the file cannot be opened or read.
 */
export function* streamCaptureFile(path: string): Generator<CaptureRecord, StreamResult> {
  const fd = fs.openSync(path, 'r');
  try {
    const head = Buffer.alloc(24);
    const got = fs.readSync(fd, head, 0, 24, 0);
    const magic = got >= 4 ? head.readUInt32LE(0) : 0;
    if (magic === SHB) {
      const error = yield* iteratePcapngBytes(fileBytes(fd, fs.fstatSync(fd).size));
      return { format: 'pcapng', error };
    }
    if (got < 24 || !(magic === MAGIC_US || magic === MAGIC_NS || magic === MAGIC_US_SWAPPED || magic === MAGIC_NS_SWAPPED)) {
      // Too short or not a capture: the in-memory reader gives the verdict (it is a few bytes, or any size of junk).
      const error = yield* iterateCapture(new Uint8Array(fs.readFileSync(path)));
      return { format: 'pcap', error };
    }
    const le = magic === MAGIC_US || magic === MAGIC_NS;
    const nano = magic === MAGIC_NS || magic === MAGIC_NS_SWAPPED;
    const major = le ? head.readUInt16LE(4) : head.readUInt16BE(4);
    if (major !== 2) return { format: 'pcap', error: new WireError(WireErrorCode.BadCapture, 4, `unsupported pcap major version ${major}`) };
    const linkType = (le ? head.readUInt32LE(20) : head.readUInt32BE(20)) & 0xffff;
    let buf = Buffer.alloc(CHUNK);
    let start = 0; // first unread byte in buf
    let end = 0; // end of valid bytes in buf
    let filePos = 24; // file offset of buf[end]
    let eof = false;
    let index = 0;
    const fill = (need: number): boolean => {
      if (end - start >= need) return true;
      if (start > 0) {
        buf.copy(buf, 0, start, end);
        end -= start;
        start = 0;
      }
      if (need > buf.length) {
        const bigger = Buffer.alloc(Math.max(need, buf.length * 2));
        buf.copy(bigger, 0, 0, end);
        buf = bigger;
      }
      while (end - start < need && !eof) {
        const n = fs.readSync(fd, buf, end, buf.length - end, filePos);
        if (n === 0) eof = true;
        end += n;
        filePos += n;
      }
      return end - start >= need;
    };
    for (;;) {
      const recOff = filePos - (end - start);
      if (!fill(16)) {
        if (end - start === 0) return { format: 'pcap', error: null };
        return { format: 'pcap', error: new WireError(WireErrorCode.Truncated, recOff, `record header needs 16 bytes but only ${end - start} remain`) };
      }
      const sec = le ? buf.readUInt32LE(start) : buf.readUInt32BE(start);
      const frac = le ? buf.readUInt32LE(start + 4) : buf.readUInt32BE(start + 4);
      const incl = le ? buf.readUInt32LE(start + 8) : buf.readUInt32BE(start + 8);
      const orig = le ? buf.readUInt32LE(start + 12) : buf.readUInt32BE(start + 12);
      if (incl > MAX_RECORD) return { format: 'pcap', error: new WireError(WireErrorCode.BadCapture, recOff + 8, `record captured length ${incl} is absurd`) };
      if (!fill(16 + incl)) {
        return { format: 'pcap', error: new WireError(WireErrorCode.Truncated, recOff + 16, `record ${index + 1} data needs ${incl} bytes but only ${end - start - 16} remain`) };
      }
      index++;
      const timestampNs = BigInt(sec) * 1_000_000_000n + BigInt(frac) * (nano ? 1n : 1000n);
      const data = new Uint8Array(buf.buffer, buf.byteOffset + start + 16, incl);
      start += 16 + incl;
      yield { index, timeSec: sec + frac / (nano ? 1e9 : 1e6), timestampNs, linkType, data, origLen: orig, fileOffset: recOff };
    }
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * A capture file read as the pcapng reader asks: each window is read into one reused buffer
 * (grown to the largest block), chunk by chunk, so a window that lies in what was read last
 * costs no read.
 */
function fileBytes(fd: number, size: number): CaptureBytes {
  let buf = Buffer.alloc(CHUNK);
  let from = 0; // file offset of buf[0]
  let have = 0; // valid bytes in buf
  const w: CaptureWindow = { buf, view: new DataView(buf.buffer, buf.byteOffset, buf.byteLength), at: 0 };
  return {
    length: size,
    window(off: number, n: number): CaptureWindow {
      if (off < from || off + n > from + have) {
        if (n > buf.length) {
          buf = Buffer.alloc(Math.max(n, buf.length * 2));
          w.buf = buf;
          w.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
        }
        // Read from `off` as much as fits: the next blocks usually follow.
        from = off;
        have = 0;
        while (have < n) {
          const r = fs.readSync(fd, buf, have, Math.min(buf.length - have, size - off - have), off + have);
          if (r <= 0) break;
          have += r;
        }
        if (have < n) throw new WireError(WireErrorCode.Truncated, off + have, `capture file shrank while it was read (${off + have} of ${size} bytes)`);
      }
      w.at = off - from;
      return w;
    },
  };
}
