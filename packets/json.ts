/**
 * The stable JSON form of a decoded frame, one object per frame, used by
 * `roce decode --json` and documented in docs/decode.md. 64-bit values and
 * the ICRC are hex strings; every other number is a plain JSON number.
 */
import { bswap32, hex32, hex64, macToString } from './bytes';
import { type DecodedFrame, type RocePacket, frameFault, packetAddresses, writePacketAddress } from './decode';
import { decodeSyndrome } from './aeth';
import { madToJson } from './mad-json';
import { OPCODES } from './opcodes';
import { type TextBytes, utf8 } from '../base/text-bytes';
import { type FrameTime, secondsText } from '../base/exact-time';
import type { JsonFramePieces } from './json-frame-pieces';

/** One frame as `roce decode --json` prints it (keys in docs/decode.md). */
export interface FrameJson {
  frame: number;
  /** Seconds since the epoch as a decimal string, with the capture's decimals. */
  time: string;
  /** Nanoseconds since the capture's first frame. */
  timeRelativeNs: number;
  roce: boolean;
  [key: string]: unknown;
}

/**
 * The JSON object for frame number `frame` (1-based) captured at `time`. `timeRelativeNs` is a
 * number, exact below 2^53 ns (104 days); `writeFrameJson` writes its digits exactly at any size.
 */
export function frameToJson(frame: number, time: FrameTime, d: DecodedFrame): FrameJson {
  const at = secondsText(time);
  const rel = time.relSec * 1e9 + time.relNsec;
  if (!d.roce) return { frame, time: at, timeRelativeNs: rel, roce: false };
  const { src, dst } = packetAddresses(d);
  const b = d.bth;
  const out: FrameJson = {
    frame,
    time: at,
    timeRelativeNs: rel,
    roce: true,
    version: d.version,
    src,
    dst,
    srcPort: d.udp?.srcPort ?? null,
    dstPort: d.udp?.dstPort ?? null,
    ...linkAndIpMembers(d),
    opcode: b?.opcode ?? null,
    opcodeName: b === null ? null : (d.info?.name ?? `UNKNOWN_0x${b.opcode.toString(16).padStart(2, '0')}`),
    se: b?.se ?? null,
    migReq: b?.migReq ?? null,
    padCount: b?.padCount ?? null,
    tver: b?.tver ?? null,
    pkey: b?.pkey ?? null,
    fecn: b?.fecn ?? null,
    becn: b?.becn ?? null,
    destQp: b?.destQp ?? null,
    ackReq: b?.ackReq ?? null,
    psn: b?.psn ?? null,
    reth: d.reth === null ? null : { va: hex64(d.reth.va), rkey: d.reth.rkey, dmaLength: d.reth.dmaLength },
    aeth: d.aeth === null ? null : { syndrome: d.aeth.syndrome, msn: d.aeth.msn, ...decodeSyndrome(d.aeth.syndrome) },
    immDt: d.immDt?.value ?? null,
    ieth: d.ieth?.rkey ?? null,
    deth: d.deth === null ? null : { qkey: d.deth.qkey, srcQp: d.deth.srcQp },
    atomicEth:
      d.atomicEth === null
        ? null
        : { va: hex64(d.atomicEth.va), rkey: d.atomicEth.rkey, swapAdd: hex64(d.atomicEth.swapAdd), compare: hex64(d.atomicEth.compare) },
    atomicAckEth: d.atomicAckEth === null ? null : { origData: hex64(d.atomicAckEth.origData) },
    xrcEth: d.xrcEth === null ? null : { xrcSrq: d.xrcEth.xrcSrq },
    rdEth: d.rdEth === null ? null : { eeContext: d.rdEth.eeContext },
    feth: d.feth === null ? null : { selectivity: d.feth.selectivity, placementType: d.feth.placementType },
    payloadLength: b === null ? null : d.payloadLength,
    truncated: d.truncated,
    truncatedIn: d.truncatedIn,
    payloadCaptured: b === null ? null : d.payloadCaptured,
    // The four ICRC bytes in wire order, read as one big-endian number (as tshark shows them).
    icrc: d.icrc === null ? null : hex32(bswap32(d.icrc)),
    icrcOk: d.icrcOk,
    mad: d.mad === null ? null : madToJson(d.mad),
  };
  // A transport error first; else a malformed MAD of a GSI datagram (docs/decode.md). The capture's
  // cut is no error of the frame: `truncatedIn` says where it is.
  const err = frameFault(d) ?? d.madError;
  if (err !== null) out['error'] = err.message;
  return out;
}

