// SPDX-License-Identifier: MIT
/*
 * xdp_pair: the packets/s ceiling of AF_XDP on this machine, for
 * bench/netns-network.ts. A minimal sender and receiver in C over libxdp's
 * xsk API, nothing else per packet: the sender transmits copies of one UDP
 * frame to port 4791 from a prefilled UMEM; the receiver counts frames (and
 * bytes) and hands the buffers straight back to the fill ring.
 *
 *   xdp_pair tx IFNAME SECONDS FRAME_LEN SRC_MAC DST_MAC SRC_IP DST_IP [native|skb]
 *   xdp_pair rx IFNAME SECONDS BPF_OBJECT [native|skb]
 *
 * Both sides bind in copy mode with need_wakeup; frames larger than a UMEM
 * frame less the XDP headroom use multi-buffer AF_XDP (XDP_USE_SG), as the
 * roce-ts driver does. The receiver attaches roce-ts's frags-aware XDP
 * program (native/build/roce_filter.bpf.o), which redirects UDP 4791 to the
 * socket. The receiver's clock starts at its first frame and it prints one
 * JSON line: {"frames":N,"bytes":B,"seconds":S}. The sender prints
 * {"sent":N,"seconds":S}.
 *
 * Built by bench/netns-network.ts: cc -O2 -o xdp_pair xdp_pair.c $(pkg-config --cflags --libs libxdp libbpf) -lelf -lz
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
#include <poll.h>
#include <signal.h>
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

#ifndef XDP_USE_SG
#define XDP_USE_SG (1 << 4) /* bookworm's headers predate multi-buffer AF_XDP */
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD (1 << 0)
#endif

#define FRAME_SIZE 4096u
#define NUM_FRAMES 4096u
#define RING 2048u
#define BATCH 64u
#define HEADROOM 256u

static volatile sig_atomic_t stop_flag;
static void on_signal(int s) { (void)s; stop_flag = 1; }

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void die(const char *what, int err) { die_prog("xdp_pair", what, err); }

struct sock {
  void *area;
  struct xsk_umem *umem;
  struct xsk_socket *xsk;
  struct xsk_ring_prod fq, tx;
  struct xsk_ring_cons cq, rx;
};

static void open_sock(struct sock *s, const char *ifname, int want_rx, int sg) {
  const size_t bytes = (size_t)FRAME_SIZE * NUM_FRAMES;
  s->area = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (s->area == MAP_FAILED) die("mmap", errno);
  struct xsk_umem_config uc = {.fill_size = RING, .comp_size = RING, .frame_size = FRAME_SIZE, .frame_headroom = 0};
  int r = xsk_umem__create(&s->umem, s->area, bytes, &s->fq, &s->cq, &uc);
  if (r) die("xsk_umem__create", r);
  struct xsk_socket_config sc;
  memset(&sc, 0, sizeof sc);
  sc.rx_size = want_rx ? RING : 0;
  sc.tx_size = want_rx ? 0 : RING;
  sc.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;
  sc.bind_flags = XDP_USE_NEED_WAKEUP | XDP_COPY | (sg ? XDP_USE_SG : 0);
  r = xsk_socket__create(&s->xsk, ifname, 0, s->umem, want_rx ? &s->rx : NULL, want_rx ? NULL : &s->tx, &sc);
  if (r) die("xsk_socket__create", r);
}

static int run_tx(const char *ifname, double secs, unsigned len, const char *smac, const char *dmac, const char *sip, const char *dip) {
  if (len < 64 || len > 2 * FRAME_SIZE) die("frame length must be 64..8192", EINVAL);
  const int sg = len > FRAME_SIZE;
  struct sock s;
  open_sock(&s, ifname, 0, sg);
  uint8_t f[2 * FRAME_SIZE];
  memset(f, 0x5a, sizeof f);
  if (put_udp_headers(f, len, smac, dmac, sip, dip) != 0) die("bad MAC or IP address", EINVAL);
  // Every UMEM frame (or pair of frames) holds a copy of the packet: transmit never writes data.
  const unsigned per = sg ? 2 : 1;
  const unsigned slots = NUM_FRAMES / per;
  for (unsigned i = 0; i < slots; i++) {
    uint8_t *base = (uint8_t *)s.area + (size_t)i * per * FRAME_SIZE;
    if (!sg) memcpy(base, f, len);
    else {
      memcpy(base, f, FRAME_SIZE);
      memcpy(base + FRAME_SIZE, f + FRAME_SIZE, len - FRAME_SIZE);
    }
  }
  unsigned next = 0, outstanding = 0;
  uint64_t sent = 0;
  const double t0 = now_s();
  while (!stop_flag && now_s() - t0 < secs) {
    uint32_t idx;
    const uint32_t done = xsk_ring_cons__peek(&s.cq, RING, &idx);
    if (done) {
      xsk_ring_cons__release(&s.cq, done);
      outstanding -= done;
    }
    unsigned frames = BATCH;
    if (outstanding + frames * per > RING) frames = (RING - outstanding) / per;
    if (frames > 0) {
      const uint32_t got = xsk_ring_prod__reserve(&s.tx, frames * per, &idx);
      const unsigned n = got / per;
      for (unsigned k = 0; k < n; k++) {
        const uint64_t addr = (uint64_t)((next + k) % slots) * per * FRAME_SIZE;
        for (unsigned p = 0; p < per; p++) {
          struct xdp_desc *d = xsk_ring_prod__tx_desc(&s.tx, idx + k * per + p);
          d->addr = addr + (uint64_t)p * FRAME_SIZE;
          d->len = sg ? (p == 0 ? FRAME_SIZE : len - FRAME_SIZE) : len;
          d->options = (sg && p == 0) ? XDP_PKT_CONTD : 0;
        }
      }
      if (n) {
        xsk_ring_prod__submit(&s.tx, n * per);
        next = (next + n) % slots;
        outstanding += n * per;
        sent += n;
      }
    }
    if (xsk_ring_prod__needs_wakeup(&s.tx)) sendto(xsk_socket__fd(s.xsk), NULL, 0, MSG_DONTWAIT, NULL, 0);
  }
  printf("{\"sent\":%llu,\"seconds\":%.6f}\n", (unsigned long long)sent, now_s() - t0);
  xsk_socket__delete(s.xsk);
  xsk_umem__delete(s.umem);
  return 0;
}

