// CRC32c (Castagnoli): the MPA FPDU CRC (RFC 5044 §4, WIRE.md §2.3), also
// the iSCSI digest (RFC 3720 §12.1, test vectors in §B.4).
//
// Parameters: reflected polynomial 0x82F63B78 (normal form 0x1EDC6F41),
// initial register 0xFFFFFFFF, final XOR 0xFFFFFFFF. Check value for
// "123456789" is 0xE3069283.
//
// Two layers of API:
//   * State API for incremental use: start from kCrc32cInit, feed bytes with
//     Crc32cExtend(state, bytes) any number of times (any split gives the same
//     state), then Crc32cFinalize(state) yields the CRC value. The state is the
//     raw register, not a CRC value; never put a state on the wire.
//   * Value API: Crc32c(bytes) == Crc32cFinalize(Crc32cExtend(kCrc32cInit, bytes)),
//     and Crc32cAccumulator wraps the state for callers that want an object.
//
// Implementations: on x86-64 with VPCLMULQDQ and AVX-512, buffers of
// crc32c_detail::kVpclmulMinBytes and more are folded 256 bytes at a time with
// carry-less multiplies (base/crc32c_vpclmul.h, about twice the speed of the
// best `crc32` loop); otherwise, and for shorter buffers, the SSE4.2 `crc32` instruction (8 bytes
// per instruction; buffers of 768 bytes and more run three interleaved lanes of 4 KiB or 256 bytes,
// combined with precomputed "feed n zero bytes" shift operators, so the instruction's latency is
// hidden), chosen at run time with
// __builtin_cpu_supports("sse4.2") (resolved once, on first use, thread-safe); everywhere else, and
// on CPUs without SSE4.2, a portable slicing-by-8 table implementation. Both are exposed (…Portable
// / …Hardware) so tests can compare them. Calling a …Hardware function where Crc32cHasHardware() is
// false falls back to the portable code (never an illegal instruction).
//
// Wire image (WIRE.md §2.3): MPA carries the CRC as the little-endian byte
// image of the CRC value (as an iSCSI digest does): 32 zero bytes have CRC
// 0x8A9136AA and the wire bytes `aa 36 91 8a`. Use StoreCrcWire/LoadCrcWire,
// never StoreBe32/LoadBe32, for the CRC field.
//
// No allocation, no exceptions; all functions are thread-safe (pure, apart
// from the one-time dispatch which is a function-local static).
#pragma once

#include <cstdint>

#include "base/bytes.h"

namespace iwarpx {

inline constexpr uint32_t kCrc32cInit = 0xFFFFFFFFu;

// Final XOR: turns a register state into the CRC value.
constexpr uint32_t Crc32cFinalize(uint32_t state) {
  return state ^ 0xFFFFFFFFu;
}

// Feeds `data` into the register `state` and returns the new state.
uint32_t Crc32cExtend(uint32_t state, ByteSpan data);
uint32_t Crc32cExtendPortable(uint32_t state, ByteSpan data);
uint32_t Crc32cExtendHardware(uint32_t state, ByteSpan data);

uint32_t Crc32cExtendVector(uint32_t state, ByteSpan data);  // VPCLMULQDQ folding, any length

// True if this CPU has the SSE4.2 crc32 instruction and this build can use it.
bool Crc32cHasHardware();
// True if Crc32cExtend folds long buffers with VPCLMULQDQ (else
// Crc32cExtendVector falls back to Crc32cExtendHardware).
bool Crc32cHasVector();

// One-shot CRC values.
inline uint32_t Crc32c(ByteSpan data) {
  return Crc32cFinalize(Crc32cExtend(kCrc32cInit, data));
}
inline uint32_t Crc32cPortable(ByteSpan data) {
  return Crc32cFinalize(Crc32cExtendPortable(kCrc32cInit, data));
}
inline uint32_t Crc32cHardware(ByteSpan data) {
  return Crc32cFinalize(Crc32cExtendHardware(kCrc32cInit, data));
}
inline uint32_t Crc32cVector(ByteSpan data) {
  return Crc32cFinalize(Crc32cExtendVector(kCrc32cInit, data));
}

// Incremental CRC over a sequence of byte spans. Value() may be called at any
// time and does not disturb the accumulation. Value type, not thread-safe.
class Crc32cAccumulator {
 public:
  void Update(ByteSpan data) { state_ = Crc32cExtend(state_, data); }
  [[nodiscard]] uint32_t Value() const { return Crc32cFinalize(state_); }
  void Reset() { state_ = kCrc32cInit; }

 private:
  uint32_t state_ = kCrc32cInit;
};

// The 4-byte MPA CRC field: little-endian image of the CRC value.
inline void StoreCrcWire(uint8_t* p, uint32_t crc) {
  p[0] = static_cast<uint8_t>(crc);
  p[1] = static_cast<uint8_t>(crc >> 8);
  p[2] = static_cast<uint8_t>(crc >> 16);
  p[3] = static_cast<uint8_t>(crc >> 24);
}
inline uint32_t LoadCrcWire(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}

}  // namespace iwarpx
