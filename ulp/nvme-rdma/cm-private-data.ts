/**
 * The NVMe-oF RDMA transport's RDMA CM private data (NVMe over Fabrics 1.1, "RDMA Transport
 * Binding"; Linux include/linux/nvme-rdma.h `struct nvme_rdma_cm_req`, `_rep`, `_rej`): the host's
 * REQ says which queue it opens and how deep its queues are, the controller's REP how many receive
 * buffers it has, and a REJ why the controller refused. Every field is little-endian.
 *
 * In a REQ to an RDMA IP CM service ID the consumer's private data comes after the 36-byte IP CM
 * header (IBTA vol. 1 Annex A11); a REP's and a REJ's private data start at their field's first
 * byte. Parsers throw only `WireError` (Truncated when the private data is shorter than the record).
 */
import { WireError, WireErrorCode, need } from '../../packets/errors';
import { checkUint } from '../../packets/bytes';

/** The record format every NVMe-oF RDMA private data carries (nvme-rdma.h NVME_RDMA_CM_FMT_1_0). */
export const NVME_RDMA_CM_FMT_1_0 = 0;

/** Bytes of the REQ private data (nvme_rdma_cm_req: recfmt, qid, hrqsize, hsqsize, cntlid, rsvd[22]). */
export const NVME_RDMA_CM_REQ_LEN = 32;
/** Bytes of the REP private data (nvme_rdma_cm_rep: recfmt, crqsize, rsvd[28]). */
export const NVME_RDMA_CM_REP_LEN = 32;
/** Bytes of the REJ private data (nvme_rdma_cm_rej: recfmt, sts). */
export const NVME_RDMA_CM_REJ_LEN = 4;

/** The host's connect request: record format, queue ID (0 = admin), host receive and send queue sizes (hsqsize is 0-based), controller ID. */
export interface NvmeCmReq {
  recfmt: number;
  qid: number;
  hrqsize: number;
  hsqsize: number;
  cntlid: number;
}

/** The controller's accept: record format and controller receive queue size. */
export interface NvmeCmRep {
  recfmt: number;
  crqsize: number;
}

/** The controller's reject: record format and status (NVME_RDMA_CM_STATUS_NAMES). */
export interface NvmeCmRej {
  recfmt: number;
  status: number;
}

/** nvme-rdma.h enum nvme_rdma_cm_status, by value. */
export const NVME_RDMA_CM_STATUS_NAMES: Readonly<Record<number, string>> = Object.freeze({
  0x01: 'invalid length',
  0x02: 'invalid record format',
  0x03: 'invalid queue ID',
  0x04: 'invalid host SQ size',
  0x05: 'invalid host RQ size',
  0x06: 'no resources',
  0x07: 'invalid IRD',
  0x08: 'invalid ORD',
  0x09: 'invalid controller ID',
});

/** The name of a REJ status, or "reserved". */
export function cmRejStatusName(status: number): string {
  return NVME_RDMA_CM_STATUS_NAMES[status] ?? 'reserved';
}

export function parseNvmeCmReq(view: DataView, off: number, end: number): NvmeCmReq {
  need(end, off, NVME_RDMA_CM_REQ_LEN, 'NVMe-oF RDMA CM REQ private data');
  return {
    recfmt: view.getUint16(off, true),
    qid: view.getUint16(off + 2, true),
    hrqsize: view.getUint16(off + 4, true),
    hsqsize: view.getUint16(off + 6, true),
    cntlid: view.getUint16(off + 8, true),
  };
}

export function parseNvmeCmRep(view: DataView, off: number, end: number): NvmeCmRep {
  need(end, off, NVME_RDMA_CM_REP_LEN, 'NVMe-oF RDMA CM REP private data');
  return { recfmt: view.getUint16(off, true), crqsize: view.getUint16(off + 2, true) };
}

export function parseNvmeCmRej(view: DataView, off: number, end: number): NvmeCmRej {
  need(end, off, NVME_RDMA_CM_REJ_LEN, 'NVMe-oF RDMA CM REJ private data');
  return { recfmt: view.getUint16(off, true), status: view.getUint16(off + 2, true) };
}

function u16s(values: readonly [string, number][]): void {
  for (const [name, v] of values) checkUint(v, 0xffff, name);
}

/** The 32 bytes of a REQ's private data (reserved bytes zero). */
export function emitNvmeCmReq(r: NvmeCmReq): Uint8Array {
  u16s([
    ['recfmt', r.recfmt],
    ['qid', r.qid],
    ['hrqsize', r.hrqsize],
    ['hsqsize', r.hsqsize],
    ['cntlid', r.cntlid],
  ]);
  const out = new Uint8Array(NVME_RDMA_CM_REQ_LEN);
  const v = new DataView(out.buffer);
  v.setUint16(0, r.recfmt, true);
  v.setUint16(2, r.qid, true);
  v.setUint16(4, r.hrqsize, true);
  v.setUint16(6, r.hsqsize, true);
  v.setUint16(8, r.cntlid, true);
  return out;
}

/** The 32 bytes of a REP's private data. */
export function emitNvmeCmRep(r: NvmeCmRep): Uint8Array {
  u16s([
    ['recfmt', r.recfmt],
    ['crqsize', r.crqsize],
  ]);
  const out = new Uint8Array(NVME_RDMA_CM_REP_LEN);
  const v = new DataView(out.buffer);
  v.setUint16(0, r.recfmt, true);
  v.setUint16(2, r.crqsize, true);
  return out;
}

/** The 4 bytes of a REJ's private data. */
export function emitNvmeCmRej(r: NvmeCmRej): Uint8Array {
  u16s([
    ['recfmt', r.recfmt],
    ['status', r.status],
  ]);
  if (r.status === 0) throw new WireError(WireErrorCode.BadValue, 0, 'NVMe-oF RDMA CM REJ status 0 is not a reason to reject');
  const out = new Uint8Array(NVME_RDMA_CM_REJ_LEN);
  const v = new DataView(out.buffer);
  v.setUint16(0, r.recfmt, true);
  v.setUint16(2, r.status, true);
  return out;
}
