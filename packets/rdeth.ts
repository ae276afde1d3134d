/** Reliable Datagram Extended Transport Header (IBTA vol. 1 §9.3.1): Reserved(8) EE-Context(24). Decode only: no RD QPs. */
import { need } from './errors';
import { checkUint, getU24, setU24 } from './bytes';

export const RDETH_LEN = 4;
export const OFF = Object.freeze({ RESERVED: 0, EE_CONTEXT: 1 });

export interface RdEthHeader {
  eeContext: number;
}

export function parseRdEth(view: DataView, off: number, end: number = view.byteLength): RdEthHeader {
  need(end, off, RDETH_LEN, 'RDETH');
  return { eeContext: getU24(view, off + OFF.EE_CONTEXT) };
}

export function emitRdEth(h: RdEthHeader, view: DataView, off: number): number {
  checkUint(h.eeContext, 0xffffff, 'eeContext');
  view.setUint8(off + OFF.RESERVED, 0);
  setU24(view, off + OFF.EE_CONTEXT, h.eeContext);
  return RDETH_LEN;
}
