/**
 * Degrading a capture the way real capture tools do, for tests: drop records
 * (capture loss), start at record N (a capture that starts mid-conversation),
 * cut every record to a snap length (tcpdump -s / editcap -s), or spoil the
 * ICRC of RoCE frames (a NIC-side capture tool that does not preserve it).
 * Each returns a new classic pcap file; timestamps and link type are kept.
 */
import { LinkType, PcapWriter, readCapture } from '../../packets/pcap';
import { decodeFrame } from '../../packets/decode';

interface Rec {
  data: Uint8Array;
  timestampNs: bigint;
  origLen: number;
  linkType: number;
}

function records(file: Uint8Array): Rec[] {
  const r = readCapture(file);
  if (r.error !== null) throw r.error;
  return r.records.map((x) => ({ data: x.data, timestampNs: x.timestampNs, origLen: x.origLen, linkType: x.linkType }));
}

function write(recs: readonly Rec[], snaplen?: number): Uint8Array {
  const w = new PcapWriter({ linkType: recs[0]?.linkType ?? LinkType.Ethernet, ...(snaplen !== undefined ? { snaplen } : {}) });
  for (const r of recs) w.add(r.data, r.timestampNs, Math.max(r.origLen, r.data.length));
  return w.toBytes();
}

/** The capture without the records whose 1-based numbers are in `drop`. */
export function dropRecords(file: Uint8Array, drop: ReadonlySet<number>): Uint8Array {
  return write(records(file).filter((_, i) => !drop.has(i + 1)));
}

/** The capture from record `first` (1-based) on. */
export function startAt(file: Uint8Array, first: number): Uint8Array {
  return write(records(file).slice(first - 1));
}

/** Every record cut to `snaplen` bytes, its original length kept (editcap -s). */
export function cutSnaplen(file: Uint8Array, snaplen: number): Uint8Array {
  return write(records(file), snaplen);
}

/** Every RoCE frame with its ICRC bytes inverted (when `which` says so for its 1-based number). */
export function spoilIcrc(file: Uint8Array, which: (n: number) => boolean = () => true): Uint8Array {
  const out = records(file).map((r, i) => {
    const d = decodeFrame(r.data, r.linkType, { verifyIcrc: false });
    if (!which(i + 1) || !d.roce || d.icrcOff < 0) return r;
    const data = r.data.slice();
    for (let k = 0; k < 4; k++) data[d.icrcOff + k] = (data[d.icrcOff + k] ?? 0) ^ 0xff;
    return { ...r, data };
  });
  return write(out);
}

/** 1-based numbers of the RoCE frames of a capture (in order), with their decoded packets. */
export function roceFrames(file: Uint8Array): { n: number; p: Exclude<ReturnType<typeof decodeFrame>, { roce: false }> }[] {
  const out: { n: number; p: Exclude<ReturnType<typeof decodeFrame>, { roce: false }> }[] = [];
  records(file).forEach((r, i) => {
    const p = decodeFrame(r.data, r.linkType);
    if (p.roce) out.push({ n: i + 1, p });
  });
  return out;
}
