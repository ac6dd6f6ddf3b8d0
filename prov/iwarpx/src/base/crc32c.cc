#include "base/crc32c.h"

#include <array>
#include <cstddef>
#include <cstring>

#include "base/crc32c_vpclmul.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define IWARPX_CRC32C_X86 1
#else
#define IWARPX_CRC32C_X86 0
#endif

namespace iwarpx {
namespace {

constexpr uint32_t kReflectedPoly = 0x82F63B78u;

// kTables[k][b]: register contribution of byte b followed by k zero bytes.
using SliceTables = std::array<std::array<uint32_t, 256>, 8>;

constexpr SliceTables MakeSliceTables() {
  SliceTables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int bit = 0; bit < 8; ++bit) c = (c >> 1) ^ ((c & 1u) != 0 ? kReflectedPoly : 0u);
    t[0][i] = c;
  }
  for (size_t s = 1; s < t.size(); ++s) {
    for (size_t i = 0; i < 256; ++i) {
      const uint32_t prev = t[s - 1][i];
      t[s][i] = (prev >> 8) ^ t[0][prev & 0xFFu];
    }
  }
  return t;
}

constexpr SliceTables kTables = MakeSliceTables();
static_assert(kTables[0][1] == 0xF26B8303u, "CRC32c table sanity");

// Little-endian load independent of host byte order (the reflected CRC
// consumes the earliest byte first, in the low bits).
inline uint32_t LoadLe32(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}

uint32_t ExtendTable(uint32_t state, const uint8_t* p, size_t n) {
  uint32_t c = state;
  while (n >= 8) {
    const uint32_t lo = c ^ LoadLe32(p);
    const uint32_t hi = LoadLe32(p + 4);
    c = kTables[7][lo & 0xFFu] ^ kTables[6][(lo >> 8) & 0xFFu] ^ kTables[5][(lo >> 16) & 0xFFu] ^
        kTables[4][lo >> 24] ^ kTables[3][hi & 0xFFu] ^ kTables[2][(hi >> 8) & 0xFFu] ^
        kTables[1][(hi >> 16) & 0xFFu] ^ kTables[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  for (; n != 0; --n, ++p) c = (c >> 8) ^ kTables[0][(c ^ *p) & 0xFFu];
  return c;
}

#if IWARPX_CRC32C_X86

// One lane of 8-byte crc32 steps over n (a multiple of 8) bytes.
__attribute__((target("sse4.2"))) inline uint64_t Lane(uint64_t c, const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v;
    std::memcpy(&v, p + i, sizeof(v));
    c = _mm_crc32_u64(c, v);
  }
  return c;
}

// The linear operator "feed `len` zero bytes into the register", as four
// byte-indexed tables: the register of A||B is Shift(reg(A), |B|) ^ reg_0(B)
// (reg_0: B fed from a zero register), since the register update is linear
// over GF(2). Built once from the 32 basis vectors.
struct ShiftTable {
  std::array<std::array<uint32_t, 256>, 4> t{};

  uint32_t Apply(uint32_t x) const {
    return t[0][x & 0xFFu] ^ t[1][(x >> 8) & 0xFFu] ^ t[2][(x >> 16) & 0xFFu] ^ t[3][x >> 24];
  }
};

__attribute__((target("sse4.2"))) ShiftTable MakeShiftTable(size_t len) {
  std::array<uint32_t, 32> basis{};
  for (size_t i = 0; i < 32; ++i) {
    uint64_t c = uint64_t{1} << i;
    for (size_t k = 0; k < len; k += 8) c = _mm_crc32_u64(c, 0);
    basis[i] = static_cast<uint32_t>(c);
  }
  ShiftTable s;
  for (size_t k = 0; k < 4; ++k) {
    for (uint32_t b = 0; b < 256; ++b) {
      uint32_t v = 0;
      for (size_t bit = 0; bit < 8; ++bit) {
        if (((b >> bit) & 1u) != 0) v ^= basis[8 * k + bit];
      }
      s.t[k][b] = v;
    }
  }
  return s;
}

// Three independent lanes keep the crc32 unit busy (latency 3, throughput 1
// per cycle), then the lanes are combined with the shift operators.
constexpr size_t kLongLane = 4096;
constexpr size_t kShortLane = 256;

struct LaneShifts {
  ShiftTable long_lane;
  ShiftTable short_lane;
};

const LaneShifts& GetLaneShifts() {
  static const LaneShifts shifts{MakeShiftTable(kLongLane), MakeShiftTable(kShortLane)};
  return shifts;
}

__attribute__((target("sse4.2"))) inline uint64_t ThreeLanes(uint64_t c, const uint8_t*& p,
                                                             size_t& n, size_t lane,
                                                             const ShiftTable& shift) {
  while (n >= 3 * lane) {
    uint64_t a = c;
    uint64_t b = 0;
    uint64_t d = 0;
    for (size_t i = 0; i < lane; i += 8) {
      uint64_t va;
      uint64_t vb;
      uint64_t vd;
      std::memcpy(&va, p + i, 8);
      std::memcpy(&vb, p + lane + i, 8);
      std::memcpy(&vd, p + 2 * lane + i, 8);
      a = _mm_crc32_u64(a, va);
      b = _mm_crc32_u64(b, vb);
      d = _mm_crc32_u64(d, vd);
    }
    const uint32_t ab = shift.Apply(static_cast<uint32_t>(a)) ^ static_cast<uint32_t>(b);
    c = shift.Apply(ab) ^ static_cast<uint32_t>(d);
    p += 3 * lane;
    n -= 3 * lane;
  }
  return c;
}

__attribute__((target("sse4.2"))) uint32_t ExtendSse42(uint32_t state, const uint8_t* p, size_t n) {
  uint32_t c = state;
  // Byte steps up to an 8-byte boundary so the main loop's loads are aligned.
  while (n != 0 && (reinterpret_cast<uintptr_t>(p) & 7u) != 0) {
    c = _mm_crc32_u8(c, *p);
    ++p;
    --n;
  }
  uint64_t c64 = c;
  if (n >= 3 * kShortLane) {
    const LaneShifts& shifts = GetLaneShifts();
    c64 = ThreeLanes(c64, p, n, kLongLane, shifts.long_lane);
    c64 = ThreeLanes(c64, p, n, kShortLane, shifts.short_lane);
  }
  const size_t whole = n & ~size_t{7};
  c64 = Lane(c64, p, whole);
  p += whole;
  n -= whole;
  c = static_cast<uint32_t>(c64);
  for (; n != 0; --n, ++p) c = _mm_crc32_u8(c, *p);
  return c;
}

bool CpuHasSse42() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2") != 0;
}