/** The traffic class (IPv4 TOS byte, IPv6 traffic class, GRH traffic class) and TTL / hop limit of `d`, or null. */
function trafficClassAndTtl(d: RocePacket): [number, number] | null {
  if (d.ipv4 !== null) return [(d.ipv4.dscp << 2) | d.ipv4.ecn, d.ipv4.ttl];
  const v6 = d.ipv6 ?? d.grh;
  return v6 === null ? null : [v6.trafficClass, v6.hopLimit];
}

/**
 * The Ethernet and IP members: MACs (null without an Ethernet header: Linux cooked or raw IP
 * captures), the VLAN tag, and the DSCP, ECN and TTL (hop limit) of the IP header or GRH.
 */
function linkAndIpMembers(d: RocePacket): {
  srcMac: string | null;
  dstMac: string | null;
  vlan: { id: number; priority: number } | null;
  dscp: number | null;
  ecn: number | null;
  ttl: number | null;
} {
  const e = d.eth;
  const tc = trafficClassAndTtl(d);
  return {
    srcMac: e === null ? null : macToString(e.src),
    dstMac: e === null ? null : macToString(e.dst),
    vlan: e === null || e.vlan === null ? null : { id: e.vlan.vid, priority: e.vlan.pcp },
    dscp: tc === null ? null : tc[0] >>> 2,
    ecn: tc === null ? null : tc[0] & 3,
    ttl: tc === null ? null : tc[1],
  };
}

/** The text of the members `linkAndIpMembers` gives, from `,"srcMac":` on (the key `JsonFramePieces` keeps them under too). */
export function linkAndIpJson(d: RocePacket): string {
  return `,${JSON.stringify(linkAndIpMembers(d)).slice(1, -1)}`;
}

/** The members `decodeSyndrome` adds to "aeth", as JSON text after a comma, for every syndrome byte. */
const SYNDROME_MEMBERS: readonly Uint8Array[] = Array.from({ length: 256 }, (_, s) => utf8(`,${JSON.stringify(decodeSyndrome(s)).slice(1, -1)}}`));
/** `"NAME"` of every opcode in the table, quoted; `"UNKNOWN_0x.."` of the others. */
const OPCODE_NAMES: readonly Uint8Array[] = Array.from({ length: 256 }, (_, op) =>
  utf8(JSON.stringify(OPCODES[op]?.name ?? `UNKNOWN_0x${op.toString(16).padStart(2, '0')}`)),
);

/** A member's pre-encoded forms: `,"name":` and the member with null, true or false. */
interface Member {
  key: Uint8Array;
  null: Uint8Array;
  true: Uint8Array;
  false: Uint8Array;
}

function member(name: string): Member {
  const key = `,"${name}":`;
  return { key: utf8(key), null: utf8(`${key}null`), true: utf8(`${key}true`), false: utf8(`${key}false`) };
}

const M = {
  srcPort: member('srcPort'),
  dstPort: member('dstPort'),
  se: member('se'),
  migReq: member('migReq'),
  padCount: member('padCount'),
  tver: member('tver'),
  pkey: member('pkey'),
  fecn: member('fecn'),
  becn: member('becn'),
  destQp: member('destQp'),
  ackReq: member('ackReq'),
  psn: member('psn'),
  reth: member('reth'),
  aeth: member('aeth'),
  immDt: member('immDt'),
  ieth: member('ieth'),
  deth: member('deth'),
  atomicEth: member('atomicEth'),
  atomicAckEth: member('atomicAckEth'),
  xrcEth: member('xrcEth'),
  rdEth: member('rdEth'),
  feth: member('feth'),
  payloadLength: member('payloadLength'),
  truncated: member('truncated'),
  truncatedIn: member('truncatedIn'),
  payloadCaptured: member('payloadCaptured'),
  icrc: member('icrc'),
  icrcOk: member('icrcOk'),
  mad: member('mad'),
} as const;

