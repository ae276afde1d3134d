/** XRC Extended Transport Header (IBTA vol. 1 annex A14): Reserved(8) XRCSRQ(24); first after the BTH in XRC requests. */
import { need } from './errors';
import { checkUint, getU24, setU24 } from './bytes';

export const XRCETH_LEN = 4;
export const OFF = Object.freeze({ RESERVED: 0, XRC_SRQ: 1 });

export interface XrcEthHeader {
  xrcSrq: number;
}

export function parseXrcEth(view: DataView, off: number, end: number = view.byteLength): XrcEthHeader {
  need(end, off, XRCETH_LEN, 'XRCETH');
  return { xrcSrq: getU24(view, off + OFF.XRC_SRQ) };
}

export function emitXrcEth(h: XrcEthHeader, view: DataView, off: number): number {
  checkUint(h.xrcSrq, 0xffffff, 'xrcSrq');
  view.setUint8(off + OFF.RESERVED, 0);
  setU24(view, off + OFF.XRC_SRQ, h.xrcSrq);
  return XRCETH_LEN;
}
