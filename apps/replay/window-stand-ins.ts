/**
 * Memory windows for `roce replay --role responder`. An R_Key in rxe's memory-window index range
 * (unsupported.ts rxeMemoryWindowKey()) is a window's: bound by a bind that never reaches the wire
 * (ibv_bind_mw, IBV_WR_BIND_MW). Before the first request that names such a key (a RETH or AtomicETH the
 * real responder did not refuse, or the IETH of a SEND with Invalidate), replay binds a type 2 window
 * under it with a BIND_MW of the stack's own QP, over a region that holds the bytes the capture's
 * requests address there (the caller registers it, under a key of the stack's). When the capture names
 * the window's index with another key byte, the application bound it again off the wire: replay
 * invalidates its window (LOCAL_INV) if the stack still has it bound and binds it under the new key.
 *
 * The wire does not say whether the window was of type 1 or 2, nor whether it was zero-based: a type 2
 * window on the replayed QP admits the same requests of this one conversation and is invalidated the
 * same way, and a VA-based window over a region at the captured addresses answers zero-based offsets
 * as they were captured. A key the stack cannot bind a window under is reported `unsupported`.
 */
import { Access } from '../../stack/access-flags';
import { MwType } from '../../stack/mw-type';
import { FlushLevel, WrOpcode } from '../../stack/work-request-codes';
import type { Device } from '../../stack/device';
import type { MemoryRegion, ProtectionDomain } from '../../stack/memory-region';
import type { MemoryWindow } from '../../stack/memory-window';
import type { QueuePair } from '../../stack/queue-pair';
import type { CapturedPacket } from './conversation';
import { rxeMemoryWindowKey } from './unsupported';

/** The rights every stand-in window grants: the QP's access flags limit them further. */
const WINDOW_ACCESS = Access.REMOTE_READ | Access.REMOTE_WRITE | Access.REMOTE_ATOMIC | Access.FLUSH_GLOBAL | Access.FLUSH_PERSISTENT;

/** A captured key replay could not bind a window under: where the capture names it, and why. */
export interface WindowFailure {
  psn: number | null;
  frames: number[];
  why: string;
}

export class WindowStandIns {
  /** The stack's window per captured key index. */
  private readonly windows = new Map<number, MemoryWindow>();
  /** Per captured R_Key, the region its window opens onto. */
  private readonly regions = new Map<number, MemoryRegion>();
  /** Keys replay could not bind, by captured R_Key. */
  readonly failures = new Map<number, WindowFailure>();
  /** Keys bound at least once. */
  readonly bound = new Set<number>();

  constructor(
    private readonly dev: Device,
    private readonly pd: ProtectionDomain,
    private readonly qp: QueuePair,
    /** Captured R_Key -> the stack's (rkey-map.ts), for a window that could not take the captured index. */
    private readonly stackKeys: Map<number, number>,
    /** Whether a captured key is a window's (responder-regions.ts windowKey; rxe's window ranges by default). */
    private readonly windowKey: (rkey: number) => boolean = rxeMemoryWindowKey,
  ) {}

  /** The region holding the bytes the capture's requests address through captured key `rkey`. */
  setRegion(rkey: number, mr: MemoryRegion): void {
    this.regions.set(rkey, mr);
  }

  /**
   * Binds the windows request `c` names before it is fed. `refused`: the real responder refused its
   * remote access (a Remote Access Error NAK), so its key is left as it is: the stack refuses it too.
   */
  beforeRequest(c: CapturedPacket, refused: boolean): void {
    const p = c.p;
    // A zero-length READ or WRITE names no memory (C9-88); a FLUSH of a whole region does.
    const reth = p.reth !== null && (p.reth.dmaLength > 0 || p.feth?.selectivity === FlushLevel.MR) ? p.reth.rkey : null;
    for (const key of [reth, p.atomicEth?.rkey ?? null]) if (key !== null && !refused) this.bind(c, key);
    if (p.ieth !== null) this.bind(c, p.ieth.rkey);
  }

  private bind(c: CapturedPacket, key: number): void {
    if (!this.windowKey(key)) return;
    const failed = this.failures.get(key);
    if (failed !== undefined) {
      failed.frames.push(c.frame);
      return;
    }
    const index = key >>> 8;
    let mw = this.windows.get(index);
    try {
      if (mw === undefined) {
        try {
          mw = this.dev.allocMw(this.pd, MwType.TYPE_2, key);
        } catch {
          // An index the stack's own objects hold: a window of its choosing stands in (rkey-map.ts).
          mw = this.dev.allocMw(this.pd, MwType.TYPE_2);
        }
        this.windows.set(index, mw);
      }
      const stackKey = mw.rkey >>> 8 === index ? key >>> 0 : ((mw.rkey & ~0xff) | (key & 0xff)) >>> 0;
      if (stackKey !== key >>> 0) this.stackKeys.set(key, stackKey);
      if (mw.valid && mw.rkey === stackKey) return;
      // Another key byte of a window the stack still has bound: the application invalidated it off the wire.
      if (mw.valid) this.qp.postSend({ wrId: 0, opcode: WrOpcode.LOCAL_INV, invalidateRkey: mw.rkey });
      let mr = this.regions.get(key);
      if (mr === undefined) {
        // A key only an IETH names: a window over a few bytes of its own is all the invalidation needs.
        mr = this.dev.regMr(this.pd, new Uint8Array(8), Access.LOCAL_WRITE | WINDOW_ACCESS | Access.MW_BIND);
        this.regions.set(key, mr);
      }
      this.qp.postSend({
        wrId: 0,
        opcode: WrOpcode.BIND_MW,
        bindMw: { mw, rkey: stackKey, bindInfo: { mr, addr: mr.addr(0), length: mr.length, mwAccessFlags: WINDOW_ACCESS } },
      });
      this.qp.runRequester();
      this.bound.add(key);
    } catch (e) {
      this.failures.set(key, { psn: c.p.bth?.psn ?? null, frames: [c.frame], why: (e as Error).message });
    }
  }
}
