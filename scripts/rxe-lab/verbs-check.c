/*
 * verbs-check: the memory-protection verbs of rdma_rxe, driven from user space through libibverbs
 * (rdma-core 44), against a peer that speaks the same small TCP protocol (roce-ts's
 * `roce verbs-check`, apps/verbs-check/). One side is the requester, the other the responder.
 *
 *   verbs-check -r requester|responder [-p PORT] [-g GIDX] [PEER]    (PEER: connect; none: listen)
 *   verbs-check -r loopback [-p PORT] [-g GIDX]                       (both ends on this device)
 *
 * Exchange (text lines over TCP):
 *   both:  "HELLO <gid 32 hex> <qpn>:<psn> x9"                    nine RC QPs, Q0..Q8
 *   responder, once its QPs are in RTS and its windows bound:
 *          "KEYS <va> <mr rkey> <noflush va> <noflush rkey> <mw1 rkey> <mw2 rkey> <mw2b rkey> <flush 0|1>
 *                <fr va> <fr rkey> <fr next rkey>"
 *          (the fast-registration region: always 0 0 0 from this program, since libibverbs has no
 *          REG_MR work request; roce-ts's responder offers one, and the requester runs the fr_*
 *          cases only then)
 *   then per case: requester "CASE <name>", responder (after its local step) "READY", requester
 *   (after the completion) "DONE", responder "SAW <what it saw>".
 *   last: requester "BYE".
 *
 * One line per case on standard output, machine-readable:
 *   VC role=requester case=<name> status=<ibv_wc_status number> opcode=<n> vendor_err="<n>" status_name=<text>
 *   VC role=responder case=<name> saw=<comma list: wc=<status>/<opcode>[/len=<n>/flags=<hex wc_flags>[/rkey=mw2]], then qp=<state>>
 *
 * FLUSH: rdma-core 44 has no ibv_wr_flush (it came in 45) but the kernel's rxe (6.2 and later) reads
 * the opcode and its fields from the WQE that user space writes into the shared send queue (uapi
 * rdma/rdma_user_rxe.h struct rxe_send_wr: opcode at byte 12, wr.flush at byte 24: remote_addr u64,
 * length u32, rkey u32, type u8, level u8). The requester builds an RDMA WRITE WQE with the
 * extended API, finds it in the queue by its wr_id before ibv_wr_complete() publishes it, and turns
 * it into IB_WR_FLUSH (14). The MR and QP flush rights are IB_ACCESS_FLUSH_GLOBAL (1 << 8).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NQP 9
#define BUF_SIZE 65536
#define ACCESS_FLUSH_GLOBAL (1 << 8)
#define WR_FLUSH 14
#define FLUSH_TYPE_GLOBAL 1
#define FLUSH_LEVEL_RANGE 0

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq[NQP];
static struct ibv_qp *qp[NQP];
static uint32_t psn[NQP];
static int gidx = 1;
static int sock = -1;
static FILE *sin_, *sout;
static int flush_ok = 1;

static void die(const char *what) {
  fprintf(stderr, "verbs-check: %s: %s\n", what, strerror(errno));
  printf("VC-ERROR %s\n", what);
  exit(1);
}

static void sendline(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sendline(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfprintf(sout, fmt, ap);
  va_end(ap);
  fputc('\n', sout);
  fflush(sout);
}

static char *readline(char *buf, size_t n) {
  if (fgets(buf, (int)n, sin_) == NULL) die("peer closed the exchange");
  buf[strcspn(buf, "\r\n")] = 0;
  return buf;
}

static void tcp_open(const char *peer, int port) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  if (peer != NULL) {
    if (inet_pton(AF_INET, peer, &a.sin_addr) != 1) die("PEER must be an IPv4 address");
    for (int i = 0; i < 100; i++) {
      sock = socket(AF_INET, SOCK_STREAM, 0);
      if (connect(sock, (struct sockaddr *)&a, sizeof a) == 0) break;
      close(sock);
      sock = -1;
      usleep(100000);
    }
    if (sock < 0) die("connect");
  } else {
    int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 1) != 0) die("listen");
    sock = accept(l, NULL, NULL);
    if (sock < 0) die("accept");
    close(l);
  }
  sin_ = fdopen(sock, "r");
  sout = fdopen(dup(sock), "w");
}

static const char *qp_state_name(struct ibv_qp *q) {
  struct ibv_qp_attr attr;
  struct ibv_qp_init_attr init;
  if (ibv_query_qp(q, &attr, IBV_QP_STATE, &init) != 0) return "unknown";
  switch (attr.qp_state) {
    case IBV_QPS_RTS: return "RTS";
    case IBV_QPS_ERR: return "ERR";
    case IBV_QPS_SQE: return "SQE";
    case IBV_QPS_RTR: return "RTR";
    default: return "other";
  }
}

/* Waits up to ms for one completion on cq n; 0 when one came. */
static int poll_one(int n, struct ibv_wc *wc, int ms) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    int r = ibv_poll_cq(cq[n], 1, wc);
    if (r < 0) die("ibv_poll_cq");
    if (r == 1) return 0;
    clock_gettime(CLOCK_MONOTONIC, &t);
    if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > ms) return -1;
    usleep(1000);
  }
}

