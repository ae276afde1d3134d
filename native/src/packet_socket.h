// AF_PACKET socket with a TPACKET_V3 receive ring mapped into a JS
// ArrayBuffer (the kernel writes frames straight into memory JS reads: no copy
// between native and JS), sendmmsg transmit from a JS-owned slab, a classic BPF
// filter that admits only UDP to the RoCE port, and a UDP "guard" socket bound
// to that port so the kernel's own UDP layer never answers RoCE frames with
// ICMP port unreachable. With the rxTime option rx also hands over each frame's
// receive time from its ring header (tp_sec, tp_nsec and the TP_STATUS_TS_* bits saying which
// clock stamped it), and the realtime-to-monotonic offset that converts it.
#pragma once

#include <napi.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cstdint>
#include <string>
#include <vector>

#include "socket_base.h"

namespace roce {

class PacketSocket : public SocketBase<PacketSocket> {
  ROCE_SOCKET_MEMBERS(PacketSocket)
  void ReleaseBlocks();
  void OpenUdpGuard(Napi::Env env, uint16_t port);
  // Frame n's receive time as the ring header has it (the rxTime option; a no-op without it).
  void StampFrame(size_t n, uint32_t sec, uint32_t nsec, uint32_t status) {
    if (rx_time_.ptr == nullptr) return;
    rx_time_[3 * n] = sec;
    rx_time_[3 * n + 1] = nsec;
    rx_time_[3 * n + 2] = status >> 29;  // the TP_STATUS_TS_* bits: which clock stamped it
  }
  void UpdateClockOffset();
  void WriteClockOffset();

  // The kernel's receive timestamps (optional): (tp_sec, tp_nsec, source) per frame rx returned,
  // and CLOCK_REALTIME - CLOCK_MONOTONIC (seconds low and high word, nanoseconds) to convert them.
  SharedU32 rx_time_;
  SharedU32 rx_clock_;
  int64_t real_minus_mono_ns_ = 0;

  int udp_fd_ = -1;
  std::string guard_ = "off";
  uint16_t port_ = 4791;

  AlignedArea ring_;
  bool ring_mapped_ = false;
  uint32_t block_size_ = 0;
  uint32_t block_nr_ = 0;
  int version_ = 3;        // TPACKET_V2 (one status word per frame) or TPACKET_V3 (blocks)
  uint32_t frame_size_ = 0;       // V2: bytes per frame slot
  uint32_t frames_per_block_ = 0; // V2
  uint32_t frame_nr_ = 0;         // V2
  std::vector<uint32_t> held_frames_;  // V2: slots returned by the last rx call
  uint8_t* FrameV2(uint32_t i) const {
    return ring_.ptr + static_cast<size_t>(i / frames_per_block_) * block_size_ + static_cast<size_t>(i % frames_per_block_) * frame_size_;
  }
  size_t RxV2(size_t max);
  uint32_t cur_ = 0;       // block being read (V3), frame slot being read (V2)
  uint32_t pkt_idx_ = 0;   // packets of cur_ already returned
  uint32_t pkt_off_ = 0;   // offset of the next packet in cur_
  std::vector<uint32_t> to_release_;  // blocks fully returned by the last rx call

  Napi::Reference<Napi::ArrayBuffer> tx_ref_;
  uint8_t* tx_base_ = nullptr;
  size_t tx_len_ = 0;
  std::vector<mmsghdr> msgs_;
  std::vector<iovec> iovs_;

  uint64_t rx_drops_ = 0;
  uint64_t tx_errors_ = 0;
};

}  // namespace roce