#endif  // IWARPX_CRC32C_X86

using ExtendFn = uint32_t (*)(uint32_t, const uint8_t*, size_t);

struct Dispatch {
  bool has_hardware = false;
  ExtendFn fn = nullptr;
  bool has_vector = false;
};

#if IWARPX_CRC32C_X86
// Long buffers by folding with VPCLMULQDQ, shorter ones by `crc32`.
uint32_t ExtendVector(uint32_t state, const uint8_t* p, size_t n) {
  if (n >= crc32c_detail::kVpclmulMinBytes) return crc32c_detail::Crc32cExtendVpclmul(state, p, n);
  return ExtendSse42(state, p, n);
}
#endif

Dispatch Resolve() {
#if IWARPX_CRC32C_X86
  if (CpuHasSse42()) {
    if (crc32c_detail::Crc32cHasVpclmul()) return {true, &ExtendVector, true};
    return {true, &ExtendSse42, false};
  }
#endif
  return {false, &ExtendTable, false};
}

const Dispatch& GetDispatch() {
  static const Dispatch dispatch = Resolve();
  return dispatch;
}

}  // namespace

bool Crc32cHasHardware() {
  return GetDispatch().has_hardware;
}

uint32_t Crc32cExtend(uint32_t state, ByteSpan data) {
  return GetDispatch().fn(state, data.data(), data.size());
}

uint32_t Crc32cExtendPortable(uint32_t state, ByteSpan data) {
  return ExtendTable(state, data.data(), data.size());
}

uint32_t Crc32cExtendHardware(uint32_t state, ByteSpan data) {
#if IWARPX_CRC32C_X86
  if (GetDispatch().has_hardware) return ExtendSse42(state, data.data(), data.size());
#endif
  return ExtendTable(state, data.data(), data.size());
}

bool Crc32cHasVector() {
  return GetDispatch().has_vector;
}

uint32_t Crc32cExtendVector(uint32_t state, ByteSpan data) {
  if (GetDispatch().has_vector) {
    return crc32c_detail::Crc32cExtendVpclmul(state, data.data(), data.size());
  }
  return Crc32cExtendHardware(state, data);
}

}  // namespace iwarpx
