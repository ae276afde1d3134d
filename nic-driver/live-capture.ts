/**
 * The capture file of a live run (`--pcap FILE` on the commands that drive a real link): a classic
 * nanosecond pcap (Ethernet) that `roce decode`, `roce analyze`, tshark and Wireshark read, with a
 * bound on what it keeps.
 *
 * Two bounds, either or both:
 *  - `maxFrames` (`--pcap-count N`): a ring of the last N frames, held in memory and written when
 *    the capture closes, so the file ends with what happened last (the end of a stalled run, say);
 *  - `maxBytes` (`--pcap-size BYTES`): the file stops growing at this size, later frames are counted
 *    as dropped and not written.
 *
 * Without a ring, records are gathered in a chunk and written in one `writeSync` per chunk, so the
 * data path pays a copy per frame and a system call per `CHUNK_BYTES`, not two calls per frame.
 * `close()` writes what is left; the commands close the capture on every exit path.
 */
import * as fs from 'node:fs';
import { LinkType, PCAP_RECORD_HEADER_LEN, PcapEncoder } from '../packets/pcap';
import { RoceError } from '../base/roce-error';

export const LiveCaptureErrorCode = {
  /** The capture file cannot be created or written (the path, permissions, a full disk). */
  FILE: 'ROCE_ERR_CAPTURE_FILE',
  /** A bound that is not a positive integer. */
  BAD_BOUND: 'ROCE_ERR_CAPTURE_BOUND',
} as const;
export type LiveCaptureErrorCode = (typeof LiveCaptureErrorCode)[keyof typeof LiveCaptureErrorCode];

export class LiveCaptureError extends RoceError<LiveCaptureErrorCode> {}

export interface LiveCaptureOptions {
  /** The file to create (truncated if it exists). */
  path: string;
  /** Keep only the last this many frames (a ring, written at close). Default: no ring. */
  maxFrames?: number;
  /** The file never grows past this many bytes (header included); later frames are dropped. */
  maxBytes?: number;
  /** Keep only the first this many bytes of each frame (tcpdump's -s; the record keeps the frame's real length). Default: whole frames. */
  snapLen?: number;
}

/** What a capture wrote, for the commands' reports. */
export interface LiveCaptureStats {
  file: string;
  /** Frames in the file. */
  frames: number;
  /** Frames seen but not in the file: pushed out of the ring, or past the size limit. */
  dropped: number;
  /** Bytes of the file (header included). */
  bytes: number;
}

/** The default size limit when none is given: a capture is always bounded. */
export const DEFAULT_CAPTURE_MAX_BYTES = 1 << 30;
/** Largest ring accepted (frames are held in memory until close). */
export const MAX_CAPTURE_RING = 10_000_000;

const PCAP_FILE_HEADER_LEN = 24;
/** Snapshot lengths accepted: enough for Ethernet, IPv6, UDP, BTH and the largest extension header; at most the pcap default. */
export const MIN_SNAP_LEN = 64;
export const MAX_SNAP_LEN = 262144;
/** Records are written in chunks of about this size. */
const CHUNK_BYTES = 1 << 20;

/** Where the recorder's frames go: the capture driver calls `record` for each frame sent or received. */
export interface FrameRecorder {
  record(frame: Uint8Array): void;
}

export class LiveCapture implements FrameRecorder {
  private readonly enc: PcapEncoder;
  private readonly snapLen: number;
  private fd: number | null;
  private readonly path: string;
  private readonly maxBytes: number;
  /** The ring (ringSize > 0): copies of the last frames with their times, oldest at `ringHead` once full. */
  private readonly ringSize: number;
  private readonly ringFrames: Uint8Array[] = [];
  private readonly ringTimes: bigint[] = [];
  private readonly ringLens: number[] = [];
  private ringHead = 0;
  /** The chunk being filled (streaming mode). */
  private chunk = new Uint8Array(CHUNK_BYTES);
  private chunkView = new DataView(this.chunk.buffer);
  private chunkLen = 0;
  private fileBytes = PCAP_FILE_HEADER_LEN;
  private written = 0;
  private droppedFrames = 0;

