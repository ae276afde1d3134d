/**
 * The iSER CM private data (RFC 7145 §9.1, "iSER CM REQ Message"; Linux include/scsi/iser.h
 * `struct iser_cm_hdr`): in the RDMA CM REQ of an iSER connection, after the 36-byte IP CM header
 * (IBTA vol. 1 Annex A11), the initiator sends one flags byte and three reserved bytes:
 *
 * - Z (0x80): the initiator does not use zero-based virtual addresses (ZBVA), so the base offsets
 *   of its iSER headers are virtual addresses (RFC 7145 §9.1; iser.h ISER_ZBVA_NOT_SUP);
 * - I (0x40): the initiator does not take Send with Invalidate from the target (RFC 7145 §9.1;
 *   iser.h ISER_SEND_W_INV_NOT_SUP).
 *
 * The Linux target (isert) answers with the same four bytes in its REP (ISERT_ZBVA_NOT_USED,
 * ISERT_SEND_W_INV_NOT_USED), which RFC 7145 leaves to the implementation; they are read the same
 * way when present. `parseIserCmPrivateData` throws only `WireError`.
 */
import { need } from '../../packets/errors';
import { checkUint } from '../../packets/bytes';

export const ISER_CM_PRIVATE_LEN = 4;
export const ISER_CM_ZBVA_NOT_USED = 0x80;
export const ISER_CM_SEND_W_INV_NOT_USED = 0x40;

export interface IserCmPrivateData {
  flags: number;
  /** Z: zero-based virtual addresses are not used. */
  zbvaNotUsed: boolean;
  /** I: Send with Invalidate is not used. */
  sendWithInvalidateNotUsed: boolean;
}

export function parseIserCmPrivateData(view: DataView, off: number, end: number): IserCmPrivateData {
  need(end, off, ISER_CM_PRIVATE_LEN, 'iSER CM private data');
  const flags = view.getUint8(off);
  return { flags, zbvaNotUsed: (flags & ISER_CM_ZBVA_NOT_USED) !== 0, sendWithInvalidateNotUsed: (flags & ISER_CM_SEND_W_INV_NOT_USED) !== 0 };
}

/** The 4 bytes of the private data (reserved bytes zero). */
export function emitIserCmPrivateData(flags: number): Uint8Array {
  checkUint(flags, 0xff, 'iSER CM flags');
  return Uint8Array.of(flags, 0, 0, 0);
}
