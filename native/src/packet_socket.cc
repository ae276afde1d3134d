#include "packet_socket.h"

#include <arpa/inet.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/net_tstamp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace roce {

namespace {

// A classic BPF program builder with forward labels (jump offsets are 8-bit, relative).
class Cbpf {
 public:
  int Label() {
    labels_.push_back(-1);
    return static_cast<int>(labels_.size()) - 1;
  }
  void Bind(int l) { labels_[l] = static_cast<int>(ins_.size()); }
  void Stmt(uint16_t c, uint32_t k) { ins_.push_back({c, 0, 0, k}); fix_.push_back({-1, -1}); }
  // Conditional jump; -1 as a label means "the next instruction".
  void Jump(uint16_t c, uint32_t k, int jt, int jf) { ins_.push_back({c, 0, 0, k}); fix_.push_back({jt, jf}); }
  std::vector<sock_filter> Finish() {
    for (size_t i = 0; i < ins_.size(); i++) {
      auto rel = [&](int l) -> uint8_t { return l < 0 ? 0 : static_cast<uint8_t>(labels_[l] - static_cast<int>(i) - 1); };
      ins_[i].jt = rel(fix_[i].first);
      ins_[i].jf = rel(fix_[i].second);
    }
    return ins_;
  }

 private:
  std::vector<sock_filter> ins_;
  std::vector<std::pair<int, int>> fix_;
  std::vector<int> labels_;
};

// Accepts Ethernet [+ one VLAN tag] + IPv4 (first fragment or whole) / IPv6 + UDP with destination `port`.
// (A tag the NIC or veth took off into the packet's metadata is not in the data the filter sees.)
std::vector<sock_filter> RoceFilter(uint16_t port) {
  Cbpf b;
  const int accept = b.Label(), drop = b.Label(), vlan = b.Label();
  const int v4[2] = {b.Label(), b.Label()}, v6[2] = {b.Label(), b.Label()};
  b.Stmt(BPF_LD | BPF_H | BPF_ABS, 12);
  b.Jump(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_8021Q, vlan, -1);
  b.Jump(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_8021AD, vlan, -1);
  b.Jump(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_IP, v4[0], -1);
  b.Jump(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_IPV6, v6[0], drop);
  b.Bind(vlan);
  b.Stmt(BPF_LD | BPF_H | BPF_ABS, 16);
  b.Jump(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_IP, v4[1], -1);
  b.Jump(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_IPV6, v6[1], drop);
  for (int i = 0; i < 2; i++) {
    const uint32_t l2 = i == 0 ? 14 : 18;
    b.Bind(v4[i]);
    b.Stmt(BPF_LD | BPF_B | BPF_ABS, l2 + 9);  // protocol
    b.Jump(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_UDP, -1, drop);
    b.Stmt(BPF_LD | BPF_H | BPF_ABS, l2 + 6);  // flags + fragment offset
    b.Jump(BPF_JMP | BPF_JSET | BPF_K, 0x1fff, drop, -1);
    b.Stmt(BPF_LDX | BPF_B | BPF_MSH, l2);     // X = IHL * 4
    b.Stmt(BPF_LD | BPF_H | BPF_IND, l2 + 2);  // UDP destination port
    b.Jump(BPF_JMP | BPF_JEQ | BPF_K, port, accept, drop);
    b.Bind(v6[i]);
    b.Stmt(BPF_LD | BPF_B | BPF_ABS, l2 + 6);  // next header
    b.Jump(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_UDP, -1, drop);
    b.Stmt(BPF_LD | BPF_H | BPF_ABS, l2 + 40 + 2);
    b.Jump(BPF_JMP | BPF_JEQ | BPF_K, port, accept, drop);
  }
  b.Bind(accept);
  b.Stmt(BPF_RET | BPF_K, 0x40000);
  b.Bind(drop);
  b.Stmt(BPF_RET | BPF_K, 0);
  return b.Finish();
}

void AttachFilter(Napi::Env env, int fd, std::vector<sock_filter>& prog, const char* what) {
  sock_fprog fp;
  fp.len = static_cast<unsigned short>(prog.size());
  fp.filter = prog.data();
  if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &fp, sizeof fp) != 0) ThrowErrno(env, errno, "setsockopt", what);
}

int64_t Ns(const timespec& t) { return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec; }