static void setup(void) {
  int num;
  struct ibv_device **list = ibv_get_device_list(&num);
  if (list == NULL || num == 0) die("no RDMA device");
  ctx = ibv_open_device(list[0]);
  if (ctx == NULL) die("ibv_open_device");
  pd = ibv_alloc_pd(ctx);
  if (pd == NULL) die("ibv_alloc_pd");
  srand48(getpid() ^ time(NULL));
  for (int i = 0; i < NQP; i++) {
    cq[i] = ibv_create_cq(ctx, 64, NULL, NULL, 0);
    if (cq[i] == NULL) die("ibv_create_cq");
    struct ibv_qp_init_attr_ex a = {
        .send_cq = cq[i], .recv_cq = cq[i], .qp_type = IBV_QPT_RC,
        .cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1},
        .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, .pd = pd,
        .send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_INV |
                          IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_ATOMIC_WRITE,
    };
    qp[i] = ibv_create_qp_ex(ctx, &a);
    if (qp[i] == NULL) die("ibv_create_qp_ex");
    psn[i] = lrand48() & 0xffffff;
    int base = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    struct ibv_qp_attr m = {.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1, .qp_access_flags = base | (flush_ok ? ACCESS_FLUSH_GLOBAL : 0)};
    int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
    if (ibv_modify_qp(qp[i], &m, mask) != 0) {
      /* A kernel without FLUSH (before 6.2) refuses the flush right. */
      flush_ok = 0;
      m.qp_access_flags = base;
      if (ibv_modify_qp(qp[i], &m, mask) != 0) die("modify QP to INIT");
    }
  }
}