const OPEN_FRAME = utf8('{"frame":');
const TIME = utf8(',"time":"');
const TIME_RELATIVE_NS = utf8('","timeRelativeNs":');
const NOT_ROCE = utf8(',"roce":false}');
const ROCE_VERSION = utf8(',"roce":true,"version":');
const SRC = utf8(',"src":');
const DST = utf8(',"dst":');
const OPCODE = utf8(',"opcode":');
const OPCODE_NAME = utf8(',"opcodeName":');
const NO_BTH = utf8(
  ',"opcode":null,"opcodeName":null,"se":null,"migReq":null,"padCount":null,"tver":null,"pkey":null,"fecn":null,"becn":null,"destQp":null,"ackReq":null,"psn":null',
);
/** The six rarer extension headers, all absent (the common case). */
const NO_RARE_HEADERS = utf8(',"deth":null,"atomicEth":null,"atomicAckEth":null,"xrcEth":null,"rdEth":null,"feth":null');
const RETH_VA = utf8(',"reth":{"va":');
const RKEY = utf8(',"rkey":');
const DMA_LENGTH = utf8(',"dmaLength":');
const AETH_SYNDROME = utf8(',"aeth":{"syndrome":');
const MSN = utf8(',"msn":');
const ERROR = utf8(',"error":');

// The common frame (RoCE v2 over IPv4, a known opcode, no rare header, no MAD, no error) is written
// with few calls: each run of constant text between two values is one pre-encoded piece, chosen by
// the flags and small fields it holds. (A call costs about as much as copying 30 bytes.)
const ROCE_V2_SRC = utf8(',"roce":true,"version":2,"src":"');
const QUOTED_DST = utf8('","dst":"');
const QUOTED_SRC_PORT = utf8('","srcPort":');
const DST_PORT = utf8(',"dstPort":');
/** `,"opcode":N,"opcodeName":"NAME"` for every opcode in the table (undefined for the others). */
const OPCODE_MEMBERS: readonly (Uint8Array | undefined)[] = Array.from({ length: 256 }, (_, op) => {
  const name = OPCODES[op]?.name;
  return name === undefined ? undefined : utf8(`,"opcode":${op},"opcodeName":${JSON.stringify(name)}`);
});
/** `,"se":…,"migReq":…,"padCount":P,"tver":T,"pkey":` by se << 7 | migReq << 6 | padCount << 4 | tver (each field's own width). */
const BTH_FLAGS: readonly Uint8Array[] = Array.from({ length: 256 }, (_, i) =>
  utf8(`,"se":${(i & 0x80) !== 0},"migReq":${(i & 0x40) !== 0},"padCount":${(i >> 4) & 3},"tver":${i & 15},"pkey":`),
);
/** `,"fecn":…,"becn":…,"destQp":` by fecn << 1 | becn. */
const ECN_DEST_QP: readonly Uint8Array[] = [0, 1, 2, 3].map((i) => utf8(`,"fecn":${(i & 2) !== 0},"becn":${(i & 1) !== 0},"destQp":`));
/** `,"ackReq":…,"psn":` by ackReq. */
const ACK_REQ_PSN: readonly Uint8Array[] = [false, true].map((a) => utf8(`,"ackReq":${a},"psn":`));
/** No extension header at all, up to the payload length's key. */
const NO_HEADERS_PAYLOAD = utf8(`,"reth":null,"aeth":null,"immDt":null,"ieth":null${String.fromCharCode(...NO_RARE_HEADERS)},"payloadLength":`);
/** After an AETH, nothing else, up to the payload length's key. */
const AFTER_AETH_PAYLOAD = utf8(`,"immDt":null,"ieth":null${String.fromCharCode(...NO_RARE_HEADERS)},"payloadLength":`);
const RETH_NULL_AETH_SYNDROME = utf8(',"reth":null,"aeth":{"syndrome":');
/** A frame the capture kept whole, from its truncated member to its payloadCaptured key. */
const WHOLE_CAPTURED = utf8(',"truncated":false,"truncatedIn":null,"payloadCaptured":');
const ICRC_OPEN = utf8(',"icrc":"');
/** `","icrcOk":…,"mad":null}`, the end of the frame, by icrcOk: false, true, null (not checked: --no-icrc). */
const ICRC_OK_NO_MAD_END: readonly Uint8Array[] = [false, true, null].map((x) => utf8(`","icrcOk":${x},"mad":null}`));
/** The same without the closing brace, for a frame an upper-layer protocol's member ends. */
const ICRC_OK_NO_MAD: readonly Uint8Array[] = [false, true, null].map((x) => utf8(`","icrcOk":${x},"mad":null`));

