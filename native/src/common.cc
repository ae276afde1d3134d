#include "common.h"

#include <fcntl.h>
#include <net/if.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace roce {

std::string ErrnoText(int err) {
  char buf[128];
  // GNU strerror_r returns the message pointer.
  const char* s = strerror_r(err, buf, sizeof buf);
  return std::string(s);
}

Napi::Error MakeError(Napi::Env env, const char* code, const std::string& msg, int err, const char* syscall) {
  Napi::Error e = Napi::Error::New(env, msg);
  e.Set("code", Napi::String::New(env, code));
  if (err != 0) e.Set("errno", Napi::Number::New(env, err));
  if (syscall != nullptr) e.Set("syscall", Napi::String::New(env, syscall));
  return e;
}

void Throw(Napi::Env env, const char* code, const std::string& msg, int err, const char* syscall) {
  throw MakeError(env, code, msg, err, syscall);
}

void ThrowErrno(Napi::Env env, int err, const char* syscall, const std::string& what) {
  const char* c = code::kSystem;
  std::string hint;
  if (err == EPERM || err == EACCES) {
    c = code::kNoPrivileges;
    hint = " (needs root, or CAP_NET_RAW + CAP_NET_ADMIN + CAP_BPF/CAP_SYS_ADMIN)";
  } else if (err == ENODEV || err == ENXIO) {
    c = code::kNoSuchInterface;
  }
  Throw(env, c, what + ": " + ErrnoText(err) + hint, err, syscall);
}

NetnsGuard::NetnsGuard(Napi::Env env, int target_fd) {
  if (target_fd < 0) return;
  orig_ = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (orig_ < 0) ThrowErrno(env, errno, "open", "cannot open this thread's network namespace");
  if (setns(target_fd, CLONE_NEWNET) != 0) {
    int err = errno;
    close(orig_);
    orig_ = -1;
    ThrowErrno(env, err, "setns", "cannot enter the network namespace");
  }
}

NetnsGuard::~NetnsGuard() {
  if (orig_ < 0) return;
  if (setns(orig_, CLONE_NEWNET) != 0) {
    // Staying in the wrong namespace would silently misdirect every later socket: stop here.
    std::fprintf(stderr, "roce_native: cannot return to the original network namespace: %s\n", strerror(errno));
    std::abort();
  }
  close(orig_);
}

int OpenNetns(Napi::Env env, const std::string& path) {
  if (path.empty()) return -1;
  std::string p = path;
  if (p.find('/') == std::string::npos) p = "/var/run/netns/" + p;
  int fd = open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) Throw(env, code::kBadArgument, "no network namespace " + path + " (" + p + " does not exist)", err, "open");
    ThrowErrno(env, err, "open", "cannot open network namespace " + p);
  }
  return fd;
}

static Napi::Value Prop(const Napi::Object& o, const char* key) {
  return o.Has(key) ? o.Get(key) : o.Env().Undefined();
}

std::string OptString(const Napi::Object& o, const char* key, const std::string& def) {
  Napi::Value v = Prop(o, key);
  if (v.IsUndefined() || v.IsNull()) return def;
  if (!v.IsString()) Throw(o.Env(), code::kBadArgument, std::string(key) + " must be a string");
  return v.As<Napi::String>().Utf8Value();
}

int64_t OptInt(const Napi::Object& o, const char* key, int64_t def, int64_t min, int64_t max) {
  Napi::Value v = Prop(o, key);
  if (v.IsUndefined() || v.IsNull()) return def;
  if (!v.IsNumber()) Throw(o.Env(), code::kBadArgument, std::string(key) + " must be a number");
  double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= static_cast<double>(min) && d <= static_cast<double>(max)) || d != static_cast<double>(static_cast<int64_t>(d))) {
    Throw(o.Env(), code::kBadArgument,
          std::string(key) + " must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "], not " +
              v.ToString().Utf8Value());
  }
  return static_cast<int64_t>(d);
}

bool OptBool(const Napi::Object& o, const char* key, bool def) {
  Napi::Value v = Prop(o, key);
  if (v.IsUndefined() || v.IsNull()) return def;
  if (!v.IsBoolean()) Throw(o.Env(), code::kBadArgument, std::string(key) + " must be a boolean");
  return v.As<Napi::Boolean>().Value();
}

IfInfo GetIfInfo(Napi::Env env, const std::string& ifname, int netns_fd) {
  if (ifname.empty() || ifname.size() >= IFNAMSIZ) {
    Throw(env, code::kBadArgument, "interface name '" + ifname + "' is empty or longer than " + std::to_string(IFNAMSIZ - 1) + " characters");
  }
  NetnsGuard ns(env, netns_fd);
  IfInfo info;
  info.ifindex = static_cast<int>(if_nametoindex(ifname.c_str()));
  if (info.ifindex == 0) {
    int err = errno;
    Throw(env, code::kNoSuchInterface, "no such interface: " + ifname + (netns_fd >= 0 ? " (in the given network namespace)" : ""), err,
          "if_nametoindex");
  }
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) ThrowErrno(env, errno, "socket", "cannot open a socket to query " + ifname);
  struct ifreq ifr;
  std::memset(&ifr, 0, sizeof ifr);
  std::memcpy(ifr.ifr_name, ifname.c_str(), ifname.size());
  if (ioctl(s, SIOCGIFHWADDR, &ifr) == 0) {
    char mac[13];
    const unsigned char* a = reinterpret_cast<const unsigned char*>(ifr.ifr_hwaddr.sa_data);
    std::snprintf(mac, sizeof mac, "%02x%02x%02x%02x%02x%02x", a[0], a[1], a[2], a[3], a[4], a[5]);
    info.mac = mac;
  }
  if (ioctl(s, SIOCGIFMTU, &ifr) == 0) info.mtu = ifr.ifr_mtu;
  struct ethtool_drvinfo drv;
  std::memset(&drv, 0, sizeof drv);
  drv.cmd = ETHTOOL_GDRVINFO;
  ifr.ifr_data = reinterpret_cast<char*>(&drv);
  if (ioctl(s, SIOCETHTOOL, &ifr) == 0) info.driver.assign(drv.driver, strnlen(drv.driver, sizeof drv.driver));
  close(s);
  return info;
}

void TakeAlignedArea(Napi::Env env, Napi::ArrayBuffer ab, size_t want, const char* what, AlignedArea* out) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  uint8_t* base = static_cast<uint8_t*>(ab.Data());
  size_t len = ab.ByteLength();
  uintptr_t b = reinterpret_cast<uintptr_t>(base);
  size_t off = static_cast<size_t>(((b + page - 1) & ~(uintptr_t)(page - 1)) - b);
  if (base == nullptr || off + want > len) {
    Throw(env, code::kUmemTooSmall,
          std::string(what) + " is too small: " + std::to_string(want) + " bytes are needed at a page boundary, the ArrayBuffer has " +
              std::to_string(len) + " (allocate the size plus one page, " + std::to_string(page) + " bytes)");
  }
  out->ref = Napi::Persistent(ab);
  out->ptr = base + off;
  out->size = want;
  out->offset = off;
}

bool TypedArg(napi_env env, napi_value v, napi_typedarray_type want, void** data, size_t* length) {
  napi_typedarray_type type;
  napi_value ab;
  size_t offset;
  if (napi_get_typedarray_info(env, v, &type, length, data, &ab, &offset) != napi_ok) return false;
  return type == want && (*data != nullptr || *length == 0);
}

}  // namespace roce
