/**
 * perftest's key message as it goes over the RDMA CM communication QP (-R, and -z): not the text
 * of the TCP exchange but `struct pingpong_dest` itself (perftest_resources.h), copied into the
 * SEND buffer by rdma_write_keys() (perftest_communication.c) with every field big-endian
 * (htobe32 / htobe64, HAVE_ENDIAN), 56 bytes with x86-64 alignment:
 *
 *   0 lid, 4 out_reads, 8 qpn, 12 psn, 16 rkey (4 bytes each), 20 padding (4),
 *   24 vaddr (8), 32 gid (16 raw bytes), 48 srqn (4), 52 gid_index (4)
 *
 * rdma_read_keys() takes lid, out_reads, qpn, psn, rkey, vaddr and gid from it (srqn and
 * gid_index are not read back). The padding is whatever was on perftest's stack; this side sends
 * zeros there.
 */
import { OobError, OobErrorCode } from './tcp-channel';
import type { PerftestDest } from './perftest-messages';

/** sizeof(struct pingpong_dest) on x86-64: also the length of the receive perftest posts (post_one_recv_wqe). */
export const PINGPONG_DEST_STRUCT_SIZE = 56;

export function encodeDestStruct(d: PerftestDest, gidIndex = 0): Uint8Array {
  const out = new Uint8Array(PINGPONG_DEST_STRUCT_SIZE);
  const v = new DataView(out.buffer);
  v.setUint32(0, d.lid >>> 0, false);
  v.setUint32(4, d.outReads >>> 0, false);
  v.setUint32(8, d.qpn >>> 0, false);
  v.setUint32(12, d.psn >>> 0, false);
  v.setUint32(16, d.rkey >>> 0, false);
  v.setBigUint64(24, BigInt.asUintN(64, d.vaddr), false);
  if (d.gid !== null) {
    if (d.gid.length !== 16) throw new OobError(OobErrorCode.BAD_VALUE, `a GID is 16 bytes, got ${d.gid.length}`, 'gid');
    out.set(d.gid, 32);
  }
  v.setUint32(48, d.srqn >>> 0, false);
  v.setUint32(52, gidIndex >>> 0, false);
  return out;
}

export function decodeDestStruct(b: Uint8Array): PerftestDest {
  if (b.length !== PINGPONG_DEST_STRUCT_SIZE) {
    throw new OobError(
      OobErrorCode.MALFORMED,
      `perftest key message (struct pingpong_dest): must be ${PINGPONG_DEST_STRUCT_SIZE} bytes, got ${b.length}`,
      'length',
    );
  }
  const v = new DataView(b.buffer, b.byteOffset, b.length);
  return {
    lid: v.getUint32(0, false),
    outReads: v.getUint32(4, false),
    qpn: v.getUint32(8, false),
    psn: v.getUint32(12, false),
    rkey: v.getUint32(16, false),
    vaddr: v.getBigUint64(24, false),
    tailMarkersVaddr: 0n,
    gid: b.slice(32, 48),
    srqn: v.getUint32(48, false),
  };
}
