// SeqRing<T>: the slots of a window of consecutive sequence numbers, number n
// in slot n mod size(). The storage starts small and doubles on demand up to
// a fixed capacity, so a window that is rarely full (most peers of an RDM
// endpoint send a message now and then) does not cost its full depth.
//
// Contract:
// * capacity is a power of two; the initial size is 0 or a power of two, at
//   most capacity. A ring of size 0 allocates nothing until its first Grow
//   (for windows most peers never use, e.g. an RD stream's hold slots); no
//   number may be accessed before that.
// * Numbers may be 32-bit sequence numbers that wrap: size() divides 2^32,
//   so n & (size() - 1) is the same slot whether n is taken mod 2^32 or not.
// * Grow(first, live, need) makes size() >= need (need <= capacity()), and
//   keeps the contents of the `live` numbers first, first + 1, ...: they are
//   moved to their slots in the larger storage. Slots of other numbers are
//   default-constructed afterwards. References into the ring are invalidated
//   by Grow only.
// * Release() frees the storage (size() 0, as a ring made with initial 0)
//   and returns the bytes it held; only with no live number (the owner
//   knows). The next Grow makes it again.
// * Not thread-safe; no allocation except in the constructor and Grow.
// * 16 bytes (a pointer and two 32-bit sizes; capacity at most 2^31): an RD
//   peer keeps four rings.
#pragma once

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

namespace iwarpx {

template <class T>
class SeqRing {
 public:
  SeqRing(size_t capacity, size_t initial)
      : size_(static_cast<uint32_t>(std::min(initial, capacity))),
        capacity_(static_cast<uint32_t>(capacity)) {
    assert(std::has_single_bit(capacity) && capacity <= (size_t{1} << 31) &&
           (initial == 0 || std::has_single_bit(initial)));
    if (size_ != 0) slots_ = std::make_unique<T[]>(size_);
  }

  T& operator[](uint64_t n) {
    assert(size_ != 0);
    return slots_[n & (size_ - 1)];
  }
  const T& operator[](uint64_t n) const {
    assert(size_ != 0);
    return slots_[n & (size_ - 1)];
  }
  [[nodiscard]] size_t size() const { return size_; }
  [[nodiscard]] size_t capacity() const { return capacity_; }

  void Grow(uint64_t first, size_t live, size_t need) {
    assert(need <= capacity_ && live <= size_);
    if (need <= size_) return;
    const auto grown_size = static_cast<uint32_t>(std::min<size_t>(std::bit_ceil(need), capacity_));
    auto grown = std::make_unique<T[]>(grown_size);
    const uint64_t old_mask = size_ - 1;
    const uint64_t new_mask = grown_size - 1;
    for (size_t k = 0; k < live; ++k) {
      grown[(first + k) & new_mask] = std::move(slots_[(first + k) & old_mask]);
    }
    slots_ = std::move(grown);
    size_ = grown_size;
  }

  size_t Release() {
    const size_t bytes = size_t{size_} * sizeof(T);
    slots_.reset();
    size_ = 0;
    return bytes;
  }

 private:
  std::unique_ptr<T[]> slots_;
  uint32_t size_;
  uint32_t capacity_;
};

}  // namespace iwarpx
