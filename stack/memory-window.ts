/**
 * Memory windows (IBTA vol. 1 §10.6.7; rxe_mw.c): a window grants remote access to a range of a
 * memory region, under an R_Key of its own and with rights of its own, without registering memory
 * again. The consumer allocates one (`Device.allocMw`), binds it to a range of a region of its PD, and
 * hands the window's R_Key to a peer; binding it again (with a new key byte) or invalidating it takes
 * that access back.
 *
 * - Type 1 is bound by the bind verb (`QueuePair.bindMw`, ibv_bind_mw; libibverbs posts it as a bind
 *   work request and it completes with IBV_WC_BIND_MW). It answers on every QP of its PD, may be bound
 *   again at any time, never zero-based (o10-36.2.2), and cannot be invalidated (o10-37.2.26).
 * - Type 2 is bound by a BIND_MW work request on a QP of its PD (C10-72), only while free
 *   (o10-37.2.30), to a non-empty range (o10-37.2.40), and then answers only to requests arriving on
 *   that QP. LOCAL_INV or a SEND with Invalidate on that QP frees it again.
 *
 * rxe implements type 1 and type 2B (the window tied to the QP and the PD); on an RC or UC QP,
 * whose PD is the window's (C10-72), 2A (tied to the QP alone) admits exactly the same requests.
 */
import { ACCESS_MW_SUPPORTED, Access } from './access-flags';
import { MwType } from './mw-type';
import type { MemoryRegion, ProtectionDomain } from './memory-region';

/** What a window is tied to: the QP whose BIND_MW bound a type 2 window (compared by identity). */
export type MwOwner = object;

/** What a bind gives a window (`struct ibv_mw_bind_info`). */
export interface MwBindInfo {
  /** The region the window opens onto; null (with length 0) unbinds a type 1 window. */
  mr: MemoryRegion | null;
  /** The region's virtual address of the window's first byte. */
  addr: bigint;
  length: number;
  /** Remote rights (Access.REMOTE_READ, REMOTE_WRITE, REMOTE_ATOMIC, FLUSH_*) and Access.ZERO_BASED. */
  mwAccessFlags: number;
}

export class MemoryWindow {
  /**
   * True while the window answers to its R_Key (rxe RXE_MW_STATE_VALID). A type 1 window is valid from
   * its allocation, bound to nothing until a bind gives it a range; a type 2 window is free (not valid)
   * until a BIND_MW, and again after its invalidation. Deallocation ends both.
   */
  valid: boolean;
  /** False once deallocated. */
  allocated = true;
  /** The region, the range [addr, addr + length) of its virtual addresses, and the rights the bind gave. */
  mr: MemoryRegion | null = null;
  addr = 0n;
  length = 0;
  lengthBig = 0n;
  access = 0;
  /** Type 2: the QP whose BIND_MW bound it; null while free. */
  qp: MwOwner | null = null;
  /** The key the next `QueuePair.bindMw` of a type 1 window takes the key byte after (libibverbs rxe_bind_mw() next_rkey()). */
  postedRkey: number;
  constructor(
    readonly pd: ProtectionDomain,
    readonly type: MwType,
    /** The R_Key the window answers to now: its index (fixed) and a key byte each bind chooses. */
    public rkey: number,
  ) {
    this.valid = type === MwType.TYPE_1;
    this.postedRkey = rkey;
  }

  get zeroBased(): boolean {
    return (this.access & Access.ZERO_BASED) !== 0;
  }

  /** The address a peer names for byte `offset` of the window: the offset itself when zero-based, else the region's virtual address. */
  remoteAddr(offset = 0): bigint {
    return this.zeroBased ? BigInt(offset) : this.addr + BigInt(offset);
  }
}

/**
 * Why binding `mw` under `key` to `b` on a QP of `pd` is refused, in rxe_check_bind_mw()'s order, or ''
 * (IBTA vol. 1 §10.6.7; the clauses are the ones rxe cites). `regionKnown` says whether the region is
 * one of the device's live regions.
 */
export function bindProblem(pd: ProtectionDomain, mw: MemoryWindow, key: number, b: MwBindInfo, regionKnown: boolean): string {
  const name = `window 0x${(mw.rkey >>> 0).toString(16)}`;
  if (!mw.allocated) return `${name} is deallocated`;
  if (!Number.isInteger(key) || key < 0 || key > 0xffff_ffff || key >>> 8 !== mw.rkey >>> 8)
    return `key 0x${key.toString(16)} must keep the ${name}'s index 0x${(mw.rkey >>> 8).toString(16)} (only the low 8 bits are the consumer's)`;
  if (!Number.isInteger(b.mwAccessFlags) || (b.mwAccessFlags & ~ACCESS_MW_SUPPORTED) !== 0) return `unknown access flags 0x${b.mwAccessFlags.toString(16)}`;
  if (!Number.isInteger(b.length) || b.length < 0) return `length ${b.length} must be a non-negative integer`;
  if (mw.type === MwType.TYPE_1) {
    if ((b.mwAccessFlags & Access.ZERO_BASED) !== 0) return `${name} is of type 1, which cannot be zero-based (o10-36.2.2)`;
  } else {
    if (mw.valid) return `${name} is of type 2 and bound: invalidate it first (o10-37.2.30)`;
    if (mw.pd !== pd) return `${name} belongs to another protection domain than the QP (C10-72)`;
    if (b.mr === null || b.length === 0) return `${name} is of type 2: it must be bound to a region and a non-empty range (o10-37.2.40)`;
  }
  const mr = b.mr;
  if (mr === null) return b.length === 0 && b.addr === 0n ? '' : `${name}: a bind without a region must have address 0 and length 0`;
  const region = `region 0x${(mr.lkey >>> 0).toString(16)}`;
  if (!regionKnown || !mr.valid) return `${region} is not a valid region of this device`;
  if (mr.pd !== mw.pd) return `${region} belongs to another protection domain than the ${name}`;
  if ((mr.access & Access.MW_BIND) === 0) return `${region} was registered without MW_BIND access (C10-73)`;
  if ((b.mwAccessFlags & (Access.REMOTE_WRITE | Access.REMOTE_ATOMIC)) !== 0 && (mr.access & Access.LOCAL_WRITE) === 0)
    return `${region} has no local write access, so the window cannot grant remote write or atomic access (C10-74)`;
  if (b.addr < mr.iova || b.addr + BigInt(b.length) > mr.iova + mr.lengthBig)
    return `range 0x${b.addr.toString(16)}+${b.length} is not inside ${region} (C10-75)`;
  return '';
}
