/**
 * Features a captured conversation may use that this stack lacks. Replay cannot judge the stack on
 * those frames: it reports them as `unsupported` (never as a violation of the captured peer or of
 * the stack), names the feature, and where it can it goes on past them with a stand-in, so that the
 * rest of the conversation is still judged:
 *
 * - RC FLUSH and RC ATOMIC WRITE (IBTA vol. 1 annex A19, memory placement extensions; 0x1C, 0x1D):
 *   decoded, not executed. Each takes one PSN and counts as one message, as a zero-length RDMA WRITE
 *   does (an ATOMIC WRITE's stand-in is an RDMA WRITE of its 8 bytes, so memory holds what a later
 *   READ finds), and both are answered by an RDMA READ response of no data, as a zero-length RDMA
 *   READ is, which is what a requester replay posts in their place.
 * - SEND with Invalidate of an R_Key the capture never shows in use: the key of a memory window or
 *   of a fast-registered region (rxe invalidates no other kind, `rxe_invalidate_mr()`), made by work
 *   requests that never reach the wire, and this stack has neither. Replay registers a plain region
 *   under that key so that the invalidation succeeds, as it did for the captured responder; the
 *   answer is still compared.
 */
import { buildRoceV2Frame, type TransportSpec } from '../../packets/build';
import { decodeFrame, packetAddresses, type RocePacket } from '../../packets/decode';
import { OpFlag, Opcode } from '../../packets/opcodes';
import { WireError } from '../../packets/errors';
import type { CapturedPacket } from './conversation';
import { type Difference, DiffClass } from './differences';

export const Feature = {
  FLUSH: { kind: 'flush', feature: 'FLUSH', rule: 'RC FLUSH (IBTA vol. 1 annex A19) is decoded by this stack but not executed (docs/conformance.md)' },
  ATOMIC_WRITE: { kind: 'atomicWrite', feature: 'ATOMIC WRITE', rule: 'RC ATOMIC WRITE (IBTA vol. 1 annex A19) is decoded by this stack but not executed (docs/conformance.md)' },
  INVALIDATE: {
    kind: 'invalidateUnregistered',
    feature: 'memory windows / fast registration',
    rule: 'a SEND with Invalidate names the R_Key of a memory window or a fast-registered region (rxe invalidates no other kind), made by work requests that never reach the wire; this stack has neither (docs/conformance.md)',
  },
} as const;
export type Feature = (typeof Feature)[keyof typeof Feature];

/** The feature request `p` needs that this stack lacks (FLUSH, ATOMIC WRITE), or null. */
export function unsupportedRequest(p: RocePacket): Feature | null {
  const f = p.info?.flags ?? 0;
  if ((f & OpFlag.FLUSH) !== 0) return Feature.FLUSH;
  if ((f & OpFlag.ATOMIC_WRITE) !== 0) return Feature.ATOMIC_WRITE;
  return null;
}

/**
 * The frame `c` with its transport replaced by `t` (the same Ethernet, IP and UDP headers), for the
 * stack; null when the capture shows no Ethernet header to send it with.
 */
export function withTransport(c: CapturedPacket, t: TransportSpec): Uint8Array | null {
  const p = c.p;
  if (p.eth === null || (p.ipv4 === null && p.ipv6 === null)) return null;
  const { src, dst } = packetAddresses(p);
  const ip =
    p.ipv4 !== null
      ? { version: 4 as const, src, dst, dscp: p.ipv4.dscp, ecn: p.ipv4.ecn, ttl: p.ipv4.ttl }
      : { version: 6 as const, src, dst, trafficClass: p.ipv6?.trafficClass ?? 0, flowLabel: p.ipv6?.flowLabel ?? 0, hopLimit: p.ipv6?.hopLimit ?? 64 };
  return buildRoceV2Frame({ eth: { src: p.eth.src, dst: p.eth.dst, vlan: p.eth.vlan }, ip, udp: { srcPort: p.udp?.srcPort ?? 0xc000 }, ...t });
}

/**
 * The request a responder replay gives the stack in place of the FLUSH or ATOMIC WRITE `c`: a
 * zero-length RDMA WRITE ONLY (VA and R_Key 0: a zero-length WRITE names no memory, C9-88), or for
 * an ATOMIC WRITE an RDMA WRITE ONLY of its 8 bytes at its address; the same PSN and AckReq. Null
 * when it cannot be built (see `withTransport`).
 */
export function responderStandIn(c: CapturedPacket): { bytes: Uint8Array; p: RocePacket } | null {
  const p = c.p;
  const b = p.bth;
  if (b === null) return null;
  const bth = { opcode: Opcode.RC_RDMA_WRITE_ONLY, destQp: b.destQp, psn: b.psn, ackReq: b.ackReq };
  const atomicWrite = ((p.info?.flags ?? 0) & OpFlag.ATOMIC_WRITE) !== 0 && p.reth !== null;
  const payload = atomicWrite ? c.bytes.subarray(p.payloadOff, p.payloadOff + p.payloadLength) : new Uint8Array(0);
  const reth = atomicWrite && p.reth !== null ? { va: p.reth.va, rkey: p.reth.rkey, dmaLength: payload.length } : { va: 0n, rkey: 0, dmaLength: 0 };
  let bytes: Uint8Array | null;
  try {
    bytes = withTransport(c, { bth, reth, payload });
  } catch (e) {
    if (e instanceof WireError) return null; // a captured header value the frame builder refuses
    throw e;
  }
  if (bytes === null) return null;
  const d = decodeFrame(bytes);
  return d.roce && d.error === null ? { bytes, p: d } : null;
}

/** The `unsupported` difference for `feature` at `psn`, shown by `frames`. */
export function unsupportedDifference(feature: Feature, psn: number | null, frames: number[], expected: string, got: string): Difference {
  return { class: DiffClass.UNSUPPORTED, kind: feature.kind, feature: feature.feature, psn, frames, expected, got, rule: feature.rule };
}
