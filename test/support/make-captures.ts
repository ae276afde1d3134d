/**
 * The project's own test captures, generated from roce-ts's frame builder.
 *
 * `makeCaptures()` returns every file of `captures/` (name → bytes). It is
 * deterministic: fixed timestamps, fixed PRNG seeds, no clock, no randomness,
 * so the committed files can be compared byte for byte with a fresh run
 * (test/captures/captures-current.test.ts; regenerate with
 * `UPDATE_CAPTURES=1 npx jest test/captures/captures-current`).
 *
 * The hosts, QP numbers and UDP source ports imitate Linux rdma_rxe: QPNs from
 * 0x11, UDP source port 0xC000 + hash_32(qpn, 14) (rxe.h RXE_ROCE_V2_SPORT,
 * rxe_qp.c), or rdma_flow_label_to_udp_sport() when a flow label is set;
 * TTL 64, DF set, UDP checksum 0; path MTU 1024 on the RC conversation.
 */
import { buildRoceV1Frame, buildRoceV2Frame, type TransportSpec } from '../../packets/build';
import { ipv4FromString, macFromString } from '../../packets/bytes';
import { EtherType, type VlanTag, emitEthernet, ETH_LEN } from '../../packets/ethernet';
import { IPV4_MIN_LEN, IpProtocol, emitIpv4 } from '../../packets/ipv4';
import { UDP_LEN, emitUdp } from '../../packets/udp';
import { AethKind, encodeSyndrome, NakCode } from '../../packets/aeth';
import { LinkType, writePcap, writePcapng } from '../../packets/pcap';
import { SLL_LEN, SllPacketType, emitSll } from '../../packets/sll';
import { SLL2_LEN, emitSll2 } from '../../packets/sll2';
import { icrcV2, writeIcrc } from '../../packets/icrc';
import { GSI_QKEY } from '../../packets/mad';
import { buildCmMad } from '../../packets/mad-payload';
import { cmExchanges, GSI_SPORT } from './make-cm-capture';
import { nvmeRdmaCapture } from './make-nvme-capture';
import { rpcRdmaCapture } from './make-rpcrdma-capture';
import { iserCapture } from './make-iser-capture';
import { smbdCapture } from './make-smbd-capture';

export interface Rec {
  data: Uint8Array;
  timestampNs: bigint;
}

/** 2024-01-15T12:00:00Z: the start of every generated capture. */
const T0_NS = 1_705_320_000n * 1_000_000_000n;

/** A capture clock that only moves forward in whole microseconds and nanoseconds. */
class Clock {
  private ns: bigint;
  constructor(startNs: bigint) {
    this.ns = startNs;
  }
  /** Advances by `us` microseconds (fractions allowed down to 1 ns) and returns the new time. */
  after(us: number): bigint {
    this.ns += BigInt(Math.round(us * 1000));
    return this.ns;
  }
}

/** mulberry32: a small deterministic PRNG for payload bytes. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `len` deterministic pseudo-random bytes for seed `seed`. */
function bytesOf(len: number, seed: number): Uint8Array {
  const r = prng(seed);
  const out = new Uint8Array(len);
  for (let i = 0; i < len; i++) out[i] = Math.floor(r() * 256);
  return out;
}

/** rxe's UDP source port for a QP: 0xC000 + hash_32(qpn, 14) (GOLDEN_RATIO_32 = 0x61C88647). */
export function rxeSport(qpn: number): number {
  return 0xc000 + ((Math.imul(qpn, 0x61c88647) >>> 0) >>> 18);
}

/** rdma_flow_label_to_udp_sport() (include/rdma/ib_verbs.h): the 20-bit label folded into 14 bits. */
export function flowLabelSport(fl: number): number {
  const low = (fl & 0x3fff) ^ ((fl & 0xfc000) >>> 14);
  return 0xc000 | low;
}

interface Host {
  mac: number;
  ip: string;
  /** Next IPv4 identification. */
  ipId: number;
}

function host(mac: string, ip: string, ipId: number): Host {
  return { mac: macFromString(mac), ip, ipId };
}

interface V4Opts {
  sport: number;
  vlan?: VlanTag;
  dscp?: number;
  ecn?: number;
}

/** A RoCE v2 over IPv4 frame from `a` to `b` (rxe defaults: TTL 64, DF, UDP checksum 0). */
function v4(a: Host, b: Host, o: V4Opts, t: TransportSpec): Uint8Array {
  const id = a.ipId;
  a.ipId = (a.ipId + 1) & 0xffff;
  return buildRoceV2Frame({
    ...t,
    eth: { src: a.mac, dst: b.mac, vlan: o.vlan ?? null },
    ip: { version: 4, src: a.ip, dst: b.ip, ttl: 64, dontFragment: true, identification: id, dscp: o.dscp ?? 0, ecn: o.ecn ?? 0 },
    udp: { srcPort: o.sport, dstPort: 4791, checksum: 0 },
  });
}

const ack = (credits: number): number => encodeSyndrome(AethKind.ACK, credits);
const UNLIMITED = 0x1f;

// ------------------------------------------------------------- rc-conversation

/**
 * The RC conversation between 198.18.0.1 (requester, QP 0x11) and
 * 198.18.0.2 (responder, QP 0x12), with two short-lived extra connections at
 * the end for the invalid-request and remote-operational NAKs. Path MTU 1024.
 */
