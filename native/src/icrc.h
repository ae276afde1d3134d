// RoCE v2 ICRC of a burst of frames in one call (IBTA Annex A17; the same
// masking as packets/icrc.ts). CRC-32 by isa-l (VPCLMUL) when the addon was
// built with it, else zlib.
#pragma once

#include <napi.h>

namespace roce {

// icrcBurst(buf: Uint8Array, desc: Uint32Array, count: number, out: Uint32Array): void
// desc holds `count` pairs (ipOffset, icrcOffset) of byte offsets into buf; out[i] receives the ICRC
// value of frame i (compare with packets/icrc.ts `icrcV2`).
Napi::Value IcrcBurst(const Napi::CallbackInfo& info);
// icrcSealBurst(buf: Uint8Array, desc: Uint32Array, count: number): void
// The same pairs; each frame's ICRC is written into buf at its ICRC offset (little-endian, as sent).
Napi::Value IcrcSealBurst(const Napi::CallbackInfo& info);
// The name of the CRC-32 implementation in use ("isa-l" or "zlib").
const char* CrcImplementation();

}  // namespace roce
