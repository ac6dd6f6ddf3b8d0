// Injectable randomness.
//
// Contract: Random is a small, fast, non-cryptographic generator
// (splitmix64-seeded xoshiro256**). Production code seeds it from the OS
// (Random::FromOs()); tests seed it with a fixed value so every run is the
// same. Values that must be unguessable by a peer (STag keys, session ids) are
// drawn from a generator seeded from the OS; their unpredictability rests on
// that seed, not on the generator being cryptographic. Not thread-safe: each
// owner (a domain, a test) has its own instance.
#pragma once

#include <cstdint>

namespace iwarpx {

class Random {
 public:
  explicit Random(uint64_t seed);
  // Seeded from getrandom(2); falls back to time and address entropy if the
  // syscall is unavailable.
  static Random FromOs();

  uint64_t Next64();
  uint32_t Next32() { return static_cast<uint32_t>(Next64() >> 32); }
  // Uniform in [0, bound), bound > 0.
  uint64_t Below(uint64_t bound);

 private:
  uint64_t s_[4];
};

}  // namespace iwarpx