// CLOCK_REALTIME - CLOCK_MONOTONIC, read between two CLOCK_MONOTONIC reads; *window gets the
// distance between those (the reading's uncertainty: a preemption between the reads widens it).
int64_t RealMinusMono(int64_t* window) {
  timespec a, r, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  clock_gettime(CLOCK_REALTIME, &r);
  clock_gettime(CLOCK_MONOTONIC, &b);
  *window = Ns(b) - Ns(a);
  return Ns(r) - (Ns(a) + *window / 2);
}

// The narrowest of several readings: the kernel's offset is one integer, constant until the
// realtime clock is set (NTP slews both clocks alike), so one good reading serves until then.
int64_t BestRealMinusMono() {
  int64_t best = 0, best_window = INT64_MAX;
  for (int i = 0; i < 16; i++) {
    int64_t w;
    const int64_t v = RealMinusMono(&w);
    if (w < best_window) {
      best_window = w;
      best = v;
    }
  }
  return best;
}

// A reading further than this from the one in use means the realtime clock was set (a step).
constexpr int64_t kClockStepNs = 20000;

template <typename T>
void SetOpt(Napi::Env env, int fd, int level, int name, T v, const char* what) {
  if (setsockopt(fd, level, name, &v, sizeof v) != 0) ThrowErrno(env, errno, "setsockopt", what);
}

}  // namespace

Napi::Function PacketSocket::Init(Napi::Env env) { return DefineSocketClass(env, "PacketSocket"); }

PacketSocket::PacketSocket(const Napi::CallbackInfo& info) : SocketBase(info) { Construct(info, "PacketSocket"); }

PacketSocket::~PacketSocket() { DoClose(); }

