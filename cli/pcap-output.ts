/**
 * `roce decode -w OUT`: the frames that pass the filters, written as a classic little-endian pcap.
 * The file takes the link type and time resolution of the first frame of the input (a pcapng
 * input is written as pcap too: microseconds when its interface's resolution is that or coarser,
 * nanoseconds when finer), and each record keeps its original length. A pcap holds one link type:
 * a frame of another (a pcapng with two kinds of interface) cannot be written, and `add` says so.
 */
import { PCAP_RECORD_HEADER_LEN, PcapEncoder } from '../packets/pcap';
import { LinkType } from '../packets/pcap';

/** A record as `add` takes it (a `CaptureRecord`'s fields). */
export interface PcapOutRecord {
  index: number;
  data: Uint8Array;
  timestampNs: bigint;
  origLen: number;
  linkType: number;
  timeDigits: number;
}

export class PcapOutput {
  private enc: PcapEncoder | null = null;
  private linkType: number = LinkType.Ethernet;

  /** `sink` takes each chunk of the file, in order; a chunk is not reused after it is handed over. */
  constructor(private readonly sink: (chunk: Uint8Array) => void) {}

  /** Fixes the file's link type and resolution (from the input's first frame) and writes its header, once. */
  start(linkType: number, timeDigits: number): void {
    if (this.enc !== null) return;
    this.linkType = linkType;
    this.enc = new PcapEncoder({ linkType, nanosecond: timeDigits > 6 });
    this.sink(this.enc.fileHeader());
  }

  /** Writes one record; an error text when its link type is not the file's (nothing written). */
  add(r: PcapOutRecord): string | null {
    this.start(r.linkType, r.timeDigits);
    const enc = this.enc as PcapEncoder;
    if (r.linkType !== this.linkType)
      return `frame ${r.index} has link type ${r.linkType}, the pcap being written ${this.linkType}: a pcap file holds one link type`;
    const chunk = new Uint8Array(PCAP_RECORD_HEADER_LEN + r.data.byteLength);
    const incl = enc.putRecordHeader(new DataView(chunk.buffer), 0, r.data.byteLength, r.timestampNs, r.origLen);
    chunk.set(r.data.subarray(0, incl), PCAP_RECORD_HEADER_LEN);
    this.sink(incl === r.data.byteLength ? chunk : chunk.subarray(0, PCAP_RECORD_HEADER_LEN + incl));
    return null;
  }

  /** Ends the file: an input without frames still gives a file header (Ethernet, microseconds). */
  finish(): void {
    this.start(LinkType.Ethernet, 6);
  }
}
