// The roce_filter XDP program on an interface: loaded and attached through
// libxdp (behind its multi-program dispatcher, so other XDP users stay), shared
// by every AF_XDP socket of this process on that interface (one per queue),
// detached when the last one closes, at process exit, or — after a crash — by
// the next process that finds it with a dead owner.
#pragma once

#include <napi.h>

#include <string>

namespace roce {

struct ProgramOptions {
  std::string object_path;  // native/build/roce_filter.bpf.o
  uint16_t port = 4791;
  int xdp_mode = 0;         // 0 auto (native, then SKB), 1 native, 2 skb
};

struct AttachedProgram;

// Attaches (or shares) the program on ifindex in the namespace netns_fd (-1: this one). Throws typed errors.
AttachedProgram* AcquireProgram(Napi::Env env, const std::string& ifname, int ifindex, int netns_fd, const ProgramOptions& o);
void ReleaseProgram(AttachedProgram* p);
int ProgramXsksMapFd(const AttachedProgram* p);
// "native" or "skb".
const char* ProgramMode(const AttachedProgram* p);

// Detaches every program this process still has attached (process exit).
void ReleaseAllPrograms();

// For tests and tools: the names of the XDP programs attached to an interface (dispatcher components
// or a single legacy program), and its attach mode; {} when none.
Napi::Value XdpStatus(const Napi::CallbackInfo& info);

}  // namespace roce
