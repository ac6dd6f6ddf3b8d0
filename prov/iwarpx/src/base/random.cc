#include "base/random.h"

#include <sys/random.h>

#include <chrono>

namespace iwarpx {
namespace {

uint64_t SplitMix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t Rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

}  // namespace

Random::Random(uint64_t seed) : s_{} {
  for (uint64_t& s : s_) s = SplitMix64(seed);
}

Random Random::FromOs() {
  uint64_t seed = 0;
  if (getrandom(&seed, sizeof(seed), 0) != static_cast<ssize_t>(sizeof(seed))) {
    const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
    seed = static_cast<uint64_t>(now) ^ reinterpret_cast<uintptr_t>(&seed);
  }
  return Random(seed);
}

uint64_t Random::Next64() {
  const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = Rotl(s_[3], 45);
  return result;
}

uint64_t Random::Below(uint64_t bound) {
  // Rejection sampling: no modulo bias.
  const uint64_t limit = UINT64_MAX - (UINT64_MAX % bound);
  uint64_t v;
  do {
    v = Next64();
  } while (v >= limit);
  return v % bound;
}

}  // namespace iwarpx
