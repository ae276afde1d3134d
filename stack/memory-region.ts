/**
 * Protection domains and memory regions over JavaScript memory.
 *
 * A region covers a `Uint8Array` and has a virtual address range
 * [iova, iova + length) that the wire refers to (RETH/AtomicETH VA), an L_Key
 * for local work requests and an R_Key for remote access. Keys carry an index
 * and an 8-bit key part, as rxe builds them (index << 8 | key). Every access
 * is checked against bounds, the PD and the access flags (IBTA vol. 1 §10.6).
 */
import { ACCESS_MR_SUPPORTED, Access, type Sge } from './types';
import { VerbsError, VerbsErrorCode, invalid } from './errors';

export class ProtectionDomain {
  /** Regions registered in this PD (dealloc refuses while any remain). */
  regions = 0;
}

export class MemoryRegion {
  /** False after deregistration or remote invalidation (SEND with Invalidate). */
  valid = true;
  /** The length as a bigint, for bounds checks against 64-bit addresses (computed once). */
  readonly lengthBig: bigint;
  /**
   * Called when a FLUSH with the persistence placement type reaches this region (IBTA vol. 1 annex
   * A19; rxe process_flush() writes the range back to persistent memory, rxe_flush_pmem_iova()), with
   * the byte offset and length it covers: what backs the region with something durable (a file, a
   * device) makes those bytes durable there before the FLUSH is answered. Null: nothing to do beyond
   * the region's own bytes, which every request executed before the FLUSH has already written.
   */
  persist: ((offset: number, length: number) => void) | null = null;
  constructor(
    readonly pd: ProtectionDomain,
    readonly buffer: Uint8Array,
    readonly iova: bigint,
    readonly access: number,
    readonly lkey: number,
    readonly rkey: number,
  ) {
    this.lengthBig = BigInt(buffer.length);
  }

  get length(): number {
    return this.buffer.length;
  }

  /** The address of byte `offset` of the region. */
  addr(offset = 0): bigint {
    return this.iova + BigInt(offset);
  }

  /** An SGE over `length` bytes from `offset` (defaults: the whole region). */
  sge(offset = 0, length = this.buffer.length - offset): Sge {
    return { addr: this.addr(offset), length, lkey: this.lkey };
  }
}

/** Why a memory access was refused. */
export const MrFault = {
  OK: 0,
  /** No region has that key, or it was invalidated. */
  BAD_KEY: 1,
  /** The region belongs to another protection domain. */
  BAD_PD: 2,
  /** The range is not inside the region. */
  OUT_OF_BOUNDS: 3,
  /** The region's access flags do not allow it. */
  NO_ACCESS: 4,
} as const;
export type MrFault = (typeof MrFault)[keyof typeof MrFault];

export const MR_FAULT_NAMES: readonly string[] = ['ok', 'invalid key', 'protection domain mismatch', 'out of bounds', 'access not allowed'];

export interface MrHit {
  fault: MrFault;
  mr: MemoryRegion | null;
  /** Offset of the address in the region's buffer. */
  offset: number;
}

const MAX_REGIONS = 1 << 20;
const DEFAULT_IOVA_BASE = 0x7f00_0000_0000n;

/** The key table of one device. */
export class MrTable {
  private readonly byIndex = new Map<number, MemoryRegion>();
  /** Live regions allowed (max_mr). */
  constructor(private readonly maxMr: number = MAX_REGIONS - 1) {}
  private nextIndex = 1;
  private keyByte = 0x11;
  private nextIova = DEFAULT_IOVA_BASE;

  /**
   * Registers `buffer`. `iova` fixes the region's address range and `key` its
   * L_Key/R_Key (both are otherwise chosen here); replay uses them to rebuild
   * the regions a capture refers to.
   */
  register(pd: ProtectionDomain, buffer: Uint8Array, access: number, iova?: bigint, key?: number): MemoryRegion {
    if (!(buffer instanceof Uint8Array)) throw invalid('regMr: buffer must be a Uint8Array');
    if ((access & ~ACCESS_MR_SUPPORTED) !== 0) throw invalid(`regMr: unknown access flags 0x${access.toString(16)}`);
    // IBTA vol. 1 §10.6.3.1 / libibverbs: remote write and remote atomic need local write.
    if ((access & (Access.REMOTE_WRITE | Access.REMOTE_ATOMIC)) !== 0 && (access & Access.LOCAL_WRITE) === 0) {
      throw invalid('regMr: REMOTE_WRITE and REMOTE_ATOMIC need LOCAL_WRITE');
    }
    if (iova !== undefined && (iova < 0n || iova + BigInt(buffer.length) > 1n << 64n)) throw invalid('regMr: iova range does not fit in 64 bits');
    if (this.byIndex.size >= this.maxMr) throw new VerbsError(VerbsErrorCode.Limit, `regMr: the device already has ${this.byIndex.size} memory regions, its limit (max_mr); deregister one first`);
    let k: number;
    if (key !== undefined) {
      if (!Number.isInteger(key) || key < 0x100 || key > 0xffff_ffff) throw invalid(`regMr: key 0x${key.toString(16)} must be a 32-bit value with a non-zero index (key >> 8)`);
      if (this.byIndex.has(key >>> 8)) throw new VerbsError(VerbsErrorCode.Busy, `regMr: key index 0x${(key >>> 8).toString(16)} is already in use`);
      k = key >>> 0;
    } else {
      // Key indexes are 1..MAX_REGIONS-1 and are used again once freed (after 2^20 registrations the
      // search wraps), so register/deregister cycles never run out; the live count is limited above.
      for (let tries = 0; this.byIndex.has(this.nextIndex) || this.nextIndex >= MAX_REGIONS; tries++) {
        if (tries >= MAX_REGIONS) throw new VerbsError(VerbsErrorCode.Limit, 'regMr: every key index is in use');
        this.nextIndex = this.nextIndex >= MAX_REGIONS - 1 ? 1 : this.nextIndex + 1;
      }
      this.keyByte = (this.keyByte + 0x25) & 0xff;
      k = ((this.nextIndex++ << 8) | this.keyByte) >>> 0;
    }
    let va = iova;
    if (va === undefined) {
      va = this.nextIova;
      // Page-align every default range and leave a gap page, so a stray address faults.
      this.nextIova += ((BigInt(buffer.length) + 0xfffn) & ~0xfffn) + 0x1000n;
    }
    const mr = new MemoryRegion(pd, buffer, va, access, k, k);
    this.byIndex.set(k >>> 8, mr);
    pd.regions++;
    return mr;
  }

