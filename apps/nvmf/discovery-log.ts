/**
 * The discovery log page (Get Log Page 0x70; NVMe over Fabrics 1.1, "Discovery Log Page"; Linux
 * include/linux/nvme.h `struct nvmf_disc_rsp_page_hdr` and `_entry`): a 1024-byte header
 * (generation counter, number of records, record format) and one 1024-byte entry for the
 * subsystem: transport RDMA, IPv4, an NVM subsystem, port, dynamic controller ID, admin queue size,
 * service ID and address, the subsystem NQN, and the RDMA transport fields (connected QP, no
 * provider type, RDMA CM).
 */
import type { SubsystemConfig } from './controller';

export const DISCOVERY_LOG_LID = 0x70;
const HEADER_LEN = 1024;
const ENTRY_LEN = 1024;

function put(out: Uint8Array, at: number, len: number, s: string): void {
  out.set(new TextEncoder().encode(s).subarray(0, len - 1), at);
}

export function discoveryLog(cfg: SubsystemConfig, genctr: bigint): Uint8Array {
  const out = new Uint8Array(HEADER_LEN + ENTRY_LEN);
  const v = new DataView(out.buffer);
  v.setBigUint64(0, genctr, true);
  v.setBigUint64(8, 1n, true);
  v.setUint16(16, 0, true);
  const e = HEADER_LEN;
  out[e] = 1; // trtype: RDMA
  out[e + 1] = 1; // adrfam: IPv4
  out[e + 2] = 2; // subtype: NVM subsystem
  out[e + 3] = 0; // treq: not specified
  v.setUint16(e + 4, 1, true); // portid
  v.setUint16(e + 6, 0xffff, true); // cntlid: dynamic
  v.setUint16(e + 8, 32, true); // asqsz
  put(out, e + 32, 32, cfg.trsvcid);
  put(out, e + 256, 256, cfg.nqn);
  put(out, e + 512, 256, cfg.traddr);
  out[e + 768] = 1; // qptype: reliable connected
  out[e + 769] = 1; // prtype: no provider specified
  out[e + 770] = 1; // cms: RDMA CM
  return out;
}
