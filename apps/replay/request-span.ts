/**
 * How many PSNs a captured request occupies: one, or for an RDMA READ one per response packet at the
 * path MTU (IBTA §9.7.4.1.3: the responder answers a READ with that many PSNs, so the requester's
 * next request starts after them).
 */
import type { RocePacket } from '../../packets/decode';
import { OpFlag } from '../../packets/opcodes';
import { psnAdd } from '../../base/psn';
import type { CapturedPacket } from './conversation';

export function requestSpan(p: RocePacket, mtu: number): number {
  return ((p.info?.flags ?? 0) & OpFlag.READ) !== 0 && p.reth !== null ? Math.max(1, Math.ceil(p.reth.dmaLength / mtu)) : 1;
}

/** The PSNs request `c` occupies. */
export function psnsOf(c: CapturedPacket, mtu: number): number[] {
  const b = c.p.bth;
  if (b === null) return [];
  return Array.from({ length: requestSpan(c.p, mtu) }, (_, i) => psnAdd(b.psn, i));
}