// The options after ifname and netns (read by SocketBase::Construct).
void PacketSocket::Open(Napi::Env env, const Napi::Object& o) {
  port_ = static_cast<uint16_t>(OptInt(o, "port", 4791, 1, 65535));
  block_size_ = static_cast<uint32_t>(OptInt(o, "blockSize", 1 << 18, 4096, 1 << 26));
  block_nr_ = static_cast<uint32_t>(OptInt(o, "blockCount", 16, 2, 4096));
  const int retire_ms = static_cast<int>(OptInt(o, "retireMs", 1, 0, 1000));
  version_ = static_cast<int>(OptInt(o, "ringVersion", 3, 2, 3));
  frame_size_ = static_cast<uint32_t>(OptInt(o, "frameSize", 2048, 128, 1 << 20));
  if (frame_size_ % TPACKET_ALIGNMENT != 0) Throw(env, code::kBadArgument, "frameSize must be a multiple of " + std::to_string(TPACKET_ALIGNMENT));
  if (version_ == 2 && frame_size_ > block_size_) Throw(env, code::kBadArgument, "frameSize must not exceed blockSize");
  const bool bypass = OptBool(o, "qdiscBypass", false);
  const bool guard = OptBool(o, "udpGuard", true);
  const long page = sysconf(_SC_PAGESIZE);
  if (block_size_ % page != 0) Throw(env, code::kBadArgument, "blockSize must be a multiple of the page size (" + std::to_string(page) + ")");

  Napi::Value ringv = o.Get("ring");
  Napi::Value txv = o.Get("txSlab");
  if (!ringv.IsArrayBuffer() || !txv.IsArrayBuffer()) Throw(env, code::kBadArgument, "ring and txSlab must be ArrayBuffers");
  const size_t ring_bytes = static_cast<size_t>(block_size_) * block_nr_;
  TakeAlignedArea(env, ringv.As<Napi::ArrayBuffer>(), ring_bytes, "the receive ring's ArrayBuffer", &ring_);
  auto txab = txv.As<Napi::ArrayBuffer>();
  tx_ref_ = Napi::Persistent(txab);
  tx_base_ = static_cast<uint8_t*>(txab.Data());
  tx_len_ = txab.ByteLength();
  rx_desc_.Take(env, o, "rxDesc", 0);
  tx_desc_.Take(env, o, "txDesc", 0);
  // Optional, so that callers built before they existed open the socket as before.
  const Napi::Value timev = o.Get("rxTime");
  if (!timev.IsUndefined()) {
    rx_time_.Take(env, o, "rxTime", 3 * (rx_desc_.len / 2));
    rx_clock_.Take(env, o, "rxClock", 3);
    real_minus_mono_ns_ = BestRealMinusMono();
    WriteClockOffset();
  }
  const bool hw_stamps = OptBool(o, "hwTimestamps", false);

  ifinfo_ = GetIfInfo(env, ifname_, netns_fd_);
  NetnsGuard ns(env, netns_fd_);
  fd_ = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0) ThrowErrno(env, errno, "socket", "cannot open an AF_PACKET socket");
  auto filter = RoceFilter(port_);
  AttachFilter(env, fd_, filter, "cannot attach the UDP port filter");
  SetOpt<int>(env, fd_, SOL_PACKET, PACKET_VERSION, version_ == 2 ? TPACKET_V2 : TPACKET_V3, "cannot select the TPACKET version");
  // Room in front of each frame to put back a VLAN tag the kernel took off.
  SetOpt<unsigned>(env, fd_, SOL_PACKET, PACKET_RESERVE, 4, "cannot set PACKET_RESERVE");
  tpacket_req3 req;
  std::memset(&req, 0, sizeof req);
  req.tp_block_size = block_size_;
  req.tp_block_nr = block_nr_;
  if (version_ == 2) {
    // TPACKET_V2: every frame slot is handed over (and the socket woken) as soon as the frame is in it.
    frames_per_block_ = block_size_ / frame_size_;
    frame_nr_ = frames_per_block_ * block_nr_;
    tpacket_req r2;
    std::memset(&r2, 0, sizeof r2);
    r2.tp_block_size = block_size_;
    r2.tp_block_nr = block_nr_;
    r2.tp_frame_size = frame_size_;
    r2.tp_frame_nr = frame_nr_;
    SetOpt(env, fd_, SOL_PACKET, PACKET_RX_RING, r2, "cannot set up the TPACKET_V2 receive ring");
  } else {
    req.tp_frame_size = 2048;
    req.tp_frame_nr = static_cast<unsigned>((static_cast<uint64_t>(block_size_) / req.tp_frame_size) * block_nr_);
    req.tp_retire_blk_tov = static_cast<unsigned>(retire_ms);
    SetOpt(env, fd_, SOL_PACKET, PACKET_RX_RING, req, "cannot set up the TPACKET_V3 receive ring");
  }
  // The ring goes into the JS ArrayBuffer's pages: JS reads the frames where the kernel wrote them.
  void* m = mmap(ring_.ptr, ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | MAP_POPULATE, fd_, 0);
  if (m == MAP_FAILED) ThrowErrno(env, errno, "mmap", "cannot map the receive ring");
  ring_mapped_ = true;
  SetOpt<int>(env, fd_, SOL_PACKET, PACKET_IGNORE_OUTGOING, 1, "cannot set PACKET_IGNORE_OUTGOING");
  // The NIC's own receive stamp in tp_sec/tp_nsec when it made one (TP_STATUS_TS_RAW_HARDWARE);
  // the kernel's software stamp otherwise. The NIC stamps only once told to (SIOCSHWTSTAMP).
  if (hw_stamps) SetOpt<int>(env, fd_, SOL_PACKET, PACKET_TIMESTAMP, SOF_TIMESTAMPING_RAW_HARDWARE, "cannot set PACKET_TIMESTAMP");
  if (bypass) SetOpt<int>(env, fd_, SOL_PACKET, PACKET_QDISC_BYPASS, 1, "cannot set PACKET_QDISC_BYPASS");
  sockaddr_ll sll;
  std::memset(&sll, 0, sizeof sll);
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = htons(ETH_P_ALL);
  sll.sll_ifindex = ifinfo_.ifindex;
  if (bind(fd_, reinterpret_cast<sockaddr*>(&sll), sizeof sll) != 0) ThrowErrno(env, errno, "bind", "cannot bind to " + ifname_);
  if (guard) OpenUdpGuard(env, port_);
}

