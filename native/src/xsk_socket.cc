#include "xsk_socket.h"

#include <linux/if_xdp.h>
#include <net/if.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace roce {

namespace {

// Debian bookworm's linux-libc-dev (6.1) predates multi-buffer AF_XDP (6.6).
#ifndef XDP_USE_SG
#define XDP_USE_SG (1 << 4)
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD (1 << 0)
#endif
#ifndef SO_PREFER_BUSY_POLL
#define SO_PREFER_BUSY_POLL 69
#endif
#ifndef SO_BUSY_POLL_BUDGET
#define SO_BUSY_POLL_BUDGET 70
#endif

constexpr uint32_t kContd = 0x80000000u;  // txDesc flag: more of this frame follows in the next slot

uint32_t NextPow2(uint32_t v) {
  uint32_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

int RxQueueCount(const std::string& ifname) {
  // /sys/class/net shows the namespace sysfs was mounted in; only a hint for the message.
  std::string path = "/sys/class/net/" + ifname + "/queues";
  int n = 0;
  for (int i = 0; i < 4096; i++) {
    if (access((path + "/rx-" + std::to_string(i)).c_str(), F_OK) != 0) break;
    n++;
  }
  return n;
}

// Sleeps `ms` milliseconds (restarting after signals).
void SleepMs(int64_t ms) {
  timespec ts{static_cast<time_t>(ms / 1000), static_cast<long>((ms % 1000) * 1000000)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

}  // namespace

Napi::Function XskSocket::Init(Napi::Env env) {
  return DefineSocketClass(env, "XskSocket", {InstanceMethod<&XskSocket::TxReclaim>("txReclaim")});
}

XskSocket::XskSocket(const Napi::CallbackInfo& info) : SocketBase(info) { Construct(info, "XskSocket"); }

XskSocket::~XskSocket() { DoClose(); }

// The options after ifname and netns (read by SocketBase::Construct).
void XskSocket::Open(Napi::Env env, const Napi::Object& o) {
  queue_ = static_cast<uint32_t>(OptInt(o, "queue", 0, 0, 4095));
  frame_size_ = static_cast<uint32_t>(OptInt(o, "frameSize", 4096, 2048, 4096));
  if (frame_size_ != 2048 && frame_size_ != 4096) Throw(env, code::kBadArgument, "frameSize must be 2048 or 4096");
  frame_count_ = static_cast<uint32_t>(OptInt(o, "frameCount", 4096, 1, 1 << 20));
  if (frame_count_ < 64) {
    Throw(env, code::kUmemTooSmall, "the UMEM needs at least 64 frames (32 to receive, 32 to send), not " + std::to_string(frame_count_));
  }
  const int bind_mode = static_cast<int>(OptInt(o, "bindMode", 0, 0, 2));
  ProgramOptions po;
  po.object_path = OptString(o, "objectPath", "");
  po.port = static_cast<uint16_t>(OptInt(o, "port", 4791, 1, 65535));
  po.xdp_mode = static_cast<int>(OptInt(o, "xdpMode", 0, 0, 2));
  sg_ = OptBool(o, "multiBuffer", false);
  busy_poll_ = OptBool(o, "busyPoll", false);
  napi_poll_ = busy_poll_ && OptBool(o, "napiBusyPoll", true);
  jumbo_bytes_ = static_cast<size_t>(OptInt(o, "jumboBytes", 0, 0, 1 << 28));
  const int64_t busy_wait_ms = OptInt(o, "busyWaitMs", 2000, 0, 60000);

  Napi::Value umemv = o.Get("umem");
  if (!umemv.IsArrayBuffer()) Throw(env, code::kBadArgument, "umem must be an ArrayBuffer");
  const size_t frames_bytes = static_cast<size_t>(frame_size_) * frame_count_;
  TakeAlignedArea(env, umemv.As<Napi::ArrayBuffer>(), frames_bytes + jumbo_bytes_, "the UMEM ArrayBuffer", &area_);
  jumbo_off_ = frames_bytes;
  rx_frames_ = frame_count_ / 2;
  tx_frames_ = frame_count_ - rx_frames_;
  rx_desc_.Take(env, o, "rxDesc", 2);
  tx_desc_.Take(env, o, "txDesc", 1);
  tx_state_.Take(env, o, "txState", 2);

  ifinfo_ = GetIfInfo(env, ifname_, netns_fd_);
  prog_ = AcquireProgram(env, ifname_, ifinfo_.ifindex, netns_fd_, po);

  NetnsGuard ns(env, netns_fd_);
  xsk_umem_config ucfg;
  std::memset(&ucfg, 0, sizeof ucfg);
  ucfg.fill_size = NextPow2(rx_frames_);
  ucfg.comp_size = NextPow2(tx_frames_);
  ucfg.frame_size = frame_size_;
  ucfg.frame_headroom = 0;
  xsk_socket_config scfg;
  std::memset(&scfg, 0, sizeof scfg);
  scfg.rx_size = NextPow2(rx_frames_);
  scfg.tx_size = NextPow2(tx_frames_);
  scfg.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;
  scfg.bind_flags = XDP_USE_NEED_WAKEUP;
  if (bind_mode == 1) scfg.bind_flags |= XDP_COPY;
  if (bind_mode == 2) scfg.bind_flags |= XDP_ZEROCOPY;
  if (sg_) scfg.bind_flags |= XDP_USE_SG;

  // EBUSY at bind: the queue's buffer pool slot is taken. Right after the previous socket of the
  // queue was closed (or its process died) that is usually a release still under way: the kernel
  // drops the pool after an RCU grace period and then on a workqueue (xsk_destruct -> xp_put_pool
  // -> xp_release_deferred -> xp_clear_dev), so retry for up to busyWaitMs, backing off from 1 to
  // 64 ms; a queue still held after that (by a live socket, or a release that does not finish) is
  // an error. libxdp cannot bind a second time with the same UMEM (its fill and completion rings
  // are already set up on the UMEM socket: setsockopt gives EINVAL), so each attempt registers the
  // UMEM anew.
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(busy_wait_ms);
  int64_t backoff_ms = 1;
  int attempts = 0;
  for (;;) {
    attempts++;
    int r = xsk_umem__create(&umem_, area_.ptr, frames_bytes, &fq_, &cq_, &ucfg);
    if (r != 0) {
      umem_ = nullptr;
      const int err = -r;
      if (err == ENOMEM || err == ENOBUFS) {
        Throw(env, code::kSystem, "cannot register the UMEM (" + std::to_string(frames_bytes) + " bytes): " + ErrnoText(err) + " (locked-memory limit? ulimit -l)", err);
      }
      ThrowErrno(env, err, "xsk_umem__create", "cannot register the UMEM");
    }
    r = xsk_socket__create(&xsk_, ifname_.c_str(), queue_, umem_, &rx_, &tx_, &scfg);
    if (r == 0) break;
    xsk_ = nullptr;
    const int err = -r;
    if (err == EOPNOTSUPP && bind_mode == 2) {
      Throw(env, code::kNoZeroCopy, "the driver of " + ifname_ + " has no AF_XDP zero-copy support (use mode 'copy' or 'auto')", err);
    }
    if (err == EOPNOTSUPP && sg_) {
      Throw(env, code::kNoXdp, "the driver of " + ifname_ + " has no multi-buffer AF_XDP support (needed for frames over " + std::to_string(frame_size_) + " bytes; use a smaller MTU)", err);
    }
    if (err == EBUSY) {
      xsk_umem__delete(umem_);
      umem_ = nullptr;
      const std::string what = "queue " + std::to_string(queue_) + " of " + ifname_;
      const auto now = Clock::now();
      if (now >= deadline) {
        if (busy_wait_ms == 0) Throw(env, code::kXdpBusy, what + " already has an AF_XDP socket or zero-copy user", err);
        Throw(env, code::kXdpBusy,
              what + " already has an AF_XDP socket or zero-copy user (still held after retrying for " + std::to_string(busy_wait_ms) +
                  " ms, " + std::to_string(attempts) + " attempts: not just a closed socket being released)",
              err);
      }
      const int64_t left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
      SleepMs(std::min(backoff_ms, left));
      backoff_ms = std::min<int64_t>(backoff_ms * 2, 64);
      continue;
    }
    if (err == EINVAL) {
      const int q = netns_fd_ < 0 ? RxQueueCount(ifname_) : 0;
      Throw(env, code::kBadArgument,
            "cannot bind an AF_XDP socket to queue " + std::to_string(queue_) + " of " + ifname_ + ": " + ErrnoText(err) +
                (q > 0 ? " (the interface has " + std::to_string(q) + " receive queues)" : " (does the queue exist?)"),
            err);
    }
    ThrowErrno(env, err, "xsk_socket__create", "cannot create the AF_XDP socket on " + ifname_ + " queue " + std::to_string(queue_));
  }
  fd_ = xsk_socket__fd(xsk_);
  const int r = xsk_socket__update_xskmap(xsk_, ProgramXsksMapFd(prog_));
  if (r != 0) ThrowErrno(env, -r, "bpf_map_update_elem", "cannot register the socket in the XDP program's xsks_map");
  xdp_options opts;
  socklen_t ol = sizeof opts;
  if (getsockopt(fd_, SOL_XDP, XDP_OPTIONS, &opts, &ol) == 0) zerocopy_ = (opts.flags & XDP_OPTIONS_ZEROCOPY) != 0;
  if (busy_poll_) {
    int one = 1, usecs = 20, budget = 64;
    if (setsockopt(fd_, SOL_SOCKET, SO_PREFER_BUSY_POLL, &one, sizeof one) != 0 ||
        setsockopt(fd_, SOL_SOCKET, SO_BUSY_POLL, &usecs, sizeof usecs) != 0 ||
        setsockopt(fd_, SOL_SOCKET, SO_BUSY_POLL_BUDGET, &budget, sizeof budget) != 0) {
      busy_poll_note_ = "kernel busy polling unavailable: " + ErrnoText(errno);
    }
  }
  // Every receive frame goes into the fill ring; every transmit slot is free.
  for (uint32_t i = 0; i < rx_frames_; i++) to_fill_.push_back(static_cast<uint64_t>(i) * frame_size_);
  Refill();
  tx_free_ = tx_frames_;
  tx_done_.assign(tx_frames_, 0);
  PublishTxState();
}

void XskSocket::DoClose() {
  poller_.Close();
  if (xsk_ != nullptr || umem_ != nullptr || prog_ != nullptr) {
    // The socket and UMEM first (the kernel removes the socket from xsks_map), then the program.
    int orig = -1;
    bool entered = false;
    if (netns_fd_ >= 0) {
      orig = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
      entered = orig >= 0 && setns(netns_fd_, CLONE_NEWNET) == 0;
    }
    if (xsk_ != nullptr) xsk_socket__delete(xsk_);
    if (umem_ != nullptr) xsk_umem__delete(umem_);
    if (entered && setns(orig, CLONE_NEWNET) != 0) std::abort();
    if (orig >= 0) close(orig);
    xsk_ = nullptr;
    umem_ = nullptr;
    fd_ = -1;
    ReleaseProgram(prog_);
    prog_ = nullptr;
  }
  area_.ref.Reset();
  tx_state_.Reset();
  ReleaseShared();
}

void XskSocket::Refill() {
  if (to_fill_.empty()) return;
  uint32_t idx = 0;
  const uint32_t n = xsk_ring_prod__reserve(&fq_, static_cast<uint32_t>(to_fill_.size()), &idx);
  for (uint32_t i = 0; i < n; i++) *xsk_ring_prod__fill_addr(&fq_, idx + i) = to_fill_[to_fill_.size() - n + i];
  if (n > 0) {
    xsk_ring_prod__submit(&fq_, n);
    to_fill_.resize(to_fill_.size() - n);
  }
}

// rx(max): hands the frames of the last call back to the fill ring, then fills rxDesc with up to
// `max` (offset in the UMEM window, length) pairs. Multi-buffer frames are gathered into the
// reassembly area after the UMEM frames (still JS-visible memory).
Napi::Value XskSocket::Rx(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (xsk_ == nullptr) return Napi::Number::New(env, 0);
  const size_t max = RxMaxArg(info);
  to_fill_.insert(to_fill_.end(), held_.begin(), held_.end());
  held_.clear();
  Refill();
  if (max == 0) return Napi::Number::New(env, 0);
  uint32_t idx = 0;
  // Peek more descriptors than frames when multi-buffer frames may span several.
  const uint32_t want = static_cast<uint32_t>(sg_ ? max * 4 : max);
  const uint32_t got = xsk_ring_cons__peek(&rx_, want, &idx);
  size_t n = 0;
  uint32_t used = 0;          // descriptors consumed (whole frames only)
  size_t jumbo_used = 0;
  uint32_t i = 0;
  while (i < got && n < max) {
    const xdp_desc* d = xsk_ring_cons__rx_desc(&rx_, idx + i);
    if ((d->options & XDP_PKT_CONTD) == 0) {
      rx_desc_[2 * n] = static_cast<uint32_t>(d->addr);
      rx_desc_[2 * n + 1] = d->len;
      held_.push_back(d->addr & ~static_cast<uint64_t>(frame_size_ - 1));
      n++;
      i++;
      used = i;
      continue;
    }
    // A frame in several buffers: find its last descriptor, then gather it if it fits.
    uint32_t j = i;
    size_t total = 0;
    while (j < got) {
      const xdp_desc* e = xsk_ring_cons__rx_desc(&rx_, idx + j);
      total += e->len;
      j++;
      if ((e->options & XDP_PKT_CONTD) == 0) break;
    }
    const bool complete = (xsk_ring_cons__rx_desc(&rx_, idx + j - 1)->options & XDP_PKT_CONTD) == 0;
    if (!complete || jumbo_used + total > jumbo_bytes_) break;  // the rest waits for the next call
    uint8_t* dst = area_.ptr + jumbo_off_ + jumbo_used;
    size_t off = 0;
    for (uint32_t k = i; k < j; k++) {
      const xdp_desc* e = xsk_ring_cons__rx_desc(&rx_, idx + k);
      std::memcpy(dst + off, area_.ptr + e->addr, e->len);
      off += e->len;
      to_fill_.push_back(e->addr & ~static_cast<uint64_t>(frame_size_ - 1));  // already copied out
    }
    rx_desc_[2 * n] = static_cast<uint32_t>(jumbo_off_ + jumbo_used);
    rx_desc_[2 * n + 1] = static_cast<uint32_t>(total);
    jumbo_used += (total + 63) & ~static_cast<size_t>(63);
    n++;
    i = j;
    used = j;
  }
  if (got > used) xsk_ring_cons__cancel(&rx_, got - used);
  if (used > 0) xsk_ring_cons__release(&rx_, used);
  Refill();
  if (n == 0 && (napi_poll_ || xsk_ring_prod__needs_wakeup(&fq_))) {
    rx_kicks_++;
    recvfrom(fd_, nullptr, 0, MSG_DONTWAIT, nullptr, nullptr);
  }
  rx_frames_total_ += n;
  poller_.Rearm();
  return Napi::Number::New(env, static_cast<double>(n));
}

// pending(): true when rx would return frames now. In busy-poll mode an empty ring also drives the
// driver's NAPI from this thread (recvfrom), which is what SO_PREFER_BUSY_POLL expects, unless the
// owner said nothing needs it (napiBusyPoll: false, a veth).
Napi::Value XskSocket::Pending(const Napi::CallbackInfo& info) {
  bool any = false;
  if (xsk_ != nullptr) {
    any = __atomic_load_n(rx_.producer, __ATOMIC_ACQUIRE) != *rx_.consumer;
    if (!any && (napi_poll_ || xsk_ring_prod__needs_wakeup(&fq_))) {
      rx_kicks_++;
      recvfrom(fd_, nullptr, 0, MSG_DONTWAIT, nullptr, nullptr);
      any = __atomic_load_n(rx_.producer, __ATOMIC_ACQUIRE) != *rx_.consumer;
    }
  }
  return Napi::Boolean::New(info.Env(), any);
}

void XskSocket::Reclaim() {
  uint32_t idx = 0;
  const uint32_t n = xsk_ring_cons__peek(&cq_, tx_frames_, &idx);
  for (uint32_t i = 0; i < n; i++) {
    const uint64_t addr = *xsk_ring_cons__comp_addr(&cq_, idx + i);
    const uint64_t slot = addr / frame_size_ - rx_frames_;
    if (slot < tx_frames_) tx_done_[slot] = 1;
  }
  if (n > 0) xsk_ring_cons__release(&cq_, n);
  // Slots are reused in FIFO order; a slot is free once it and all before it have completed.
  while (tx_free_ < tx_frames_ && tx_done_[tx_tail_] != 0) {
    tx_done_[tx_tail_] = 0;
    tx_tail_ = (tx_tail_ + 1) % tx_frames_;
    tx_free_++;
  }
}

void XskSocket::PublishTxState() {
  tx_state_[0] = tx_head_;
  tx_state_[1] = tx_free_;
  // txState[2] (when JS passed room for it): descriptors still waiting in the TX ring after the
  // kicks (the kernel said EAGAIN/EBUSY); JS calls tx(0) again soon so none is stranded.
  if (tx_state_.len > 2 && xsk_ != nullptr) tx_state_[2] = *tx_.producer - __atomic_load_n(tx_.consumer, __ATOMIC_ACQUIRE);
}

void XskSocket::Kick() {
  // Copy mode sends at most a small batch per sendto; kick until the kernel has taken everything.
  for (int k = 0; k < 1024; k++) {
    const uint32_t pending = *tx_.producer - __atomic_load_n(tx_.consumer, __ATOMIC_ACQUIRE);
    if (pending == 0) return;
    if (!busy_poll_ && !xsk_ring_prod__needs_wakeup(&tx_)) return;
    kicks_++;
    if (sendto(fd_, nullptr, 0, MSG_DONTWAIT, nullptr, 0) < 0) {
      const int err = errno;
      if (err != ENOBUFS && err != EAGAIN && err != EBUSY && err != ENETDOWN && err != EINTR) return;
      if (err == ENETDOWN) return;
    }
  }
}

// txReclaim(): collects completions; returns the number of free transmit slots (also in txState[1]).
Napi::Value XskSocket::TxReclaim(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (xsk_ == nullptr) return Napi::Number::New(env, 0);
  Reclaim();
  PublishTxState();
  return Napi::Number::New(env, tx_free_);
}

// tx(count): JS has written `count` buffers into the slots txState[0], txState[0]+1, ... (mod the
// slot count); txDesc[i] is the length of buffer i, with bit 31 set when the frame continues in
// the next buffer. A txDesc of 0 skips its slot: it is handed back as done without being sent (the
// zero-copy path skips the slots at the end of the area when a frame spanning several slots would
// wrap, and the slots of frames it drops). Returns count; txState is updated.
Napi::Value XskSocket::Tx(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (xsk_ == nullptr) return Napi::Number::New(env, 0);
  const double c = info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().DoubleValue() : 0;
  const uint32_t count = c > 0 ? static_cast<uint32_t>(c) : 0;
  Reclaim();
  if (count > tx_free_ || count > tx_desc_.len) {
    PublishTxState();
    Throw(env, code::kBadArgument, "tx: " + std::to_string(count) + " buffers but only " + std::to_string(tx_free_) + " free slots");
  }
  if (count > 0) {
    uint32_t real = 0;
    for (uint32_t i = 0; i < count; i++) real += tx_desc_[i] != 0 ? 1 : 0;
    uint32_t idx = 0;
    if (real > 0 && xsk_ring_prod__reserve(&tx_, real, &idx) != real) {
      PublishTxState();
      Throw(env, code::kSystem, "tx ring has no room for " + std::to_string(real) + " descriptors");
    }
    uint32_t j = 0;
    for (uint32_t i = 0; i < count; i++) {
      const uint32_t slot = (tx_head_ + i) % tx_frames_;
      if (tx_desc_[i] == 0) {
        tx_done_[slot] = 1;  // skipped: free once the slots before it complete (Reclaim)
        continue;
      }
      xdp_desc* d = xsk_ring_prod__tx_desc(&tx_, idx + j++);
      d->addr = static_cast<uint64_t>(rx_frames_ + slot) * frame_size_;
      d->len = tx_desc_[i] & ~kContd;
      d->options = (tx_desc_[i] & kContd) != 0 ? XDP_PKT_CONTD : 0;
    }
    if (real > 0) xsk_ring_prod__submit(&tx_, real);
    tx_head_ = (tx_head_ + count) % tx_frames_;
    tx_free_ -= count;
  }
  Kick();  // tx(0) retries descriptors an earlier kick left behind
  Reclaim();
  PublishTxState();
  return Napi::Number::New(env, count);
}

Napi::Value XskSocket::Stats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  xdp_statistics st;
  std::memset(&st, 0, sizeof st);
  socklen_t l = sizeof st;
  if (fd_ >= 0 && getsockopt(fd_, SOL_XDP, XDP_STATISTICS, &st, &l) == 0) {
    o.Set("rxDropped", Napi::Number::New(env, static_cast<double>(st.rx_dropped + st.rx_ring_full)));
    o.Set("rxInvalid", Napi::Number::New(env, static_cast<double>(st.rx_invalid_descs)));
    o.Set("txInvalid", Napi::Number::New(env, static_cast<double>(st.tx_invalid_descs)));
    o.Set("rxFillEmpty", Napi::Number::New(env, static_cast<double>(st.rx_fill_ring_empty_descs)));
  } else {
    o.Set("rxDropped", Napi::Number::New(env, 0));
  }
  o.Set("kicks", Napi::Number::New(env, static_cast<double>(kicks_)));
  o.Set("rxKicks", Napi::Number::New(env, static_cast<double>(rx_kicks_)));
  return o;
}

void XskSocket::DescribeInto(Napi::Env env, Napi::Object& o) const {
  o.Set("queue", Napi::Number::New(env, queue_));
  o.Set("zeroCopy", Napi::Boolean::New(env, zerocopy_));
  o.Set("xdpMode", Napi::String::New(env, prog_ != nullptr ? ProgramMode(prog_) : "none"));
  o.Set("umemOffset", Napi::Number::New(env, static_cast<double>(area_.offset)));
  o.Set("frameSize", Napi::Number::New(env, frame_size_));
  o.Set("rxFrames", Napi::Number::New(env, rx_frames_));
  o.Set("txFrames", Napi::Number::New(env, tx_frames_));
  o.Set("txSlotBase", Napi::Number::New(env, static_cast<double>(rx_frames_) * frame_size_));
  o.Set("jumboOffset", Napi::Number::New(env, static_cast<double>(jumbo_off_)));
  o.Set("multiBuffer", Napi::Boolean::New(env, sg_));
  o.Set("busyPollNote", Napi::String::New(env, busy_poll_note_));
  o.Set("napiBusyPoll", Napi::Boolean::New(env, napi_poll_));
}

}  // namespace roce
