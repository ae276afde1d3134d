/**
 * A classic pcap file read straight into record batches (`roce decode`'s command thread, `roce
 * analyze`'s worker): one read puts whole records into a batch's buffer as they lie in the file,
 * record headers included, and a walk over the headers names each record's bytes, number, time and
 * lengths. Nothing is copied or made into an object per record; reading and copying records one by
 * one had taken a third of decode's command thread and a quarter of analyze's worker
 * (docs/performance.md, "roce decode end to end" and "The worker reads in blocks").
 *
 * The records, their numbers and times, and how reading ends (the error and its offset) are those of
 * the record-by-record reader (packets/pcap.ts): both check a record with `pcapRecordError`.
 */
import * as fs from 'node:fs';
import { WireError } from '../packets/errors';
import { openBlockFile, readBlock } from './block-file';
import { internalError } from '../base/programming-error';
import { LinkType, PCAP_HEADER_LEN, PCAP_RECORD_HEADER_LEN, type PcapFileHeader, isPcapMagic, pcapRecordError, readPcapFileHeader } from '../packets/pcap';
import type { StreamResult } from '../analysis/capture-stream';
import type { BatchSource, BatchTimes } from './batch-source';
import type { RecordBatch } from './decode-batch';
import { BATCH_RECORDS } from './decode-batch-layout';

export class PcapBlockReader implements BatchSource {
  need = 0;
  ended: StreamResult | null = null;
  firstTimestampNs: bigint | null = null;
  /** The first record's timestamp: seconds, and the fraction in the file's units. */
  private sec0 = 0;
  private frac0 = 0;
  /** File offset of the next record's header. */
  private off = PCAP_HEADER_LEN;
  /** Records read so far. */
  private index = 0;
  private fd: number | null;

  private constructor(
    fd: number,
    private readonly size: number,
    private readonly h: PcapFileHeader,
    private readonly times: BatchTimes,
  ) {
    this.fd = fd;
  }

  /**
   * Opens `path` when it is a regular file that starts with a readable classic pcap header; null
   * otherwise (standard input, a pipe, pcapng, a bad header: the record-by-record reader takes those,
   * and reports what is wrong; and ERF records, whose times are in their own headers).
   */
  static open(path: string, times: BatchTimes = 'epoch'): PcapBlockReader | null {
    const file = openBlockFile(path, PCAP_HEADER_LEN, (view) => {
      const h = isPcapMagic(view.getUint32(0, true)) ? readPcapFileHeader(view, 0) : null;
      return h === null || h instanceof WireError || h.linkType === LinkType.Erf ? null : h;
    });
    return file === null ? null : new PcapBlockReader(file.fd, file.size, file.head, times);
  }

  fill(batch: RecordBatch): number {
    if (batch.count !== 0) throw internalError('PcapBlockReader.fill takes an empty batch: it reads into the buffer from its start');
    this.need = 0;
    const fd = this.fd;
    if (fd === null || this.ended !== null) return 0;
    const len = this.size;
    const buf = batch.buffer;
    // The buffer holds file bytes [off, off + have). A record cut by its end is read again, whole,
    // at the start of the next batch.
    const have = readBlock(fd, buf, this.off, len);
    const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    const { le, linkType } = this.h;
    const fracNs = this.h.nano ? 1 : 1000;
    const digits = this.h.nano ? 9 : 6;
    const epoch = this.times === 'epoch';
    let p = 0;
    while (batch.count < BATCH_RECORDS) {
      const at = this.off + p;
      if (at >= len) {
        this.ended = { format: 'pcap', error: null };
        break;
      }
      if (p + PCAP_RECORD_HEADER_LEN > have) {
        // The buffer ends inside this header: so does the file, or the next batch reads it.
        if (at + PCAP_RECORD_HEADER_LEN > len) this.ended = { format: 'pcap', error: pcapRecordError(this.h, at, len, 0, this.index) };
        break;
      }
      const incl = view.getUint32(p + 8, le);
      const problem = pcapRecordError(this.h, at, len, incl, this.index);
      if (problem !== null) {
        this.ended = { format: 'pcap', error: problem };
        break;
      }
      const start = p + PCAP_RECORD_HEADER_LEN;
      if (start + incl > have) {
        if (batch.count === 0) this.need = PCAP_RECORD_HEADER_LEN + incl;
        break;
      }
      const sec = view.getUint32(p, le);
      const frac = view.getUint32(p + 4, le);
      if (this.index === 0) {
        this.firstTimestampNs = BigInt(sec) * 1_000_000_000n + BigInt(frac * fracNs);
        this.sec0 = sec;
        this.frac0 = frac;
      }
      this.index++;
      const origLen = view.getUint32(p + 12, le);
      if (epoch) {
        // The record reader's seconds and nanoseconds (packets/pcap.ts), a fraction past a second included.
        const nsec = frac * fracNs;
        if (nsec < 1e9) batch.put(this.index, sec, linkType, origLen, start, start + incl, nsec, digits);
        else batch.put(this.index, sec + Math.floor(nsec / 1e9), linkType, origLen, start, start + incl, nsec % 1e9, digits);
      } else batch.put(this.index, this.nsAfterFirst(sec, frac), linkType, origLen, start, start + incl, 0, digits);
      p = start + incl;
    }
    this.off += p;
    if (this.ended !== null) this.close();
    return batch.count;
  }

  /**
   * Nanoseconds from the first record's timestamp to this one, as `Number` of the difference of the
   * record reader's BigInt timestamps gives it. The seconds differ by less than 2^32, so their
   * difference times 10^9 (= 2^9 · 1 953 125) is below 2^53 · 2^9 and a multiple of 2^9: a double
   * holds it exactly. Adding the fractions' difference is then the one rounding, to nearest with
   * ties to even, that `Number` of the exact BigInt makes.
   */
  private nsAfterFirst(sec: number, frac: number): number {
    return (sec - this.sec0) * 1e9 + (frac - this.frac0) * (this.h.nano ? 1 : 1000);
  }

  close(): void {
    if (this.fd === null) return;
    fs.closeSync(this.fd);
    this.fd = null;
  }
}