/** The "aeth" object after its `{"syndrome":` key: the syndrome, the MSN and what `decodeSyndrome` adds, and the closing brace. */
function writeAethValues(t: TextBytes, a: { syndrome: number; msn: number }): void {
  t.jsonNumber(a.syndrome);
  t.bytes(MSN);
  t.jsonNumber(a.msn);
  // decodeSyndrome reads the low seven bits, so the byte's entry is exact for any value.
  t.bytes(SYNDROME_MEMBERS[a.syndrome & 0xff] as Uint8Array);
}

function writeBool(t: TextBytes, m: Member, v: boolean | null): void {
  t.bytes(v === null ? m.null : v ? m.true : m.false);
}

function writeNumberOrNull(t: TextBytes, m: Member, v: number | null | undefined): void {
  if (v === null || v === undefined) t.bytes(m.null);
  else {
    t.bytes(m.key);
    t.jsonNumber(v);
  }
}

/** Writes a member whose value is a small object, through JSON.stringify (rare headers, MADs). */
function writeObjectOrNull(t: TextBytes, m: Member, v: object | null): void {
  if (v === null) t.bytes(m.null);
  else {
    t.bytes(m.key);
    t.text(JSON.stringify(v));
  }
}

/**
 * Writes `JSON.stringify(frameToJson(frame, time, d))` byte for byte (`timeRelativeNs` exact beyond
 * 2^53 ns, where the object's number is not), without building the object or the string; with
 * `pieces`, the runs that repeat within a flow are copied from those encoded before (`roce decode --json` prints one per frame; test/packets/json-bytes.test.ts holds
 * the two to the same text).
 */
