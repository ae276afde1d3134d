/**
 * The RPC-over-RDMA version 1 RDMA CM private data (RFC 8797 §5.1), 8 bytes in network order that
 * a client may put in its CM REQ (after the 36-byte IP CM header: IBTA vol. 1 Annex A11) and a
 * server in its REP (at the start of the private data):
 *
 *   0  Format Identifier  0xF6AB0E18 (RFC 8797 §5.1: tells this record from other private data)
 *   4  Version            1
 *   5  Flags              reserved bits, and bit 0 (I): the sender can take Remote Invalidation
 *                         (an RDMA SEND with Invalidate of one of its own handles)
 *   6  Send Size          the sender's inline send threshold, in 1024-byte units less one
 *   7  Receive Size       the sender's inline receive threshold, likewise
 *
 * The record is optional: private data without the format identifier is not RPC-over-RDMA's, and a
 * peer that sends none keeps RFC 8166's default inline threshold of 1024 bytes each way (§3.3.2).
 * `parseRpcRdmaCmPrivateData` returns null where the record is absent and throws only `WireError`.
 */
import { WireError, WireErrorCode, need } from '../../packets/errors';
import { checkUint } from '../../packets/bytes';

export const RPCRDMA_CM_FORMAT_ID = 0xf6ab0e18;
export const RPCRDMA_CM_VERSION = 1;
export const RPCRDMA_CM_LEN = 8;
/** Flags bit 0, I: Remote Invalidation is supported (RFC 8797 §5.1). */
export const RPCRDMA_CM_REMOTE_INVALIDATE = 0x01;
/** RFC 8166 §3.3.2: the inline threshold of a peer that did not say otherwise. */
export const RPCRDMA_DEFAULT_INLINE = 1024;

export interface RpcRdmaCmPrivateData {
  version: number;
  flags: number;
  remoteInvalidate: boolean;
  /** Inline thresholds in bytes ((field + 1) × 1024). */
  sendSize: number;
  receiveSize: number;
}

/** The record at `off` of `[off, end)`, or null when the private data does not start with the format identifier. */
export function parseRpcRdmaCmPrivateData(view: DataView, off: number, end: number): RpcRdmaCmPrivateData | null {
  if (end - off < 4 || view.getUint32(off) !== RPCRDMA_CM_FORMAT_ID) return null;
  need(end, off, RPCRDMA_CM_LEN, 'RPC-over-RDMA CM private data');
  const version = view.getUint8(off + 4);
  if (version !== RPCRDMA_CM_VERSION)
    throw new WireError(WireErrorCode.BadField, off + 4, `RPC-over-RDMA CM private data version ${version}: RFC 8797 defines version 1`);
  const flags = view.getUint8(off + 5);
  return {
    version,
    flags,
    remoteInvalidate: (flags & RPCRDMA_CM_REMOTE_INVALIDATE) !== 0,
    sendSize: (view.getUint8(off + 6) + 1) * 1024,
    receiveSize: (view.getUint8(off + 7) + 1) * 1024,
  };
}

/** The 8 bytes of the record; sizes are multiples of 1024 from 1024 to 256 KiB. */
export function emitRpcRdmaCmPrivateData(p: { remoteInvalidate: boolean; sendSize: number; receiveSize: number }): Uint8Array {
  for (const [v, what] of [
    [p.sendSize, 'Send Size'],
    [p.receiveSize, 'Receive Size'],
  ] as const) {
    if (v % 1024 !== 0) throw new WireError(WireErrorCode.BadValue, 0, `RPC-over-RDMA CM ${what} ${v}: a multiple of 1024`);
    checkUint(v / 1024 - 1, 0xff, `RPC-over-RDMA CM ${what}`);
  }
  const out = new Uint8Array(RPCRDMA_CM_LEN);
  const v = new DataView(out.buffer);
  v.setUint32(0, RPCRDMA_CM_FORMAT_ID);
  out[4] = RPCRDMA_CM_VERSION;
  out[5] = p.remoteInvalidate ? RPCRDMA_CM_REMOTE_INVALIDATE : 0;
  out[6] = p.sendSize / 1024 - 1;
  out[7] = p.receiveSize / 1024 - 1;
  return out;
}
