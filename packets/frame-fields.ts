/**
 * Wireshark's field names for what roce-ts decodes, with each field's type, its values in a frame
 * and their text as `tshark -T fields` prints it (tshark 4.0: `tshark -G fields` lists the names,
 * types and bases). A display filter (packets/display-filter.ts) compares these values; `roce
 * decode -T fields -e NAME` prints their text. A field absent from a frame has no value; one a
 * frame holds twice (`ip.addr`: source and destination) has two.
 */
import type { DecodedFrame, RocePacket } from './decode';
import type { FrameLayers } from './frame-layers';
import { bswap32, ipv4ToString, ipv6ToString } from './bytes';

/**
 * How a field's values compare and read: an unsigned integer (`bool` is one of 0 and 1), an
 * address, a byte string, a time in nanoseconds, or a protocol or header that is only there or not.
 */
export type FieldType = 'uint' | 'bool' | 'ether' | 'ipv4' | 'ipv6' | 'bytes' | 'time' | 'proto';

/** Integers, addresses (as their bits) and times are bigints; byte strings and protocols are bytes. */
export type FieldValue = bigint | Uint8Array;

/** One frame as the fields see it. */
export interface FieldFrame {
  /** 1-based frame number. */
  number: number;
  /** Length on the wire, and the captured bytes. */
  origLen: number;
  bytes: Uint8Array;
  /** Capture time since the epoch, since the first frame, since the frame before (0 for the first), since the frame shown before (0 for none). */
  epochNs: bigint;
  relativeNs: bigint;
  deltaNs: bigint;
  deltaDisplayedNs: bigint;
  decoded: DecodedFrame;
  layers: FrameLayers;
  /** What an upper-layer protocol's decoder (ulp/) made of the frame, for its own fields; null or absent when none did. */
  ulp?: UlpFrame | null;
}

/** An upper-layer protocol's view of a frame (its fields read the rest); packets/ reads only the name. */
export interface UlpFrame {
  readonly protocol: string;
}

export interface FieldDef {
  name: string;
  type: FieldType;
  /** Bits of an address or integer (the width of a hex text, and a prefix's limit). */
  bits: number;
  /** The text of one value, as tshark -T fields prints it. */
  text(v: FieldValue): string;
  values(f: FieldFrame): FieldValue[];
}

const NONE: FieldValue[] = [];

const dec = (v: FieldValue): string => String(v);
const hexOf =
  (bits: number) =>
  (v: FieldValue): string =>
    `0x${(v as bigint).toString(16).padStart(bits / 4, '0')}`;
const bytesText = (v: FieldValue): string => Buffer.from(v as Uint8Array).toString('hex');
const etherText = (v: FieldValue): string =>
  (v as bigint)
    .toString(16)
    .padStart(12, '0')
    .replace(/(..)(?!$)/g, '$1:');
const ipv4Text = (v: FieldValue): string => ipv4ToString(Number(v));
const ipv6Text = (v: FieldValue): string => ipv6ToString(bigintBytes(v as bigint, 16));
/** tshark 4.0 prints every time with nine decimals. */
const timeText = (v: FieldValue): string => {
  const ns = v as bigint;
  const neg = ns < 0n;
  const a = neg ? -ns : ns;
  return `${neg ? '-' : ''}${a / 1_000_000_000n}.${(a % 1_000_000_000n).toString().padStart(9, '0')}`;
};

/** `n` big-endian bytes of `v`. */
export function bigintBytes(v: bigint, n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = n - 1; i >= 0; i--) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return out;
}

/** The big-endian number of `bytes`. */
export function bytesBigint(bytes: Uint8Array): bigint {
  let v = 0n;
  for (const b of bytes) v = (v << 8n) | BigInt(b);
  return v;
}

const one = (v: number | bigint | boolean | null | undefined): FieldValue[] =>
  v === null || v === undefined ? NONE : [typeof v === 'boolean' ? (v ? 1n : 0n) : BigInt(v)];

