/**
 * Which of the device's GIDs a CM connection sends from: for an IPv4 peer the first IPv4-mapped
 * GID, for a link-local IPv6 peer the link-local GID (index 0), for any other IPv6 peer the first
 * IPv6 GID that is neither, so that a connection to a global address leaves from one, as the
 * kernel's cma.c resolves the source address by route (rdma_resolve_addr()).
 */
import { isIpv4MappedGid } from '../address';

function isLinkLocal(gid: Uint8Array): boolean {
  return gid[0] === 0xfe && ((gid[1] ?? 0) & 0xc0) === 0x80;
}

export function sourceGidIndex(gids: readonly Uint8Array[], dgid: Uint8Array): number {
  if (isIpv4MappedGid(dgid)) return Math.max(0, gids.findIndex(isIpv4MappedGid));
  if (isLinkLocal(dgid)) return 0;
  const i = gids.findIndex((g) => !isIpv4MappedGid(g) && !isLinkLocal(g));
  return i >= 0 ? i : 0;
}
