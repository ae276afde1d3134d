// The skeleton the addon's two socket classes share (PacketSocket, XskSocket): the JS class with
// its method list, construction from an options object (closing whatever was opened when it
// fails), the socket's fd and its uv_poll for the rx handler, the interface it is bound to and
// the descriptor arrays JS hands over. A CRTP base: the per-burst methods (rx, tx, pending) are
// the derived class's own, called with no virtual dispatch.
#pragma once

#include <napi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common.h"
#include "poller.h"

// The members every socket class declares for SocketBase<Class>: construction, the per-burst
// calls (bound directly, no indirection), what describe() adds, and opening and closing.
#define ROCE_SOCKET_MEMBERS(Class)                             \
 public:                                                       \
  static Napi::Function Init(Napi::Env env);                   \
  explicit Class(const Napi::CallbackInfo& info);              \
  ~Class() override;                                           \
                                                               \
 private:                                                      \
  friend class SocketBase<Class>;                              \
  Napi::Value Rx(const Napi::CallbackInfo& info);              \
  Napi::Value Pending(const Napi::CallbackInfo& info);         \
  Napi::Value Tx(const Napi::CallbackInfo& info);              \
  Napi::Value Stats(const Napi::CallbackInfo& info);           \
  void DescribeInto(Napi::Env env, Napi::Object& o) const;     \
  void Open(Napi::Env env, const Napi::Object& o);             \
  void DoClose();

namespace roce {

// A Uint32Array from JS that native code reads and writes in place (descriptors, transmit state):
// a strong reference to it, its first element and its length in elements.
struct SharedU32 {
  Napi::Reference<Napi::Uint32Array> ref;
  uint32_t* ptr = nullptr;
  size_t len = 0;

  // Takes o[key], which must be a Uint32Array of at least `min_len` elements (kBadArgument otherwise).
  void Take(Napi::Env env, const Napi::Object& o, const char* key, size_t min_len);
  void Reset() {
    ref.Reset();
    ptr = nullptr;
  }
  uint32_t& operator[](size_t i) const { return ptr[i]; }
};

// Derived provides Open(env, options), DoClose() (idempotent; its destructor calls it), the JS
// methods Rx, Pending, Tx and Stats, and DescribeInto(env, o) (what describe() adds to the
// interface's ifindex, MAC and MTU); it declares SocketBase<Derived> a friend.
template <typename Derived>
class SocketBase : public Napi::ObjectWrap<Derived> {
 public:
  explicit SocketBase(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Derived>(info) {}

 protected:
  using Method = Napi::ClassPropertyDescriptor<Derived>;

  // The JS class `name` with the methods every socket has, and `extra` after tx.
  static Napi::Function DefineSocketClass(Napi::Env env, const char* name, std::initializer_list<Method> extra = {}) {
    using Wrap = Napi::ObjectWrap<Derived>;
    std::vector<Method> methods = {
        Wrap::template InstanceMethod<&Derived::Rx>("rx"),
        Wrap::template InstanceMethod<&Derived::Pending>("pending"),
        Wrap::template InstanceMethod<&Derived::Tx>("tx"),
    };
    methods.insert(methods.end(), extra.begin(), extra.end());
    methods.push_back(Wrap::InstanceMethod("setRxHandler", &SocketBase::SetRxHandler));
    methods.push_back(Wrap::template InstanceMethod<&Derived::Stats>("stats"));
    methods.push_back(Wrap::InstanceMethod("close", &SocketBase::Close));
    methods.push_back(Wrap::InstanceMethod("describe", &SocketBase::Describe));
    return Wrap::DefineClass(env, name, methods);
  }

  // The body of Derived's constructor (`new name(options)`): reads the interface name and network
  // namespace, then Derived::Open the rest; on any failure closes what was opened and rethrows.
  void Construct(const Napi::CallbackInfo& info, const char* name) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsObject()) Throw(env, code::kBadArgument, std::string("new ") + name + "(options) needs an options object");
    try {
      const Napi::Object o = info[0].As<Napi::Object>();
      ifname_ = OptString(o, "ifname", "");
      netns_fd_ = OpenNetns(env, OptString(o, "netns", ""));
      self().Open(env, o);
    } catch (...) {
      self().DoClose();
      throw;
    }
  }

  // rx(max)'s argument: at most what rxDesc has room for (64 when absent).
  size_t RxMaxArg(const Napi::CallbackInfo& info) const {
    size_t max = info.Length() > 0 && info[0].IsNumber() ? static_cast<size_t>(std::max(0.0, info[0].As<Napi::Number>().DoubleValue())) : 64;
    return max > rx_desc_.len / 2 ? rx_desc_.len / 2 : max;
  }

  // The end of Derived::DoClose, once the socket is gone: the namespace fd and the JS arrays.
  void ReleaseShared() {
    if (netns_fd_ >= 0) close(netns_fd_);
    netns_fd_ = -1;
    rx_desc_.Reset();
    tx_desc_.Reset();
  }

  int fd_ = -1;  // the socket's fd (polled for the rx handler); -1 once closed
  int netns_fd_ = -1;
  std::string ifname_;
  IfInfo ifinfo_;
  SharedU32 rx_desc_;  // rx writes (offset, length) pairs here
  SharedU32 tx_desc_;  // tx reads what to send from here
  FdPoller poller_;

 private:
  Derived& self() { return static_cast<Derived&>(*this); }

  Napi::Value SetRxHandler(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (fd_ < 0) return env.Undefined();
    poller_.SetHandler(env, fd_, info.Length() > 0 ? info[0] : env.Null());
    return env.Undefined();
  }

  Napi::Value Close(const Napi::CallbackInfo& info) {
    self().DoClose();
    return info.Env().Undefined();
  }

  // describe(): the interface's ifindex, MAC and MTU, what Derived adds, and the socket's fd.
  Napi::Value Describe(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Napi::Object o = Napi::Object::New(env);
    o.Set("ifindex", Napi::Number::New(env, ifinfo_.ifindex));
    o.Set("mac", Napi::String::New(env, ifinfo_.mac));
    o.Set("mtu", Napi::Number::New(env, ifinfo_.mtu));
    self().DescribeInto(env, o);
    o.Set("fd", Napi::Number::New(env, fd_));
    return o;
  }
};

}  // namespace roce