export function rcConversation(): Rec[] {
  const A = host('02:00:c6:12:00:01', '198.18.0.1', 0x1c40);
  const B = host('02:00:c6:12:00:02', '198.18.0.2', 0x7a13);
  const clk = new Clock(T0_NS);
  const out: Rec[] = [];
  const put = (us: number, data: Uint8Array): void => {
    out.push({ data, timestampNs: clk.after(us) });
  };
  const qa = 0x11;
  const qb = 0x12;
  const toB = { sport: rxeSport(qa), ecn: 2 }; // DCQCN-enabled ports: ECT(0)
  const toA = { sport: rxeSport(qb), ecn: 2 };
  const P0 = 0x2f1a00;
  const psn = (n: number): number => (P0 + n) & 0xffffff;
  let msn = 0;
  const req = (n: number, opcode: number, extra: Omit<TransportSpec, 'bth'> = {}, bth: Partial<TransportSpec['bth']> = {}): TransportSpec => ({
    ...extra,
    bth: { opcode, destQp: qb, psn: psn(n), ...bth },
  });
  const resp = (n: number, opcode: number, extra: Omit<TransportSpec, 'bth'> = {}): TransportSpec => ({
    ...extra,
    bth: { opcode, destQp: qa, psn: psn(n) },
  });
  const ACK = 0x11;
  const VA = 0x00007f3a1c200000n;
  const RKEY = 0x000a1b2c;

  // 1-4: a 2749-byte SEND in three packets (FIRST / MIDDLE / LAST, pad 3), then its ACK (16 credits).
  put(0, v4(A, B, toB, req(0, 0x00, { payload: bytesOf(1024, 1) })));
  put(1.184, v4(A, B, toB, req(1, 0x01, { payload: bytesOf(1024, 2) })));
  put(1.176, v4(A, B, toB, req(2, 0x02, { payload: bytesOf(701, 3) }, { ackReq: true })));
  put(13.412, v4(B, A, toA, resp(2, ACK, { aeth: { syndrome: ack(8), msn: ++msn } })));
  // 5-6: SEND ONLY WITH IMMEDIATE, 30 bytes (pad 2), solicited; ACK with 12 credits.
  put(27.031, v4(A, B, toB, req(3, 0x05, { immDt: 0xc0ffee01, payload: bytesOf(30, 4) }, { se: true, ackReq: true })));
  put(10.877, v4(B, A, toA, resp(3, ACK, { aeth: { syndrome: ack(7), msn: ++msn } })));
  // 7-8: SEND ONLY WITH INVALIDATE (rkey 0x00c0de11); ACK without flow control (credit code 31).
  put(31.502, v4(A, B, toB, req(4, 0x17, { ieth: 0x00c0de11, payload: bytesOf(64, 5) }, { ackReq: true })));
  put(9.964, v4(B, A, toA, resp(4, ACK, { aeth: { syndrome: ack(UNLIMITED), msn: ++msn } })));
  // 9-11: SEND FIRST + SEND LAST WITH INVALIDATE (7 bytes, pad 1); ACK.
  put(22.318, v4(A, B, toB, req(5, 0x00, { payload: bytesOf(1024, 6) })));
  put(1.171, v4(A, B, toB, req(6, 0x16, { ieth: 0x00c0de12, payload: bytesOf(7, 7) }, { ackReq: true })));
  put(11.207, v4(B, A, toA, resp(6, ACK, { aeth: { syndrome: ack(UNLIMITED), msn: ++msn } })));
  // 12-16: RDMA WRITE of 2500 bytes (FIRST / MIDDLE / LAST WITH IMMEDIATE); a switch marks the MIDDLE
  // packet CE, the responder's NIC answers with a CNP (sport 0, DSCP 48, BECN), then the ACK.
  put(18.653, v4(A, B, toB, req(7, 0x06, { reth: { va: VA, rkey: RKEY, dmaLength: 2500 }, payload: bytesOf(1024, 8) })));
  put(1.192, v4(A, B, { ...toB, ecn: 3 }, req(8, 0x07, { payload: bytesOf(1024, 9) })));
  put(1.088, v4(A, B, toB, req(9, 0x09, { immDt: 0x00000007, payload: bytesOf(452, 10) }, { ackReq: true })));
  put(3.905, v4(B, A, { sport: 0, dscp: 48, ecn: 2 }, { bth: { opcode: 0x81, destQp: qa, psn: 0, becn: true } }));
  put(6.221, v4(B, A, toA, resp(9, ACK, { aeth: { syndrome: ack(UNLIMITED), msn: ++msn } })));
  // 17-19: RDMA WRITE ONLY 255 bytes (pad 1, no AckReq) and WRITE ONLY WITH IMMEDIATE 18 bytes (pad 2);
  // one coalesced ACK for both.
  put(24.87, v4(A, B, toB, req(10, 0x0a, { reth: { va: VA + 0x1000n, rkey: RKEY, dmaLength: 255 }, payload: bytesOf(255, 11) })));
  ++msn;
  put(
    1.045,
    v4(A, B, toB, req(11, 0x0b, { reth: { va: VA + 0x1100n, rkey: RKEY, dmaLength: 18 }, immDt: 0x00000008, payload: bytesOf(18, 12) }, { ackReq: true })),
  );
  put(10.533, v4(B, A, toA, resp(11, ACK, { aeth: { syndrome: ack(UNLIMITED), msn: ++msn } })));
  // 20-23: RDMA READ of 2100 bytes: request (PSNs +12..+14), response FIRST / MIDDLE / LAST.
  put(35.118, v4(A, B, toB, req(12, 0x0c, { reth: { va: VA + 0x2000n, rkey: RKEY, dmaLength: 2100 } }, { ackReq: true })));
  ++msn;
  put(8.391, v4(B, A, toA, resp(12, 0x0d, { aeth: { syndrome: ack(UNLIMITED), msn }, payload: bytesOf(1024, 13) })));
  put(1.203, v4(B, A, toA, resp(13, 0x0e, { payload: bytesOf(1024, 14) })));
  put(1.097, v4(B, A, toA, resp(14, 0x0f, { aeth: { syndrome: ack(UNLIMITED), msn }, payload: bytesOf(52, 15) })));
  // 24-25: RDMA READ of 64 bytes: READ RESPONSE ONLY.
  put(20.44, v4(A, B, toB, req(15, 0x0c, { reth: { va: VA + 0x3000n, rkey: RKEY, dmaLength: 64 } }, { ackReq: true })));
  put(8.017, v4(B, A, toA, resp(15, 0x10, { aeth: { syndrome: ack(UNLIMITED), msn: ++msn }, payload: bytesOf(64, 16) })));
  // 26-29: COMPARE AND SWAP (0 -> 1) and FETCH AND ADD (+16) on one 8-byte word, with their ATOMIC ACKs.
  const lock = VA + 0x4000n;
  put(19.306, v4(A, B, toB, req(16, 0x13, { atomicEth: { va: lock, rkey: RKEY, swapAdd: 1n, compare: 0n } }, { ackReq: true })));
  put(9.12, v4(B, A, toA, resp(16, 0x12, { aeth: { syndrome: ack(UNLIMITED), msn: ++msn }, atomicAckEth: { origData: 0n } })));
  put(14.775, v4(A, B, toB, req(17, 0x14, { atomicEth: { va: lock, rkey: RKEY, swapAdd: 16n, compare: 0n } }, { ackReq: true })));
  put(9.031, v4(B, A, toA, resp(17, 0x12, { aeth: { syndrome: ack(UNLIMITED), msn: ++msn }, atomicAckEth: { origData: 1n } })));
  // 30-33: FLUSH (0x1C, global visibility of 4 KiB) and ATOMIC WRITE (0x1D, 8 bytes); rxe answers
  // both with a zero-length RDMA READ RESPONSE ONLY.
  put(16.66, v4(A, B, toB, req(18, 0x1c, { feth: { selectivity: 0, placementType: 1 }, reth: { va: VA, rkey: RKEY, dmaLength: 4096 } }, { ackReq: true })));
  put(7.884, v4(B, A, toA, resp(18, 0x10, { aeth: { syndrome: ack(UNLIMITED), msn: ++msn } })));
  put(12.09, v4(A, B, toB, req(19, 0x1d, { reth: { va: lock + 8n, rkey: RKEY, dmaLength: 8 }, payload: bytesOf(8, 17) }, { ackReq: true })));
  put(7.702, v4(B, A, toA, resp(19, 0x10, { aeth: { syndrome: ack(UNLIMITED), msn: ++msn } })));
  // 34-37: SEND ONLY while the responder has no receive posted: RNR NAK (timer code 13 = 0.96 ms);
  // the requester waits and retransmits the same packet (same PSN), which is ACKed.
  const rnrSend = v4(A, B, toB, req(20, 0x04, { payload: bytesOf(128, 18) }, { ackReq: true }));
  put(25.3, rnrSend);
  put(6.948, v4(B, A, toA, resp(20, ACK, { aeth: { syndrome: encodeSyndrome(AethKind.RNR_NAK, 13), msn } })));
  put(963.517, v4(A, B, toB, req(20, 0x04, { payload: bytesOf(128, 18) }, { ackReq: true })));
  put(10.121, v4(B, A, toA, resp(20, ACK, { aeth: { syndrome: ack(UNLIMITED), msn: ++msn } })));
  // 38-42: PSN +21 is lost on the way; +22 arrives out of order and draws a PSN SEQUENCE ERROR NAK
  // carrying the expected PSN; the requester goes back to +21 and sends +21 and +22 again.
  put(30.5, v4(A, B, toB, req(21, 0x04, { payload: bytesOf(100, 19) })));
  put(1.02, v4(A, B, toB, req(22, 0x04, { payload: bytesOf(200, 20) }, { ackReq: true })));
  out.splice(out.length - 2, 1); // the capture point is behind the loss: +21 never shows up
  put(7.313, v4(B, A, toA, resp(21, ACK, { aeth: { syndrome: encodeSyndrome(AethKind.NAK, NakCode.PSN_SEQUENCE_ERROR), msn } })));
  put(4.87, v4(A, B, toB, req(21, 0x04, { payload: bytesOf(100, 19) })));
  ++msn;
  put(1.031, v4(A, B, toB, req(22, 0x04, { payload: bytesOf(200, 20) }, { ackReq: true })));
  put(10.29, v4(B, A, toA, resp(22, ACK, { aeth: { syndrome: ack(UNLIMITED), msn: ++msn } })));
  // 43-44: RDMA WRITE with a stale rkey: REMOTE ACCESS ERROR NAK (the QP pair goes to the error state).
  put(40.66, v4(A, B, toB, req(23, 0x0a, { reth: { va: VA, rkey: 0x000a1b00, dmaLength: 16 }, payload: bytesOf(16, 21) }, { ackReq: true })));
  put(6.58, v4(B, A, toA, resp(23, ACK, { aeth: { syndrome: encodeSyndrome(AethKind.NAK, NakCode.REMOTE_ACCESS_ERROR), msn } })));

  // 45-46: a second connection (QP 0x13 -> 0x14) whose responder QP lacks remote-atomic access:
  // FETCH AND ADD draws an INVALID REQUEST NAK.
  const qc = 0x13;
  const qd = 0x14;
  const Q0 = 0x8c0412;
  put(
    812.4,
    v4(
      A,
      B,
      { sport: rxeSport(qc), ecn: 2 },
      { bth: { opcode: 0x14, destQp: qd, psn: Q0, ackReq: true }, atomicEth: { va: 0x00007f3a1c300000n, rkey: 0x000b0001, swapAdd: 1n, compare: 0n } },
    ),
  );
  put(
    7.05,
    v4(
      B,
      A,
      { sport: rxeSport(qd), ecn: 2 },
      { bth: { opcode: ACK, destQp: qc, psn: Q0 }, aeth: { syndrome: encodeSyndrome(AethKind.NAK, NakCode.INVALID_REQUEST), msn: 0 } },
    ),
  );
  // 47-48: a third connection (QP 0x15 -> 0x16): the responder fails to place an RDMA WRITE
  // (REMOTE OPERATIONAL ERROR NAK).
  const qe = 0x15;
  const qf = 0x16;
  const R0 = 0x011d77;
  put(
    655.2,
    v4(
      A,
      B,
      { sport: rxeSport(qe), ecn: 2 },
      {
        bth: { opcode: 0x0a, destQp: qf, psn: R0, ackReq: true },
        reth: { va: 0x00007f3a1c400000n, rkey: 0x000c0001, dmaLength: 512 },
        payload: bytesOf(512, 22),
      },
    ),
  );
  put(
    9.44,
    v4(
      B,
      A,
      { sport: rxeSport(qf), ecn: 2 },
      { bth: { opcode: ACK, destQp: qe, psn: R0 }, aeth: { syndrome: encodeSyndrome(AethKind.NAK, NakCode.REMOTE_OPERATIONAL_ERROR), msn: 0 } },
    ),
  );
  return out;
}

