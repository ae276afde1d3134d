/**
 * The L_Keys/R_Keys and default addresses of new memory regions.
 *
 * A key is index << 8 | key byte, as rxe and IBTA's fast registration build it: the index names
 * the region in the device's key table (stack/memory-region.ts, a Map by index: found in O(1)),
 * the low byte is the consumer's to change at each REG_MR (IBTA vol. 1 §10.6.3.6; rxe
 * rxe_reg_fast_mr() checks only that the index is kept).
 *
 * RANDOM: the index is drawn uniformly from the free indexes of the 24-bit index space (a random
 * index into a sparse table) and the byte uniformly from 0..255, both from the device's random
 * source: a key carries about 32 bits that a peer cannot learn from the keys it has seen. The
 * region's default address is a random page in the 47-bit user address range (35 bits).
 * SEQUENTIAL: rxe's order: the next free index from 1 (rxe_pool.c xa_alloc_cyclic()) with a byte
 * stepping by 0x25, addresses one after the other from 0x7f0000000000 with a page between them.
 *
 * rxe gives memory windows their own key indexes (RXE_MW_INDEX_RANGES) and `roce replay` reads a
 * key there as a window's; random region keys avoid both ranges, so a capture of this stack does not
 * read as windows.
 */
import { ProgrammingError, ProgrammingErrorCode } from '../base/programming-error';
import { type RandomSource, uniformBelow } from '../base/random-source';
import { AllocationOrder } from './allocation-order';

/** Key indexes are 24 bits (key >>> 8); 0 is never used. */
export const KEY_INDEX_LIMIT = 1 << 24;
/** Sequential indexes stay below 2^20, as rxe's pools. */
export const SEQUENTIAL_INDEX_LIMIT = 1 << 20;
/**
 * rxe's memory-window key indexes (rxe_param.h RXE_MIN_MW_INDEX..RXE_MAX_MW_INDEX; rxe_verbs.h
 * rkey_is_mw() tests a key's index against them), in increasing order:
 * - 0x10001..0x20000 from Linux 5.13 ("RDMA/rxe: Enable MW object pool") to 6.1;
 * - 0x80001..0x100000 (RXE_MAX_MR_INDEX + 1 .. DEFAULT_MAX_VALUE, region indexes being 1..0x80000)
 *   from 6.2 on, and 6.1.9 on in 6.1's stable series (commit 1aefe5c177c1, "RDMA/rxe: Prevent
 *   faulty rkey generation").
 */
export const RXE_MW_INDEX_RANGES: readonly { readonly min: number; readonly max: number }[] = [
  { min: 0x10001, max: 0x20000 },
  { min: 0x80001, max: 0x100000 },
];
/** Random indexes: 1..2^24-1 without rxe's window indexes. */
const RANDOM_INDEXES = RXE_MW_INDEX_RANGES.reduce((n, r) => n - (r.max - r.min + 1), KEY_INDEX_LIMIT - 1);
/** Random draws before a linear search from the last one (reached only when the table is nearly full). */
const RANDOM_TRIES = 64;

const PAGE = 0x1000n;
const SEQUENTIAL_IOVA_BASE = 0x7f00_0000_0000n;
/** Random addresses: pages of [2^32, 2^47), the upper part of a 47-bit user address space. */
const RANDOM_IOVA_LOW_PAGE = 1n << 20n;
const RANDOM_IOVA_PAGES = (1n << 35n) - RANDOM_IOVA_LOW_PAGE;

export class KeyAllocator {
  private nextIndex = 1;
  private keyByte = 0x11;
  private nextIova = SEQUENTIAL_IOVA_BASE;

  /** `random` is needed for the RANDOM order only. */
  constructor(
    readonly order: AllocationOrder,
    private readonly random: RandomSource | null = null,
  ) {
    if (order === AllocationOrder.RANDOM && random === null)
      throw new ProgrammingError(ProgrammingErrorCode.Misuse, 'KeyAllocator: the random order needs a random source');
  }

  /**
   * A key whose index is not in use (`inUse(index)`), or null when every index is. `live` is the
   * number of indexes in use, which bounds the search.
   */
  key(inUse: (index: number) => boolean, live: number): number | null {
    const index = this.order === AllocationOrder.RANDOM ? this.randomIndex(inUse, live) : this.sequentialIndex(inUse);
    if (index === null) return null;
    const byte = this.order === AllocationOrder.RANDOM ? (this.random as RandomSource).u32() & 0xff : (this.keyByte = (this.keyByte + 0x25) & 0xff);
    return ((index << 8) | byte) >>> 0;
  }

  /** The default address of a new region of `length` bytes. */
  iova(length: number): bigint {
    const bytes = BigInt(length);
    if (this.order === AllocationOrder.RANDOM) {
      const pages = (bytes + PAGE - 1n) / PAGE;
      const span = RANDOM_IOVA_PAGES - pages;
      if (span > 0n) {
        // 35 bits from two draws: the high 3 bits and the low 32.
        const r = this.random as RandomSource;
        const page = ((BigInt(r.u32() & 7) << 32n) | BigInt(r.u32() >>> 0)) % span;
        return (RANDOM_IOVA_LOW_PAGE + page) * PAGE;
      }
    }
    const va = this.nextIova;
    // Page-align every default range and leave a gap page, so a stray address faults.
    this.nextIova += ((bytes + 0xfffn) & ~0xfffn) + PAGE;
    return va;
  }

  private randomIndex(inUse: (index: number) => boolean, live: number): number | null {
    if (live >= RANDOM_INDEXES) return null;
    const r = this.random as RandomSource;
    let slot = 0;
    for (let t = 0; t < RANDOM_TRIES; t++) {
      slot = uniformBelow(r, RANDOM_INDEXES);
      const index = indexOfSlot(slot);
      if (!inUse(index)) return index;
    }
    // A table this full (more than about 15/16 of 2^24 indexes) is searched from the last draw on.
    for (let n = 0; n < RANDOM_INDEXES; n++) {
      slot = slot + 1 === RANDOM_INDEXES ? 0 : slot + 1;
      const index = indexOfSlot(slot);
      if (!inUse(index)) return index;
    }
    return null;
  }

  private sequentialIndex(inUse: (index: number) => boolean): number | null {
    // Indexes 1..2^20-1, used again once freed (after 2^20 registrations the search wraps), so
    // register/deregister cycles never run out.
    for (let tries = 0; inUse(this.nextIndex) || this.nextIndex >= SEQUENTIAL_INDEX_LIMIT; tries++) {
      if (tries >= SEQUENTIAL_INDEX_LIMIT) return null;
      this.nextIndex = this.nextIndex >= SEQUENTIAL_INDEX_LIMIT - 1 ? 1 : this.nextIndex + 1;
    }
    return this.nextIndex++;
  }
}

/** The index of random slot `slot` (0..RANDOM_INDEXES-1): 1.. upward, jumping over rxe's window indexes. */
function indexOfSlot(slot: number): number {
  let index = slot + 1;
  for (const r of RXE_MW_INDEX_RANGES) if (index >= r.min) index += r.max - r.min + 1;
  return index;
}
