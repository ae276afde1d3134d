/**
 * The payload of a datagram to the General Services Interface: a UD SEND ONLY
 * to QP 1 whose DETH carries the GSI Q_Key 0x80010000 holds exactly one
 * 256-byte MAD (IBTA vol. 1 §13.4; the kernel's ib_mad layer receives on QP 1
 * this way, rdma_rxe included). `decodeMad` reads its common header and, for
 * the CM class, the CM message by name, and for a REQ or SIDR_REQ to an RDMA
 * IP CM service ID the IP CM private data header (Annex A11).
 *
 * `decodeMad` throws only WireError: the wrong length or base version
 * (mad.ts `parseMad`). Everything else is representable: an unknown class or
 * attribute decodes to its common header with `cm: null`.
 */
import { CM_CLASS_VERSION, GSI_QKEY, GSI_QPN, MAD_HEADER_LEN, MAD_LEN, MadMethod, MgmtClass, type MadHeader, emitMadHeader, parseMad } from './mad';
import { type CmMessage, emitCmMessage, parseCmMessage } from './cm/message';
import { isIpCmServiceId } from './cm/service-id';
import { type IpCmPrivateData, parseIpCmPrivateData } from './cm/ip-private-data';
import { REQ_FIELDS } from './cm/req';
import { SIDR_REQ_FIELDS } from './cm/sidr-req';

/** UD SEND ONLY: the only opcode that carries MADs (a MAD never has immediate data). */
export const UD_SEND_ONLY = 0x64;

export interface DecodedMad {
  header: MadHeader;
  /** The CM message (management class 0x07 and an attribute with a message), else null. */
  cm: CmMessage | null;
  /** The IP CM private data header of a REQ or SIDR_REQ to an RDMA IP CM service ID, else null. */
  ipCm: IpCmPrivateData | null;
}

/** True when a packet with this opcode, destination QP and DETH Q_Key is a datagram to the GSI. */
export function carriesMad(opcode: number, destQp: number, qkey: number): boolean {
  return opcode === UD_SEND_ONLY && destQp === GSI_QPN && qkey === GSI_QKEY;
}

/** Decodes the `len`-byte MAD at `off` (offsets in the result's errors are absolute, like `off`). */
export function decodeMad(view: DataView, off: number, len: number): DecodedMad {
  const header = parseMad(view, off, len);
  const end = off + len;
  if (header.mgmtClass !== MgmtClass.CM) return { header, cm: null, ipCm: null };
  const data = off + MAD_HEADER_LEN;
  const cm = parseCmMessage(header.attributeId, view, data, end);
  let ipCm: IpCmPrivateData | null = null;
  if (cm !== null && (cm.name === 'REQ' || cm.name === 'SIDR_REQ') && isIpCmServiceId(cm.fields.serviceId)) {
    const pd = cm.name === 'REQ' ? REQ_FIELDS.privateData.at : SIDR_REQ_FIELDS.privateData.at;
    ipCm = parseIpCmPrivateData(view, data + pd, end);
  }
  return { header, cm, ipCm };
}

export interface CmMadOptions {
  transactionId: bigint;
  /** Default Send (every CM message is sent with method Send). */
  method?: number;
  status?: number;
  classSpecific?: number;
  attributeModifier?: number;
}

/** A 256-byte CM MAD: base version 1, class CM, class version 2, the message's attribute ID. */
export function buildCmMad(m: CmMessage, opts: CmMadOptions): Uint8Array {
  const mad = new Uint8Array(MAD_LEN);
  const view = new DataView(mad.buffer);
  const attributeId = emitCmMessage(m, view, MAD_HEADER_LEN);
  emitMadHeader(
    {
      baseVersion: 1,
      mgmtClass: MgmtClass.CM,
      classVersion: CM_CLASS_VERSION,
      method: opts.method ?? MadMethod.SEND,
      status: opts.status ?? 0,
      classSpecific: opts.classSpecific ?? 0,
      transactionId: opts.transactionId,
      attributeId,
      reserved: 0,
      attributeModifier: opts.attributeModifier ?? 0,
    },
    view,
    0,
  );
  return mad;
}
