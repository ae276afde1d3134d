/** Datagram Extended Transport Header (IBTA vol. 1 §9.3.2): Q_Key(32) Reserved(8) SrcQP(24). */
import { need } from './errors';
import { checkUint, getU24, setU24 } from './bytes';

export const DETH_LEN = 8;
export const OFF = Object.freeze({ QKEY: 0, RESERVED: 4, SRC_QP: 5 });

export interface DethHeader {
  qkey: number;
  srcQp: number;
}

export function parseDeth(view: DataView, off: number, end: number = view.byteLength): DethHeader {
  need(end, off, DETH_LEN, 'DETH');
  return { qkey: view.getUint32(off + OFF.QKEY), srcQp: getU24(view, off + OFF.SRC_QP) };
}

export function emitDeth(h: DethHeader, view: DataView, off: number): number {
  checkUint(h.qkey, 0xffff_ffff, 'qkey');
  checkUint(h.srcQp, 0xffffff, 'srcQp');
  view.setUint32(off + OFF.QKEY, h.qkey);
  view.setUint8(off + OFF.RESERVED, 0);
  setU24(view, off + OFF.SRC_QP, h.srcQp);
  return DETH_LEN;
}
