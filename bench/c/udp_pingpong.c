// SPDX-License-Identifier: MIT
/*
 * udp_pingpong: the round-trip reference for `roce pingpong`'s latency in
 * bench/netns-network.ts. A plain kernel-UDP ping-pong, both ends busy-polling a
 * non-blocking socket (recv with MSG_DONTWAIT in a loop, never sleeping), one
 * message of SIZE bytes each way per round trip, as `roce pingpong -s SIZE`
 * sends one SEND each way.
 *
 *   udp_pingpong server BIND_IP PORT ITERS SIZE
 *   udp_pingpong client SERVER_IP PORT ITERS SIZE WARMUP
 *
 * The server echoes every message back until the client's one-byte goodbye
 * (or 30 s without a message). The client sends WARMUP untimed round trips
 * first, then times ITERS with CLOCK_MONOTONIC, and prints one JSON line of
 * the round trips (latency_report.h). A round trip that takes over 1 s ends
 * the run with an error, so a lost datagram cannot hang it.
 *
 * Built by bench/netns-network.ts: cc -O2 -o udp_pingpong udp_pingpong.c -lm
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "latency_report.h"

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Receives one datagram, spinning; -1 after `limit_ns` without one. */
static ssize_t spin_recv(int fd, char *buf, size_t len, uint64_t limit_ns, struct sockaddr_in *from) {
  const uint64_t start = now_ns();
  socklen_t fl = sizeof(*from);
  for (;;) {
    ssize_t n = recvfrom(fd, buf, len, MSG_DONTWAIT, (struct sockaddr *)from, &fl);
    if (n >= 0) return n;
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return -1;
    if (now_ns() - start > limit_ns) return -1;
  }
}

int main(int argc, char **argv) {
  if (argc < 6 || (strcmp(argv[1], "server") != 0 && strcmp(argv[1], "client") != 0) || (strcmp(argv[1], "client") == 0 && argc < 7)) {
    fprintf(stderr, "usage: udp_pingpong server BIND_IP PORT ITERS SIZE | client SERVER_IP PORT ITERS SIZE WARMUP\n");
    return 2;
  }
  const int server = strcmp(argv[1], "server") == 0;
  const long iters = atol(argv[4]);
  const size_t size = (size_t)atol(argv[5]);
  const long warmup = server ? 0 : atol(argv[6]);
  if (iters <= 0 || size == 0 || size > 65000 || warmup < 0) {
    fprintf(stderr, "udp_pingpong: bad ITERS, SIZE or WARMUP\n");
    return 2;
  }
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) {
    perror("socket");
    return 1;
  }
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[3]))};
  if (inet_pton(AF_INET, argv[2], &addr.sin_addr) != 1) {
    fprintf(stderr, "udp_pingpong: bad address %s\n", argv[2]);
    return 2;
  }
  char *buf = calloc(1, size > 2048 ? size : 2048);
  if (buf == NULL) return 1;
  if (server) {
    if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
      perror("bind");
      return 1;
    }
    /* The server learns ITERS + WARMUP from nothing: it echoes until 30 s pass without a message. */
    for (;;) {
      struct sockaddr_in from;
      ssize_t n = spin_recv(fd, buf, size > 2048 ? size : 2048, 30000000000ull, &from);
      if (n < 0) break;
      if (n == 1 && buf[0] == 'q') break; /* the client's goodbye */
      if (sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&from, sizeof(from)) < 0) {
        perror("sendto");
        return 1;
      }
    }
    return 0;
  }
  if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
    perror("connect");
    return 1;
  }
  uint64_t *rtt = calloc((size_t)iters, sizeof(uint64_t));
  if (rtt == NULL) return 1;
  for (long i = 0; i < warmup + iters; i++) {
    memset(buf, (int)(i & 0x7f) | 1, size);
    const uint64_t t0 = now_ns();
    if (send(fd, buf, size, 0) < 0) {
      perror("send");
      return 1;
    }
    struct sockaddr_in from;
    ssize_t n = spin_recv(fd, buf, size, 1000000000ull, &from);
    const uint64_t t1 = now_ns();
    if (n != (ssize_t)size) {
      printf("{\"ok\":false,\"error\":\"round trip %ld: no reply within 1 s\"}\n", i);
      return 1;
    }
    if (i >= warmup) rtt[i - warmup] = t1 - t0;
  }
  send(fd, "q", 1, 0);
  latency_report(rtt, iters, size);
  return 0;
}
