// SPDX-License-Identifier: MIT
/*
 * frame_util.h: what the C AF_XDP references (xdp_pair.c, xdp_pingpong.c)
 * share to build their UDP frames and to fail: the headers of a UDP frame to
 * port 4791, and an exit with the errno text.
 */
#ifndef ROCE_BENCH_FRAME_UTIL_H
#define ROCE_BENCH_FRAME_UTIL_H

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prints "PROG: WHAT: strerror(err)" and exits 1 (err may be negative, as libbpf returns them). */
static void die_prog(const char *prog, const char *what, int err) {
  fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(err < 0 ? -err : err));
  exit(1);
}

/* "aa:bb:cc:dd:ee:ff" into m[6]; 0, or -1 when it is not a MAC. */
static int parse_mac(const char *s, uint8_t *m) {
  return sscanf(s, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) == 6 ? 0 : -1;
}

/* The Internet checksum of n bytes (an IPv4 header with its checksum field zero). */
static uint16_t ip_csum(const void *p, size_t n) {
  const uint16_t *w = p;
  uint32_t s = 0;
  for (size_t i = 0; i < n / 2; i++) s += w[i];
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  return (uint16_t)~s;
}

/*
 * Writes Ethernet, IPv4 and UDP headers (source port 49152, destination 4791, no UDP checksum)
 * at the start of the `len`-byte frame `f`; the rest of the frame is left as it is. 0, or -1 when
 * a MAC or an IP address does not parse.
 */
static int put_udp_headers(uint8_t *f, unsigned len, const char *smac, const char *dmac, const char *sip, const char *dip) {
  struct ethhdr *eth = (struct ethhdr *)f;
  if (parse_mac(dmac, eth->h_dest) || parse_mac(smac, eth->h_source)) return -1;
  eth->h_proto = htons(ETH_P_IP);
  struct iphdr *ip = (struct iphdr *)(f + 14);
  memset(ip, 0, sizeof *ip);
  ip->version = 4;
  ip->ihl = 5;
  ip->tot_len = htons((uint16_t)(len - 14));
  ip->ttl = 64;
  ip->protocol = IPPROTO_UDP;
  ip->frag_off = htons(0x4000);
  if (inet_pton(AF_INET, sip, &ip->saddr) != 1 || inet_pton(AF_INET, dip, &ip->daddr) != 1) return -1;
  ip->check = ip_csum(ip, sizeof *ip);
  struct udphdr *udp = (struct udphdr *)(f + 34);
  udp->source = htons(49152);
  udp->dest = htons(4791);
  udp->len = htons((uint16_t)(len - 34));
  udp->check = 0;
  return 0;
}

#endif
