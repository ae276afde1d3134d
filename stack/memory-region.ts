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
import { ACCESS_MR_SUPPORTED, Access } from './access-flags';
import { MwType } from './mw-type';
import type { Sge } from './sge';
import { VerbsError, VerbsErrorCode, invalid } from './errors';
import { MemoryWindow, type MwBindInfo, type MwOwner, bindProblem } from './memory-window';
import { KeyAllocator, SEQUENTIAL_INDEX_LIMIT } from './key-allocator';
import { AllocationOrder } from './allocation-order';

/** A protection domain (`ibv_pd`): memory regions and QPs of one PD may be used together. */
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

/** A memory region (`ibv_mr`): a buffer registered under an lkey and an rkey with access rights. */
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
  /** Memory windows bound to the region (rxe num_mw): while any are, it can be neither deregistered nor invalidated. */
  windows = 0;
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
  /** The region's (or window's) access flags do not allow it. */
  NO_ACCESS: 4,
  /** The key is a type 2 memory window's, bound on another QP. */
  BAD_QP: 5,
} as const;
export type MrFault = (typeof MrFault)[keyof typeof MrFault];

export const MR_FAULT_NAMES: readonly string[] = [
  'ok',
  'invalid key',
  'protection domain mismatch',
  'out of bounds',
  'access not allowed',
  'memory window bound to another QP',
];

export interface MrHit {
  fault: MrFault;
  mr: MemoryRegion | null;
  /** Offset of the address in the region's buffer. */
  offset: number;
  /** Bytes the key covers from `offset` (the region's, or a window's, length): set by checkRemoteRegion. */
  length: number;
}

/** The key table of one device. */
export class MrTable {
  private readonly byIndex = new Map<number, MemoryRegion>();
  /** Memory windows by key index: one index space with the regions, so a key names one object. */
  private readonly windowsByIndex = new Map<number, MemoryWindow>();
  constructor(
    /** Live regions allowed (max_mr). */
    private readonly maxMr: number = SEQUENTIAL_INDEX_LIMIT - 1,
    /** Live windows allowed (max_mw). */
    private readonly maxMw: number = SEQUENTIAL_INDEX_LIMIT - 1,
    /** Chooses the keys and default addresses of new regions and windows (default: rxe's sequential order). */
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
    const mr = new MemoryRegion(
      pd,
      new Uint8Array(0),
      0n,
      Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC,
      k,
      k,
      MrType.MEM_REG,
      maxPages,
    );
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
    if (!Number.isInteger(key) || key < 0 || key > 0xffff_ffff || key >>> 8 !== mr.lkey >>> 8)
      return `REG_MR: key 0x${key.toString(16)} must keep the region's key index 0x${(mr.lkey >>> 8).toString(16)} (only the low 8 bits are the consumer's)`;
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
    // IBTA vol. 1 §10.6.7.2.6 as rxe reads it (rxe_dereg_mr(): num_mw > 0 -> EINVAL): the windows go first.
    if (mr.windows > 0)
      throw new VerbsError(
        VerbsErrorCode.Busy,
        `deregMr: region 0x${mr.lkey.toString(16)} has ${mr.windows} memory window(s) bound to it; invalidate, bind elsewhere or deallocate them first`,
      );
    this.byIndex.delete(idx);
    mr.valid = false;
    mr.pd.regions--;
  }

  /** Whether a region or a window holds key index `i`. */
  private taken(i: number): boolean {
    return this.byIndex.has(i) || this.windowsByIndex.has(i);
  }

