// CRC32c by carry-less multiplication on 512-bit vectors (VPCLMULQDQ with
// AVX-512): the long-buffer path behind base/crc32c.h, which picks it at run
// time. Internal to base/: callers use Crc32cExtend.
//
// Why: the SSE4.2 `crc32` instruction retires 8 bytes per cycle at best (three
// interleaved lanes reach that), which on this project's 2-CPU machines is
// 12 % of an RDM sender's cycles at 1 MiB (docs/PERFORMANCE.md). Folding
// 64-byte vectors with carry-less multiplies has no such single-port limit.
//
// Method (the classic folding, derived here in "message order", where a
// block's first bit is its highest-degree coefficient, as in any reflected
// CRC): with a zero register, the CRC register after a message M is
// M(x)·x^32 mod P, so any 16-byte block V followed by n more bytes may be
// replaced by a block F with F ≡ V·x^(8n') mod P placed n' bytes later (XORed
// into the block there) without changing the result. F is computed from V's
// two 64-bit halves with two carry-less products by precomputed constants
// (x^(D+64) mod P and x^D mod P for a distance of D bits, each divided by x
// because a carry-less product of two message-order 64-bit values stands one
// degree higher in a 128-bit block). A register state S
// other than zero enters by XOR into the first 4 bytes (the register update is
// linear, and a reflected CRC's first step XORs the register into the first
// bytes). Four 512-bit accumulators fold 256 bytes per step; they are then
// folded into one 16-byte block, whose register the `crc32` instruction
// computes from zero, and the last bytes (< 16) follow by `crc32` too.
//
// Contract: Crc32cExtendVpclmul(state, p, n) returns exactly what
// Crc32cExtendPortable returns, for any n (short buffers simply take the
// `crc32` instruction); it must only be called where Crc32cHasVpclmul() is
// true. Pure and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

namespace iwarpx::crc32c_detail {

// True if this CPU has VPCLMULQDQ, AVX-512F/VL and SSE4.2 and this build can
// use them (x86-64 with GCC or Clang).
bool Crc32cHasVpclmul();

uint32_t Crc32cExtendVpclmul(uint32_t state, const uint8_t* p, size_t n);

// Buffers at least this long take the vector path in Crc32cExtend; shorter
// ones the three-lane `crc32` loop.
inline constexpr size_t kVpclmulMinBytes = 1024;

}  // namespace iwarpx::crc32c_detail
