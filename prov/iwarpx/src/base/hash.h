// Word-at-a-time hashing for the provider's hash tables keyed by addresses
// (transport::SockAddrHash, the AV's index): each 64-bit word is folded in
// with the splitmix64 finalizer, a few instructions per word where byte-wise
// FNV-1a cost a multiply per byte (~50 instructions for an IPv4 address, and
// a datagram's path hashed its peer's address several times).
//
// Contract: deterministic within a process, equal inputs hash alike, every
// input bit affects every output bit. Not keyed: not a defence against hash
// flooding (the tables it serves are keyed by addresses a peer must own, and
// the RD channel creates peers only for datagrams that open a session).
#pragma once

#include <cstdint>

namespace iwarpx {

// The splitmix64 finalizer: a bijective 64-bit mix.
constexpr uint64_t HashMix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// Folds `word` into the running hash `h`.
constexpr uint64_t HashCombine(uint64_t h, uint64_t word) {
  return HashMix(h ^ word);
}

}  // namespace iwarpx
