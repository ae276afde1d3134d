// SPDX-License-Identifier: MIT
/*
 * frame_util.h: what the C AF_XDP references (xdp_pair.c, xdp_pingpong.c)
 * share to build their UDP frames and to fail: a MAC parser, the IPv4 header
 * checksum, and an exit with the errno text.
 */
#ifndef ROCE_BENCH_FRAME_UTIL_H
#define ROCE_BENCH_FRAME_UTIL_H

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

#endif
