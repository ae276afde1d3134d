/** The reply address vector from a UD receive's GRH area, as libibverbs' ibv_init_ah_from_wc() reads it. */
import { grhIpVersion, replyAhAttr } from '../../apps/udaddy/reply-ah';

const v4Gid = (ip: string): Uint8Array => Uint8Array.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, ...ip.split('.').map(Number)]);

/** 20 zero bytes, then an IPv4 header (rxe's roce4grh area) with a correct checksum unless `badSum`. */
function v4Grh(src: string, dst: string, ttl: number, tos: number, badSum = false): Uint8Array {
  const g = new Uint8Array(40);
  const h = g.subarray(20);
  h.set([0x45, tos, 0, 140, 0, 0, 0x40, 0, ttl, 17, 0, 0, ...src.split('.').map(Number), ...dst.split('.').map(Number)]);
  let sum = 0;
  for (let i = 0; i < 20; i += 2) sum += ((h[i] as number) << 8) | (h[i + 1] as number);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  const check = (~sum & 0xffff) ^ (badSum ? 1 : 0);
  h[10] = check >>> 8;
  h[11] = check & 0xff;
  return g;
}

const GIDS = [new Uint8Array(16).fill(0xfe, 0, 1), v4Gid('198.18.0.2')];

test('IPv4: the source address as an IPv4-mapped GID, the GID holding the destination, TTL and TOS', () => {
  const g = v4Grh('198.18.0.1', '198.18.0.2', 64, 0x28);
  expect(grhIpVersion(g)).toBe(4);
  expect(replyAhAttr(g, GIDS)).toEqual({ dgid: v4Gid('198.18.0.1'), sgidIndex: 1, hopLimit: 64, trafficClass: 0x28, flowLabel: 0 });
});

test('IPv6: the source GID, hop limit, traffic class and flow label from the header', () => {
  const src = Uint8Array.from([0xfd, 0, ...new Array<number>(13).fill(0), 1]);
  const dst = Uint8Array.from([0xfd, 0, ...new Array<number>(13).fill(0), 2]);
  const g = new Uint8Array(40);
  g.set([0x6a, 0xb1, 0x23, 0x45, 0, 140, 17, 9]);
  g.set(src, 8);
  g.set(dst, 24);
  expect(grhIpVersion(g)).toBe(6);
  expect(replyAhAttr(g, [dst])).toEqual({ dgid: src, sgidIndex: 0, hopLimit: 9, trafficClass: 0xab, flowLabel: 0x12345 });
});

test('version 6 up front with an IPv4 header at byte 20 whose checksum fails: IPv6 (get_grh_header_version())', () => {
  const good = v4Grh('198.18.0.1', '198.18.0.2', 64, 0);
  good[0] = 0x60;
  expect(grhIpVersion(good)).toBe(4);
  const bad = v4Grh('198.18.0.1', '198.18.0.2', 64, 0, true);
  bad[0] = 0x60;
  expect(grhIpVersion(bad)).toBe(6);
});

test('no IP header, a multicast destination, or a destination that is not ours: no address vector', () => {
  expect(replyAhAttr(new Uint8Array(40), GIDS)).toBeNull();
  expect(replyAhAttr(v4Grh('198.18.0.1', '224.0.0.1', 64, 0), GIDS)).toBeNull();
  expect(replyAhAttr(v4Grh('198.18.0.1', '198.18.0.3', 64, 0), GIDS)).toBeNull();
  expect(replyAhAttr(new Uint8Array(39), GIDS)).toBeNull();
});
