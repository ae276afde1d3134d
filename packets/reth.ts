/** RDMA Extended Transport Header (IBTA vol. 1 §9.3.3): VA(64) R_Key(32) DMA Length(32). */
import { need } from './errors';
import { checkU64, checkUint } from './bytes';

export const RETH_LEN = 16;
export const OFF = Object.freeze({ VA: 0, RKEY: 8, DMA_LEN: 12 });

export interface RethHeader {
  va: bigint;
  rkey: number;
  dmaLength: number;
}

export function parseReth(view: DataView, off: number, end: number = view.byteLength): RethHeader {
  need(end, off, RETH_LEN, 'RETH');
  return { va: view.getBigUint64(off + OFF.VA), rkey: view.getUint32(off + OFF.RKEY), dmaLength: view.getUint32(off + OFF.DMA_LEN) };
}

export function emitReth(h: RethHeader, view: DataView, off: number): number {
  checkU64(h.va, 'va');
  checkUint(h.rkey, 0xffff_ffff, 'rkey');
  checkUint(h.dmaLength, 0xffff_ffff, 'dmaLength');
  view.setBigUint64(off + OFF.VA, h.va);
  view.setUint32(off + OFF.RKEY, h.rkey);
  view.setUint32(off + OFF.DMA_LEN, h.dmaLength);
  return RETH_LEN;
}