// ------------------------------------------------------------ uc-ud-v6-vlan

/** Ethernet + IPv4 + payload for the non-RoCE frames (IPv4 checksum computed). */
function plainV4(a: Host, b: Host, protocol: number, l4: Uint8Array): Uint8Array {
  const out = new Uint8Array(ETH_LEN + IPV4_MIN_LEN + l4.length);
  const view = new DataView(out.buffer);
  emitEthernet({ src: a.mac, dst: b.mac, vlan: null, etherType: EtherType.IPv4 }, view, 0);
  const id = a.ipId;
  a.ipId = (a.ipId + 1) & 0xffff;
  emitIpv4(
    {
      ihl: 5,
      dscp: 0,
      ecn: 0,
      totalLength: IPV4_MIN_LEN + l4.length,
      identification: id,
      dontFragment: true,
      moreFragments: false,
      fragmentOffset: 0,
      ttl: 64,
      protocol,
      checksum: 0,
      src: ipv4FromString(a.ip),
      dst: ipv4FromString(b.ip),
      options: new Uint8Array(0),
    },
    view,
    ETH_LEN,
  );
  out.set(l4, ETH_LEN + IPV4_MIN_LEN);
  return out;
}

/** Internet checksum of the IPv4 pseudo-header plus `seg` (for the UDP and TCP frames). */
function l4Checksum(src: string, dst: string, protocol: number, seg: Uint8Array): number {
  let sum = 0;
  const s = ipv4FromString(src);
  const d = ipv4FromString(dst);
  sum += (s >>> 16) + (s & 0xffff) + (d >>> 16) + (d & 0xffff) + protocol + seg.length;
  for (let i = 0; i < seg.length; i += 2) sum += ((seg[i] ?? 0) << 8) | (seg[i + 1] ?? 0);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  const c = ~sum & 0xffff;
  return c === 0 ? 0xffff : c;
}

