// SPDX-License-Identifier: MIT
/*
 * xdp_pingpong: the AF_XDP round-trip floor for `roce pingpong`'s latency in
 * bench/netns-network.ts. Each end attaches roce-ts's XDP program
 * (BPF_OBJECT: native/build/roce_filter.bpf.o, which redirects UDP 4791 to the socket),
 * binds one AF_XDP socket (copy mode, need_wakeup) to queue 0, and
 * busy-polls its receive ring without sleeping. The client sends one UDP 4791
 * frame of FRAME_LEN bytes, waits for one back, and repeats; the server sends
 * one back for each it receives. Nothing else happens per frame: no headers are
 * parsed, no ICRC is computed, so this is what AF_XDP itself costs on this
 * link, the part of `roce pingpong`'s round trip the stack cannot remove.
 *
 *   xdp_pingpong server IFNAME BPF_OBJECT FRAME_LEN SRC_MAC DST_MAC SRC_IP DST_IP SECONDS
 *   xdp_pingpong client IFNAME BPF_OBJECT FRAME_LEN SRC_MAC DST_MAC SRC_IP DST_IP ITERS WARMUP
 *
 * The server prints {"ready":true} once it listens, and runs until SECONDS
 * pass without a frame. The client sends WARMUP untimed round trips, times
 * ITERS, and prints one JSON line (latency_report.h). A round trip over 1 s
 * ends the run with an error, so a lost frame cannot hang it.
 *
 * Built by bench/netns-network.ts:
 *   cc -O2 -o xdp_pingpong xdp_pingpong.c $(pkg-config --cflags --libs libxdp libbpf) -lelf -lz -lm
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include <xdp/xsk.h>

#include "frame_util.h"

#include "latency_report.h"

#define FRAME_SIZE 4096u
#define NUM_FRAMES 1024u
#define RING 512u
/* The UMEM frame the transmit side sends from: above the ones the fill ring lends out. */
#define TX_FRAME (NUM_FRAMES - 1)

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void die(const char *what, int err) { die_prog("xdp_pingpong", what, err); }

struct end {
  void *area;
  struct xsk_umem *umem;
  struct xsk_socket *xsk;
  struct xsk_ring_prod fq, tx;
  struct xsk_ring_cons cq, rx;
  struct xdp_program *prog;
  int ifindex;
  unsigned len;
};

static void open_end(struct end *e, const char *ifname, const char *obj_path, unsigned len, const char *smac, const char *dmac, const char *sip, const char *dip) {
  if (len < 64 || len > FRAME_SIZE - 256) die("FRAME_LEN must be 64..3840", EINVAL);
  e->len = len;
  e->ifindex = (int)if_nametoindex(ifname);
  if (e->ifindex == 0) die(ifname, errno);
  struct bpf_object *obj = bpf_object__open_file(obj_path, NULL);
  if (!obj) die(obj_path, errno);
  e->prog = xdp_program__from_bpf_obj(obj, "xdp.frags");
  if (!e->prog || libxdp_get_error(e->prog)) die("xdp_program__from_bpf_obj", EINVAL);
  xdp_program__set_xdp_frags_support(e->prog, true);
  int r = xdp_program__attach(e->prog, e->ifindex, XDP_MODE_NATIVE, 0);
  if (r) die("xdp_program__attach", r);
  const size_t bytes = (size_t)FRAME_SIZE * NUM_FRAMES;
  e->area = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (e->area == MAP_FAILED) die("mmap", errno);
  struct xsk_umem_config uc = {.fill_size = RING, .comp_size = RING, .frame_size = FRAME_SIZE, .frame_headroom = 0};
  r = xsk_umem__create(&e->umem, e->area, bytes, &e->fq, &e->cq, &uc);
  if (r) die("xsk_umem__create", r);
  struct xsk_socket_config sc;
  memset(&sc, 0, sizeof sc);
  sc.rx_size = RING;
  sc.tx_size = RING;
  sc.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;
  sc.bind_flags = XDP_USE_NEED_WAKEUP | XDP_COPY;
  r = xsk_socket__create(&e->xsk, ifname, 0, e->umem, &e->rx, &e->tx, &sc);
  if (r) die("xsk_socket__create", r);
  struct bpf_map *m = bpf_object__find_map_by_name(xdp_program__bpf_obj(e->prog), "xsks_map");
  if (!m) die("xsks_map", ENOENT);
  r = xsk_socket__update_xskmap(e->xsk, bpf_map__fd(m));
  if (r) die("xsk_socket__update_xskmap", r);
  uint32_t idx;
  if (xsk_ring_prod__reserve(&e->fq, RING, &idx) != RING) die("fill ring", ENOSPC);
  for (unsigned i = 0; i < RING; i++) *xsk_ring_prod__fill_addr(&e->fq, idx + i) = (uint64_t)i * FRAME_SIZE;
  xsk_ring_prod__submit(&e->fq, RING);
  /* The frame this end sends, built once in its transmit slot. */
  uint8_t *f = (uint8_t *)e->area + (size_t)TX_FRAME * FRAME_SIZE;
  memset(f, 0x5a, len);
  if (put_udp_headers(f, len, smac, dmac, sip, dip) != 0) die("bad MAC or IP address", EINVAL);
}