  /** A key for a new region (or window): `key` when given (its index must be free), else a free index and the next key byte. */
  private newKey(verb: string, key?: number, window = false): number {
    if (!window && this.byIndex.size >= this.maxMr)
      throw new VerbsError(
        VerbsErrorCode.Limit,
        `${verb}: the device already has ${this.byIndex.size} memory regions, its limit (max_mr); deregister one first`,
      );
    if (window && this.windowsByIndex.size >= this.maxMw)
      throw new VerbsError(
        VerbsErrorCode.Limit,
        `${verb}: the device already has ${this.windowsByIndex.size} memory windows, its limit (max_mw); deallocate one first`,
      );
    let k: number;
    if (key !== undefined) {
      if (!Number.isInteger(key) || key < 0x100 || key > 0xffff_ffff)
        throw invalid(`${verb}: key 0x${key.toString(16)} must be a 32-bit value with a non-zero index (key >> 8)`);
      if (this.taken(key >>> 8)) throw new VerbsError(VerbsErrorCode.Busy, `${verb}: key index 0x${(key >>> 8).toString(16)} is already in use`);
      k = key >>> 0;
    } else {
      const fresh = this.keys.key((index) => this.taken(index), this.byIndex.size + this.windowsByIndex.size);
      if (fresh === null) throw new VerbsError(VerbsErrorCode.Limit, `${verb}: every key index is in use`);
      k = fresh;
    }
    return k;
  }

  private byKey(key: number): MemoryRegion | undefined {
    const mr = this.byIndex.get(key >>> 8);
    return mr !== undefined && mr.valid && mr.rkey === key >>> 0 ? mr : undefined;
  }

  /**
   * Checks a remote access (RETH/AtomicETH R_Key and VA) arriving on QP `qp` of `pd` against `need`
   * access flags: a region's key, or a memory window's (checkWindow). The answer is valid until the next check.
   */
  checkRemote(pd: ProtectionDomain, rkey: number, va: bigint, length: number, need: number, qp: MwOwner): MrHit {
    if (this.windowsByIndex.size !== 0) {
      const mw = this.windowsByIndex.get(rkey >>> 8);
      if (mw !== undefined) return this.checkWindow(mw, pd, rkey, va, length, need, qp, false);
    }
    return this.check(pd, rkey, va, length, need);
  }

  /**
   * Checks a remote access to the whole region (or window) `rkey` names, whatever its range (a FLUSH of
   * selectivity level "memory region" names no range: rxe_resp.c check_rkey() skips the range check for
   * it). The answer's offset is where the region's (window's) bytes start; it is valid until the next check.
   */
  checkRemoteRegion(pd: ProtectionDomain, rkey: number, need: number, qp: MwOwner): MrHit {
    if (this.windowsByIndex.size !== 0) {
      const mw = this.windowsByIndex.get(rkey >>> 8);
      if (mw !== undefined) return this.checkWindow(mw, pd, rkey, 0n, 0, need, qp, true);
    }
    const mr = this.byKey(rkey);
    if (mr === undefined) return this.answer(MrFault.BAD_KEY, null, 0);
    if (mr.pd !== pd) return this.answer(MrFault.BAD_PD, mr, 0);
    if ((mr.access & need) !== need) return this.answer(MrFault.NO_ACCESS, mr, 0);
    return this.answer(MrFault.OK, mr, 0, mr.length);
  }

  /**
   * A remote access through memory window `mw`, checked in this order: the key (the window's current
   * one, the window valid and bound to a non-empty range), the PD, the QP (a type 2 window answers only
   * on the QP that bound it), the bounds (the window's own range: a zero-based window's addresses are
   * offsets into it), then the window's access rights; each failure is a remote access error (rxe
   * rxe_lookup_mw(): key, PD, QP, length, access; then check_rkey() checks the range, and a zero-based
   * window's VA is offset by its start). **Differs from rxe**, which checks the range against the whole
   * region (mr_check_range()), not the window: a window narrower than its region admits nothing outside it here.
   */
  private checkWindow(mw: MemoryWindow, pd: ProtectionDomain, key: number, va: bigint, length: number, need: number, qp: MwOwner, whole: boolean): MrHit {
    const mr = mw.mr;
    if (!mw.valid || mw.rkey !== key >>> 0 || mr === null || !mr.valid || mw.length === 0) return this.answer(MrFault.BAD_KEY, null, 0);
    if (mw.pd !== pd) return this.answer(MrFault.BAD_PD, null, 0);
    if (mw.type === MwType.TYPE_2 && mw.qp !== qp) return this.answer(MrFault.BAD_QP, null, 0);
    let rel = 0n;
    if (!whole) {
      rel = mw.zeroBased ? va : va - mw.addr;
      if (rel < 0n || length < 0 || rel + BigInt(length) > mw.lengthBig) return this.answer(MrFault.OUT_OF_BOUNDS, null, 0);
    }
    if ((mw.access & need) !== need) return this.answer(MrFault.NO_ACCESS, null, 0);
    return this.answer(MrFault.OK, mr, Number(mw.addr - mr.iova + rel), mw.length);
  }

