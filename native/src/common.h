// Shared helpers of the roce-ts native addon: typed errors, network-namespace
// switching for one synchronous call, and small argument readers.
#pragma once

#include <napi.h>

#include <cerrno>
#include <cstdint>
#include <string>

namespace roce {

// Error codes (docs/errors.md). Mirrored by AddonErrorCode in nic-driver/native-binding.ts;
// test/nic-driver/native-error-codes.test.ts fails when the two lists differ.
namespace code {
constexpr const char* kNoSuchInterface = "ROCE_ERR_NO_SUCH_INTERFACE";
constexpr const char* kNoPrivileges = "ROCE_ERR_NO_PRIVILEGES";
constexpr const char* kXdpBusy = "ROCE_ERR_XDP_BUSY";
constexpr const char* kNoXdp = "ROCE_ERR_NO_XDP";
constexpr const char* kNoZeroCopy = "ROCE_ERR_NO_ZEROCOPY";
constexpr const char* kUmemTooSmall = "ROCE_ERR_UMEM_TOO_SMALL";
constexpr const char* kBadArgument = "ROCE_ERR_BAD_ARGUMENT";
constexpr const char* kClosed = "ROCE_ERR_CLOSED";
constexpr const char* kSystem = "ROCE_ERR_SYSTEM";
}  // namespace code

// A JS Error with `code` (one of the above) and, when err != 0, `errno` and `syscall`.
Napi::Error MakeError(Napi::Env env, const char* code, const std::string& msg, int err = 0,
                      const char* syscall = nullptr);
[[noreturn]] void Throw(Napi::Env env, const char* code, const std::string& msg, int err = 0,
                        const char* syscall = nullptr);
// Throws with a code chosen from errno: EPERM/EACCES -> kNoPrivileges, ENODEV -> kNoSuchInterface, else kSystem.
[[noreturn]] void ThrowErrno(Napi::Env env, int err, const char* syscall, const std::string& what);

std::string ErrnoText(int err);

// Switches the calling thread into another network namespace for its lifetime
// and back in its destructor. Used only inside one synchronous native call on
// the JS thread, so no JS runs while the thread is in the other namespace; the
// other threads of the process (libuv pool, V8 workers) are never moved.
class NetnsGuard {
 public:
  NetnsGuard(Napi::Env env, int target_fd);
  ~NetnsGuard();
  NetnsGuard(const NetnsGuard&) = delete;
  NetnsGuard& operator=(const NetnsGuard&) = delete;

 private:
  int orig_ = -1;
};

// Opens a network namespace file (/var/run/netns/NAME, /proc/PID/ns/net) or returns -1 for "".
int OpenNetns(Napi::Env env, const std::string& path);

// One typed-array argument read with a single napi_get_typedarray_info call: its element type must
// be `want`, else false. `data` points at its first element, `length` counts elements. (The
// per-burst hot path: node-addon-api's accessors each call napi_get_typedarray_info again.)
bool TypedArg(napi_env env, napi_value v, napi_typedarray_type want, void** data, size_t* length);

// Option readers: a missing or undefined property gives the default.
std::string OptString(const Napi::Object& o, const char* key, const std::string& def);
int64_t OptInt(const Napi::Object& o, const char* key, int64_t def, int64_t min, int64_t max);
bool OptBool(const Napi::Object& o, const char* key, bool def);

// The interface's MAC address (12 hex digits), IP MTU, ifindex and driver (ethtool's name: "veth",
// "mlx5_core"; empty when the interface has none to report), read inside netns_fd (or here for -1).
struct IfInfo {
  int ifindex = 0;
  std::string mac;
  int mtu = 0;
  std::string driver;
};
IfInfo GetIfInfo(Napi::Env env, const std::string& ifname, int netns_fd);

// A page-aligned window [ptr, ptr + size) inside a JS ArrayBuffer that holds a strong reference to it.
struct AlignedArea {
  Napi::Reference<Napi::ArrayBuffer> ref;
  uint8_t* ptr = nullptr;
  size_t size = 0;
  size_t offset = 0;  // offset of ptr from the start of the ArrayBuffer
};
// Takes `want` bytes at the first page boundary of `ab`; throws kUmemTooSmall (`what`) when they do not fit.
void TakeAlignedArea(Napi::Env env, Napi::ArrayBuffer ab, size_t want, const char* what, AlignedArea* out);

}  // namespace roce
