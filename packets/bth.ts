/**
 * Base Transport Header (IBTA vol. 1 §9.2), 12 bytes:
 *
 *   byte 0      OpCode
 *   byte 1      SE(7) M(6) PadCnt(5:4) TVer(3:0)
 *   bytes 2-3   P_Key
 *   byte 4      FECN(7) BECN(6) Resv6(5:0)   -- "resv8a" for the ICRC; masked there
 *   bytes 5-7   DestQP
 *   byte 8      AckReq(7) Resv7(6:0)
 *   bytes 9-11  PSN
 *
 * Reserved bits are parsed and kept, never rejected: hardware sets some of
 * them (Huawei sends resv8a = 0x10), and the ICRC masks byte 4 anyway.
 */
import { need } from './errors';
import { checkUint, getU24, setU24 } from './bytes';

export const BTH_LEN = 12;
export const OFF = Object.freeze({ OPCODE: 0, FLAGS: 1, PKEY: 2, FECN_BECN: 4, DEST_QP: 5, ACK_REQ: 8, PSN: 9 });
/** The default partition key (IBTA vol. 1 §10.9.1.1). */
export const DEFAULT_PKEY = 0xffff;

/** The Base Transport Header: 12 bytes that begin every RoCE transport packet (IBTA §9.2). */
export interface BthHeader {
  opcode: number;
  /** Solicited event. */
  se: boolean;
  /** Migration request (APM state). */
  migReq: boolean;
  /** Pad bytes (0..3) after the payload that align it to 4 bytes. */
  padCount: number;
  /** Transport header version; 0 for this version of the spec. */
  tver: number;
  pkey: number;
  fecn: boolean;
  becn: boolean;
  /** The six reserved bits of byte 4. */
  resv6: number;
  destQp: number;
  ackReq: boolean;
  /** The seven reserved bits of byte 8. */
  resv7: number;
  psn: number;
}

export function parseBth(view: DataView, off: number, end: number = view.byteLength): BthHeader {
  need(end, off, BTH_LEN, 'BTH');
  const f = view.getUint8(off + OFF.FLAGS);
  const fb = view.getUint8(off + OFF.FECN_BECN);
  const ar = view.getUint8(off + OFF.ACK_REQ);
  return {
    opcode: view.getUint8(off + OFF.OPCODE),
    se: (f & 0x80) !== 0,
    migReq: (f & 0x40) !== 0,
    padCount: (f >>> 4) & 3,
    tver: f & 0xf,
    pkey: view.getUint16(off + OFF.PKEY),
    fecn: (fb & 0x80) !== 0,
    becn: (fb & 0x40) !== 0,
    resv6: fb & 0x3f,
    destQp: getU24(view, off + OFF.DEST_QP),
    ackReq: (ar & 0x80) !== 0,
    resv7: ar & 0x7f,
    psn: getU24(view, off + OFF.PSN),
  };
}

export function emitBth(h: BthHeader, view: DataView, off: number): number {
  checkUint(h.opcode, 0xff, 'opcode');
  checkUint(h.padCount, 3, 'padCount');
  checkUint(h.tver, 0xf, 'tver');
  checkUint(h.pkey, 0xffff, 'pkey');
  checkUint(h.resv6, 0x3f, 'resv6');
  checkUint(h.destQp, 0xffffff, 'destQp');
  checkUint(h.resv7, 0x7f, 'resv7');
  checkUint(h.psn, 0xffffff, 'psn');
  view.setUint8(off + OFF.OPCODE, h.opcode);
  view.setUint8(off + OFF.FLAGS, (h.se ? 0x80 : 0) | (h.migReq ? 0x40 : 0) | (h.padCount << 4) | h.tver);
  view.setUint16(off + OFF.PKEY, h.pkey);
  view.setUint8(off + OFF.FECN_BECN, (h.fecn ? 0x80 : 0) | (h.becn ? 0x40 : 0) | h.resv6);
  setU24(view, off + OFF.DEST_QP, h.destQp);
  view.setUint8(off + OFF.ACK_REQ, (h.ackReq ? 0x80 : 0) | h.resv7);
  setU24(view, off + OFF.PSN, h.psn);
  return BTH_LEN;
}
