/**
 * Service IDs of the RDMA IP CM service (IBTA vol. 1 Annex A11, as librdmacm and
 * the kernel's cma.c use it): 0x0000000001 in the top 40 bits, then the IP
 * protocol of the port space (8 bits: 0x06 TCP, 0x11 UDP, 0x3F "any"), then the
 * port (16 bits). The kernel builds them as `(u64)ps << 16 | port`
 * (cma_get_service_id()) from librdmacm's port spaces (enum rdma_port_space);
 * RDMA_PS_IPOIB (0x0002) gives IDs outside the Annex A11 range.
 *
 * A REQ or SIDR_REQ to an ID in the range carries the IP CM private data header
 * (ip-private-data.ts); Wireshark decides the same way (RDMA_IP_CM_SID_PREFIX).
 */
import { checkUint } from '../bytes';

/** librdmacm's port spaces (rdma_cma.h enum rdma_port_space). */
export const PortSpace = {
  IPOIB: 0x0002,
  TCP: 0x0106,
  UDP: 0x0111,
  IB: 0x013f,
} as const;

export const PORT_SPACE_NAMES: Readonly<Record<number, string>> = Object.freeze({
  0x0002: 'IPoIB',
  0x0106: 'TCP',
  0x0111: 'UDP',
  0x013f: 'IB',
});

/** The top 40 bits of an Annex A11 service ID, and the mask that selects them. */
export const IP_CM_SERVICE_ID_PREFIX = 0x0000_0000_0100_0000n;
export const IP_CM_SERVICE_ID_MASK = 0xffff_ffff_ff00_0000n;

/** The service ID librdmacm listens on / connects to for `port` in `portSpace` (RDMA_IB_IP_PS_TCP | port, ...). */
export function rdmaServiceId(portSpace: number, port: number): bigint {
  checkUint(portSpace, 0xffff, 'portSpace');
  checkUint(port, 0xffff, 'port');
  return (BigInt(portSpace) << 16n) | BigInt(port);
}

/** True for a service ID in the Annex A11 range (whose REQ private data starts with the IP CM header). */
export function isIpCmServiceId(serviceId: bigint): boolean {
  return (serviceId & IP_CM_SERVICE_ID_MASK) === IP_CM_SERVICE_ID_PREFIX;
}

/** Port space and port of an RDMA CM service ID, or null when the ID is not one (its top 32 bits are not zero). */
export function splitServiceId(serviceId: bigint): { portSpace: number; port: number } | null {
  if (serviceId >> 32n !== 0n) return null;
  return { portSpace: Number(serviceId >> 16n), port: Number(serviceId & 0xffffn) };
}