  /** Checks a local SGE; `write` when the stack will write into it (receive, READ response, atomic result). The answer is valid until the next check. */
  checkLocal(pd: ProtectionDomain, sge: Sge, write: boolean): MrHit {
    return this.check(pd, sge.lkey, sge.addr, sge.length, write ? Access.LOCAL_WRITE : 0);
  }

  /** The answer of the last check, reused: every packet checks a key, and callers read it at once. */
  private readonly hit: MrHit = { fault: MrFault.OK, mr: null, offset: 0, length: 0 };

  private answer(fault: MrFault, mr: MemoryRegion | null, offset: number, length = 0): MrHit {
    const h = this.hit;
    h.fault = fault;
    h.mr = mr;
    h.offset = offset;
    h.length = length;
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
   * Invalidation of the region or memory window `key` names, by a LOCAL_INV work request or the IETH of
   * a SEND with Invalidate of QP `qp` of `pd` (IBTA vol. 1 §10.6.5; rxe invalidate_rkey()). A region:
   * the key must be its current one, and the region a fast-registration region (rxe refuses every other
   * type; invalidating one already free succeeds, as in rxe) of the QP's PD with no window bound to it
   * (rxe_invalidate_mr(): num_mw). It then answers to no key until a REG_MR binds it again. A window:
   * invalidateWindow. Returns why it cannot, or '' when done.
   */
  invalidate(pd: ProtectionDomain, key: number, qp: MwOwner): string {
    const mw = this.windowsByIndex.get(key >>> 8);
    if (mw !== undefined) return this.invalidateWindow(mw, pd, key, qp);
    const mr = this.byIndex.get(key >>> 8);
    if (mr === undefined || mr.rkey !== key >>> 0) return `no region has key 0x${(key >>> 0).toString(16)}`;
    if (mr.type !== MrType.MEM_REG) return `key 0x${(key >>> 0).toString(16)} names a registered region, not a fast-registration one: it cannot be invalidated`;
    if (mr.pd !== pd) return `key 0x${(key >>> 0).toString(16)} names a region of another protection domain`;
    if (mr.windows > 0) return `key 0x${(key >>> 0).toString(16)} names a region with ${mr.windows} memory window(s) bound to it`;
    mr.valid = false;
    return '';
  }

  /**
   * A window's invalidation (rxe_invalidate_mw()): the key must be its current one; a type 1 window
   * cannot be invalidated (o10-37.2.26); the window must be of the QP's PD and, while bound, bound on
   * that very QP. It is then free: it answers to no key until a BIND_MW binds it again. Invalidating a
   * free type 2 window under its last key succeeds, as for a free fast-registration region.
   * **Differs from rxe**, which compares neither the PD nor the QP here: a type 2 window is the QP's
   * (IBTA vol. 1 §10.6.7), so another QP can no more revoke it than use it.
   */
  private invalidateWindow(mw: MemoryWindow, pd: ProtectionDomain, key: number, qp: MwOwner): string {
    const k = `key 0x${(key >>> 0).toString(16)}`;
    if (mw.rkey !== key >>> 0) return `no memory window has ${k}`;
    if (mw.type === MwType.TYPE_1) return `${k} names a type 1 memory window, which cannot be invalidated (o10-37.2.26)`;
    if (mw.pd !== pd) return `${k} names a memory window of another protection domain`;
    if (mw.valid && mw.qp !== qp) return `${k} names a memory window bound on another QP`;
    unbind(mw);
    mw.valid = false;
    return '';
  }

  /**
   * A memory window (ibv_alloc_mw) of `type` in `pd`: in the key table, with its key index and a key byte
   * chosen here, or `key` (replay rebuilds the keys a capture names). A type 1 window is valid and bound
   * to nothing; a type 2 window is free (rxe_alloc_mw()).
   */
  allocWindow(pd: ProtectionDomain, type: MwType, key?: number): MemoryWindow {
    if (type !== MwType.TYPE_1 && type !== MwType.TYPE_2) throw invalid(`allocMw: type ${String(type)} must be MwType.TYPE_1 or MwType.TYPE_2`);
    const mw = new MemoryWindow(pd, type, this.newKey('allocMw', key, true));
    this.windowsByIndex.set(mw.rkey >>> 8, mw);
    return mw;
  }

  /** ibv_dealloc_mw: the window leaves the key table; a bound one lets go of its region (rxe_mw_cleanup()). */
  deallocWindow(mw: MemoryWindow): void {
    if (this.windowsByIndex.get(mw.rkey >>> 8) !== mw) throw new VerbsError(VerbsErrorCode.NotFound, 'deallocMw: the window is not allocated on this device');
    this.windowsByIndex.delete(mw.rkey >>> 8);
    unbind(mw);
    mw.valid = false;
    mw.allocated = false;
  }

  /**
   * Executes a bind of `mw` under `key` to `b`, by a work request of QP `qp` of `pd` (rxe_bind_mw():
   * rxe_check_bind_mw(), then rxe_do_bind_mw()): the checks are memory-window.ts bindProblem(). The window
   * then answers to `key` over [b.addr, b.addr + b.length) of the region with `b.mwAccessFlags`; a type 2
   * window only on `qp`. Binding a type 1 window to no region unbinds it. Returns why it cannot, or ''.
   */
  bindWindow(qp: MwOwner, pd: ProtectionDomain, mw: MemoryWindow, key: number, b: MwBindInfo): string {
    if (this.windowsByIndex.get(mw.rkey >>> 8) !== mw) return `BIND_MW: window 0x${(mw.rkey >>> 0).toString(16)} is not allocated on this device`;
    const known = b.mr !== null && this.byIndex.get(b.mr.lkey >>> 8) === b.mr;
    const why = bindProblem(pd, mw, key, b, known);
    if (why !== '') return `BIND_MW: ${why}`;
    unbind(mw);
    mw.rkey = key >>> 0;
    mw.valid = true;
    mw.access = b.mwAccessFlags;
    if (b.mr !== null && b.length > 0) {
      mw.mr = b.mr;
      mw.addr = b.addr;
      mw.length = b.length;
      mw.lengthBig = BigInt(b.length);
      b.mr.windows++;
    }
    if (mw.type === MwType.TYPE_2) mw.qp = qp;
    return '';
  }
}

/** Why `access` cannot be a region's access flags, or ''. */
function accessProblem(access: number): string {
  if (!Number.isInteger(access) || (access & ~ACCESS_MR_SUPPORTED) !== 0) return `unknown access flags 0x${access.toString(16)}`;
  // IBTA vol. 1 §10.6.3.1 / libibverbs: remote write and remote atomic need local write.
  if ((access & (Access.REMOTE_WRITE | Access.REMOTE_ATOMIC)) !== 0 && (access & Access.LOCAL_WRITE) === 0)
    return 'REMOTE_WRITE and REMOTE_ATOMIC need LOCAL_WRITE';
  return '';
}

/** The key checks a queue pair's roles make: remote access by R_Key, local SGEs by L_Key, remote invalidation. */
export type MrLookup = Pick<MrTable, 'checkRemote' | 'checkRemoteRegion' | 'checkLocal' | 'invalidate' | 'registerFast' | 'bindWindow'>;

/** A window lets go of its region and range (its key and state stay). */
function unbind(mw: MemoryWindow): void {
  if (mw.mr !== null) mw.mr.windows--;
  mw.mr = null;
  mw.addr = 0n;
  mw.length = 0;
  mw.lengthBig = 0n;
  mw.access = 0;
  mw.qp = null;
}

/** Total bytes of an SGE list. */
export function sgeTotal(sges: readonly Sge[]): number {
  let n = 0;
  for (const s of sges) n += s.length;
  return n;
}
