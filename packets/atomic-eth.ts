/** Atomic Extended Transport Header (IBTA vol. 1 §9.3.4): VA(64) R_Key(32) Swap/Add(64) Compare(64), 28 bytes. */
import { need } from './errors';
import { checkU64, checkUint } from './bytes';

export const ATOMIC_ETH_LEN = 28;
export const OFF = Object.freeze({ VA: 0, RKEY: 8, SWAP_ADD: 12, COMPARE: 20 });

export interface AtomicEthHeader {
  va: bigint;
  rkey: number;
  /** Swap value (compare-and-swap) or add value (fetch-and-add). */
  swapAdd: bigint;
  /** Compare value (compare-and-swap only; zero otherwise). */
  compare: bigint;
}

export function parseAtomicEth(view: DataView, off: number, end: number = view.byteLength): AtomicEthHeader {
  need(end, off, ATOMIC_ETH_LEN, 'AtomicETH');
  return {
    va: view.getBigUint64(off + OFF.VA),
    rkey: view.getUint32(off + OFF.RKEY),
    swapAdd: view.getBigUint64(off + OFF.SWAP_ADD),
    compare: view.getBigUint64(off + OFF.COMPARE),
  };
}

export function emitAtomicEth(h: AtomicEthHeader, view: DataView, off: number): number {
  checkU64(h.va, 'va');
  checkUint(h.rkey, 0xffff_ffff, 'rkey');
  checkU64(h.swapAdd, 'swapAdd');
  checkU64(h.compare, 'compare');
  view.setBigUint64(off + OFF.VA, h.va);
  view.setUint32(off + OFF.RKEY, h.rkey);
  view.setBigUint64(off + OFF.SWAP_ADD, h.swapAdd);
  view.setBigUint64(off + OFF.COMPARE, h.compare);
  return ATOMIC_ETH_LEN;
}
