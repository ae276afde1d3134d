#include "socket_base.h"

namespace roce {

void SharedU32::Take(Napi::Env env, const Napi::Object& o, const char* key, size_t min_len) {
  Napi::Value v = o.Get(key);
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array) {
    Throw(env, code::kBadArgument, std::string(key) + " must be a Uint32Array");
  }
  auto a = v.As<Napi::Uint32Array>();
  if (a.ElementLength() < min_len) Throw(env, code::kBadArgument, std::string(key) + " needs at least " + std::to_string(min_len) + " entries");
  ref = Napi::Persistent(a);
  ptr = reinterpret_cast<uint32_t*>(static_cast<uint8_t*>(a.ArrayBuffer().Data()) + a.ByteOffset());
  len = a.ElementLength();
}

}  // namespace roce
