// fi_rx_addr(3) arithmetic for scalable endpoints. An address vector opened
// with rx_ctx_bits = n names receive context i of a peer as
// fi_rx_addr(fi_addr, i, n) = i << (64 - n) | fi_addr: the context index in
// the top n bits, the AV entry in the others (fi_av(3), fi_endpoint(3)).
//
// Contract
// - RxCtxBitsProblem says why (attr->rx_ctx_bits, attr->count) cannot be
//   honoured, or nullptr when it can: at most kMaxRxCtxBits bits (wider
//   indices than any peer has contexts for would only address nothing), and
//   `count` entries must fit in the bits left for the entry.
// - SplitRxAddr undoes fi_rx_addr; with 0 bits the index is always 0.
// Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include <rdma/fabric.h>

namespace iwarpx::ofi {

// 16 bits of context index leave 48 bits of AV entry.
inline constexpr int kMaxRxCtxBits = 16;

struct RxAddr {
  fi_addr_t entry = 0;    // the AV entry (the peer's base address)
  uint32_t rx_index = 0;  // the peer's receive context
};

inline const char* RxCtxBitsProblem(int bits, size_t count) {
  if (bits < 0 || bits > kMaxRxCtxBits) return "rx_ctx_bits must be 0..16";
  if (bits > 0 && static_cast<uint64_t>(count) >> (64 - bits) != 0) {
    return "attr->count does not fit in the fi_addr bits rx_ctx_bits leaves";
  }
  return nullptr;
}

inline RxAddr SplitRxAddr(fi_addr_t addr, int bits) {
  if (bits <= 0) return RxAddr{addr, 0};
  const int shift = 64 - bits;
  return RxAddr{addr & ((uint64_t{1} << shift) - 1), static_cast<uint32_t>(addr >> shift)};
}

}  // namespace iwarpx::ofi
