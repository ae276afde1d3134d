/**
 * Degrading a capture the way real capture tools do, for tests: drop records
 * (capture loss), start at record N (a capture that starts mid-conversation),
 * cut every record to a snap length (tcpdump -s / editcap -s, or a tool that writes the cut length
 * as the original length too), or spoil the
 * ICRC of RoCE frames (a NIC-side capture tool that does not preserve it), or move records in
 * time (a requester that did not wait, made from one that did).
 * Each returns a new classic pcap file; timestamps and link type are kept. `asRoceV1` rewrites a
 * RoCE v2 capture as the same traffic over RoCE v1 (Ethernet, EtherType 0x8915, GRH).
 */
import { LinkType, PcapWriter, readCapture } from '../../packets/pcap';
import { decodeFrame, packetAddresses } from '../../packets/decode';
import { ipv6FromString } from '../../packets/bytes';
import { icrcV1, writeIcrc } from '../../packets/icrc';

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

/** The capture with each record's timestamp as `at` gives it (from the record's 1-based number and its timestamp). */
export function retimed(file: Uint8Array, at: (n: number, timestampNs: bigint) => bigint): Uint8Array {
  return write(records(file).map((r, i) => ({ ...r, timestampNs: at(i + 1, r.timestampNs) })));
}

/** The capture from record `first` (1-based) on. */
export function startAt(file: Uint8Array, first: number): Uint8Array {
  return write(records(file).slice(first - 1));
}

/** Every record cut to `snaplen` bytes, its original length kept (editcap -s). */
export function cutSnaplen(file: Uint8Array, snaplen: number): Uint8Array {
  return write(records(file), snaplen);
}

/**
 * Every record cut to `len` bytes with its original length cut too, so the record does not admit
 * the cut (caplen == origlen): what some capture tools write. Only the IP/UDP lengths tell.
 */
export function cutUnadmitted(file: Uint8Array, len: number): Uint8Array {
  return write(records(file).map((r) => ({ ...r, data: r.data.subarray(0, len), origLen: Math.min(r.data.length, len) })));
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

/** The capture with every RoCE v2 frame (Ethernet, untagged) carried as RoCE v1: GRH with the IP addresses as GIDs, v1 ICRC. */
export function asRoceV1(file: Uint8Array): Uint8Array {
  const out = records(file).map((r) => {
    const p = decodeFrame(r.data, r.linkType);
    if (!p.roce || p.version !== 2 || p.error !== null || p.bth === null || p.eth === null || p.eth.vlan !== null) return r;
    const { src, dst } = packetAddresses(p);
    const gid = (a: string): Uint8Array => ipv6FromString(a.includes(':') ? a : `::ffff:${a}`);
    const tStart = p.bthOff;
    const tEnd = p.icrcOff;
    const data = new Uint8Array(14 + 40 + (tEnd - tStart) + 4);
    const view = new DataView(data.buffer);
    data.set(r.data.subarray(0, 12));
    view.setUint16(12, 0x8915);
    const tc = p.ipv4 !== null ? (p.ipv4.dscp << 2) | p.ipv4.ecn : (p.ipv6?.trafficClass ?? 0);
    view.setUint32(14, (6 << 28) | (tc << 20));
    view.setUint16(18, tEnd - tStart + 4);
    data[20] = 0x1b; // next header: BTH (IBTA vol. 1 §8.3.1)
    data[21] = 64;
    data.set(gid(src), 22);
    data.set(gid(dst), 38);
    data.set(r.data.subarray(tStart, tEnd), 54);
    writeIcrc(data, data.length - 4, icrcV1(data, 14, data.length - 4));
    return { ...r, data, origLen: data.length };
  });
  return write(out);
}