// A UDP socket on the RoCE port that drops everything it gets (a "ret 0" socket filter): the kernel
// finds a listener for RoCE datagrams, so it sends no ICMP port unreachable, and queues nothing.
void PacketSocket::OpenUdpGuard(Napi::Env env, uint16_t port) {
  sock_filter drop_all[] = {{BPF_RET | BPF_K, 0, 0, 0}};
  std::vector<sock_filter> prog(drop_all, drop_all + 1);
  int s = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  bool v6 = s >= 0;
  if (!v6) s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s < 0) ThrowErrno(env, errno, "socket", "cannot open the UDP guard socket");
  udp_fd_ = s;
  AttachFilter(env, s, prog, "cannot attach the guard socket's filter");
  SetOpt<int>(env, s, SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR");
  SetOpt<int>(env, s, SOL_SOCKET, SO_REUSEPORT, 1, "SO_REUSEPORT");
  int r;
  if (v6) {
    SetOpt<int>(env, s, IPPROTO_IPV6, IPV6_V6ONLY, 0, "IPV6_V6ONLY");
    sockaddr_in6 a;
    std::memset(&a, 0, sizeof a);
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(port);
    a.sin6_addr = in6addr_any;
    r = bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  } else {
    sockaddr_in a;
    std::memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    r = bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  }
  if (r != 0) {
    const int err = errno;
    close(s);
    udp_fd_ = -1;
    // Another socket already listens on the port (without SO_REUSEPORT): the kernel has its listener.
    if (err == EADDRINUSE) {
      guard_ = "port-in-use";
      return;
    }
    ThrowErrno(env, err, "bind", "cannot bind the UDP guard socket to port " + std::to_string(port));
  }
  guard_ = v6 ? "udp6" : "udp4";
}

