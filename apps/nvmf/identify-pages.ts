/**
 * The Identify data the target returns (NVMe Base 2.0, "Identify Controller Data Structure",
 * "Identify Namespace Data Structure", "Active Namespace ID list", "Namespace Identification
 * Descriptor list"; NVMe over Fabrics 1.1 for the fabrics fields IOCCSZ, IORCSZ, ICDOFF, FCATT,
 * MSDBD): 4096 bytes each, little-endian, text fields padded with spaces.
 */
import { AERL, type Controller, DISCOVERY_NQN, MAX_QUEUE_SIZE, MDTS, INLINE_DATA_SIZE, type Subsystem } from './controller';
import { LBA_SIZE, type RamNamespace } from './ram-namespace';

export const IDENTIFY_LEN = 4096;
/** Identify CNS values the target answers. */
export const Cns = { NAMESPACE: 0x00, CONTROLLER: 0x01, ACTIVE_NS_LIST: 0x02, NS_DESCRIPTORS: 0x03, CSI_CONTROLLER: 0x06 } as const;
/** The NVM Command Set's identifier (CSI, Identify's CDW11 bits 31:24). */
export const CSI_NVM = 0;

function text(out: Uint8Array, at: number, len: number, s: string): void {
  out.fill(0x20, at, at + len);
  out.set(new TextEncoder().encode(s).subarray(0, len), at);
}

/** SGLS: SGLs supported with no alignment (bits 1:0 = 01), keyed SGL data blocks (bit 2), and an offset in a data block (bit 20), as nvmet-rdma. */
export const SGLS = 0x1 | (1 << 2) | (1 << 20);

export function identifyController(sub: Subsystem, c: Controller): Uint8Array {
  const out = new Uint8Array(IDENTIFY_LEN);
  const v = new DataView(out.buffer);
  text(out, 4, 20, sub.config.serial);
  text(out, 24, 40, sub.config.model);
  text(out, 64, 8, '1.0');
  out[77] = MDTS;
  v.setUint16(78, c.cntlid, true);
  v.setUint32(80, 0x0001_0300, true);
  // CNTRLTYPE: 1 I/O controller, 2 discovery controller.
  out[111] = c.discovery ? 2 : 1;
  out[259] = AERL;
  // LPA bit 2: Get Log Page takes extended data (NUMDU, LPOL/LPOU), as the Linux host asks for the discovery log.
  out[261] = 0x04;
  // KAS: keep-alive granularity 1 s (units of 100 ms).
  v.setUint16(320, 10, true);
  out[512] = 0x66;
  out[513] = 0x44;
  v.setUint16(514, MAX_QUEUE_SIZE, true);
  v.setUint32(516, c.discovery ? 0 : 1, true);
  // VWC: a volatile write cache, so that Flush is a command the host sends.
  out[525] = c.discovery ? 0 : 1;
  v.setUint32(536, SGLS, true);
  out.set(new TextEncoder().encode(c.discovery ? DISCOVERY_NQN : sub.config.nqn).subarray(0, 255), 768);
  // IOCCSZ and IORCSZ in 16-byte units: the SQE and the in-capsule data; the CQE alone.
  v.setUint32(1792, (64 + INLINE_DATA_SIZE) / 16, true);
  v.setUint32(1796, 1, true);
  v.setUint16(1800, 0, true);
  out[1802] = 0;
  out[1803] = 1;
  return out;
}

export function identifyNamespace(ns: RamNamespace): Uint8Array {
  const out = new Uint8Array(IDENTIFY_LEN);
  const v = new DataView(out.buffer);
  v.setBigUint64(0, ns.blocks, true);
  v.setBigUint64(8, ns.blocks, true);
  v.setBigUint64(16, ns.blocks, true);
  // NLBAF 0 (one format), FLBAS 0; LBAF0: LBADS = log2(512).
  out[130] = Math.log2(LBA_SIZE);
  out.set(nguid(ns), 104);
  return out;
}

/** The active namespace IDs above `after`: NSID 1 when `after` is 0. */
export function activeNamespaces(ns: RamNamespace, after: number): Uint8Array {
  const out = new Uint8Array(IDENTIFY_LEN);
  if (after < ns.nsid) new DataView(out.buffer).setUint32(0, ns.nsid, true);
  return out;
}

/** The namespace's identifiers: its NGUID (NIDT 2) and a UUID (NIDT 3) from the same bytes. */
export function namespaceDescriptors(ns: RamNamespace): Uint8Array {
  const out = new Uint8Array(IDENTIFY_LEN);
  const id = nguid(ns);
  out[0] = 2;
  out[1] = 16;
  out.set(id, 4);
  out[20] = 3;
  out[21] = 16;
  const uuid = id.slice();
  uuid[6] = ((uuid[6] as number) & 0x0f) | 0x40;
  uuid[8] = ((uuid[8] as number) & 0x3f) | 0x80;
  out.set(uuid, 24);
  return out;
}

/** 16 bytes that name the namespace: FNV-1a of its size and NSID, stretched; the same for the same namespace. */
function nguid(ns: RamNamespace): Uint8Array {
  const out = new Uint8Array(16);
  let h = 0x811c9dc5;
  const seed = `${ns.blocks}:${ns.nsid}`;
  for (let i = 0; i < 16; i++) {
    for (const ch of `${seed}:${i}`) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
    out[i] = h & 0xff;
  }
  return out;
}