function arp(op: 1 | 2, a: Host, b: Host, targetMac: number): Uint8Array {
  const out = new Uint8Array(60); // padded to the Ethernet minimum
  const v = new DataView(out.buffer);
  emitEthernet({ src: a.mac, dst: op === 1 ? 0xffffffffffff : b.mac, vlan: null, etherType: EtherType.ARP }, v, 0);
  v.setUint16(14, 1); // hardware type Ethernet
  v.setUint16(16, EtherType.IPv4);
  v.setUint8(18, 6);
  v.setUint8(19, 4);
  v.setUint16(20, op);
  v.setUint16(22, Math.floor(a.mac / 0x100000000));
  v.setUint32(24, a.mac % 0x100000000);
  v.setUint32(28, ipv4FromString(a.ip));
  v.setUint16(32, Math.floor(targetMac / 0x100000000));
  v.setUint32(34, targetMac % 0x100000000);
  v.setUint32(38, ipv4FromString(b.ip));
  return out;
}

function dnsQuery(a: Host, b: Host): Uint8Array {
  // Standard query, id 0x5e2b, RD, one question: A? roce-peer.lab.
  const name = 'roce-peer.lab'.split('.');
  const q: number[] = [0x5e, 0x2b, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
  for (const label of name) q.push(label.length, ...Buffer.from(label, 'ascii'));
  q.push(0, 0, 1, 0, 1);
  const seg = new Uint8Array(UDP_LEN + q.length);
  seg.set(q, UDP_LEN);
  const v = new DataView(seg.buffer);
  emitUdp({ srcPort: 53124, dstPort: 53, length: seg.length, checksum: 0 }, v, 0);
  v.setUint16(6, l4Checksum(a.ip, b.ip, IpProtocol.UDP, seg));
  return plainV4(a, b, IpProtocol.UDP, seg);
}

function tcpSyn(a: Host, b: Host): Uint8Array {
  // SYN to perftest's out-of-band port 18515, MSS 1460, SACK permitted, window scale 7.
  const seg = new Uint8Array(32);
  const v = new DataView(seg.buffer);
  v.setUint16(0, 41234);
  v.setUint16(2, 18515);
  v.setUint32(4, 0x6b1e0c55);
  v.setUint32(8, 0);
  v.setUint8(12, 8 << 4); // data offset 8 words
  v.setUint8(13, 0x02); // SYN
  v.setUint16(14, 64240);
  seg.set([0x02, 0x04, 0x05, 0xb4, 0x01, 0x01, 0x04, 0x02, 0x01, 0x03, 0x03, 0x07], 20);
  v.setUint16(16, l4Checksum(a.ip, b.ip, IpProtocol.TCP, seg));
  return plainV4(a, b, IpProtocol.TCP, seg);
}

/**
 * UC SEND / RDMA WRITE sequences over IPv4 in VLAN 100 (PCP 3), UD SEND ONLY
 * (+ WITH IMMEDIATE) over IPv6 with a flow label and traffic class in VLAN 200
 * (PCP 3), and untagged ARP, DNS and TCP frames that are not RoCE. Path MTU 256.
 */
export function ucUdV6Vlan(): Rec[] {
  const A = host('02:00:c6:12:00:01', '198.18.0.1', 0x2210);
  const B = host('02:00:c6:12:00:02', '198.18.0.2', 0x5d01);
  const clk = new Clock(T0_NS + 60_000_000_000n);
  const out: Rec[] = [];
  const put = (us: number, data: Uint8Array): void => {
    out.push({ data, timestampNs: clk.after(us) });
  };
  const vlan100: VlanTag = { pcp: 3, dei: 0, vid: 100, tpid: EtherType.VLAN };
  const qa = 0x20;
  const qb = 0x21;
  const uc = { sport: rxeSport(qa), vlan: vlan100, dscp: 26, ecn: 2 };
  const U0 = 0x5b0e31;
  const uPsn = (n: number): number => (U0 + n) & 0xffffff;
  const ucReq = (n: number, opcode: number, extra: Omit<TransportSpec, 'bth'> = {}): TransportSpec => ({ ...extra, bth: { opcode, destQp: qb, psn: uPsn(n) } });
  const VA = 0x000055d0a8e40000n;
  const RKEY = 0x00020304;

  // 1-2: ARP for the peer (untagged management network), 3: TCP SYN to perftest's port.
  put(0, arp(1, A, B, 0));
  put(41.2, arp(2, B, A, A.mac));
  put(88.06, tcpSyn(A, B));
  // 4-8: UC SENDs: FIRST / MIDDLE / LAST WITH IMMEDIATE (77 bytes, pad 3), ONLY (40), ONLY WITH IMMEDIATE (0 bytes).
  put(1510.3, v4(A, B, uc, ucReq(0, 0x20, { payload: bytesOf(256, 101) })));
  put(0.512, v4(A, B, uc, ucReq(1, 0x21, { payload: bytesOf(256, 102) })));
  put(0.498, v4(A, B, uc, ucReq(2, 0x23, { immDt: 0x00000100, payload: bytesOf(77, 103) })));
  put(15.3, v4(A, B, uc, ucReq(3, 0x24, { payload: bytesOf(40, 104) })));
  put(12.8, v4(A, B, uc, { bth: { opcode: 0x25, destQp: qb, psn: uPsn(4), se: true }, immDt: 0x00000101 }));
  // 9-13: UC RDMA WRITEs: FIRST / MIDDLE / LAST (600 bytes), ONLY (33, pad 3), ONLY WITH IMMEDIATE (64).
  put(20.7, v4(A, B, uc, ucReq(5, 0x26, { reth: { va: VA, rkey: RKEY, dmaLength: 600 }, payload: bytesOf(256, 105) })));
  put(0.505, v4(A, B, uc, ucReq(6, 0x27, { payload: bytesOf(256, 106) })));
  put(0.431, v4(A, B, uc, ucReq(7, 0x28, { payload: bytesOf(88, 107) })));
  put(11.9, v4(A, B, uc, ucReq(8, 0x2a, { reth: { va: VA + 0x400n, rkey: RKEY, dmaLength: 33 }, payload: bytesOf(33, 108) })));
  put(9.6, v4(A, B, uc, ucReq(9, 0x2b, { reth: { va: VA + 0x500n, rkey: RKEY, dmaLength: 64 }, immDt: 0x00000102, payload: bytesOf(64, 109) })));
  // 14-15: UC RDMA WRITE FIRST + LAST WITH IMMEDIATE (300 bytes); 16-17: UC SEND FIRST + SEND LAST (266).
  put(14.2, v4(A, B, uc, ucReq(10, 0x26, { reth: { va: VA + 0x800n, rkey: RKEY, dmaLength: 300 }, payload: bytesOf(256, 110) })));
  put(0.47, v4(A, B, uc, ucReq(11, 0x29, { immDt: 0x00000103, payload: bytesOf(44, 111) })));
  put(13.3, v4(A, B, uc, ucReq(12, 0x20, { payload: bytesOf(256, 112) })));
  put(0.52, v4(A, B, uc, ucReq(13, 0x22, { payload: bytesOf(10, 113) })));
  // 18: a DNS query (UDP port 53, not RoCE).
  put(2200.1, dnsQuery(A, B));

  // 19-23: UD over IPv6 in VLAN 200: SEND ONLY both ways, SEND ONLY WITH IMMEDIATE, a zero-length SEND.
  const C = { mac: macFromString('02:00:c6:12:00:01'), ip: '2001:db8:18::1' };
  const D = { mac: macFromString('02:00:c6:12:00:02'), ip: '2001:db8:18::2' };
  const vlan200: VlanTag = { pcp: 3, dei: 0, vid: 200, tpid: EtherType.VLAN };
  const v6 = (s: typeof C, d: typeof C, flowLabel: number, t: TransportSpec): Uint8Array =>
    buildRoceV2Frame({
      ...t,
      eth: { src: s.mac, dst: d.mac, vlan: vlan200 },
      ip: { version: 6, src: s.ip, dst: d.ip, trafficClass: 0x6a, flowLabel, hopLimit: 64 },
      udp: { srcPort: flowLabelSport(flowLabel), dstPort: 4791, checksum: 0 },
    });
  const qkey = 0x11111111;
  const FL_C = 0x5a3c7;
  const FL_D = 0xb1e02;
  put(310.4, v6(C, D, FL_C, { bth: { opcode: 0x64, destQp: 0x31, psn: 0x000a00 }, deth: { qkey, srcQp: 0x30 }, payload: bytesOf(100, 201) }));
  put(18.9, v6(D, C, FL_D, { bth: { opcode: 0x64, destQp: 0x30, psn: 0x7f0001 }, deth: { qkey, srcQp: 0x31 }, payload: bytesOf(258, 202) }));
  put(
    22.1,
    v6(C, D, FL_C, { bth: { opcode: 0x65, destQp: 0x31, psn: 0x000a01, se: true }, deth: { qkey, srcQp: 0x30 }, immDt: 0x0badcafe, payload: bytesOf(61, 203) }),
  );
  put(19.5, v6(D, C, FL_D, { bth: { opcode: 0x65, destQp: 0x30, psn: 0x7f0002 }, deth: { qkey, srcQp: 0x31 }, immDt: 0x00000001, payload: bytesOf(4, 204) }));
  put(17.3, v6(C, D, FL_C, { bth: { opcode: 0x64, destQp: 0x31, psn: 0x000a02 }, deth: { qkey, srcQp: 0x30 } }));
  return out;
}

// --------------------------------------------------------------- xrc-rd-v1

/** XRC requests (XRCETH) and responses, RD packets (RDETH / DETH), and two RoCE v1 frames. */
export function xrcRdV1(): Rec[] {
  const A = host('02:00:c6:12:00:01', '198.18.0.1', 0x3001);
  const B = host('02:00:c6:12:00:02', '198.18.0.2', 0x4001);
  const clk = new Clock(T0_NS + 120_000_000_000n);
  const out: Rec[] = [];
  const put = (us: number, data: Uint8Array): void => {
    out.push({ data, timestampNs: clk.after(us) });
  };
  // XRC: initiator QP 0x40 on A, target QP 0x41 on B, XRC SRQ 0x50 on B.
  const ini = 0x40;
  const tgt = 0x41;
  const srq = { xrcSrq: 0x000050 };
  const toB = { sport: rxeSport(ini) };
  const toA = { sport: rxeSport(tgt) };
  const X0 = 0x100000;
  const xr = (n: number, opcode: number, extra: Omit<TransportSpec, 'bth'> = {}, ackReq = false): TransportSpec => ({
    ...extra,
    xrcEth: srq,
    bth: { opcode, destQp: tgt, psn: X0 + n, ackReq },
  });
  const xs = (n: number, opcode: number, extra: Omit<TransportSpec, 'bth'>): TransportSpec => ({ ...extra, bth: { opcode, destQp: ini, psn: X0 + n } });
  const VA = 0x00007f0011220000n;
  put(0, v4(A, B, toB, xr(0, 0xa0, { payload: bytesOf(1024, 301) })));
  put(1.2, v4(A, B, toB, xr(1, 0xa2, { payload: bytesOf(300, 302) }, true)));
  put(9.8, v4(B, A, toA, xs(1, 0xb1, { aeth: { syndrome: ack(UNLIMITED), msn: 1 } })));
  put(20.3, v4(A, B, toB, xr(2, 0xa5, { immDt: 0x00001111, payload: bytesOf(21, 303) }, true)));
  put(8.9, v4(B, A, toA, xs(2, 0xb1, { aeth: { syndrome: ack(UNLIMITED), msn: 2 } })));
  put(15.1, v4(A, B, toB, xr(3, 0xaa, { reth: { va: VA, rkey: 0x00030001, dmaLength: 96 }, payload: bytesOf(96, 304) }, true)));
  put(9.2, v4(B, A, toA, xs(3, 0xb1, { aeth: { syndrome: ack(UNLIMITED), msn: 3 } })));
  put(16.0, v4(A, B, toB, xr(4, 0xac, { reth: { va: VA + 0x100n, rkey: 0x00030001, dmaLength: 40 } }, true)));
  put(8.1, v4(B, A, toA, xs(4, 0xb0, { aeth: { syndrome: ack(UNLIMITED), msn: 4 }, payload: bytesOf(40, 305) })));
  put(14.4, v4(A, B, toB, xr(5, 0xb3, { atomicEth: { va: VA + 0x200n, rkey: 0x00030001, swapAdd: 0xffn, compare: 0n } }, true)));
  put(8.6, v4(B, A, toA, xs(5, 0xb2, { aeth: { syndrome: ack(UNLIMITED), msn: 5 }, atomicAckEth: { origData: 0n } })));
  put(13.7, v4(A, B, toB, xr(6, 0xb7, { ieth: 0x00030001, payload: bytesOf(12, 306) }, true)));
  put(9.0, v4(B, A, toA, xs(6, 0xb1, { aeth: { syndrome: ack(UNLIMITED), msn: 6 } })));

  // RD: EE context 0x0100 both ways, QPs 0x60 (A) and 0x61 (B), Q_Key 0x22222222.
  const ee = { eeContext: 0x000100 };
  const qkey = 0x22222222;
  const R0 = 0x200000;
  const rq = (n: number, opcode: number, extra: Omit<TransportSpec, 'bth'> = {}): TransportSpec => ({
    ...extra,
    rdEth: ee,
    deth: { qkey, srcQp: 0x60 },
    bth: { opcode, destQp: 0x61, psn: R0 + n, ackReq: true },
  });
  const rs = (n: number, opcode: number, extra: Omit<TransportSpec, 'bth'>): TransportSpec => ({
    ...extra,
    rdEth: ee,
    bth: { opcode, destQp: 0x60, psn: R0 + n },
  });
  const rd = { sport: rxeSport(0x60) };
  const rdBack = { sport: rxeSport(0x61) };
  put(402.5, v4(A, B, rd, rq(0, 0x44, { payload: bytesOf(50, 401) })));
  put(9.4, v4(B, A, rdBack, rs(0, 0x51, { aeth: { syndrome: ack(UNLIMITED), msn: 1 } })));
  put(12.3, v4(A, B, rd, rq(1, 0x45, { immDt: 0x00002222, payload: bytesOf(9, 402) })));
  put(9.1, v4(B, A, rdBack, rs(1, 0x51, { aeth: { syndrome: ack(UNLIMITED), msn: 2 } })));
  put(13.0, v4(A, B, rd, rq(2, 0x4a, { reth: { va: VA + 0x1000n, rkey: 0x00040001, dmaLength: 128 }, payload: bytesOf(128, 403) })));
  put(9.6, v4(B, A, rdBack, rs(2, 0x51, { aeth: { syndrome: ack(UNLIMITED), msn: 3 } })));
  put(14.2, v4(A, B, rd, rq(3, 0x4c, { reth: { va: VA + 0x1100n, rkey: 0x00040001, dmaLength: 24 } })));
  put(8.3, v4(B, A, rdBack, rs(3, 0x50, { aeth: { syndrome: ack(UNLIMITED), msn: 4 }, payload: bytesOf(24, 404) })));
  put(15.5, v4(A, B, rd, rq(4, 0x54, { atomicEth: { va: VA + 0x1200n, rkey: 0x00040001, swapAdd: 2n, compare: 0n } })));
  put(8.8, v4(B, A, rdBack, rs(4, 0x52, { aeth: { syndrome: ack(UNLIMITED), msn: 5 }, atomicAckEth: { origData: 40n } })));

  // RoCE v1 (EtherType 0x8915, GRH with link-local GIDs): an RC SEND ONLY and its ACK.
  const gidA = 'fe80::ff:fec6:1201';
  const gidB = 'fe80::ff:fec6:1202';
  put(
    1201.7,
    buildRoceV1Frame({
      eth: { src: A.mac, dst: B.mac },
      grh: { sgid: gidA, dgid: gidB, hopLimit: 1 },
      bth: { opcode: 0x04, destQp: 0x71, psn: 0x0a0b0c, ackReq: true },
      payload: bytesOf(45, 501),
    }),
  );
  put(
    11.4,
    buildRoceV1Frame({
      eth: { src: B.mac, dst: A.mac },
      grh: { sgid: gidB, dgid: gidA, hopLimit: 1 },
      bth: { opcode: 0x11, destQp: 0x70, psn: 0x0a0b0c },
      aeth: { syndrome: ack(UNLIMITED), msn: 1 },
    }),
  );
  return out;
}

// --------------------------------------------------------------- malformed

/** Rewrites IPv4 total length, IPv4 checksum and UDP length of an Ethernet/IPv4 RoCE frame cut to `len` bytes. */
function cutV4(frame: Uint8Array, len: number): Uint8Array {
  const out = frame.slice(0, len);
  const v = new DataView(out.buffer);
  const ip = ETH_LEN;
  v.setUint16(ip + 2, len - ip);
  v.setUint16(ip + 10, 0);
  let sum = 0;
  for (let i = 0; i < IPV4_MIN_LEN; i += 2) sum += v.getUint16(ip + i);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  v.setUint16(ip + 10, ~sum & 0xffff);
  v.setUint16(ip + IPV4_MIN_LEN + 4, len - ip - IPV4_MIN_LEN);
  return out;
}

/** Recomputes the ICRC in the last 4 bytes of an Ethernet/IPv4 RoCE frame. */
function reseal(f: Uint8Array): Uint8Array {
  writeIcrc(f, f.length - 4, icrcV2(f, ETH_LEN, f.length - 4));
  return f;
}

/** Malformed RoCE frames, one fault each (see captures/README.md for the list). */
export function malformed(): Rec[] {
  const A = host('02:00:c6:12:00:01', '198.18.0.1', 0x6001);
  const B = host('02:00:c6:12:00:02', '198.18.0.2', 0x6101);
  const clk = new Clock(T0_NS + 180_000_000_000n);
  const out: Rec[] = [];
  const put = (us: number, data: Uint8Array): void => {
    out.push({ data, timestampNs: clk.after(us) });
  };
  const o = { sport: rxeSport(0x11) };
  const bth = (opcode: number, psn: number, extra: Partial<TransportSpec['bth']> = {}): TransportSpec['bth'] => ({ opcode, destQp: 0x12, psn, ...extra });
  const hdrs = ETH_LEN + IPV4_MIN_LEN + UDP_LEN;

  // 1: a good SEND ONLY (reference), 2: the same with a wrong ICRC.
  put(0, v4(A, B, o, { bth: bth(0x04, 0x000100), payload: bytesOf(20, 601) }));
  put(10, v4(A, B, o, { bth: bth(0x04, 0x000101), payload: bytesOf(20, 601), icrc: 0x12345678 }));
  // 3: truncated BTH: the UDP payload holds 8 bytes (IP and UDP lengths agree with the frame).
  put(10, cutV4(v4(A, B, o, { bth: bth(0x04, 0x000102), payload: bytesOf(20, 602) }), hdrs + 8));
  // 4: truncated RETH: RDMA WRITE ONLY whose UDP payload is BTH + 8 RETH bytes + an ICRC that is
  // correct for those bytes (IP and UDP lengths agree with the frame; the only fault is the short RETH).
  put(
    10,
    reseal(cutV4(v4(A, B, o, { bth: bth(0x0a, 0x000103), reth: { va: 0x1000n, rkey: 0x77, dmaLength: 64 }, payload: bytesOf(64, 603) }), hdrs + 12 + 8 + 4)),
  );
  // 5: unknown opcode 0x1F (a SEND ONLY with its opcode byte changed, ICRC recomputed).
  {
    const f = v4(A, B, o, { bth: bth(0x04, 0x000104), payload: bytesOf(16, 604) });
    f[hdrs] = 0x1f;
    put(10, reseal(f));
  }
  // 6: UDP length 100 bytes larger than the datagram (and the frame).
  {
    const f = v4(A, B, o, { bth: bth(0x04, 0x000105), payload: bytesOf(24, 605) });
    const v = new DataView(f.buffer);
    v.setUint16(ETH_LEN + IPV4_MIN_LEN + 4, v.getUint16(ETH_LEN + IPV4_MIN_LEN + 4) + 100);
    put(10, f);
  }
  // 7: pad count 3 on a SEND ONLY with no payload (the pad is larger than the payload).
  put(10, v4(A, B, o, { bth: bth(0x04, 0x000106, { padCount: 3 }) }));
  // 8: an ACKNOWLEDGE carrying 8 payload bytes.
  put(
    10,
    v4(
      B,
      A,
      { sport: rxeSport(0x12) },
      { bth: { opcode: 0x11, destQp: 0x11, psn: 0x000106 }, aeth: { syndrome: ack(UNLIMITED), msn: 1 }, payload: bytesOf(8, 606) },
    ),
  );
  // 9-10: datagrams to the GSI (QP 1, Q_Key 0x80010000) whose MAD is bad; the transport is fine.
  const gsi = (psn: number, mad: Uint8Array): TransportSpec => ({
    bth: { opcode: 0x64, destQp: 1, psn, ackReq: true },
    deth: { qkey: GSI_QKEY, srcQp: 1 },
    payload: mad,
  });
  const rtu = buildCmMad({ name: 'RTU', fields: { localCommId: 0x1234, remoteCommId: 0x5678, privateData: new Uint8Array(0) } }, { transactionId: 0x77n });
  // 9: a 200-byte MAD (a MAD is 256 bytes).
  put(10, v4(A, B, { sport: GSI_SPORT }, gsi(0, rtu.slice(0, 200))));
  // 10: a 256-byte MAD with base version 2.
  const v2 = rtu.slice();
  v2[0] = 2;
  put(10, v4(A, B, { sport: GSI_SPORT }, gsi(1, v2)));
  return out;
}

// ------------------------------------------------------------------- writers

/** Replaces the 14-byte Ethernet header of each (untagged) frame by what `head` returns. */
function relink(recs: Rec[], headLen: number, head: (eth: DataView, out: DataView, outgoing: boolean) => void): Rec[] {
  const srcA = macFromString('02:00:c6:12:00:01');
  return recs.map((r) => {
    const eth = new DataView(r.data.buffer, r.data.byteOffset, r.data.byteLength);
    const out = new Uint8Array(headLen + r.data.length - ETH_LEN);
    out.set(r.data.subarray(ETH_LEN), headLen);
    const src = eth.getUint16(6) * 0x100000000 + eth.getUint32(8);
    head(eth, new DataView(out.buffer), src === srcA);
    return { data: out, timestampNs: r.timestampNs };
  });
}

function macBytes(eth: DataView): Uint8Array {
  return new Uint8Array(eth.buffer, eth.byteOffset + 6, 6).slice();
}

/** Linux cooked v1: captured on 198.18.0.1's interface (its frames Outgoing, the peer's Host). */
function toSll(recs: Rec[]): Rec[] {
  return relink(recs, SLL_LEN, (eth, out, outgoing) => {
    emitSll(
      { packetType: outgoing ? SllPacketType.Outgoing : SllPacketType.Host, arphrdType: 1, addrLen: 6, addr: macBytes(eth), protocol: eth.getUint16(12) },
      out,
      0,
    );
  });
}

function toSll2(recs: Rec[]): Rec[] {
  return relink(recs, SLL2_LEN, (eth, out, outgoing) => {
    emitSll2(
      {
        protocol: eth.getUint16(12),
        reserved: 0,
        ifIndex: 3,
        arphrdType: 1,
        packetType: outgoing ? SllPacketType.Outgoing : SllPacketType.Host,
        addrLen: 6,
        addr: macBytes(eth),
      },
      out,
      0,
    );
  });
}

function toRaw(recs: Rec[]): Rec[] {
  return recs.map((r) => ({ data: r.data.slice(ETH_LEN), timestampNs: r.timestampNs }));
}

/** Classic pcap, big-endian, microsecond resolution (magic A1 B2 C3 D4 as stored bytes). */
export function writePcapUsecBigEndian(recs: Rec[], linkType: number = LinkType.Ethernet): Uint8Array {
  const size = 24 + recs.reduce((n, r) => n + 16 + r.data.length, 0);
  const out = new Uint8Array(size);
  const v = new DataView(out.buffer);
  v.setUint32(0, 0xa1b2c3d4);
  v.setUint16(4, 2);
  v.setUint16(6, 4);
  v.setInt32(8, 0);
  v.setUint32(12, 0);
  v.setUint32(16, 262144);
  v.setUint32(20, linkType);
  let o = 24;
  for (const r of recs) {
    v.setUint32(o, Number(r.timestampNs / 1_000_000_000n));
    v.setUint32(o + 4, Number((r.timestampNs % 1_000_000_000n) / 1000n));
    v.setUint32(o + 8, r.data.length);
    v.setUint32(o + 12, r.data.length);
    out.set(r.data, o + 16);
    o += 16 + r.data.length;
  }
  return out;
}

/** Every capture of `captures/`, by file name. */
export function makeCaptures(): Map<string, Uint8Array> {
  const rc = rcConversation();
  const m = new Map<string, Uint8Array>();
  m.set('rc-conversation.pcap', writePcap(rc));
  m.set('uc-ud-v6-vlan.pcap', writePcap(ucUdV6Vlan()));
  m.set('xrc-rd-v1.pcap', writePcap(xrcRdV1()));
  m.set('malformed.pcap', writePcap(malformed()));
  m.set('cm-exchanges.pcap', writePcap(cmExchanges()));
  m.set('nvme-rdma.pcap', nvmeRdmaCapture());
  m.set('rpc-rdma.pcap', writePcap(rpcRdmaCapture()));
  m.set('iser.pcap', iserCapture());
  m.set('smbd.pcap', smbdCapture());
  m.set('rc-conversation.pcapng', writePcapng(rc));
  m.set('rc-conversation-sll.pcap', writePcap(toSll(rc), { linkType: LinkType.LinuxSll }));
  m.set('rc-conversation-sll2.pcap', writePcap(toSll2(rc), { linkType: LinkType.LinuxSll2 }));
  m.set('rc-conversation-raw.pcap', writePcap(toRaw(rc), { linkType: LinkType.Raw }));
  m.set('rc-conversation-usec-be.pcap', writePcapUsecBigEndian(rc));
  return m;
}
