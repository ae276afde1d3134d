#include "icrc.h"

#include <zlib.h>

#include <cstring>
#include <string>

#include "common.h"

#ifdef ROCE_HAVE_ISAL
#include <isa-l/crc.h>
#endif

namespace roce {

namespace {

// CRC-32 continuation in zlib's convention (pass the previous result, 0 to start).
inline uint32_t CrcUpdate(uint32_t crc, const uint8_t* p, size_t n) {
#ifdef ROCE_HAVE_ISAL
  return crc32_gzip_refl(crc, p, n);
#else
  return static_cast<uint32_t>(crc32(crc, p, static_cast<uInt>(n)));
#endif
}

// The AVX routines of isa-l leave the upper halves of the YMM registers dirty;
// V8's SSE code then pays a transition penalty on every instruction. Clear them.
inline void ZeroUpper() {
#if defined(ROCE_HAVE_ISAL) && (defined(__x86_64__) || defined(__i386__))
  static const bool has_avx = __builtin_cpu_supports("avx");
  if (has_avx) __asm__ volatile("vzeroupper" ::: "memory");
#endif
}

// CRC after 8 bytes of 0xFF (the masked LRH stand-in), in zlib's convention.
uint32_t SeedCrc() {
  static const uint8_t ff[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  return static_cast<uint32_t>(crc32(0, ff, 8));
}

constexpr size_t kUdp = 8;
constexpr size_t kBth = 12;
constexpr size_t kIpv6 = 40;
// At least the largest masked header (IPv4 with options 60 + UDP + BTH = 80 bytes).
constexpr size_t kShortPacket = 256;

// ICRC of one frame; returns false (with `why`) when the offsets do not describe a RoCE v2 packet.
bool IcrcOne(const uint8_t* f, size_t flen, size_t ip, size_t end, uint32_t seed, uint32_t* out, std::string* why) {
  if (end > flen || ip >= end) {
    *why = "offsets out of range (ip " + std::to_string(ip) + ", icrc " + std::to_string(end) + ", frame " + std::to_string(flen) + ")";
    return false;
  }
  // Short packets (ACKs, small WRITEs) are copied whole and masked in place: one CRC call
  // instead of two, which is most of the cost at these lengths.
  uint8_t hdr[kShortPacket];
  size_t iplen;
  const unsigned version = f[ip] >> 4;
  if (version == 4) {
    iplen = static_cast<size_t>(f[ip] & 0x0f) * 4;
    if (iplen < 20) {
      *why = "IPv4 IHL below 5";
      return false;
    }
  } else if (version == 6) {
    iplen = kIpv6;
  } else {
    *why = "IP version " + std::to_string(version) + " is neither 4 nor 6";
    return false;
  }
  const size_t hlen = iplen + kUdp + kBth;
  if (end - ip < hlen) {
    *why = "headers do not fit before the ICRC field";
    return false;
  }
  const size_t total = end - ip;
  const bool whole = total <= kShortPacket;
  std::memcpy(hdr, f + ip, whole ? total : hlen);
  if (version == 4) {
    hdr[1] = 0xff;                         // TOS
    hdr[8] = 0xff;                         // TTL
    hdr[10] = hdr[11] = 0xff;              // header checksum
  } else {
    hdr[0] |= 0x0f;                        // traffic class (low nibble) ...
    hdr[1] = hdr[2] = hdr[3] = 0xff;       // ... and flow label
    hdr[7] = 0xff;                         // hop limit
  }
  hdr[iplen + 6] = hdr[iplen + 7] = 0xff;  // UDP checksum
  hdr[iplen + kUdp + 4] = 0xff;            // BTH byte 4: FECN, BECN, resv6a
  uint32_t crc;
  if (whole) {
    crc = CrcUpdate(seed, hdr, total);
  } else {
    crc = CrcUpdate(seed, hdr, hlen);
    crc = CrcUpdate(crc, f + ip + hlen, total - hlen);
  }
  *out = crc;
  return true;
}

}  // namespace

const char* CrcImplementation() {
#ifdef ROCE_HAVE_ISAL
  return "isa-l";
#else
  return "zlib";
#endif
}

Napi::Value IcrcBurst(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const char* usage = "icrcBurst(buf: Uint8Array, desc: Uint32Array, count: number, out: Uint32Array)";
  void* fp = nullptr;
  void* dp = nullptr;
  void* op = nullptr;
  size_t flen = 0;
  size_t dlen = 0;
  size_t olen = 0;
  if (info.Length() < 4 || !info[2].IsNumber() || !TypedArg(env, info[0], napi_uint8_array, &fp, &flen) ||
      !TypedArg(env, info[1], napi_uint32_array, &dp, &dlen) || !TypedArg(env, info[3], napi_uint32_array, &op, &olen)) {
    Throw(env, code::kBadArgument, std::string(usage) + ": buf must be a Uint8Array, desc and out Uint32Arrays");
  }
  const double cnt = info[2].As<Napi::Number>().DoubleValue();
  const size_t n = cnt > 0 ? static_cast<size_t>(cnt) : 0;
  if (dlen < 2 * n || olen < n) {
    Throw(env, code::kBadArgument, "icrcBurst: desc needs 2*count and out count entries (count " + std::to_string(n) + ")");
  }
  const uint8_t* f = static_cast<const uint8_t*>(fp);
  const uint32_t* d = static_cast<const uint32_t*>(dp);
  uint32_t* o = static_cast<uint32_t*>(op);
  static const uint32_t seed = SeedCrc();
  std::string why;
  for (size_t i = 0; i < n; i++) {
    if (!IcrcOne(f, flen, d[2 * i], d[2 * i + 1], seed, &o[i], &why)) {
      ZeroUpper();
      Throw(env, code::kBadArgument, "icrcBurst: frame " + std::to_string(i) + ": " + why);
    }
  }
  ZeroUpper();
  return env.Undefined();
}

// icrcSealBurst(buf, desc, count): as icrcBurst, but writes each ICRC into its frame (the 4 bytes at
// the ICRC offset, least-significant byte first, as it goes on the wire) instead of returning it:
// the transmit path seals a whole burst with one call and no JS loop.
Napi::Value IcrcSealBurst(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  void* fp = nullptr;
  void* dp = nullptr;
  size_t flen = 0;
  size_t dlen = 0;
  if (info.Length() < 3 || !info[2].IsNumber() || !TypedArg(env, info[0], napi_uint8_array, &fp, &flen) ||
      !TypedArg(env, info[1], napi_uint32_array, &dp, &dlen)) {
    Throw(env, code::kBadArgument, "icrcSealBurst(buf: Uint8Array, desc: Uint32Array, count: number): buf must be a Uint8Array, desc a Uint32Array");
  }
  const double cnt = info[2].As<Napi::Number>().DoubleValue();
  const size_t n = cnt > 0 ? static_cast<size_t>(cnt) : 0;
  if (dlen < 2 * n) Throw(env, code::kBadArgument, "icrcSealBurst: desc needs 2*count entries (count " + std::to_string(n) + ")");
  uint8_t* f = static_cast<uint8_t*>(fp);
  const uint32_t* d = static_cast<const uint32_t*>(dp);
  static const uint32_t seed = SeedCrc();
  std::string why;
  for (size_t i = 0; i < n; i++) {
    const size_t at = d[2 * i + 1];
    uint32_t crc = 0;
    if (at + 4 > flen || !IcrcOne(f, flen, d[2 * i], at, seed, &crc, &why)) {
      ZeroUpper();
      Throw(env, code::kBadArgument, "icrcSealBurst: frame " + std::to_string(i) + ": " + (why.empty() ? "no room for the ICRC" : why));
    }
    f[at] = static_cast<uint8_t>(crc);
    f[at + 1] = static_cast<uint8_t>(crc >> 8);
    f[at + 2] = static_cast<uint8_t>(crc >> 16);
    f[at + 3] = static_cast<uint8_t>(crc >> 24);
  }
  ZeroUpper();
  return env.Undefined();
}

}  // namespace roce
