/** Invalidate Extended Transport Header (IBTA vol. 1 §9.3.7): the R_Key to invalidate (SEND with Invalidate). */
import { need } from './errors';
import { checkUint } from './bytes';

export const IETH_LEN = 4;

export interface IethHeader {
  rkey: number;
}

export function parseIeth(view: DataView, off: number, end: number = view.byteLength): IethHeader {
  need(end, off, IETH_LEN, 'Ieth');
  return { rkey: view.getUint32(off) };
}

export function emitIeth(h: IethHeader, view: DataView, off: number): number {
  checkUint(h.rkey, 0xffff_ffff, 'rkey');
  view.setUint32(off, h.rkey);
  return IETH_LEN;
}