function uint(name: string, bits: number, get: (f: FieldFrame) => number | bigint | null | undefined, hex = false): FieldDef {
  return { name, type: 'uint', bits, text: hex ? hexOf(bits) : dec, values: (f) => one(get(f)) };
}

function bool(name: string, get: (f: FieldFrame) => boolean | null | undefined): FieldDef {
  return { name, type: 'bool', bits: 1, text: dec, values: (f) => one(get(f)) };
}

function proto(name: string, get: (f: FieldFrame) => boolean): FieldDef {
  return { name, type: 'proto', bits: 0, text: () => name, values: (f) => (get(f) ? [new Uint8Array(0)] : NONE) };
}

function bytes(name: string, get: (f: FieldFrame) => Uint8Array | null): FieldDef {
  return {
    name,
    type: 'bytes',
    bits: 0,
    text: bytesText,
    values: (f) => {
      const b = get(f);
      return b === null ? NONE : [b];
    },
  };
}

function time(name: string, get: (f: FieldFrame) => bigint): FieldDef {
  return { name, type: 'time', bits: 0, text: timeText, values: (f) => [get(f)] };
}

const roce = (f: FieldFrame): RocePacket | null => (f.decoded.roce ? f.decoded : null);
const bth = (f: FieldFrame) => roce(f)?.bth ?? null;
const grh = (f: FieldFrame) => roce(f)?.grh ?? null;
const v4 = (f: FieldFrame) => f.layers.ipv4;
const v6 = (f: FieldFrame) => f.layers.ipv6;
const eth = (f: FieldFrame) => f.layers.eth;
const udp = (f: FieldFrame) => f.layers.udp;

/** The bytes of the extension header `hdr` of a RoCE frame (from the opcode's layout), or null when absent or not captured. */
function headerBytes(
  f: FieldFrame,
  hdr: 'RETH' | 'AETH' | 'DETH' | 'ATOMIC_ETH' | 'ATOMIC_ACK_ETH' | 'IMMDT' | 'IETH',
  len: number,
  present: boolean,
): Uint8Array | null {
  const p = roce(f);
  if (p === null || !present || p.info === undefined) return null;
  const at = p.info.offsets[hdr];
  if (at === undefined || p.bthOff < 0) return null;
  const start = p.bthOff + at;
  return start + len <= f.bytes.byteLength ? f.bytes.subarray(start, start + len) : null;
}

const AETH_VALUE_FIELDS = ['credit_count', 'timer', 'reserved_value', 'error_code'] as const;

