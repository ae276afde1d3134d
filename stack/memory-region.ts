/**
 * Protection domains and memory regions over JavaScript memory.
 *
 * A region covers a `Uint8Array` and has a virtual address range
 * [iova, iova + length) that the wire refers to (RETH/AtomicETH VA), an L_Key
 * for local work requests and an R_Key for remote access. Keys carry an index
 * and an 8-bit key part, as rxe builds them (index << 8 | key), chosen by a
 * KeyAllocator (stack/key-allocator.ts: random by default). Every access
 * is checked against bounds, the PD and the access flags (IBTA vol. 1 §10.6).
 */
import { ACCESS_MR_SUPPORTED, Access, type Sge } from './types';
import { VerbsError, VerbsErrorCode, invalid } from './errors';
import { KeyAllocator, SEQUENTIAL_INDEX_LIMIT } from './key-allocator';
import { AllocationOrder } from './allocation-order';

export class ProtectionDomain {
  /** Regions registered in this PD (dealloc refuses while any remain). */
  regions = 0;
}

/**
 * What a region is: registered over its memory at once (`ibv_reg_mr`, IB_MR_TYPE_USER), or a
 * fast-registration region (`ib_alloc_mr(IB_MR_TYPE_MEM_REG)`) that a REG_MR work request binds to its
 * pages, address, length, access and key, and LOCAL_INV or a SEND with Invalidate revokes (IBTA vol. 1
 * §10.6.3.5-§10.6.3.6; rxe_mr.c rxe_mr_init_fast(), rxe_reg_fast_mr(), rxe_invalidate_mr()).
 */
export const MrType = { USER: 'user', MEM_REG: 'memReg' } as const;
export type MrType = (typeof MrType)[keyof typeof MrType];

/** The page size a fast-registration region counts its pages in. */
export const FAST_REG_PAGE = 4096;

