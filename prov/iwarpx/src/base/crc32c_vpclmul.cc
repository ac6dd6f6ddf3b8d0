// CRC32c by folding with VPCLMULQDQ (see the header for the method).
#include "base/crc32c_vpclmul.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define IWARPX_CRC32C_VPCLMUL 1
#else
#define IWARPX_CRC32C_VPCLMUL 0
#endif

namespace iwarpx::crc32c_detail {

#if IWARPX_CRC32C_VPCLMUL

namespace {

// P = x^32 + kPolyLow, normal form (bit d: coefficient of x^d).
constexpr uint64_t kPolyLow = 0x1EDC6F41u;

// x^n mod P, normal form, degree < 32.
constexpr uint64_t XPowModP(uint64_t n) {
  uint64_t r = 1;
  for (uint64_t i = 0; i < n; ++i) {
    r <<= 1;
    if ((r >> 32) != 0) r ^= (uint64_t{1} << 32) | kPolyLow;
  }
  return r;
}

// The 64-bit operand K(n) such that the carry-less product of a
// message-order 64-bit lane L with K(n), read as a 128-bit message-order
// block, is L·(x^n mod P): a product of two message-order 64-bit values
// occupies bits 0..126, i.e. stands one degree higher in a 128-bit block than
// the polynomial product, so K(n) is x^(n-1) mod P, bit-reversed into 64 bits.
constexpr uint64_t FoldConstant(uint64_t n) {
  const uint64_t c = XPowModP(n - 1);
  uint64_t k = 0;
  for (int d = 0; d < 64; ++d) {
    if (((c >> d) & 1u) != 0) k |= uint64_t{1} << (63 - d);
  }
  return k;
}

// Folding distances: 256 bytes (four 512-bit accumulators) and 16 bytes.
constexpr uint64_t kFold256Lo = FoldConstant(2048 + 64);
constexpr uint64_t kFold256Hi = FoldConstant(2048);
constexpr uint64_t kFold16Lo = FoldConstant(128 + 64);
constexpr uint64_t kFold16Hi = FoldConstant(128);

#define IWARPX_VPCLMUL_TARGET __attribute__((target("avx512f,avx512vl,vpclmulqdq,pclmul,sse4.2")))

// V moved 16 bytes on (its low qword is the earlier, higher-degree half).
IWARPX_VPCLMUL_TARGET inline __m128i Fold16(__m128i v, __m128i k) {
  return _mm_xor_si128(_mm_clmulepi64_si128(v, k, 0x00), _mm_clmulepi64_si128(v, k, 0x11));
}

IWARPX_VPCLMUL_TARGET inline __m512i Fold256(__m512i v, __m512i k) {
  return _mm512_xor_si512(_mm512_clmulepi64_epi128(v, k, 0x00),
                          _mm512_clmulepi64_epi128(v, k, 0x11));
}

IWARPX_VPCLMUL_TARGET uint32_t Tail(uint64_t c, const uint8_t* p, size_t n) {
  while (n >= 8) {
    uint64_t v = 0;
    __builtin_memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    n -= 8;
  }
  auto c32 = static_cast<uint32_t>(c);
  for (; n != 0; --n, ++p) c32 = _mm_crc32_u8(c32, *p);
  return c32;
}

}  // namespace

IWARPX_VPCLMUL_TARGET uint32_t Crc32cExtendVpclmul(uint32_t state, const uint8_t* p, size_t n) {
  if (n < 256) return Tail(state, p, n);
  const auto lo = static_cast<long long>(kFold256Lo);
  const auto hi = static_cast<long long>(kFold256Hi);
  const __m512i k256 = _mm512_set_epi64(hi, lo, hi, lo, hi, lo, hi, lo);
  // The register state enters through the first 4 bytes.
  __m512i x0 = _mm512_xor_si512(_mm512_loadu_si512(p),
                                _mm512_zextsi128_si512(_mm_cvtsi32_si128(static_cast<int>(state))));
  __m512i x1 = _mm512_loadu_si512(p + 64);
  __m512i x2 = _mm512_loadu_si512(p + 128);
  __m512i x3 = _mm512_loadu_si512(p + 192);
  p += 256;
  n -= 256;
  while (n >= 256) {
    x0 = _mm512_xor_si512(Fold256(x0, k256), _mm512_loadu_si512(p));
    x1 = _mm512_xor_si512(Fold256(x1, k256), _mm512_loadu_si512(p + 64));
    x2 = _mm512_xor_si512(Fold256(x2, k256), _mm512_loadu_si512(p + 128));
    x3 = _mm512_xor_si512(Fold256(x3, k256), _mm512_loadu_si512(p + 192));
    p += 256;
    n -= 256;
  }
  // The 16 blocks of the accumulators, in message order, into one (through
  // memory: GCC 12 warns about the lane-extract intrinsics).
  alignas(64) uint8_t blocks[256];
  _mm512_store_si512(blocks, x0);
  _mm512_store_si512(blocks + 64, x1);
  _mm512_store_si512(blocks + 128, x2);
  _mm512_store_si512(blocks + 192, x3);
  const __m128i k16 =
      _mm_set_epi64x(static_cast<long long>(kFold16Hi), static_cast<long long>(kFold16Lo));
  __m128i t = _mm_load_si128(reinterpret_cast<const __m128i*>(blocks));
  for (size_t b = 16; b < sizeof(blocks); b += 16) {
    t = _mm_xor_si128(Fold16(t, k16), _mm_load_si128(reinterpret_cast<const __m128i*>(blocks + b)));
  }
  while (n >= 16) {
    t = _mm_xor_si128(Fold16(t, k16), _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    p += 16;
    n -= 16;
  }
  // t is the last 16 bytes of a message equivalent to everything so far.
  uint64_t c = _mm_crc32_u64(0, static_cast<uint64_t>(_mm_cvtsi128_si64(t)));
  c = _mm_crc32_u64(c, static_cast<uint64_t>(_mm_extract_epi64(t, 1)));
  return Tail(c, p, n);
}

bool Crc32cHasVpclmul() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("vpclmulqdq") != 0 && __builtin_cpu_supports("avx512f") != 0 &&
         __builtin_cpu_supports("avx512vl") != 0 && __builtin_cpu_supports("pclmul") != 0 &&
         __builtin_cpu_supports("sse4.2") != 0;
}

#else  // !IWARPX_CRC32C_VPCLMUL

bool Crc32cHasVpclmul() {
  return false;
}

uint32_t Crc32cExtendVpclmul(uint32_t /*state*/, const uint8_t* /*p*/, size_t /*n*/) {
  __builtin_trap();  // callers check Crc32cHasVpclmul() first
}

#endif

}  // namespace iwarpx::crc32c_detail