static void connect_qps(const union ibv_gid *rgid, const uint32_t *rqpn, const uint32_t *rpsn) {
  for (int i = 0; i < NQP; i++) {
    struct ibv_qp_attr a = {
        .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = rqpn[i], .rq_psn = rpsn[i],
        .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
        .ah_attr = {.is_global = 1, .grh = {.dgid = *rgid, .sgid_index = gidx, .hop_limit = 1}, .port_num = 1},
    };
    if (ibv_modify_qp(qp[i], &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0) die("modify QP to RTR");
    struct ibv_qp_attr b = {.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7, .sq_psn = psn[i], .max_rd_atomic = 1};
    if (ibv_modify_qp(qp[i], &b, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) != 0) die("modify QP to RTS");
  }
}

static void hello(void) {
  union ibv_gid gid, rgid;
  char line[512], *p;
  if (ibv_query_gid(ctx, 1, gidx, &gid) != 0) die("ibv_query_gid");
  char hex[33];
  for (int i = 0; i < 16; i++) sprintf(hex + 2 * i, "%02x", gid.raw[i]);
  char msg[400];
  int off = snprintf(msg, sizeof msg, "HELLO %s", hex);
  for (int i = 0; i < NQP; i++) off += snprintf(msg + off, sizeof msg - off, " %u:%u", qp[i]->qp_num, psn[i]);
  sendline("%s", msg);
  readline(line, sizeof line);
  if (strncmp(line, "HELLO ", 6) != 0 || strlen(line) < 6 + 32) die("bad HELLO");
  for (int i = 0; i < 16; i++) {
    unsigned v;
    sscanf(line + 6 + 2 * i, "%2x", &v);
    rgid.raw[i] = (uint8_t)v;
  }
  uint32_t rqpn[NQP], rpsn[NQP];
  p = line + 6 + 32;
  for (int i = 0; i < NQP; i++) {
    unsigned q, s;
    int n;
    if (sscanf(p, " %u:%u%n", &q, &s, &n) != 2) die("bad HELLO QP list");
    rqpn[i] = q;
    rpsn[i] = s;
    p += n;
  }
  connect_qps(&rgid, rqpn, rpsn);
}

/* ---------------------------------------------------------------- responder */

static int responder(void) {
  static uint8_t buf[BUF_SIZE] __attribute__((aligned(4096)));
  static uint8_t buf2[BUF_SIZE] __attribute__((aligned(4096)));
  static uint8_t rbuf[4096];
  char line[256];
  int all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND;
  struct ibv_mr *mr = ibv_reg_mr(pd, buf, BUF_SIZE, all | (flush_ok ? ACCESS_FLUSH_GLOBAL : 0));
  if (mr == NULL && flush_ok) {
    flush_ok = 0;
    mr = ibv_reg_mr(pd, buf, BUF_SIZE, all);
  }
  if (mr == NULL) die("ibv_reg_mr");
  struct ibv_mr *nf = ibv_reg_mr(pd, buf2, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  struct ibv_mr *rmr = ibv_reg_mr(pd, rbuf, sizeof rbuf, IBV_ACCESS_LOCAL_WRITE);
  if (nf == NULL || rmr == NULL) die("ibv_reg_mr");
  hello();
  /* A receive on Q0 for the SEND with invalidate. */
  struct ibv_sge rs = {.addr = (uintptr_t)rbuf, .length = sizeof rbuf, .lkey = rmr->lkey};
  struct ibv_recv_wr rwr = {.wr_id = 100, .sg_list = &rs, .num_sge = 1}, *bad;
  if (ibv_post_recv(qp[0], &rwr, &bad) != 0) die("ibv_post_recv");
  struct ibv_wc wc;
  /* Type 1 over [4096, 8192) with the bind verb; type 2 over [8192, 12288) bound on Q0, and
   * another type 2 over [12288, 16384) bound on Q3 (for LOCAL_INV). */
  struct ibv_mw *mw1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
  struct ibv_mw *mw2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
  struct ibv_mw *mw2b = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
  if (mw1 == NULL || mw2 == NULL || mw2b == NULL) die("ibv_alloc_mw");
  int mwacc = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  struct ibv_mw_bind b1 = {.wr_id = 1, .send_flags = IBV_SEND_SIGNALED, .bind_info = {.mr = mr, .addr = (uintptr_t)buf + 4096, .length = 4096, .mw_access_flags = mwacc}};
  if (ibv_bind_mw(qp[0], mw1, &b1) != 0) die("ibv_bind_mw");
  if (poll_one(0, &wc, 2000) != 0 || wc.status != IBV_WC_SUCCESS) die("type 1 bind did not complete");
  uint32_t k2 = ibv_inc_rkey(mw2->rkey), k2b = ibv_inc_rkey(mw2b->rkey);
  struct {
    int q;
    struct ibv_mw *mw;
    uint32_t key;
    size_t off;
  } binds[2] = {{0, mw2, k2, 8192}, {3, mw2b, k2b, 12288}};
  for (int i = 0; i < 2; i++) {
    struct ibv_send_wr w = {.wr_id = 2, .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED};
    w.bind_mw.mw = binds[i].mw;
    w.bind_mw.rkey = binds[i].key;
    w.bind_mw.bind_info = (struct ibv_mw_bind_info){.mr = mr, .addr = (uintptr_t)buf + binds[i].off, .length = 4096, .mw_access_flags = mwacc};
    struct ibv_send_wr *bw;
    if (ibv_post_send(qp[binds[i].q], &w, &bw) != 0) die("BIND_MW post");
    if (poll_one(binds[i].q, &wc, 2000) != 0 || wc.status != IBV_WC_SUCCESS) die("type 2 bind did not complete");
  }
  sendline("KEYS %llx %x %llx %x %x %x %x %d 0 0 0", (unsigned long long)(uintptr_t)buf, mr->rkey, (unsigned long long)(uintptr_t)buf2, nf->rkey, mw1->rkey, k2, k2b, flush_ok);
  for (;;) {
    readline(line, sizeof line);
    if (strcmp(line, "BYE") == 0) break;
    if (strncmp(line, "CASE ", 5) != 0) die("expected CASE");
    char name[64];
    int qn = 0;
    snprintf(name, sizeof name, "%.63s", line + 5);
    char *sp = strchr(name, ' ');
    if (sp != NULL) {
      qn = atoi(sp + 1);
      *sp = 0;
    }
    char saw[256] = "";
    if (strcmp(name, "mw2b_after_local_inv") == 0) {
      /* LOCAL_INV of the window on the QP it is bound to. */
      struct ibv_send_wr w = {.wr_id = 3, .opcode = IBV_WR_LOCAL_INV, .send_flags = IBV_SEND_SIGNALED, .invalidate_rkey = k2b}, *bw;
      if (ibv_post_send(qp[3], &w, &bw) != 0) die("LOCAL_INV post");
      if (poll_one(3, &wc, 2000) != 0) die("LOCAL_INV did not complete");
      snprintf(saw, sizeof saw, "local_inv=%d,", wc.status);
    } else if (strcmp(name, "inv_user_mr") == 0) {
      /* A receive for the SEND with invalidate that names the ordinary region. */
      struct ibv_recv_wr r2 = {.wr_id = 101, .sg_list = &rs, .num_sge = 1}, *bad2;
      if (ibv_post_recv(qp[qn], &r2, &bad2) != 0) die("ibv_post_recv");
    }
    sendline("READY");
    readline(line, sizeof line);
    if (strcmp(line, "DONE") != 0) die("expected DONE");
    /* What this side saw: a receive completion, or its QP in the error state. */
    size_t o = strlen(saw);
    int got = 0;
    while (poll_one(qn, &wc, 50) == 0) {
      got = 1;
      o += snprintf(saw + o, sizeof saw - o, "wc=%d/%d", wc.status, wc.opcode);
      /* A receive: its length, its flags as libibverbs reads them, and whether its immediate /
       * invalidated R_Key field names the type 2 window the SEND with invalidate named. */
      if (wc.status == IBV_WC_SUCCESS && (wc.opcode & IBV_WC_RECV)) {
        o += snprintf(saw + o, sizeof saw - o, "/len=%u/flags=%x", wc.byte_len, wc.wc_flags);
        if (wc.invalidated_rkey == k2) o += snprintf(saw + o, sizeof saw - o, "/rkey=mw2");
      }
      o += snprintf(saw + o, sizeof saw - o, ",");
    }
    (void)got;
    snprintf(saw + o, sizeof saw - o, "qp=%s", qp_state_name(qp[qn]));
    printf("VC role=responder case=%s saw=%s\n", name, saw);
    fflush(stdout);
    sendline("SAW %s", saw);
  }
  return 0;
}

/* ---------------------------------------------------------------- requester */

static struct ibv_mr *lmr;
static uint8_t *lbuf;
static uint64_t magic = 0x5643000000000000ull;

/* Finds the WQE whose wr_id is `id` in this process's mappings of the uverbs device. */
static uint8_t *find_wqe(uint64_t id) {
  FILE *f = fopen("/proc/self/maps", "r");
  char l[512];
  uint8_t *hit = NULL;
  while (f != NULL && hit == NULL && fgets(l, sizeof l, f) != NULL) {
    unsigned long a, b;
    if (strstr(l, "uverbs") == NULL || sscanf(l, "%lx-%lx", &a, &b) != 2) continue;
    for (unsigned long p = a; p + 8 <= b; p += 8)
      if (*(uint64_t *)p == id) {
        hit = (uint8_t *)p;
        break;
      }
  }
  if (f != NULL) fclose(f);
  return hit;
}

struct keys {
  unsigned long long va, nfva, frva;
  uint32_t mr, nf, mw1, mw2, mw2b, fr, fr2;
  int flush;
};

/* Posts the case's work request on QP n; returns 0 when posted, else the errno of the post. */
static int post_case(const char *name, int n, const struct keys *k) {
  struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qp[n]);
  uint64_t id = ++magic;
  x->wr_id = id;
  x->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_start(x);
  if (strcmp(name, "mw1_write") == 0) {
    ibv_wr_rdma_write(x, k->mw1, k->va + 4096 + 64);
    ibv_wr_set_sge(x, lmr->lkey, (uintptr_t)lbuf, 64);
  } else if (strcmp(name, "mw2_write") == 0 || strcmp(name, "mw2_other_qp") == 0 || strcmp(name, "mw2_after_inv") == 0) {
    ibv_wr_rdma_write(x, k->mw2, k->va + 8192 + 64);
    ibv_wr_set_sge(x, lmr->lkey, (uintptr_t)lbuf, 64);
  } else if (strcmp(name, "mw2b_write") == 0 || strcmp(name, "mw2b_after_local_inv") == 0) {
    ibv_wr_rdma_write(x, k->mw2b, k->va + 12288 + 64);
    ibv_wr_set_sge(x, lmr->lkey, (uintptr_t)lbuf, 64);
  } else if (strcmp(name, "send_inv") == 0 || strcmp(name, "inv_user_mr") == 0 || strcmp(name, "fr_send_inv") == 0) {
    ibv_wr_send_inv(x, strcmp(name, "send_inv") == 0 ? k->mw2 : strcmp(name, "inv_user_mr") == 0 ? k->mr : k->fr);
    ibv_wr_set_sge(x, lmr->lkey, (uintptr_t)lbuf, 32);
  } else if (strcmp(name, "fr_write") == 0 || strcmp(name, "fr_after_inv") == 0 || strcmp(name, "fr_rereg_old") == 0 || strcmp(name, "fr_rereg") == 0) {
    ibv_wr_rdma_write(x, strcmp(name, "fr_rereg") == 0 ? k->fr2 : k->fr, k->frva + 64);
    ibv_wr_set_sge(x, lmr->lkey, (uintptr_t)lbuf, 64);
  } else if (strcmp(name, "atomic_write") == 0) {
    uint64_t v = 0x0123456789abcdefull;
    ibv_wr_atomic_write(x, k->mr, k->va + 256, &v);
  } else if (strcmp(name, "flush") == 0 || strcmp(name, "flush_no_right") == 0) {
    int nr = strcmp(name, "flush_no_right") == 0;
    uint64_t va = nr ? k->nfva : k->va;
    uint32_t rkey = nr ? k->nf : k->mr, len = 4096;
    ibv_wr_rdma_write(x, rkey, va);
    ibv_wr_set_sge(x, lmr->lkey, (uintptr_t)lbuf, len);
    uint8_t *w = find_wqe(id);
    if (w == NULL) {
      ibv_wr_abort(x);
      return ENOENT;
    }
    *(uint32_t *)(w + 12) = WR_FLUSH;
    *(uint64_t *)(w + 24) = va;
    *(uint32_t *)(w + 32) = len;
    *(uint32_t *)(w + 36) = rkey;
    w[40] = FLUSH_TYPE_GLOBAL;
    w[41] = FLUSH_LEVEL_RANGE;
  } else {
    ibv_wr_abort(x);
    return EINVAL;
  }
  return ibv_wr_complete(x);
}

static int requester(void) {
  char line[512];
  lbuf = aligned_alloc(4096, BUF_SIZE);
  memset(lbuf, 0x5a, BUF_SIZE);
  lmr = ibv_reg_mr(pd, lbuf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE);
  if (lmr == NULL) die("ibv_reg_mr");
  hello();
  struct keys k;
  readline(line, sizeof line);
  if (sscanf(line, "KEYS %llx %x %llx %x %x %x %x %d %llx %x %x", &k.va, &k.mr, &k.nfva, &k.nf, &k.mw1, &k.mw2, &k.mw2b, &k.flush, &k.frva, &k.fr, &k.fr2) != 11)
    die("bad KEYS");
  static const struct {
    const char *name;
    int q;
  } cases[] = {
      {"mw1_write", 0}, {"mw2_write", 0}, {"mw2_other_qp", 1}, {"atomic_write", 0}, {"flush", 5}, {"flush_no_right", 4},
      {"send_inv", 0}, {"mw2_after_inv", 0}, {"mw2b_write", 3}, {"mw2b_after_local_inv", 3}, {"inv_user_mr", 2},
      {"fr_write", 6}, {"fr_send_inv", 6}, {"fr_after_inv", 6}, {"fr_rereg_old", 7}, {"fr_rereg", 8},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *name = cases[i].name;
    int n = cases[i].q;
    /* A responder without a fast-registration region offers key 0. */
    if (strncmp(name, "fr_", 3) == 0 && k.fr == 0) continue;
    sendline("CASE %s %d", name, n);
    readline(line, sizeof line);
    if (strcmp(line, "READY") != 0) die("expected READY");
    int rc = post_case(name, n, &k);
    struct ibv_wc wc = {0};
    if (rc != 0) {
      printf("VC role=requester case=%s post_error=%d\n", name, rc);
    } else if (poll_one(n, &wc, 5000) != 0) {
      printf("VC role=requester case=%s status=none\n", name);
    } else {
      printf("VC role=requester case=%s status=%d opcode=%d vendor_err=\"%u\" status_name=%s\n", name, wc.status, wc.opcode, wc.vendor_err, ibv_wc_status_str(wc.status));
    }
    fflush(stdout);
    sendline("DONE");
    readline(line, sizeof line);
    if (strncmp(line, "SAW ", 4) != 0) die("expected SAW");
    printf("VC role=peer-responder case=%s saw=%s\n", name, line + 4);
    fflush(stdout);
  }
  sendline("BYE");
  return 0;
}

int main(int argc, char **argv) {
  const char *role = NULL, *peer = NULL;
  int port = 18530, c;
  while ((c = getopt(argc, argv, "r:p:g:")) != -1) {
    if (c == 'r') role = optarg;
    else if (c == 'p') port = atoi(optarg);
    else if (c == 'g') gidx = atoi(optarg);
    else return 2;
  }
  if (optind < argc) peer = argv[optind];
  if (role == NULL || (strcmp(role, "requester") != 0 && strcmp(role, "responder") != 0 && strcmp(role, "loopback") != 0)) {
    fprintf(stderr, "usage: verbs-check -r requester|responder|loopback [-p PORT] [-g GIDX] [PEER]\n");
    return 2;
  }
  if (strcmp(role, "loopback") == 0) {
    /* Both ends on this rxe device (rxe loops a packet for its own GID back inside the kernel): a
     * responder process, and this one the requester connected to it over 127.0.0.1. */
    fflush(stdout);
    pid_t child = fork();
    if (child < 0) die("fork");
    if (child == 0) {
      role = "responder";
      peer = NULL;
    } else {
      role = "requester";
      peer = "127.0.0.1";
    }
    setup();
    tcp_open(peer, port);
    printf("VC-START role=%s flush=%d\n", role, flush_ok);
    fflush(stdout);
    if (child == 0) return responder();
    int rc = requester(), st = 0;
    waitpid(child, &st, 0);
    return rc != 0 ? rc : WIFEXITED(st) ? WEXITSTATUS(st) : 1;
  }
  setup();
  tcp_open(peer, port);
  printf("VC-START role=%s flush=%d\n", role, flush_ok);
  fflush(stdout);
  return strcmp(role, "responder") == 0 ? responder() : requester();
}