void PacketSocket::DoClose() {
  poller_.Close();
  if (ring_mapped_) {
    // Give the ArrayBuffer its own (anonymous) pages back before the kernel ring goes away.
    mmap(ring_.ptr, ring_.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    ring_mapped_ = false;
  }
  if (fd_ >= 0) close(fd_);
  if (udp_fd_ >= 0) close(udp_fd_);
  fd_ = udp_fd_ = -1;
  ring_.ref.Reset();
  tx_ref_.Reset();
  rx_time_.Reset();
  rx_clock_.Reset();
  tx_base_ = nullptr;
  ReleaseShared();
}

// Checks the realtime clock's offset once per burst (two vDSO reads): a step since the last
// reading (settimeofday, a leap second) is taken over, so stamps keep converting to the
// monotonic clock the stack times itself with.
void PacketSocket::UpdateClockOffset() {
  timespec r, m;
  clock_gettime(CLOCK_REALTIME, &r);
  clock_gettime(CLOCK_MONOTONIC, &m);
  if (std::llabs(Ns(r) - Ns(m) - real_minus_mono_ns_) <= kClockStepNs) return;
  real_minus_mono_ns_ = BestRealMinusMono();
  WriteClockOffset();
}

// rxClock: the offset as whole seconds (low word, high word of the two's complement) and
// nanoseconds in [0, 1e9), so JS rebuilds it exactly without a BigInt.
void PacketSocket::WriteClockOffset() {
  int64_t sec = real_minus_mono_ns_ / 1000000000;
  int64_t nsec = real_minus_mono_ns_ % 1000000000;
  if (nsec < 0) {
    nsec += 1000000000;
    sec--;
  }
  const uint64_t u = static_cast<uint64_t>(sec);
  rx_clock_[0] = static_cast<uint32_t>(u);
  rx_clock_[1] = static_cast<uint32_t>(u >> 32);
  rx_clock_[2] = static_cast<uint32_t>(nsec);
}

void PacketSocket::ReleaseBlocks() {
  for (uint32_t b : to_release_) {
    auto* bd = reinterpret_cast<tpacket_block_desc*>(ring_.ptr + static_cast<size_t>(b) * block_size_);
    __atomic_store_n(&bd->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
  }
  to_release_.clear();
}

// rx(max): fills rxDesc with (offset in the ring window, length) pairs and returns how many.
// Frames stay valid until the next rx call, which hands their blocks back to the kernel.
Napi::Value PacketSocket::Rx(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (fd_ < 0) return Napi::Number::New(env, 0);
  const size_t max = RxMaxArg(info);
  if (version_ == 2) {
    const size_t got = RxV2(max);
    if (got > 0 && rx_clock_.ptr != nullptr) UpdateClockOffset();
    poller_.Rearm();
    return Napi::Number::New(env, static_cast<double>(got));
  }
  ReleaseBlocks();
  size_t n = 0;
  while (n < max) {
    uint8_t* blk = ring_.ptr + static_cast<size_t>(cur_) * block_size_;
    auto* bd = reinterpret_cast<tpacket_block_desc*>(blk);
    const uint32_t status = __atomic_load_n(&bd->hdr.bh1.block_status, __ATOMIC_ACQUIRE);
    if ((status & TP_STATUS_USER) == 0) break;
    const uint32_t num = bd->hdr.bh1.num_pkts;
    if (pkt_idx_ == 0) pkt_off_ = bd->hdr.bh1.offset_to_first_pkt;
    while (pkt_idx_ < num && n < max) {
      auto* h = reinterpret_cast<tpacket3_hdr*>(blk + pkt_off_);
      uint8_t* mac = reinterpret_cast<uint8_t*>(h) + h->tp_mac;
      uint32_t len = h->tp_snaplen;
      if ((h->tp_status & TP_STATUS_VLAN_VALID) != 0 && len >= 12) {
        // Put the tag the kernel moved into metadata back where it was on the wire (PACKET_RESERVE made room).
        const uint16_t tpid = (h->tp_status & TP_STATUS_VLAN_TPID_VALID) != 0 ? h->hv1.tp_vlan_tpid : ETH_P_8021Q;
        std::memmove(mac - 4, mac, 12);
        mac -= 4;
        mac[12] = static_cast<uint8_t>(tpid >> 8);
        mac[13] = static_cast<uint8_t>(tpid);
        mac[14] = static_cast<uint8_t>(h->hv1.tp_vlan_tci >> 8);
        mac[15] = static_cast<uint8_t>(h->hv1.tp_vlan_tci);
        len += 4;
        h->tp_status &= ~TP_STATUS_VLAN_VALID;  // done: a second look must not insert it twice
      }
      rx_desc_[2 * n] = static_cast<uint32_t>(mac - ring_.ptr);
      rx_desc_[2 * n + 1] = len;
      StampFrame(n, h->tp_sec, h->tp_nsec, h->tp_status);
      n++;
      pkt_off_ += h->tp_next_offset;
      pkt_idx_++;
    }
    if (pkt_idx_ >= num) {
      to_release_.push_back(cur_);
      cur_ = (cur_ + 1) % block_nr_;
      pkt_idx_ = 0;
    } else {
      break;
    }
  }
  if (n > 0 && rx_clock_.ptr != nullptr) UpdateClockOffset();
  poller_.Rearm();
  return Napi::Number::New(env, static_cast<double>(n));
}

// TPACKET_V2 receive: hands the slots of the last call back, then takes frames slot by slot.
size_t PacketSocket::RxV2(size_t max) {
  for (uint32_t i : held_frames_) {
    auto* h = reinterpret_cast<tpacket2_hdr*>(FrameV2(i));
    __atomic_store_n(&h->tp_status, static_cast<uint32_t>(TP_STATUS_KERNEL), __ATOMIC_RELEASE);
  }
  held_frames_.clear();
  size_t n = 0;
  while (n < max) {
    uint8_t* f = FrameV2(cur_);
    auto* h = reinterpret_cast<tpacket2_hdr*>(f);
    const uint32_t status = __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);
    if ((status & TP_STATUS_USER) == 0) break;
    uint8_t* mac = f + h->tp_mac;
    uint32_t len = h->tp_snaplen;
    if ((status & TP_STATUS_VLAN_VALID) != 0 && len >= 12) {
      // Put the tag the kernel moved into metadata back where it was on the wire (PACKET_RESERVE made room).
      const uint16_t tpid = (status & TP_STATUS_VLAN_TPID_VALID) != 0 ? h->tp_vlan_tpid : ETH_P_8021Q;
      std::memmove(mac - 4, mac, 12);
      mac -= 4;
      mac[12] = static_cast<uint8_t>(tpid >> 8);
      mac[13] = static_cast<uint8_t>(tpid);
      mac[14] = static_cast<uint8_t>(h->tp_vlan_tci >> 8);
      mac[15] = static_cast<uint8_t>(h->tp_vlan_tci);
      len += 4;
    }
    rx_desc_[2 * n] = static_cast<uint32_t>(mac - ring_.ptr);
    rx_desc_[2 * n + 1] = len;
    StampFrame(n, h->tp_sec, h->tp_nsec, status);
    n++;
    held_frames_.push_back(cur_);
    cur_ = (cur_ + 1) % frame_nr_;
  }
  return n;
}

// pending(): true when rx would return frames now (for the busy-poll loop).
Napi::Value PacketSocket::Pending(const Napi::CallbackInfo& info) {
  bool any = false;
  if (fd_ >= 0 && version_ == 2) {
    auto* h = reinterpret_cast<tpacket2_hdr*>(FrameV2(cur_));
    any = (__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER) != 0;
  } else if (fd_ >= 0) {
    auto* bd = reinterpret_cast<tpacket_block_desc*>(ring_.ptr + static_cast<size_t>(cur_) * block_size_);
    any = (__atomic_load_n(&bd->hdr.bh1.block_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER) != 0 && pkt_idx_ < bd->hdr.bh1.num_pkts;
  }
  return Napi::Boolean::New(info.Env(), any);
}

// tx(count): sends the frames txDesc describes as (offset in txSlab, length) pairs with sendmmsg.
// Returns how many were taken (sent, or dropped as undeliverable: too large for the link).
Napi::Value PacketSocket::Tx(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (fd_ < 0) return Napi::Number::New(env, 0);
  size_t count = info.Length() > 0 && info[0].IsNumber() ? static_cast<size_t>(std::max(0.0, info[0].As<Napi::Number>().DoubleValue())) : 0;
  if (count > tx_desc_.len / 2) Throw(env, code::kBadArgument, "tx: count exceeds txDesc");
  if (msgs_.size() < count) {
    msgs_.resize(count);
    iovs_.resize(count);
  }
  for (size_t i = 0; i < count; i++) {
    const uint32_t off = tx_desc_[2 * i], len = tx_desc_[2 * i + 1];
    if (static_cast<size_t>(off) + len > tx_len_) Throw(env, code::kBadArgument, "tx: frame " + std::to_string(i) + " lies outside txSlab");
    iovs_[i].iov_base = tx_base_ + off;
    iovs_[i].iov_len = len;
    std::memset(&msgs_[i], 0, sizeof msgs_[i]);
    msgs_[i].msg_hdr.msg_iov = &iovs_[i];
    msgs_[i].msg_hdr.msg_iovlen = 1;
  }
  size_t done = 0;
  int waits = 0;
  while (done < count) {
    int r = sendmmsg(fd_, &msgs_[done], static_cast<unsigned>(count - done), MSG_DONTWAIT);
    if (r > 0) {
      done += static_cast<size_t>(r);
      continue;
    }
    const int err = errno;
    if (err == EINTR) continue;
    if ((err == EAGAIN || err == ENOBUFS) && waits < 4) {
      // The device queue is full: wait a little for it to drain, then try again.
      pollfd p = {fd_, POLLOUT, 0};
      poll(&p, 1, 1);
      waits++;
      continue;
    }
    if (err == EMSGSIZE || err == EINVAL) {
      tx_errors_++;
      done++;  // this frame can never be sent: skip it
      continue;
    }
    break;
  }
  return Napi::Number::New(env, static_cast<double>(done));
}

Napi::Value PacketSocket::Stats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (fd_ >= 0) {
    tpacket_stats_v3 st;
    socklen_t l = sizeof st;
    if (getsockopt(fd_, SOL_PACKET, PACKET_STATISTICS, &st, &l) == 0) rx_drops_ += st.tp_drops;  // reading resets them
  }
  Napi::Object o = Napi::Object::New(env);
  o.Set("rxDropped", Napi::Number::New(env, static_cast<double>(rx_drops_)));
  o.Set("txErrors", Napi::Number::New(env, static_cast<double>(tx_errors_)));
  return o;
}

void PacketSocket::DescribeInto(Napi::Env env, Napi::Object& o) const {
  o.Set("ringOffset", Napi::Number::New(env, static_cast<double>(ring_.offset)));
  o.Set("ringBytes", Napi::Number::New(env, static_cast<double>(ring_.size)));
  o.Set("udpGuard", Napi::String::New(env, guard_));
  o.Set("ringVersion", Napi::Number::New(env, version_));
  o.Set("frameSize", Napi::Number::New(env, version_ == 2 ? frame_size_ : 0));
  o.Set("frames", Napi::Number::New(env, version_ == 2 ? frame_nr_ : 0));
  o.Set("rxTimestamps", Napi::Boolean::New(env, rx_time_.ptr != nullptr));
}

}  // namespace roce