export function writeFrameJson(
  t: TextBytes,
  frame: number,
  time: FrameTime,
  d: DecodedFrame,
  pieces?: JsonFramePieces,
  /** An upper-layer protocol's member (ulp/), `,"nvme":{…}`, written after `mad`: its text, or what writes it. */
  ulpMember?: string | ((t: TextBytes) => void),
): void {
  t.bytes(OPEN_FRAME);
  // A frame number is a positive integer: `uint` writes it as JSON.stringify does.
  t.uint(frame);
  t.bytes(TIME);
  t.seconds(time.sec, time.nsec, time.digits);
  t.bytes(TIME_RELATIVE_NS);
  t.nanoseconds(time.relSec, time.relNsec);
  if (!d.roce) {
    t.bytes(NOT_ROCE);
    return;
  }
  if (writeCommonFrameJson(t, d, pieces, ulpMember)) return;
  const ip = d.ipv4;
  const udp = d.udp;
  // RoCE v2 over IPv4 as the common frame writes it: a frame with a RETH, an IETH or a MAD comes
  // here, and spelling out its MAC addresses and IP fields cost more than the rest of it.
  if (pieces !== undefined && d.version === 2 && ip !== null && udp !== null) t.bytes(pieces.endpoints(d, ip, udp));
  else {
    t.bytes(ROCE_VERSION);
    t.uint(d.version);
    t.bytes(SRC);
    writePacketAddress(t, d, 'src', true);
    t.bytes(DST);
    writePacketAddress(t, d, 'dst', true);
    writeNumberOrNull(t, M.srcPort, udp?.srcPort);
    writeNumberOrNull(t, M.dstPort, udp?.dstPort);
    t.text(linkAndIpJson(d));
  }
  const b = d.bth;
  if (b === null) t.bytes(NO_BTH);
  else {
    t.bytes(OPCODE);
    t.uint(b.opcode);
    t.bytes(OPCODE_NAME);
    const name = OPCODE_NAMES[b.opcode & 0xff];
    if (name !== undefined && d.info !== undefined && d.info.opcode === b.opcode) t.bytes(name);
    else t.jsonString(d.info?.name ?? `UNKNOWN_0x${b.opcode.toString(16).padStart(2, '0')}`);
    writeBool(t, M.se, b.se);
    writeBool(t, M.migReq, b.migReq);
    writeNumberOrNull(t, M.padCount, b.padCount);
    writeNumberOrNull(t, M.tver, b.tver);
    writeNumberOrNull(t, M.pkey, b.pkey);
    writeBool(t, M.fecn, b.fecn);
    writeBool(t, M.becn, b.becn);
    writeNumberOrNull(t, M.destQp, b.destQp);
    writeBool(t, M.ackReq, b.ackReq);
    writeNumberOrNull(t, M.psn, b.psn);
  }
  if (d.reth === null) t.bytes(M.reth.null);
  else {
    t.bytes(RETH_VA);
    t.text(`"${hex64(d.reth.va)}"`);
    t.bytes(RKEY);
    t.jsonNumber(d.reth.rkey);
    t.bytes(DMA_LENGTH);
    t.jsonNumber(d.reth.dmaLength);
    t.byte(0x7d);
  }
  if (d.aeth === null) t.bytes(M.aeth.null);
  else {
    t.bytes(AETH_SYNDROME);
    writeAethValues(t, d.aeth);
  }
  writeNumberOrNull(t, M.immDt, d.immDt?.value);
  writeNumberOrNull(t, M.ieth, d.ieth?.rkey);
  if (d.deth === null && d.atomicEth === null && d.atomicAckEth === null && d.xrcEth === null && d.rdEth === null && d.feth === null) {
    t.bytes(NO_RARE_HEADERS);
  } else {
    writeObjectOrNull(t, M.deth, d.deth === null ? null : { qkey: d.deth.qkey, srcQp: d.deth.srcQp });
    const a = d.atomicEth;
    writeObjectOrNull(t, M.atomicEth, a === null ? null : { va: hex64(a.va), rkey: a.rkey, swapAdd: hex64(a.swapAdd), compare: hex64(a.compare) });
    writeObjectOrNull(t, M.atomicAckEth, d.atomicAckEth === null ? null : { origData: hex64(d.atomicAckEth.origData) });
    writeObjectOrNull(t, M.xrcEth, d.xrcEth === null ? null : { xrcSrq: d.xrcEth.xrcSrq });
    writeObjectOrNull(t, M.rdEth, d.rdEth === null ? null : { eeContext: d.rdEth.eeContext });
    writeObjectOrNull(t, M.feth, d.feth === null ? null : { selectivity: d.feth.selectivity, placementType: d.feth.placementType });
  }
  writeNumberOrNull(t, M.payloadLength, b === null ? null : d.payloadLength);
  writeBool(t, M.truncated, d.truncated);
  if (d.truncatedIn === null) t.bytes(M.truncatedIn.null);
  else {
    t.bytes(M.truncatedIn.key);
    t.jsonString(d.truncatedIn);
  }
  writeNumberOrNull(t, M.payloadCaptured, b === null ? null : d.payloadCaptured);
  if (d.icrc === null) t.bytes(M.icrc.null);
  else {
    t.bytes(M.icrc.key);
    t.byte(0x22);
    t.hex(bswap32(d.icrc), 8);
    t.byte(0x22);
  }
  writeBool(t, M.icrcOk, d.icrcOk);
  writeObjectOrNull(t, M.mad, d.mad === null ? null : madToJson(d.mad));
  if (ulpMember !== undefined) writeUlpMember(t, ulpMember);
  const err = frameFault(d) ?? d.madError;
  if (err !== null) {
    t.bytes(ERROR);
    t.jsonString(err.message);
  }
  t.byte(0x7d);
}

