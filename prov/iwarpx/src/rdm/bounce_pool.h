// BouncePool: the bounce receive buffers of an RDM endpoint, named by index.
// Buffers are carved out of slabs of kPerSlab buffers, each slab one
// allocation that is not zero-filled: glibc maps a slab this large straight
// from the kernel, so a buffer costs resident memory only for the pages a
// message has touched — a peer with two bounces posted and one 8-byte
// message received holds one page, not two heap chunks with headers.
//
// Contract: Alloc() reuses the most recently freed buffer first (its pages
// are likely resident) and grows by one slab when none is free; indices and
// buffer addresses stay valid for the life of the pool; Free(i) of an index
// that is not allocated is a caller bug. Not thread-safe (the engine lock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace iwarpx::rdm {

class BouncePool {
 public:
  static constexpr uint32_t kPerSlab = 64;

  explicit BouncePool(size_t buffer_size) : buffer_size_(buffer_size) {}

  uint32_t Alloc();
  void Free(uint32_t i) { free_.push_back(i); }
  [[nodiscard]] uint8_t* Buf(uint32_t i) const {
    return slabs_[i / kPerSlab].get() + size_t{i % kPerSlab} * buffer_size_;
  }
  // Buffers made so far (valid indices are below this).
  [[nodiscard]] uint32_t count() const { return count_; }
  [[nodiscard]] size_t buffer_size() const { return buffer_size_; }

 private:
  size_t buffer_size_;
  std::vector<std::unique_ptr<uint8_t[]>> slabs_;
  std::vector<uint32_t> free_;
  uint32_t count_ = 0;
};

}  // namespace iwarpx::rdm
