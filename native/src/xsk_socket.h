// An AF_XDP socket on one queue of an interface, built on libxdp's xsk API.
// The UMEM is a page-aligned window of a JS ArrayBuffer: received frames are
// read by JS where the kernel put them, and JS writes transmit frames straight
// into UMEM slots. One call per burst: rx(max) and tx(count) exchange only
// integers through shared Uint32Arrays.
#pragma once

#include <napi.h>
#include <xdp/xsk.h>

#include <cstdint>
#include <string>
#include <vector>

#include "socket_base.h"
#include "xdp_prog.h"

namespace roce {

class XskSocket : public SocketBase<XskSocket> {
  ROCE_SOCKET_MEMBERS(XskSocket)
  Napi::Value TxReclaim(const Napi::CallbackInfo& info);
  void Refill();
  void Reclaim();
  void Kick();
  void PublishTxState();

  uint32_t queue_ = 0;
  AttachedProgram* prog_ = nullptr;
  xsk_umem* umem_ = nullptr;
  xsk_socket* xsk_ = nullptr;  // fd_ (SocketBase) is its fd
  xsk_ring_prod fq_{};
  xsk_ring_cons cq_{};
  xsk_ring_cons rx_{};
  xsk_ring_prod tx_{};
  bool zerocopy_ = false;
  bool sg_ = false;
  bool busy_poll_ = false;
  // In busy-poll mode, an empty look at the receive ring also drives the driver's NAPI (recvfrom).
  // Off where nothing needs it: on a veth the sender's transmit runs the receiver's NAPI.
  bool napi_poll_ = false;
  uint64_t rx_kicks_ = 0;
  std::string busy_poll_note_;

  AlignedArea area_;
  uint32_t frame_size_ = 4096;
  uint32_t frame_count_ = 0;
  uint32_t rx_frames_ = 0;   // frames [0, rx_frames_) circulate through the fill and rx rings
  uint32_t tx_frames_ = 0;   // frames [rx_frames_, frame_count_) are transmit slots, used in FIFO order
  size_t jumbo_off_ = 0;     // reassembly area for multi-buffer frames, after the frames
  size_t jumbo_bytes_ = 0;
  std::vector<uint64_t> held_;      // rx frames handed to JS by the last rx call
  std::vector<uint64_t> to_fill_;   // frames waiting for room in the fill ring
  uint32_t tx_head_ = 0, tx_tail_ = 0, tx_free_ = 0;
  std::vector<uint8_t> tx_done_;

  SharedU32 tx_state_;  // [next transmit slot, free slots, descriptors the kernel has not taken yet]

  uint64_t rx_frames_total_ = 0;
  uint64_t kicks_ = 0;
};

}  // namespace roce
