/**
 * rping's buffer advertisement, `struct rping_rdma_info` (librdmacm examples/rping.c): the
 * address (64 bits), R_Key (32) and length (32) of a buffer, 16 bytes, each field big-endian
 * (rping_format_send() fills them with htobe64/htobe32; server_recv() reads them with
 * be64toh/be32toh). The server's "go ahead" SENDs carry the same 16 bytes, all zero (its
 * send buffer is never filled).
 */
export const RDMA_INFO_LEN = 16;

export interface RdmaInfo {
  buf: bigint;
  rkey: number;
  size: number;
}

export function encodeRdmaInfo(info: RdmaInfo, into: Uint8Array = new Uint8Array(RDMA_INFO_LEN)): Uint8Array {
  const v = new DataView(into.buffer, into.byteOffset, RDMA_INFO_LEN);
  v.setBigUint64(0, BigInt.asUintN(64, info.buf));
  v.setUint32(8, info.rkey >>> 0);
  v.setUint32(12, info.size >>> 0);
  return into;
}

export function decodeRdmaInfo(b: Uint8Array): RdmaInfo {
  const v = new DataView(b.buffer, b.byteOffset, RDMA_INFO_LEN);
  return { buf: v.getBigUint64(0), rkey: v.getUint32(8), size: v.getUint32(12) };
}