  deregister(mr: MemoryRegion): void {
    const idx = mr.lkey >>> 8;
    if (this.byIndex.get(idx) !== mr) throw new VerbsError(VerbsErrorCode.NotFound, 'deregMr: region is not registered');
    this.byIndex.delete(idx);
    mr.valid = false;
    mr.pd.regions--;
  }

  private byKey(key: number): MemoryRegion | undefined {
    const mr = this.byIndex.get(key >>> 8);
    return mr !== undefined && mr.valid && mr.rkey === key >>> 0 ? mr : undefined;
  }

  /** Checks a remote access (RETH/AtomicETH R_Key and VA) against `need` access flags. The answer is valid until the next check. */
  checkRemote(pd: ProtectionDomain, rkey: number, va: bigint, length: number, need: number): MrHit {
    return this.check(pd, rkey, va, length, need);
  }

  /**
   * Checks a remote access to the whole region `rkey` names, whatever its range (a FLUSH of selectivity
   * level "memory region" names no range: rxe_resp.c check_rkey() skips the range check for it). The
   * answer's offset is 0; it is valid until the next check.
   */
  checkRemoteRegion(pd: ProtectionDomain, rkey: number, need: number): MrHit {
    const mr = this.byKey(rkey);
    if (mr === undefined) return this.answer(MrFault.BAD_KEY, null, 0);
    if (mr.pd !== pd) return this.answer(MrFault.BAD_PD, mr, 0);
    if ((mr.access & need) !== need) return this.answer(MrFault.NO_ACCESS, mr, 0);
    return this.answer(MrFault.OK, mr, 0);
  }

  /** Checks a local SGE; `write` when the stack will write into it (receive, READ response, atomic result). The answer is valid until the next check. */
  checkLocal(pd: ProtectionDomain, sge: Sge, write: boolean): MrHit {
    return this.check(pd, sge.lkey, sge.addr, sge.length, write ? Access.LOCAL_WRITE : 0);
  }

  /** The answer of the last check, reused: every packet checks a key, and callers read it at once. */
  private readonly hit: MrHit = { fault: MrFault.OK, mr: null, offset: 0 };

  private answer(fault: MrFault, mr: MemoryRegion | null, offset: number): MrHit {
    const h = this.hit;
    h.fault = fault;
    h.mr = mr;
    h.offset = offset;
    return h;
  }

  /** The result is valid until the next check on this table (it is one reused object). */
  private check(pd: ProtectionDomain, key: number, va: bigint, length: number, need: number): MrHit {
    const mr = this.byKey(key);
    if (mr === undefined) return this.answer(MrFault.BAD_KEY, null, 0);
    if (mr.pd !== pd) return this.answer(MrFault.BAD_PD, mr, 0);
    // One BigInt subtraction, then plain numbers: the region is at most 2^53 bytes long.
    const rel = va - mr.iova;
    if (rel < 0n || length < 0 || rel > mr.lengthBig) return this.answer(MrFault.OUT_OF_BOUNDS, mr, 0);
    const offset = Number(rel);
    if (offset + length > mr.length) return this.answer(MrFault.OUT_OF_BOUNDS, mr, 0);
    if ((mr.access & need) !== need) return this.answer(MrFault.NO_ACCESS, mr, 0);
    return this.answer(MrFault.OK, mr, offset);
  }

  /** Remote invalidation (the IETH of a SEND with Invalidate; rxe_resp.c execute() -> invalidate_rkey()): the region no longer answers to its R_Key. */
  invalidate(pd: ProtectionDomain, rkey: number): boolean {
    const mr = this.byKey(rkey);
    if (mr === undefined || mr.pd !== pd) return false;
    mr.valid = false;
    return true;
  }
}

/** The key checks a queue pair's roles make: remote access by R_Key, local SGEs by L_Key, remote invalidation. */
export type MrLookup = Pick<MrTable, 'checkRemote' | 'checkRemoteRegion' | 'checkLocal' | 'invalidate'>;

/** Total bytes of an SGE list. */
export function sgeTotal(sges: readonly Sge[]): number {
  let n = 0;
  for (const s of sges) n += s.length;
  return n;
}
