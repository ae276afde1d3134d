/**
 * A pcapng file read straight into record batches, as capture-engine/pcap-block-reader.ts reads a classic pcap
 * file: one read puts whole blocks into a batch's buffer as they lie in the file, and a walk over
 * them names each packet's bytes, number, time and lengths. pcapng is what Wireshark and dumpcap
 * write, so it is what most hardware captures are; read record by record it decoded 25 % slower
 * than the same packets in a classic pcap file (docs/performance.md, "pcapng in blocks").
 *
 * The blocks are checked by the record reader's own walk (packets/pcap.ts `PcapngWalk`), so the
 * records, their numbers and times, and how reading ends (the error and its offset) are the same.
 */
import * as fs from 'node:fs';
import { WireError } from '../packets/errors';
import { openBlockFile, readBlock } from './block-file';
import { internalError } from '../base/programming-error';
import { PcapngBlock, PcapngWalk, isPcapngMagic, microsSec } from '../packets/pcap';
import { secondsOfNs } from '../base/exact-time';
import type { StreamResult } from '../analysis/capture-stream';
import type { BatchSource, BatchTimes } from './batch-source';
import type { RecordBatch } from './decode-batch';
import { BATCH_RECORDS } from './decode-batch-layout';

/** The most bytes a block header takes to read (a section header's byte-order magic ends at 12). */
const BLOCK_HEAD = 12;

export class PcapngBlockReader implements BatchSource {
  need = 0;
  ended: StreamResult | null = null;
  firstTimestampNs: bigint | null = null;
  private readonly walk = new PcapngWalk();
  /** The first record's timestamp: whole microseconds when exact (`PcapngWalk.exactMicros`), and ns. */
  private micros0 = -1;
  private ns0 = 0n;
  /** File offset of the next block. */
  private off = 0;
  /** Records read so far. */
  private index = 0;
  private fd: number | null;

  private constructor(
    fd: number,
    private readonly size: number,
    private readonly times: BatchTimes,
  ) {
    this.fd = fd;
  }

  /**
   * Opens `path` when it is a regular file that starts with a pcapng section header block's type;
   * null otherwise (standard input, a pipe, classic pcap, anything else: the other readers take
   * those). Whatever is wrong past the block type is reported by `fill`, as the record reader would.
   */
  static open(path: string, times: BatchTimes = 'epoch'): PcapngBlockReader | null {
    const file = openBlockFile(path, BLOCK_HEAD, (view) => (isPcapngMagic(view.getUint32(0, true)) ? true : null));
    return file === null ? null : new PcapngBlockReader(file.fd, file.size, times);
  }

  fill(batch: RecordBatch): number {
    if (batch.count !== 0) throw internalError('PcapngBlockReader.fill takes an empty batch: it reads into the buffer from its start');
    this.need = 0;
    // A buffer's worth of blocks may hold no packet (interfaces, statistics, blocks of other types):
    // read on until one, the end, or a block larger than the batch.
    while (batch.count === 0 && this.need === 0 && this.ended === null && this.fd !== null) this.fillOnce(batch, this.fd);
    return batch.count;
  }

  private fillOnce(batch: RecordBatch, fd: number): void {
    const len = this.size;
    const buf = batch.buffer;
    // The buffer holds file bytes [off, off + have). A block cut by its end is read again, whole, at
    // the start of the next batch.
    const have = readBlock(fd, buf, this.off, len);
    const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    const walk = this.walk;
    let p = 0;
    while (batch.count < BATCH_RECORDS) {
      const at = this.off + p;
      if (at >= len) {
        this.ended = { format: 'pcapng', error: null };
        break;
      }
      // The block's head is in the buffer, or the buffer ends first and the next batch reads it.
      if (p + Math.min(BLOCK_HEAD, len - at) > have) break;
      const total = walk.blockLength(view, p, at, len);
      if (total instanceof WireError) {
        this.ended = { format: 'pcapng', error: total };
        break;
      }
      if (p + total > have) {
        // The block is in the file (blockLength checked) but not all in the buffer.
        if (p === 0) this.need = total;
        break;
      }
      const kind = walk.block(view, p, total, at);
      if (kind instanceof WireError) {
        this.ended = { format: 'pcapng', error: kind };
        break;
      }
      if (kind === PcapngBlock.Record) {
        this.index++;
        this.put(batch);
      }
      p += total;
    }
    this.off += p;
    if (this.ended !== null) this.close();
  }

  /** Names the last packet in `batch`, its time as the record reader's BigInt timestamp gives it (batch-source.ts `BatchTimes`). */
  private put(batch: RecordBatch): void {
    const walk = this.walk;
    const us = walk.exactMicros();
    const digits = walk.timeDigits();
    const start = walk.dataStart;
    const end = start + walk.capLen;
    if (this.index === 1) {
      this.micros0 = us;
      this.ns0 = walk.timestampNs();
      this.firstTimestampNs = this.ns0;
    }
    if (this.times === 'epoch') {
      if (us >= 0) {
        const sec = microsSec(us);
        batch.put(this.index, sec, walk.linkType, walk.origLen, start, end, (us - sec * 1e6) * 1000, digits);
      } else {
        const ns = walk.timestampNs();
        const sec = secondsOfNs(ns);
        batch.put(this.index, sec, walk.linkType, walk.origLen, start, end, Number(ns - BigInt(sec) * 1_000_000_000n), digits);
      }
      return;
    }
    // Both exact: the difference in µs is an exact integer, and times 1000 is the one rounding that
    // `Number` of the BigInt difference in ns makes.
    const time = us >= 0 && this.micros0 >= 0 ? (us - this.micros0) * 1000 : Number(walk.timestampNs() - this.ns0);
    batch.put(this.index, time, walk.linkType, walk.origLen, start, end, 0, digits);
  }

  close(): void {
    if (this.fd === null) return;
    fs.closeSync(this.fd);
    this.fd = null;
  }
}
