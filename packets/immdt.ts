/** Immediate Data Extended Transport Header (IBTA vol. 1 §9.3.5): 32 bits handed to the receiver's completion. */
import { need } from './errors';
import { checkUint } from './bytes';

export const IMMDT_LEN = 4;

export interface ImmDtHeader {
  value: number;
}

export function parseImmDt(view: DataView, off: number, end: number = view.byteLength): ImmDtHeader {
  need(end, off, IMMDT_LEN, 'ImmDt');
  return { value: view.getUint32(off) };
}

export function emitImmDt(h: ImmDtHeader, view: DataView, off: number): number {
  checkUint(h.value, 0xffff_ffff, 'value');
  view.setUint32(off, h.value);
  return IMMDT_LEN;
}