static void close_end(struct end *e) {
  xsk_socket__delete(e->xsk);
  xsk_umem__delete(e->umem);
  xdp_program__detach(e->prog, e->ifindex, XDP_MODE_NATIVE, 0);
  xdp_program__close(e->prog);
}

/* Sends the end's frame (one outstanding at a time: the completion of the last is reaped first). */
static void send_one(struct end *e) {
  uint32_t idx;
  const uint32_t done = xsk_ring_cons__peek(&e->cq, RING, &idx);
  if (done) xsk_ring_cons__release(&e->cq, done);
  while (xsk_ring_prod__reserve(&e->tx, 1, &idx) != 1) {
  }
  struct xdp_desc *d = xsk_ring_prod__tx_desc(&e->tx, idx);
  d->addr = (uint64_t)TX_FRAME * FRAME_SIZE;
  d->len = e->len;
  d->options = 0;
  xsk_ring_prod__submit(&e->tx, 1);
  /* Copy mode transmits in the sendto() that wakes the kernel. */
  sendto(xsk_socket__fd(e->xsk), NULL, 0, MSG_DONTWAIT, NULL, 0);
}

/* Spins until a frame arrives (its buffer goes straight back to the fill ring); 0 after `limit_ns`. */
static int recv_one(struct end *e, uint64_t limit_ns) {
  const uint64_t start = now_ns();
  uint32_t idx;
  for (;;) {
    const uint32_t got = xsk_ring_cons__peek(&e->rx, RING, &idx);
    if (got > 0) {
      uint32_t fidx;
      while (xsk_ring_prod__reserve(&e->fq, got, &fidx) != got) {
      }
      for (uint32_t i = 0; i < got; i++) *xsk_ring_prod__fill_addr(&e->fq, fidx + i) = xsk_ring_cons__rx_desc(&e->rx, idx + i)->addr & ~(uint64_t)(FRAME_SIZE - 1);
      xsk_ring_cons__release(&e->rx, got);
      xsk_ring_prod__submit(&e->fq, got);
      return (int)got;
    }
    if (xsk_ring_prod__needs_wakeup(&e->fq)) recvfrom(xsk_socket__fd(e->xsk), NULL, 0, MSG_DONTWAIT, NULL, NULL);
    if (now_ns() - start > limit_ns) return 0;
  }
}

int main(int argc, char **argv) {
  struct rlimit rl = {RLIM_INFINITY, RLIM_INFINITY};
  setrlimit(RLIMIT_MEMLOCK, &rl);
  libbpf_set_print(NULL);
  const int server = argc == 10 && strcmp(argv[1], "server") == 0;
  const int client = argc == 11 && strcmp(argv[1], "client") == 0;
  if (!server && !client) {
    fprintf(stderr,
            "usage: xdp_pingpong server IFNAME BPF_OBJECT FRAME_LEN SRC_MAC DST_MAC SRC_IP DST_IP SECONDS\n"
            "       xdp_pingpong client IFNAME BPF_OBJECT FRAME_LEN SRC_MAC DST_MAC SRC_IP DST_IP ITERS WARMUP\n");
    return 2;
  }
  struct end e;
  open_end(&e, argv[2], argv[3], (unsigned)atoi(argv[4]), argv[5], argv[6], argv[7], argv[8]);
  if (server) {
    const uint64_t quiet_ns = (uint64_t)(atof(argv[9]) * 1e9);
    printf("{\"ready\":true}\n");
    fflush(stdout);
    long echoed = 0;
    for (;;) {
      const int got = recv_one(&e, quiet_ns);
      if (got == 0) break;
      for (int i = 0; i < got; i++) send_one(&e);
      echoed += got;
    }
    printf("{\"echoed\":%ld}\n", echoed);
    close_end(&e);
    return 0;
  }
  const long iters = atol(argv[9]);
  const long warmup = atol(argv[10]);
  if (iters <= 0 || warmup < 0) die("ITERS and WARMUP", EINVAL);
  uint64_t *rtt = calloc((size_t)iters, sizeof(uint64_t));
  if (rtt == NULL) die("calloc", ENOMEM);
  for (long i = 0; i < warmup + iters; i++) {
    const uint64_t t0 = now_ns();
    send_one(&e);
    if (recv_one(&e, 1000000000ull) == 0) {
      printf("{\"ok\":false,\"error\":\"round trip %ld: no frame back within 1 s\"}\n", i);
      close_end(&e);
      return 1;
    }
    if (i >= warmup) rtt[i - warmup] = now_ns() - t0;
  }
  latency_report(rtt, iters, e.len);
  close_end(&e);
  return 0;
}