  /**
   * Creates the file and writes its header. `nowNs` gives the wall-clock time in ns since 1970 for
   * each record (the composition root passes the real clock).
   */
  constructor(
    opts: LiveCaptureOptions,
    private readonly nowNs: () => bigint,
  ) {
    const ring = opts.maxFrames ?? 0;
    if (opts.maxFrames !== undefined && (!Number.isInteger(ring) || ring < 1 || ring > MAX_CAPTURE_RING)) {
      throw new LiveCaptureError(LiveCaptureErrorCode.BAD_BOUND, `the capture's frame count must be an integer 1..${MAX_CAPTURE_RING}, not ${opts.maxFrames}`);
    }
    const maxBytes = opts.maxBytes ?? DEFAULT_CAPTURE_MAX_BYTES;
    if (!Number.isSafeInteger(maxBytes) || maxBytes < PCAP_FILE_HEADER_LEN) {
      throw new LiveCaptureError(
        LiveCaptureErrorCode.BAD_BOUND,
        `the capture's size limit must be an integer of at least ${PCAP_FILE_HEADER_LEN} bytes (the file header), not ${opts.maxBytes}`,
      );
    }
    const snap = opts.snapLen ?? MAX_SNAP_LEN;
    if (!Number.isInteger(snap) || snap < MIN_SNAP_LEN || snap > MAX_SNAP_LEN) {
      throw new LiveCaptureError(
        LiveCaptureErrorCode.BAD_BOUND,
        `the capture's snapshot length must be an integer ${MIN_SNAP_LEN}..${MAX_SNAP_LEN}, not ${opts.snapLen}`,
      );
    }
    this.snapLen = snap;
    this.enc = new PcapEncoder({ linkType: LinkType.Ethernet, nanosecond: true, snaplen: snap });
    this.ringSize = ring;
    this.maxBytes = maxBytes;
    this.path = opts.path;
    try {
      this.fd = fs.openSync(opts.path, 'w');
      fs.writeSync(this.fd, this.enc.fileHeader());
    } catch (e) {
      throw new LiveCaptureError(LiveCaptureErrorCode.FILE, `cannot write the capture ${opts.path}: ${(e as Error).message}`);
    }
  }

  record(frame: Uint8Array): void {
    if (this.fd === null) return;
    const t = this.nowNs();
    if (this.ringSize > 0) {
      const copy = frame.slice(0, this.snapLen);
      if (this.ringFrames.length < this.ringSize) {
        this.ringFrames.push(copy);
        this.ringTimes.push(t);
        this.ringLens.push(frame.length);
      } else {
        this.ringFrames[this.ringHead] = copy;
        this.ringTimes[this.ringHead] = t;
        this.ringLens[this.ringHead] = frame.length;
        this.ringHead = (this.ringHead + 1) % this.ringSize;
        this.droppedFrames++;
      }
      return;
    }
    this.append(frame, t, frame.length);
  }

  /** Adds one record to the chunk (and the chunk to the file when full), or counts it dropped past the size limit. */
  private append(frame: Uint8Array, t: bigint, origLen: number): void {
    const need = PCAP_RECORD_HEADER_LEN + Math.min(frame.length, this.snapLen);
    if (this.fileBytes + need > this.maxBytes) {
      this.droppedFrames++;
      return;
    }
    if (this.chunkLen + need > this.chunk.length) {
      this.flush();
      if (need > this.chunk.length) {
        this.chunk = new Uint8Array(need);
        this.chunkView = new DataView(this.chunk.buffer);
      }
    }
    const incl = this.enc.putRecordHeader(this.chunkView, this.chunkLen, frame.length, t, origLen);
    this.chunk.set(frame.subarray(0, incl), this.chunkLen + PCAP_RECORD_HEADER_LEN);
    this.chunkLen += PCAP_RECORD_HEADER_LEN + incl;
    this.fileBytes += PCAP_RECORD_HEADER_LEN + incl;
    this.written++;
  }

  /** Writes the gathered records to the file. */
  private flush(): void {
    if (this.fd === null || this.chunkLen === 0) return;
    try {
      let off = 0;
      while (off < this.chunkLen) off += fs.writeSync(this.fd, this.chunk, off, this.chunkLen - off);
    } catch (e) {
      this.abandon();
      throw new LiveCaptureError(LiveCaptureErrorCode.FILE, `cannot write the capture ${this.path}: ${(e as Error).message}`);
    }
    this.chunkLen = 0;
  }

  private abandon(): void {
    if (this.fd === null) return;
    try {
      fs.closeSync(this.fd);
    } catch {
      // Closing after a failed write: the write's error is the one reported.
    }
    this.fd = null;
  }

  /** What the file holds so far (a ring's frames count once it is written at close). */
  get stats(): LiveCaptureStats {
    return { file: this.path, frames: this.written, dropped: this.droppedFrames, bytes: this.fileBytes };
  }

  /** Writes the ring (oldest first) or the last chunk and closes the file. Idempotent. */
  close(): void {
    if (this.fd === null) return;
    if (this.ringSize > 0) {
      const n = this.ringFrames.length;
      const start = n < this.ringSize ? 0 : this.ringHead;
      for (let i = 0; i < n; i++) {
        const k = (start + i) % n;
        this.append(this.ringFrames[k]!, this.ringTimes[k]!, this.ringLens[k]!);
      }
      this.ringFrames.length = 0;
      this.ringTimes.length = 0;
      this.ringLens.length = 0;
    }
    this.flush();
    this.abandon();
  }
}

/** Wall-clock nanoseconds since 1970 from a monotonic source: anchored once, so records never go back in time. */
export function wallClockNs(): () => bigint {
  const anchorWall = BigInt(Date.now()) * 1_000_000n;
  const anchorMono = process.hrtime.bigint();
  return () => anchorWall + (process.hrtime.bigint() - anchorMono);
}