export class MemoryRegion {
  /**
   * True while the region answers to its keys. A registered region is valid until deregistered; a
   * fast-registration region is valid from its REG_MR to its invalidation (rxe RXE_MR_STATE_VALID; the
   * "free" state is a fast-registration region still in the key table and not valid).
   */
  valid = true;
  /** The length as a bigint, for bounds checks against 64-bit addresses. */
  lengthBig: bigint;
  /**
   * Called when a FLUSH with the persistence placement type reaches this region (IBTA vol. 1 annex
   * A19; rxe process_flush() writes the range back to persistent memory, rxe_flush_pmem_iova()), with
   * the byte offset and length it covers: what backs the region with something durable (a file, a
   * device) makes those bytes durable there before the FLUSH is answered. Null: nothing to do beyond
   * the region's own bytes, which every request executed before the FLUSH has already written.
   */
  persist: ((offset: number, length: number) => void) | null = null;
  /** Fast registration: the pages and address `Device.mapMrSg` gave, which the next REG_MR binds (null: none yet). */
  mapped: { buffer: Uint8Array; iova: bigint } | null = null;
  constructor(
    readonly pd: ProtectionDomain,
    public buffer: Uint8Array,
    public iova: bigint,
    public access: number,
    public lkey: number,
    public rkey: number,
    readonly type: MrType = MrType.USER,
    /** Fast registration: the most pages a REG_MR may bind (max_num_sg of ib_alloc_mr); 0 for a registered region. */
    readonly maxPages = 0,
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

/** The key table of one device. */
export class MrTable {
  private readonly byIndex = new Map<number, MemoryRegion>();
  constructor(
    /** Live regions allowed (max_mr). */
    private readonly maxMr: number = SEQUENTIAL_INDEX_LIMIT - 1,
    /** Chooses the keys and default addresses of new regions (default: rxe's sequential order). */
    private readonly keys: KeyAllocator = new KeyAllocator(AllocationOrder.SEQUENTIAL),
  ) {}

  /**
   * Registers `buffer`. `iova` fixes the region's address range and `key` its
   * L_Key/R_Key (both are otherwise chosen here); replay uses them to rebuild
   * the regions a capture refers to.
   */
  register(pd: ProtectionDomain, buffer: Uint8Array, access: number, iova?: bigint, key?: number): MemoryRegion {
    if (!(buffer instanceof Uint8Array)) throw invalid('regMr: buffer must be a Uint8Array');
    const bad = accessProblem(access);
    if (bad !== '') throw invalid(`regMr: ${bad}`);
    if (iova !== undefined && (iova < 0n || iova + BigInt(buffer.length) > 1n << 64n)) throw invalid('regMr: iova range does not fit in 64 bits');
    const k = this.newKey('regMr', key);
    const va = iova ?? this.keys.iova(buffer.length);
    const mr = new MemoryRegion(pd, buffer, va, access, k, k);
    this.byIndex.set(k >>> 8, mr);
    pd.regions++;
    return mr;
  }

  /**
   * A fast-registration region of up to `maxPages` pages (ib_alloc_mr(IB_MR_TYPE_MEM_REG)): in the key
   * table, with its key index and a key byte chosen here, and not valid until a REG_MR binds it
   * (rxe_mr_init_fast(): state FREE). `key` fixes its first key (replay rebuilds the keys a capture names).
   */
  allocFast(pd: ProtectionDomain, maxPages: number, key?: number): MemoryRegion {
    if (!Number.isInteger(maxPages) || maxPages < 1 || maxPages > 1 << 20) throw invalid(`allocMr: maxPages ${maxPages} must be an integer 1..${1 << 20}`);
    const k = this.newKey('allocMr', key);
    // rxe gives fast-registration regions remote access until the REG_MR sets theirs (RXE_ACCESS_REMOTE); they answer to nothing before it.
    const mr = new MemoryRegion(pd, new Uint8Array(0), 0n, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC, k, k, MrType.MEM_REG, maxPages);
    mr.valid = false;
    this.byIndex.set(k >>> 8, mr);
    pd.regions++;
    return mr;
  }

  /**
   * Executes a REG_MR work request of a QP of `pd` (rxe_reg_fast_mr()): `mr` must be a
   * fast-registration region of this table, of the QP's PD, not valid (free: never registered, or
   * invalidated), mapped (Device.mapMrSg), and `key` must keep its key index (the consumer chooses only
   * the low 8 bits). It then answers to `key` as L_Key and R_Key, over the mapped pages and address,
   * with `access`. Returns why it cannot, or '' when done.
   */
  registerFast(pd: ProtectionDomain, mr: MemoryRegion, key: number, access: number): string {
    if (mr.type !== MrType.MEM_REG) return `REG_MR: region 0x${mr.lkey.toString(16)} is not a fast-registration region`;
    if (this.byIndex.get(mr.lkey >>> 8) !== mr) return `REG_MR: region 0x${mr.lkey.toString(16)} is not registered on this device`;
    if (mr.valid) return `REG_MR: region 0x${mr.lkey.toString(16)} is valid; invalidate it first`;
    if (mr.pd !== pd) return `REG_MR: region 0x${mr.lkey.toString(16)} belongs to another protection domain than the QP`;
    if (!Number.isInteger(key) || key < 0 || key > 0xffff_ffff || key >>> 8 !== mr.lkey >>> 8) return `REG_MR: key 0x${key.toString(16)} must keep the region's key index 0x${(mr.lkey >>> 8).toString(16)} (only the low 8 bits are the consumer's)`;
    const bad = accessProblem(access);
    if (bad !== '') return `REG_MR: ${bad}`;
    const m = mr.mapped;
    if (m === null) return `REG_MR: region 0x${mr.lkey.toString(16)} has no pages mapped (mapMrSg)`;
    mr.buffer = m.buffer;
    mr.iova = m.iova;
    mr.lengthBig = BigInt(m.buffer.length);
    mr.access = access;
    mr.lkey = key >>> 0;
    mr.rkey = key >>> 0;
    mr.valid = true;
    return '';
  }

  deregister(mr: MemoryRegion): void {
    const idx = mr.lkey >>> 8;
    if (this.byIndex.get(idx) !== mr) throw new VerbsError(VerbsErrorCode.NotFound, 'deregMr: region is not registered');
    this.byIndex.delete(idx);
    mr.valid = false;
    mr.pd.regions--;
  }

  /** A key for a new region: `key` when given (its index must be free), else the allocator's. */
  private newKey(verb: string, key?: number): number {
    if (this.byIndex.size >= this.maxMr) throw new VerbsError(VerbsErrorCode.Limit, `${verb}: the device already has ${this.byIndex.size} memory regions, its limit (max_mr); deregister one first`);
    let k: number;
    if (key !== undefined) {
      if (!Number.isInteger(key) || key < 0x100 || key > 0xffff_ffff) throw invalid(`${verb}: key 0x${key.toString(16)} must be a 32-bit value with a non-zero index (key >> 8)`);
      if (this.byIndex.has(key >>> 8)) throw new VerbsError(VerbsErrorCode.Busy, `${verb}: key index 0x${(key >>> 8).toString(16)} is already in use`);
      k = key >>> 0;
    } else {
      const fresh = this.keys.key((index) => this.byIndex.has(index), this.byIndex.size);
      if (fresh === null) throw new VerbsError(VerbsErrorCode.Limit, `${verb}: every key index is in use`);
      k = fresh;
    }
    return k;
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

  /**
   * Invalidation of the region `key` names, by a LOCAL_INV work request or the IETH of a SEND with
   * Invalidate of a QP of `pd` (IBTA vol. 1 §10.6.5; rxe_invalidate_mr()): the key must be the
   * region's current one, and the region a fast-registration region (rxe refuses every other type;
   * invalidating one already free succeeds, as in rxe) of the QP's PD. It then answers to no key until
   * a REG_MR binds it again. Returns why it cannot, or '' when done.
   */
  invalidate(pd: ProtectionDomain, key: number): string {
    const mr = this.byIndex.get(key >>> 8);
    if (mr === undefined || mr.rkey !== key >>> 0) return `no region has key 0x${(key >>> 0).toString(16)}`;
    if (mr.type !== MrType.MEM_REG) return `key 0x${(key >>> 0).toString(16)} names a registered region, not a fast-registration one: it cannot be invalidated`;
    if (mr.pd !== pd) return `key 0x${(key >>> 0).toString(16)} names a region of another protection domain`;
    mr.valid = false;
    return '';
  }
}

/** Why `access` cannot be a region's access flags, or ''. */
function accessProblem(access: number): string {
  if (!Number.isInteger(access) || (access & ~ACCESS_MR_SUPPORTED) !== 0) return `unknown access flags 0x${access.toString(16)}`;
  // IBTA vol. 1 §10.6.3.1 / libibverbs: remote write and remote atomic need local write.
  if ((access & (Access.REMOTE_WRITE | Access.REMOTE_ATOMIC)) !== 0 && (access & Access.LOCAL_WRITE) === 0) return 'REMOTE_WRITE and REMOTE_ATOMIC need LOCAL_WRITE';
  return '';
}

/** The key checks a queue pair's roles make: remote access by R_Key, local SGEs by L_Key, remote invalidation. */
export type MrLookup = Pick<MrTable, 'checkRemote' | 'checkRemoteRegion' | 'checkLocal' | 'invalidate' | 'registerFast'>;

/** Total bytes of an SGE list. */
export function sgeTotal(sges: readonly Sge[]): number {
  let n = 0;
  for (const s of sges) n += s.length;
  return n;
}
