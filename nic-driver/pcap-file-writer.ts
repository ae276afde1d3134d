/**
 * A classic little-endian pcap file streamed to disk with synchronous writes, record by record:
 * the bytes are those `PcapWriter` (packets/pcap.ts) builds in memory, from the same encoding
 * (`PcapEncoder`). The pcap tap writes its file with it.
 */
import { ProgrammingError, ProgrammingErrorCode } from '../base/programming-error';
import * as fs from 'node:fs';
import { PCAP_RECORD_HEADER_LEN, PcapEncoder, type PcapWriteOptions } from '../packets/pcap';

/** A classic pcap file written record by record as frames come. */
export class PcapFileWriter {
  private fd: number | null;
  private readonly enc: PcapEncoder;
  private readonly hdr = new Uint8Array(PCAP_RECORD_HEADER_LEN);
  private readonly hdrView = new DataView(this.hdr.buffer);

  private constructor(fd: number, enc: PcapEncoder) {
    this.fd = fd;
    this.enc = enc;
  }

  /** Creates (or truncates) `path` and writes the file header. Bad options throw before the file is touched. */
  static open(path: string, opts: PcapWriteOptions = {}): PcapFileWriter {
    const enc = new PcapEncoder(opts);
    const fd = fs.openSync(path, 'w');
    fs.writeSync(fd, enc.fileHeader());
    return new PcapFileWriter(fd, enc);
  }

  /** Appends one record; `origLen` defaults to `data.length`. */
  write(data: Uint8Array, timestampNs: bigint, origLen?: number): void {
    if (this.fd === null) throw new ProgrammingError(ProgrammingErrorCode.Misuse, 'PcapFileWriter is closed');
    const incl = this.enc.putRecordHeader(this.hdrView, 0, data.length, timestampNs, origLen);
    fs.writeSync(this.fd, this.hdr);
    fs.writeSync(this.fd, data, 0, incl);
  }

  close(): void {
    if (this.fd === null) return;
    fs.closeSync(this.fd);
    this.fd = null;
  }
}