/**
 * The rest of the common frame's JSON, after its time: RoCE v2 over IPv4, a BTH with a known
 * opcode, no extension header but an AETH, the ICRC read (checked or not: captured whole), no MAD, no error.
 * The same text as `writeFrameJson`'s member-by-member path, in about half the calls, with an
 * upper-layer protocol's member (`ulpMember`) last when there is one. False (and nothing written)
 * for any other frame.
 */
function writeCommonFrameJson(
  t: TextBytes,
  d: RocePacket,
  pieces: JsonFramePieces | undefined,
  ulpMember: string | ((t: TextBytes) => void) | undefined,
): boolean {
  const b = d.bth;
  const ip = d.ipv4;
  const udp = d.udp;
  if (
    d.version !== 2 ||
    b === null ||
    ip === null ||
    udp === null ||
    d.icrc === null ||
    d.truncated ||
    d.mad !== null ||
    d.error !== null ||
    d.madError !== null
  )
    return false;
  if (
    d.reth !== null ||
    d.immDt !== null ||
    d.ieth !== null ||
    d.deth !== null ||
    d.atomicEth !== null ||
    d.atomicAckEth !== null ||
    d.xrcEth !== null ||
    d.rdEth !== null ||
    d.feth !== null
  )
    return false;
  const opcodeMember = OPCODE_MEMBERS[b.opcode & 0xff];
  if (opcodeMember === undefined || d.info === undefined || d.info.opcode !== b.opcode) return false;
  if (pieces !== undefined) {
    t.bytes(pieces.endpoints(d, ip, udp));
    t.bytes(pieces.bth(b));
  } else {
    t.bytes(ROCE_V2_SRC);
    t.ipv4(ip.src);
    t.bytes(QUOTED_DST);
    t.ipv4(ip.dst);
    t.bytes(QUOTED_SRC_PORT);
    t.uint(udp.srcPort);
    t.bytes(DST_PORT);
    t.uint(udp.dstPort);
    t.text(linkAndIpJson(d));
    t.bytes(opcodeMember);
    t.bytes(BTH_FLAGS[(b.se ? 0x80 : 0) | (b.migReq ? 0x40 : 0) | ((b.padCount & 3) << 4) | (b.tver & 15)] as Uint8Array);
    t.uint(b.pkey);
    t.bytes(ECN_DEST_QP[(b.fecn ? 2 : 0) | (b.becn ? 1 : 0)] as Uint8Array);
    t.uint(b.destQp);
    t.bytes(ACK_REQ_PSN[b.ackReq ? 1 : 0] as Uint8Array);
  }
  t.uint(b.psn);
  const a = d.aeth;
  if (a === null) t.bytes(NO_HEADERS_PAYLOAD);
  else {
    t.bytes(RETH_NULL_AETH_SYNDROME);
    writeAethValues(t, a);
    t.bytes(AFTER_AETH_PAYLOAD);
  }
  t.uint(d.payloadLength);
  t.bytes(WHOLE_CAPTURED);
  t.uint(d.payloadCaptured);
  t.bytes(ICRC_OPEN);
  t.hex(bswap32(d.icrc), 8);
  const ok = d.icrcOk === null ? 2 : d.icrcOk ? 1 : 0;
  if (ulpMember === undefined) t.bytes(ICRC_OK_NO_MAD_END[ok] as Uint8Array);
  else {
    t.bytes(ICRC_OK_NO_MAD[ok] as Uint8Array);
    writeUlpMember(t, ulpMember);
    t.byte(0x7d);
  }
  return true;
}

function writeUlpMember(t: TextBytes, member: string | ((t: TextBytes) => void)): void {
  if (typeof member === 'string') t.text(member);
  else member(t);
}
