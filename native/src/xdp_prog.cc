#include "xdp_prog.h"

#include <bpf/bpf.h>
#include <fcntl.h>
#include <sched.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <net/if.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xdp/libxdp.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "common.h"

namespace roce {

struct AttachedProgram {
  uint64_t netns_ino = 0;
  int ifindex = 0;
  int netns_fd = -1;  // our own dup, for detaching later
  std::string ifname;
  uint16_t port = 0;
  bpf_object* obj = nullptr;
  xdp_program* prog = nullptr;
  xdp_attach_mode mode = XDP_MODE_UNSPEC;
  int refs = 0;
};

namespace {

constexpr const char* kProgName = "roce_filter";
std::vector<AttachedProgram*> g_programs;
std::string g_last_libxdp_msg;

int QuietPrint(enum libxdp_print_level level, const char* fmt, va_list ap) {
  // ROCE_NATIVE_DEBUG=1 shows everything libxdp and libbpf say.
  static const bool debug = getenv("ROCE_NATIVE_DEBUG") != nullptr && getenv("ROCE_NATIVE_DEBUG")[0] == '1';
  if (debug) {
    va_list copy;
    va_copy(copy, ap);
    vfprintf(stderr, fmt, copy);
    va_end(copy);
  }
  // Keep the last warning for error messages instead of writing to stderr.
  if (level == LIBXDP_WARN) {
    char buf[512];
    vsnprintf(buf, sizeof buf, fmt, ap);
    g_last_libxdp_msg = buf;
    while (!g_last_libxdp_msg.empty() && g_last_libxdp_msg.back() == '\n') g_last_libxdp_msg.pop_back();
  }
  return 0;
}

int QuietBpfPrint(enum libbpf_print_level level, const char* fmt, va_list ap) {
  return QuietPrint(level == LIBBPF_WARN ? LIBXDP_WARN : LIBXDP_DEBUG, fmt, ap);
}

void InitLibs() {
  static std::once_flag once;
  std::call_once(once, [] {
    libxdp_set_print(QuietPrint);
    libbpf_set_print(QuietBpfPrint);
    // libxdp needs a bpffs for its dispatcher; let it mount one when none is.
    setenv(XDP_BPFFS_MOUNT_ENVVAR, "1", 0);
    std::atexit(ReleaseAllPrograms);
  });
}

uint64_t NetnsInode(int netns_fd) {
  struct stat st;
  if (netns_fd >= 0 ? fstat(netns_fd, &st) != 0 : stat("/proc/thread-self/ns/net", &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_ino);
}

// Offset of a variable in our object's .rodata, from its BTF.
long RodataOffset(bpf_object* obj, const char* var) {
  const btf* b = bpf_object__btf(obj);
  if (b == nullptr) return -1;
  const int id = btf__find_by_name_kind(b, ".rodata", BTF_KIND_DATASEC);
  if (id < 0) return -1;
  const btf_type* t = btf__type_by_id(b, id);
  const btf_var_secinfo* vs = btf_var_secinfos(t);
  for (int i = 0; i < btf_vlen(t); i++, vs++) {
    const btf_type* v = btf__type_by_id(b, vs->type);
    if (std::strcmp(btf__name_by_offset(b, v->name_off), var) == 0) return vs->offset;
  }
  return -1;
}

bpf_map* RodataMap(bpf_object* obj) {
  bpf_map* m;
  bpf_object__for_each_map(m, obj) {
    const char* n = bpf_map__name(m);
    const size_t l = std::strlen(n);
    if (l >= 7 && std::strcmp(n + l - 7, ".rodata") == 0) return m;
  }
  return nullptr;
}

// The owner pid stored in an attached roce_filter program's .rodata (0 when unknown).
uint32_t AttachedOwner(int prog_fd, long pid_off) {
  if (prog_fd < 0 || pid_off < 0) return 0;
  uint32_t ids[16];
  bpf_prog_info info;
  std::memset(&info, 0, sizeof info);
  info.nr_map_ids = 16;
  info.map_ids = reinterpret_cast<uint64_t>(ids);
  uint32_t len = sizeof info;
  if (bpf_obj_get_info_by_fd(prog_fd, &info, &len) != 0) return 0;
  for (uint32_t i = 0; i < info.nr_map_ids && i < 16; i++) {
    int mfd = bpf_map_get_fd_by_id(ids[i]);
    if (mfd < 0) continue;
    bpf_map_info mi;
    std::memset(&mi, 0, sizeof mi);
    uint32_t ml = sizeof mi;
    uint32_t pid = 0;
    if (bpf_obj_get_info_by_fd(mfd, &mi, &ml) == 0) {
      const size_t l = std::strlen(mi.name);
      if (l >= 7 && std::strcmp(mi.name + l - 7, ".rodata") == 0 && mi.value_size >= pid_off + 4) {
        std::vector<uint8_t> val(mi.value_size);
        uint32_t key = 0;
        if (bpf_map_lookup_elem(mfd, &key, val.data()) == 0) std::memcpy(&pid, val.data() + pid_off, 4);
      }
    }
    close(mfd);
    if (pid != 0) return pid;
  }
  return 0;
}

bool PidAlive(uint32_t pid) { return pid != 0 && (kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM); }

std::string LibxdpError(int err) {
  char buf[256];
  libxdp_strerror(err, buf, sizeof buf);
  std::string s = buf;
  if (!g_last_libxdp_msg.empty()) s += " (" + g_last_libxdp_msg + ")";
  return s;
}

// Looks at what is attached already: throws kXdpBusy when a live roce_filter or a legacy
// (non-dispatcher) program is there; detaches a roce_filter whose owner is gone.
void CheckExisting(Napi::Env env, const std::string& ifname, int ifindex, long pid_off) {
  xdp_multiprog* mp = xdp_multiprog__get_from_ifindex(ifindex);
  if (mp == nullptr || libxdp_get_error(mp) != 0) return;  // nothing attached (or unreadable)
  if (xdp_multiprog__is_legacy(mp)) {
    xdp_program* main = xdp_multiprog__main_prog(mp);
    std::string name = main != nullptr ? xdp_program__name(main) : "?";
    uint32_t owner = main != nullptr ? AttachedOwner(xdp_program__fd(main), pid_off) : 0;
    const bool ours = name == kProgName;
    if (ours && !PidAlive(owner)) {
      xdp_multiprog__detach(mp);
      xdp_multiprog__close(mp);
      return;
    }
    xdp_multiprog__close(mp);
    if (ours) {
      Throw(env, code::kXdpBusy,
            "the roce_filter XDP program is already attached to " + ifname + " by process " + std::to_string(owner) +
                (owner == static_cast<uint32_t>(getpid()) ? " (this process, through another driver instance)" : ""));
    }
    Throw(env, code::kXdpBusy,
          "an XDP program (" + name + ") is already attached to " + ifname +
              " without libxdp's dispatcher, so it cannot be shared; detach it (ip link set dev " + ifname +
              " xdp off) or load it with xdp-loader");
  }
  const xdp_attach_mode mode = xdp_multiprog__attach_mode(mp);
  for (xdp_program* p = xdp_multiprog__next_prog(nullptr, mp); p != nullptr; p = xdp_multiprog__next_prog(p, mp)) {
    if (std::strcmp(xdp_program__name(p), kProgName) != 0) continue;
    const uint32_t owner = AttachedOwner(xdp_program__fd(p), pid_off);
    if (PidAlive(owner)) {
      xdp_multiprog__close(mp);
      Throw(env, code::kXdpBusy,
            "the roce_filter XDP program is already attached to " + ifname + " by process " + std::to_string(owner) +
                (owner == static_cast<uint32_t>(getpid()) ? " (this process, through another driver instance)" : ""));
    }
    // Left behind by a process that died without detaching: take it away.
    xdp_program__detach(p, ifindex, mode, 0);
  }
  xdp_multiprog__close(mp);
}

// Holds every signal back from this thread while it lives. The BPF verifier gives up with EAGAIN
// when a signal is pending, and libbpf retries a load only a few times: under a profiler's SIGPROF
// every 100 us (node --cpu-prof) every attempt failed, and libxdp's fallback then tripped over the
// program it had failed to load (EBADF). A process-directed signal goes to another thread meanwhile;
// one directed at this thread waits until the attach is done.
class SignalHold {
 public:
  SignalHold() {
    sigset_t all;
    sigfillset(&all);
    held_ = pthread_sigmask(SIG_BLOCK, &all, &old_) == 0;
  }
  ~SignalHold() {
    if (held_) pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SignalHold(const SignalHold&) = delete;
  SignalHold& operator=(const SignalHold&) = delete;

 private:
  sigset_t old_;
  bool held_ = false;
};

int TryAttach(xdp_program* prog, int ifindex, xdp_attach_mode mode) {
  g_last_libxdp_msg.clear();
  SignalHold hold;
  return xdp_program__attach(prog, ifindex, mode, 0);
}

}  // namespace

AttachedProgram* AcquireProgram(Napi::Env env, const std::string& ifname, int ifindex, int netns_fd, const ProgramOptions& o) {
  InitLibs();
  const uint64_t ino = NetnsInode(netns_fd);
  for (AttachedProgram* p : g_programs) {
    if (p->netns_ino == ino && p->ifindex == ifindex) {
      if (p->port != o.port) {
        Throw(env, code::kXdpBusy,
              "the XDP program on " + ifname + " already redirects UDP port " + std::to_string(p->port) + ", not " + std::to_string(o.port));
      }
      p->refs++;
      return p;
    }
  }
  if (access(o.object_path.c_str(), R_OK) != 0) {
    Throw(env, code::kBadArgument, "the XDP program object " + o.object_path + " is missing: run `npm run build:native` (scripts/build-native.sh)");
  }
  NetnsGuard ns(env, netns_fd);
  auto* p = new AttachedProgram();
  p->netns_ino = ino;
  p->ifindex = ifindex;
  p->ifname = ifname;
  p->port = o.port;
  try {
    if (netns_fd >= 0) {
      p->netns_fd = dup(netns_fd);
      if (p->netns_fd < 0) ThrowErrno(env, errno, "dup", "cannot keep the network namespace");
    }
    p->obj = bpf_object__open_file(o.object_path.c_str(), nullptr);
    if (p->obj == nullptr || libbpf_get_error(p->obj) != 0) {
      const int err = errno;
      p->obj = nullptr;
      Throw(env, code::kSystem, "cannot open the XDP program object " + o.object_path + ": " + ErrnoText(err), err);
    }
    const long port_off = RodataOffset(p->obj, "roce_port");
    const long pid_off = RodataOffset(p->obj, "roce_owner_pid");
    bpf_map* ro = RodataMap(p->obj);
    size_t ro_size = 0;
    const uint8_t* ro_init = ro != nullptr ? static_cast<const uint8_t*>(bpf_map__initial_value(ro, &ro_size)) : nullptr;
    if (ro_init == nullptr || port_off < 0 || pid_off < 0 || static_cast<size_t>(pid_off) + 4 > ro_size ||
        static_cast<size_t>(port_off) + 2 > ro_size) {
      Throw(env, code::kSystem, "the XDP program object " + o.object_path + " has no roce_port/roce_owner_pid: rebuild it");
    }
    std::vector<uint8_t> ro_data(ro_init, ro_init + ro_size);
    const uint32_t pid = static_cast<uint32_t>(getpid());
    std::memcpy(ro_data.data() + port_off, &o.port, 2);
    std::memcpy(ro_data.data() + pid_off, &pid, 4);
    if (bpf_map__set_initial_value(ro, ro_data.data(), ro_size) != 0) {
      Throw(env, code::kSystem, "cannot set the XDP program's port");
    }

    CheckExisting(env, ifname, ifindex, pid_off);

    p->prog = xdp_program__from_bpf_obj(p->obj, "xdp.frags");
    if (p->prog == nullptr || libxdp_get_error(p->prog) != 0) {
      const int err = static_cast<int>(-libxdp_get_error(p->prog));
      p->prog = nullptr;
      Throw(env, code::kSystem, "libxdp cannot use the XDP program: " + LibxdpError(-err), err);
    }
    // Frames larger than a page arrive in several buffers: the program only reads the headers in the first.
    xdp_program__set_xdp_frags_support(p->prog, true);
    int r;
    if (o.xdp_mode == 2) {
      r = TryAttach(p->prog, ifindex, XDP_MODE_SKB);
      p->mode = XDP_MODE_SKB;
    } else {
      r = TryAttach(p->prog, ifindex, XDP_MODE_NATIVE);
      p->mode = XDP_MODE_NATIVE;
      if (r < 0 && o.xdp_mode == 0 && r != -EPERM && r != -EEXIST && r != -EBUSY) {
        r = TryAttach(p->prog, ifindex, XDP_MODE_SKB);
        p->mode = XDP_MODE_SKB;
      }
    }
    if (r < 0) {
      const int err = -r;
      std::string msg = "cannot attach the XDP program to " + ifname + " in " + (p->mode == XDP_MODE_SKB ? "SKB (generic)" : "native") +
                        " mode: " + LibxdpError(r);
      if (err == EPERM || err == EACCES) Throw(env, code::kNoPrivileges, msg + " (needs root or CAP_BPF + CAP_NET_ADMIN)", err);
      if (err == EEXIST || err == EBUSY) Throw(env, code::kXdpBusy, msg + " (another XDP program is in the way)", err);
      if (o.xdp_mode == 1 && (err == EOPNOTSUPP || err == EINVAL || err == ERANGE)) {
        Throw(env, code::kNoXdp, "the driver of " + ifname + " cannot run XDP programs natively: " + LibxdpError(r) + " (use xdpMode 'skb' or 'auto')", err);
      }
      Throw(env, code::kSystem, msg, err);
    }
    p->refs = 1;
    g_programs.push_back(p);
    return p;
  } catch (...) {
    if (p->prog != nullptr) xdp_program__close(p->prog);
    if (p->obj != nullptr) bpf_object__close(p->obj);
    if (p->netns_fd >= 0) close(p->netns_fd);
    delete p;
    throw;
  }
}

static void Detach(AttachedProgram* p) {
  // Best effort: the namespace may be gone already (then so is the interface and its program).
  int orig = -1;
  if (p->netns_fd >= 0) {
    orig = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (orig < 0 || setns(p->netns_fd, CLONE_NEWNET) != 0) {
      if (orig >= 0) close(orig);
      orig = -2;
    }
  }
  if (orig != -2) xdp_program__detach(p->prog, p->ifindex, p->mode, 0);
  if (orig >= 0) {
    if (setns(orig, CLONE_NEWNET) != 0) std::abort();
    close(orig);
  }
  xdp_program__close(p->prog);
  bpf_object__close(p->obj);
  if (p->netns_fd >= 0) close(p->netns_fd);
}

void ReleaseProgram(AttachedProgram* p) {
  if (p == nullptr || --p->refs > 0) return;
  for (size_t i = 0; i < g_programs.size(); i++) {
    if (g_programs[i] == p) {
      g_programs.erase(g_programs.begin() + static_cast<long>(i));
      break;
    }
  }
  Detach(p);
  delete p;
}

void ReleaseAllPrograms() {
  while (!g_programs.empty()) {
    AttachedProgram* p = g_programs.back();
    g_programs.pop_back();
    Detach(p);
    delete p;
  }
}

int ProgramXsksMapFd(const AttachedProgram* p) { return bpf_object__find_map_fd_by_name(p->obj, "xsks_map"); }

const char* ProgramMode(const AttachedProgram* p) { return p->mode == XDP_MODE_SKB ? "skb" : "native"; }

// xdpStatus(ifname, netns?): { mode: 'native'|'skb'|'hw'|'none', programs: string[] }
Napi::Value XdpStatus(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  InitLibs();
  if (info.Length() < 1 || !info[0].IsString()) Throw(env, code::kBadArgument, "xdpStatus(ifname: string, netns?: string)");
  const std::string ifname = info[0].As<Napi::String>().Utf8Value();
  const std::string nspath = info.Length() > 1 && info[1].IsString() ? info[1].As<Napi::String>().Utf8Value() : "";
  const int nsfd = OpenNetns(env, nspath);
  Napi::Object out = Napi::Object::New(env);
  Napi::Array names = Napi::Array::New(env);
  std::string mode = "none";
  {
    struct Closer {
      int fd;
      ~Closer() {
        if (fd >= 0) close(fd);
      }
    } closer{nsfd};
    NetnsGuard ns(env, nsfd);
    const int ifindex = static_cast<int>(if_nametoindex(ifname.c_str()));
    if (ifindex == 0) Throw(env, code::kNoSuchInterface, "no such interface: " + ifname);
    xdp_multiprog* mp = xdp_multiprog__get_from_ifindex(ifindex);
    if (mp != nullptr && libxdp_get_error(mp) == 0) {
      switch (xdp_multiprog__attach_mode(mp)) {
        case XDP_MODE_NATIVE: mode = "native"; break;
        case XDP_MODE_SKB: mode = "skb"; break;
        case XDP_MODE_HW: mode = "hw"; break;
        default: mode = "unknown"; break;
      }
      uint32_t i = 0;
      if (xdp_multiprog__is_legacy(mp)) {
        xdp_program* m = xdp_multiprog__main_prog(mp);
        if (m != nullptr) names.Set(i++, Napi::String::New(env, xdp_program__name(m)));
      } else {
        for (xdp_program* p = xdp_multiprog__next_prog(nullptr, mp); p != nullptr; p = xdp_multiprog__next_prog(p, mp)) {
          names.Set(i++, Napi::String::New(env, xdp_program__name(p)));
        }
      }
      out.Set("legacy", Napi::Boolean::New(env, xdp_multiprog__is_legacy(mp)));
      xdp_multiprog__close(mp);
    }
  }
  out.Set("mode", Napi::String::New(env, mode));
  out.Set("programs", names);
  return out;
}

}  // namespace roce