static int run_rx(const char *ifname, double secs, const char *obj_path, enum xdp_attach_mode mode) {
  const int ifindex = (int)if_nametoindex(ifname);
  if (ifindex == 0) die(ifname, errno);
  unsigned mtu = 1500;
  {
    char p[256];
    snprintf(p, sizeof p, "/sys/class/net/%s/mtu", ifname);
    FILE *fp = fopen(p, "r");
    if (fp) {
      if (fscanf(fp, "%u", &mtu) != 1) mtu = 1500;
      fclose(fp);
    }
  }
  const int sg = mtu + 18 > FRAME_SIZE - HEADROOM;
  struct bpf_object *obj = bpf_object__open_file(obj_path, NULL);
  if (!obj) die(obj_path, errno);
  struct xdp_program *prog = xdp_program__from_bpf_obj(obj, "xdp.frags");
  if (!prog || libxdp_get_error(prog)) die("xdp_program__from_bpf_obj", EINVAL);
  xdp_program__set_xdp_frags_support(prog, true);
  int r = xdp_program__attach(prog, ifindex, mode, 0);
  if (r) die("xdp_program__attach", r);
  struct sock s;
  open_sock(&s, ifname, 1, sg);
  struct bpf_map *m = bpf_object__find_map_by_name(xdp_program__bpf_obj(prog), "xsks_map");
  if (!m) die("xsks_map", ENOENT);
  r = xsk_socket__update_xskmap(s.xsk, bpf_map__fd(m));
  if (r) die("xsk_socket__update_xskmap", r);
  uint32_t idx;
  if (xsk_ring_prod__reserve(&s.fq, RING, &idx) != RING) die("fill ring", ENOSPC);
  for (unsigned i = 0; i < RING; i++) *xsk_ring_prod__fill_addr(&s.fq, idx + i) = (uint64_t)i * FRAME_SIZE;
  xsk_ring_prod__submit(&s.fq, RING);
  printf("{\"ready\":true}\n");
  fflush(stdout);
  uint64_t frames = 0, bytes = 0;
  double t0 = 0, last = 0;
  const double start = now_s();
  struct pollfd pfd = {.fd = xsk_socket__fd(s.xsk), .events = POLLIN};
  while (!stop_flag) {
    const double t = now_s();
    if (t0 > 0 && t - t0 >= secs) break;
    if (t0 == 0 && t - start > secs + 20) break;  // nothing came
    const uint32_t got = xsk_ring_cons__peek(&s.rx, BATCH * 2, &idx);
    if (got == 0) {
      if (xsk_ring_prod__needs_wakeup(&s.fq)) poll(&pfd, 1, 100);
      continue;
    }
    if (t0 == 0) t0 = t;
    uint32_t fidx;
    while (xsk_ring_prod__reserve(&s.fq, got, &fidx) != got) {
    }
    for (uint32_t i = 0; i < got; i++) {
      const struct xdp_desc *d = xsk_ring_cons__rx_desc(&s.rx, idx + i);
      bytes += d->len;
      if (!(d->options & XDP_PKT_CONTD)) frames++;
      *xsk_ring_prod__fill_addr(&s.fq, fidx + i) = d->addr & ~(uint64_t)(FRAME_SIZE - 1);
    }
    xsk_ring_cons__release(&s.rx, got);
    xsk_ring_prod__submit(&s.fq, got);
    last = now_s();
  }
  printf("{\"frames\":%llu,\"bytes\":%llu,\"seconds\":%.6f}\n", (unsigned long long)frames, (unsigned long long)bytes, t0 > 0 ? last - t0 : 0.0);
  xsk_socket__delete(s.xsk);
  xsk_umem__delete(s.umem);
  xdp_program__detach(prog, ifindex, mode, 0);
  xdp_program__close(prog);
  return 0;
}

int main(int argc, char **argv) {
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  struct rlimit rl = {RLIM_INFINITY, RLIM_INFINITY};
  setrlimit(RLIMIT_MEMLOCK, &rl);
  libbpf_set_print(NULL);
  if (argc >= 9 && strcmp(argv[1], "tx") == 0) return run_tx(argv[2], atof(argv[3]), (unsigned)atoi(argv[4]), argv[5], argv[6], argv[7], argv[8]);
  if (argc >= 5 && strcmp(argv[1], "rx") == 0) {
    const enum xdp_attach_mode mode = argc >= 6 && strcmp(argv[5], "skb") == 0 ? XDP_MODE_SKB : XDP_MODE_NATIVE;
    return run_rx(argv[2], atof(argv[3]), argv[4], mode);
  }
  fprintf(stderr, "usage: xdp_pair tx IFNAME SECONDS FRAME_LEN SRC_MAC DST_MAC SRC_IP DST_IP\n       xdp_pair rx IFNAME SECONDS BPF_OBJECT [native|skb]\n");
  return 2;
}
