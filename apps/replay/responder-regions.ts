/**
 * The memory regions a responder replay builds: one per captured R_Key, spanning the addresses the
 * captured requests name under it, registered under that key (or one the stack picks in its place,
 * rkey-map.ts; or, for a memory window's key, under the stack's own with the window bound later by
 * window-stand-ins.ts), within a limit on the bytes built.
 */
import { Access } from '../../stack/access-flags';
import { FlushLevel } from '../../stack/work-request-codes';
import type { Device } from '../../stack/device';
import type { MemoryRegion, ProtectionDomain } from '../../stack/memory-region';
import type { CapturedPacket, RcConversation } from './conversation';
import type { CapturedIndex } from './captured-index';
import { type Difference, DiffClass } from './differences';
import { refusedAccess } from './captured-refusals';
import { rxeMemoryWindowKey } from './unsupported';

/** The remote and local access replay's regions and QP grant. */
export const ACCESS_ALL = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC | Access.FLUSH_GLOBAL | Access.FLUSH_PERSISTENT;

interface Region {
  lo: bigint;
  hi: bigint;
}

/**
 * Regions the requests address, per R_Key: [lowest VA, highest VA + length). A zero-length READ or
 * WRITE names no memory: its VA and R_Key are not checked and may be anything, 0 included (C9-88;
 * rxe_resp.c check_rkey() skips them), so it adds no region. Neither does a request the real
 * responder refused with a Remote Access Error NAK (`refused`): its key or range was not valid there.
 */
function regionsOf(reqs: readonly CapturedPacket[], refused: (c: CapturedPacket) => boolean): Map<number, Region> {
  const m = new Map<number, Region>();
  const add = (rkey: number, va: bigint, len: number): void => {
    const r = m.get(rkey);
    const hi = va + BigInt(len);
    if (r === undefined) m.set(rkey, { lo: va, hi });
    else {
      if (va < r.lo) r.lo = va;
      if (hi > r.hi) r.hi = hi;
    }
  };
  for (const c of reqs) {
    const reth = c.p.reth;
    // A FLUSH of the whole region (selectivity level 1) names no range: its VA may be anything.
    const wholeRegion = c.p.feth !== null && c.p.feth.selectivity === FlushLevel.MR;
    if (reth !== null && reth.dmaLength > 0 && !wholeRegion && !refused(c)) add(reth.rkey, reth.va, reth.dmaLength);
    if (c.p.atomicEth !== null && !refused(c)) add(c.p.atomicEth.rkey, c.p.atomicEth.va, 8);
  }
  return m;
}

/** The regions replay built, by captured R_Key. */
export interface ResponderMemory {
  /** Per captured R_Key, the region's lowest address and its bytes. */
  mrs: Map<number, { lo: bigint; buf: Uint8Array }>;
  /** Captured R_Key -> the stack's, for regions registered under a key the stack picked. */
  stackKeys: Map<number, number>;
  /** Per memory-window key (window-stand-ins.ts), the region its window opens onto. */
  windowRegions: Map<number, MemoryRegion>;
  /**
   * Whether a captured R_Key is taken for a memory window's: one in rxe's window index ranges, or one
   * that requests use and a SEND with Invalidate of the capture names (a key the real responder
   * let a request use and then let its peer invalidate is a window's or a fast-registration region's,
   * not a registered region's, which cannot be invalidated: IBTA §10.6.7, rxe rxe_invalidate_mr()).
   */
  windowKey: (rkey: number) => boolean;
}

/** Registers the regions of `conv`'s requests on `dev`; a region it cannot build is a difference in `diffs`. */
export function buildRegions(
  conv: RcConversation,
  maxRegionBytes: number | undefined,
  dev: Device,
  pd: ProtectionDomain,
  requests: CapturedIndex,
  responses: CapturedIndex,
  diffs: Difference[],
): ResponderMemory {
  // Memory regions at the captured addresses and keys.
  const maxRegion = BigInt(maxRegionBytes ?? 64 * 1024 * 1024);
  const mrs = new Map<number, { lo: bigint; buf: Uint8Array }>();
  /** Captured R_Key -> the stack's, for regions registered under a key the stack picked. */
  const stackKeys = new Map<number, number>();
  /** Bytes of all regions built so far: the limit holds for their sum too (a capture naming many keys). */
  let built = 0n;
  /** Per memory-window key (window-stand-ins.ts), the region its window opens onto. */
  const windowRegions = new Map<number, MemoryRegion>();
  const invalidated = new Set(conv.requests.flatMap((c) => (c.p.ieth !== null ? [c.p.ieth.rkey] : [])));
  const windowKey = (rkey: number): boolean => rxeMemoryWindowKey(rkey) || invalidated.has(rkey);
  for (const [rkey, r] of regionsOf(conv.requests, (c) => refusedAccess(c, requests, responses))) {
    const size = r.hi - r.lo;
    if (size > maxRegion || built + size > maxRegion) {
      diffs.push({
        class: DiffClass.UNVERIFIABLE,
        kind: 'regionTooLarge',
        psn: null,
        frames: [],
        expected: `a region for rkey 0x${rkey.toString(16)}`,
        got: `${size} bytes (${built} already built) exceed the limit of ${maxRegion}`,
        rule: 'replay builds memory regions in RAM',
      });
      continue;
    }
    const buf = new Uint8Array(Number(size));
    built += size;
    if (windowKey(rkey)) {
      // A memory window's key: the region goes under a key of the stack's, the window under the captured one.
      windowRegions.set(rkey, dev.regMr(pd, buf, ACCESS_ALL | Access.MW_BIND, r.lo));
      mrs.set(rkey, { lo: r.lo, buf });
      continue;
    }
    try {
      dev.regMr(pd, buf, ACCESS_ALL, r.lo, rkey);
      mrs.set(rkey, { lo: r.lo, buf });
    } catch {
      // A key the stack cannot take as it is (hardware keys: rkey-map.ts): one it picks stands in.
      try {
        const mr = dev.regMr(pd, buf, ACCESS_ALL, r.lo);
        stackKeys.set(rkey, mr.rkey);
        mrs.set(rkey, { lo: r.lo, buf });
      } catch (e) {
        diffs.push({
          class: DiffClass.UNVERIFIABLE,
          kind: 'regionKey',
          psn: null,
          frames: [],
          expected: `rkey 0x${rkey.toString(16)}`,
          got: (e as Error).message,
          rule: 'the stack could not register a region at the captured addresses',
        });
      }
    }
  }
  return { mrs, stackKeys, windowRegions, windowKey };
}
