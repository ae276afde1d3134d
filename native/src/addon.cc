// roce-ts native addon: AF_XDP and AF_PACKET frame I/O and a batched RoCE v2 ICRC.
#include <napi.h>
#include <unistd.h>

#include "common.h"
#include "icrc.h"
#include "packet_socket.h"
#include "xdp_prog.h"
#include "xsk_socket.h"

namespace roce {

Napi::Value InterfaceInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) Throw(env, code::kBadArgument, "interfaceInfo(ifname: string, netns?: string)");
  const std::string nspath = info.Length() > 1 && info[1].IsString() ? info[1].As<Napi::String>().Utf8Value() : "";
  const int fd = OpenNetns(env, nspath);
  IfInfo i;
  try {
    i = GetIfInfo(env, info[0].As<Napi::String>().Utf8Value(), fd);
  } catch (...) {
    if (fd >= 0) close(fd);
    throw;
  }
  if (fd >= 0) close(fd);
  Napi::Object o = Napi::Object::New(env);
  o.Set("ifindex", Napi::Number::New(env, i.ifindex));
  o.Set("mac", Napi::String::New(env, i.mac));
  o.Set("mtu", Napi::Number::New(env, i.mtu));
  o.Set("driver", Napi::String::New(env, i.driver));
  return o;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("PacketSocket", PacketSocket::Init(env));
  exports.Set("XskSocket", XskSocket::Init(env));
  exports.Set("icrcBurst", Napi::Function::New<IcrcBurst>(env, "icrcBurst"));
  exports.Set("icrcSealBurst", Napi::Function::New<IcrcSealBurst>(env, "icrcSealBurst"));
  exports.Set("xdpStatus", Napi::Function::New<XdpStatus>(env, "xdpStatus"));
  exports.Set("interfaceInfo", Napi::Function::New<InterfaceInfo>(env, "interfaceInfo"));
  exports.Set("crcImplementation", Napi::String::New(env, CrcImplementation()));
  exports.Set("abiVersion", Napi::Number::New(env, 1));
  return exports;
}

}  // namespace roce

static Napi::Object InitModule(Napi::Env env, Napi::Object exports) { return roce::Init(env, exports); }

NODE_API_MODULE(roce_native, InitModule)