const ALL: readonly FieldDef[] = [
  // Frame.
  uint('frame.number', 32, (f) => f.number),
  uint('frame.len', 32, (f) => f.origLen),
  uint('frame.cap_len', 32, (f) => f.bytes.byteLength),
  time('frame.time_epoch', (f) => f.epochNs),
  time('frame.time_relative', (f) => f.relativeNs),
  time('frame.time_delta', (f) => f.deltaNs),
  time('frame.time_delta_displayed', (f) => f.deltaDisplayedNs),
  // Ethernet and 802.1Q.
  proto('eth', (f) => eth(f) !== null),
  { name: 'eth.dst', type: 'ether', bits: 48, text: etherText, values: (f) => one(eth(f)?.dst) },
  { name: 'eth.src', type: 'ether', bits: 48, text: etherText, values: (f) => one(eth(f)?.src) },
  {
    name: 'eth.addr',
    type: 'ether',
    bits: 48,
    text: etherText,
    values: (f) => (eth(f) === null ? NONE : [BigInt(eth(f)?.dst ?? 0), BigInt(eth(f)?.src ?? 0)]),
  },
  uint(
    'eth.type',
    16,
    (f) => {
      const e = eth(f);
      return e === null ? null : e.vlan === null ? e.etherType : e.vlan.tpid;
    },
    true,
  ),
  proto('vlan', (f) => eth(f)?.vlan != null),
  uint('vlan.priority', 16, (f) => eth(f)?.vlan?.pcp),
  uint('vlan.id', 16, (f) => eth(f)?.vlan?.vid),
  uint('vlan.etype', 16, (f) => (eth(f)?.vlan == null ? null : eth(f)?.etherType), true),
  // IPv4.
  proto('ip', (f) => v4(f) !== null),
  // tshark's IPv6 dissector gives ip.version too.
  uint('ip.version', 8, (f) => (v4(f) !== null ? 4 : v6(f) !== null ? 6 : null)),
  uint('ip.hdr_len', 8, (f) => {
    const ip = v4(f);
    return ip === null ? null : ip.ihl * 4;
  }),
  uint(
    'ip.dsfield',
    8,
    (f) => {
      const ip = v4(f);
      return ip === null ? null : (ip.dscp << 2) | ip.ecn;
    },
    true,
  ),
  uint('ip.dsfield.dscp', 8, (f) => v4(f)?.dscp),
  uint('ip.dsfield.ecn', 8, (f) => v4(f)?.ecn),
  uint('ip.len', 16, (f) => v4(f)?.totalLength),
  uint('ip.id', 16, (f) => v4(f)?.identification, true),
  uint(
    'ip.flags',
    8,
    (f) => {
      const ip = v4(f);
      return ip === null ? null : (ip.dontFragment ? 2 : 0) | (ip.moreFragments ? 1 : 0);
    },
    true,
  ),
  bool('ip.flags.df', (f) => v4(f)?.dontFragment),
  bool('ip.flags.mf', (f) => v4(f)?.moreFragments),
  uint('ip.frag_offset', 16, (f) => {
    const ip = v4(f);
    return ip === null ? null : ip.fragmentOffset * 8;
  }),
  uint('ip.ttl', 8, (f) => v4(f)?.ttl),
  uint('ip.proto', 8, (f) => v4(f)?.protocol),
  uint('ip.checksum', 16, (f) => v4(f)?.checksum, true),
  { name: 'ip.src', type: 'ipv4', bits: 32, text: ipv4Text, values: (f) => one(v4(f)?.src) },
  { name: 'ip.dst', type: 'ipv4', bits: 32, text: ipv4Text, values: (f) => one(v4(f)?.dst) },
  {
    name: 'ip.addr',
    type: 'ipv4',
    bits: 32,
    text: ipv4Text,
    values: (f) => {
      const ip = v4(f);
      return ip === null ? NONE : [BigInt(ip.src), BigInt(ip.dst)];
    },
  },
  // IPv6.
  proto('ipv6', (f) => v6(f) !== null),
  uint('ipv6.version', 8, (f) => (v6(f) === null ? null : 6)),
  uint('ipv6.tclass', 32, (f) => v6(f)?.trafficClass, true),
  uint('ipv6.tclass.dscp', 32, (f) => {
    const ip = v6(f);
    return ip === null ? null : ip.trafficClass >>> 2;
  }),
  uint('ipv6.tclass.ecn', 32, (f) => {
    const ip = v6(f);
    return ip === null ? null : ip.trafficClass & 3;
  }),
  uint('ipv6.flow', 24, (f) => v6(f)?.flowLabel, true),
  uint('ipv6.plen', 16, (f) => v6(f)?.payloadLength),
  uint('ipv6.nxt', 8, (f) => v6(f)?.nextHeader),
  uint('ipv6.hlim', 8, (f) => v6(f)?.hopLimit),
  {
    name: 'ipv6.src',
    type: 'ipv6',
    bits: 128,
    text: ipv6Text,
    values: (f) => {
      const ip = v6(f);
      return ip === null ? NONE : [bytesBigint(ip.src)];
    },
  },
  {
    name: 'ipv6.dst',
    type: 'ipv6',
    bits: 128,
    text: ipv6Text,
    values: (f) => {
      const ip = v6(f);
      return ip === null ? NONE : [bytesBigint(ip.dst)];
    },
  },
  {
    name: 'ipv6.addr',
    type: 'ipv6',
    bits: 128,
    text: ipv6Text,
    values: (f) => {
      const ip = v6(f);
      return ip === null ? NONE : [bytesBigint(ip.src), bytesBigint(ip.dst)];
    },
  },
  // UDP.
  proto('udp', (f) => udp(f) !== null),
  uint('udp.srcport', 16, (f) => udp(f)?.srcPort),
  uint('udp.dstport', 16, (f) => udp(f)?.dstPort),
  {
    name: 'udp.port',
    type: 'uint',
    bits: 16,
    text: dec,
    values: (f) => {
      const u = udp(f);
      return u === null ? NONE : [BigInt(u.srcPort), BigInt(u.dstPort)];
    },
  },
  uint('udp.length', 16, (f) => udp(f)?.length),
  uint('udp.checksum', 16, (f) => udp(f)?.checksum, true),
  // InfiniBand: the GRH of RoCE v1, the BTH, the extension headers, the ICRC.
  proto('infiniband', (f) => f.decoded.roce),
  bytes('infiniband.grh', (f) => {
    const p = roce(f);
    return p === null || p.grh === null ? null : f.bytes.subarray(p.l3Off, p.l3Off + 40);
  }),
  uint('infiniband.grh.ipver', 8, (f) => (grh(f) === null ? null : 6)),
  uint('infiniband.grh.tclass', 16, (f) => grh(f)?.trafficClass),
  uint('infiniband.grh.flowlabel', 32, (f) => grh(f)?.flowLabel),
  uint('infiniband.grh.paylen', 16, (f) => grh(f)?.payloadLength),
  uint('infiniband.grh.nxthdr', 8, (f) => grh(f)?.nextHeader),
  uint('infiniband.grh.hoplmt', 8, (f) => grh(f)?.hopLimit),
  {
    name: 'infiniband.grh.sgid',
    type: 'ipv6',
    bits: 128,
    text: ipv6Text,
    values: (f) => {
      const g = grh(f);
      return g === null ? NONE : [bytesBigint(g.src)];
    },
  },
  {
    name: 'infiniband.grh.dgid',
    type: 'ipv6',
    bits: 128,
    text: ipv6Text,
    values: (f) => {
      const g = grh(f);
      return g === null ? NONE : [bytesBigint(g.dst)];
    },
  },
  bytes('infiniband.bth', (f) => {
    const p = roce(f);
    return p === null || p.bth === null ? null : f.bytes.subarray(p.bthOff, p.bthOff + 12);
  }),
  uint('infiniband.bth.opcode', 8, (f) => bth(f)?.opcode),
  bool('infiniband.bth.se', (f) => bth(f)?.se),
  bool('infiniband.bth.m', (f) => bth(f)?.migReq),
  uint('infiniband.bth.padcnt', 8, (f) => bth(f)?.padCount),
  uint('infiniband.bth.tver', 8, (f) => bth(f)?.tver),
  uint('infiniband.bth.p_key', 16, (f) => bth(f)?.pkey),
  // Not in tshark 4.0, which shows the byte holding them as "Reserved" (docs/decode.md).
  bool('infiniband.bth.fecn', (f) => bth(f)?.fecn),
  bool('infiniband.bth.becn', (f) => bth(f)?.becn),
  uint('infiniband.bth.destqp', 24, (f) => bth(f)?.destQp, true),
  bool('infiniband.bth.a', (f) => bth(f)?.ackReq),
  uint('infiniband.bth.psn', 24, (f) => bth(f)?.psn),
  bytes('infiniband.deth', (f) => headerBytes(f, 'DETH', 8, roce(f)?.deth != null)),
  uint('infiniband.deth.q_key', 64, (f) => roce(f)?.deth?.qkey, true),
  // tshark reads the source QP with the reserved byte before it, as 32 bits.
  uint(
    'infiniband.deth.srcqp',
    32,
    (f) => {
      const b = headerBytes(f, 'DETH', 8, roce(f)?.deth != null);
      return b === null ? null : bytesBigint(b.subarray(4));
    },
    true,
  ),
  bytes('infiniband.reth', (f) => headerBytes(f, 'RETH', 16, roce(f)?.reth != null)),
  // tshark shows an AtomicETH's VA and R_Key under the RETH's names.
  uint('infiniband.reth.va', 64, (f) => roce(f)?.reth?.va ?? roce(f)?.atomicEth?.va, true),
  uint('infiniband.reth.r_key', 32, (f) => roce(f)?.reth?.rkey ?? roce(f)?.atomicEth?.rkey, true),
  uint('infiniband.reth.dmalen', 32, (f) => roce(f)?.reth?.dmaLength),
  bytes('infiniband.atomiceth', (f) => headerBytes(f, 'ATOMIC_ETH', 28, roce(f)?.atomicEth != null)),
  uint('infiniband.atomiceth.swapdt', 64, (f) => roce(f)?.atomicEth?.swapAdd),
  uint('infiniband.atomiceth.cmpdt', 64, (f) => roce(f)?.atomicEth?.compare),
  bytes('infiniband.aeth', (f) => headerBytes(f, 'AETH', 4, roce(f)?.aeth != null)),
  uint('infiniband.aeth.syndrome', 8, (f) => roce(f)?.aeth?.syndrome),
  uint('infiniband.aeth.syndrome.reserved', 8, (f) => {
    const a = roce(f)?.aeth;
    return a == null ? null : a.syndrome >>> 7;
  }),
  uint('infiniband.aeth.syndrome.opcode', 8, (f) => {
    const a = roce(f)?.aeth;
    return a == null ? null : (a.syndrome >>> 5) & 3;
  }),
  // IBTA vol. 1 §9.7.5.1.3 table 43: bits 4:0 are a credit count (ACK), an RNR timer code, or a NAK code.
  ...AETH_VALUE_FIELDS.map((k, kind) =>
    uint(`infiniband.aeth.syndrome.${k}`, 8, (f) => {
      const a = roce(f)?.aeth;
      return a == null || ((a.syndrome >>> 5) & 3) !== kind ? null : a.syndrome & 0x1f;
    }),
  ),
  uint('infiniband.aeth.msn', 24, (f) => roce(f)?.aeth?.msn),
  bytes('infiniband.atomicacketh', (f) => headerBytes(f, 'ATOMIC_ACK_ETH', 8, roce(f)?.atomicAckEth != null)),
  uint('infiniband.atomicacketh.origremdt', 64, (f) => roce(f)?.atomicAckEth?.origData),
  bytes('infiniband.immdt', (f) => headerBytes(f, 'IMMDT', 4, roce(f)?.immDt != null)),
  bytes('infiniband.ieth', (f) => headerBytes(f, 'IETH', 4, roce(f)?.ieth != null)),
  // The four ICRC bytes in wire order, read as one big-endian number, as tshark shows them.
  uint(
    'infiniband.invariant.crc',
    32,
    (f) => {
      const c = roce(f)?.icrc;
      return c == null ? null : bswap32(c) >>> 0;
    },
    true,
  ),
];

const BY_NAME: ReadonlyMap<string, FieldDef> = new Map(ALL.map((d) => [d.name, d]));

/** The field called `name` (Wireshark's name), or undefined. */
export function frameField(name: string): FieldDef | undefined {
  return BY_NAME.get(name);
}

/** Every field's name, in the table's order. */
export function frameFieldNames(): string[] {
  return ALL.map((d) => d.name);
}
