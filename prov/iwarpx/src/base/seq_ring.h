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
#pragma once

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace iwarpx {

template <class T>
class SeqRing {
 public:
  SeqRing(size_t capacity, size_t initial)
      : slots_(std::min(initial, capacity)), capacity_(capacity) {
    assert(std::has_single_bit(capacity) && (initial == 0 || std::has_single_bit(initial)));
  }

  T& operator[](uint64_t n) {
    assert(!slots_.empty());
    return slots_[n & (slots_.size() - 1)];
  }
  const T& operator[](uint64_t n) const {
    assert(!slots_.empty());
    return slots_[n & (slots_.size() - 1)];
  }
  [[nodiscard]] size_t size() const { return slots_.size(); }
  [[nodiscard]] size_t capacity() const { return capacity_; }

  void Grow(uint64_t first, size_t live, size_t need) {
    assert(need <= capacity_ && live <= slots_.size());
    if (need <= slots_.size()) return;
    std::vector<T> grown(std::min(std::bit_ceil(need), capacity_));
    const uint64_t old_mask = slots_.size() - 1;
    const uint64_t new_mask = grown.size() - 1;
    for (size_t k = 0; k < live; ++k) {
      grown[(first + k) & new_mask] = std::move(slots_[(first + k) & old_mask]);
    }
    slots_.swap(grown);
  }

  size_t Release() {
    const size_t bytes = slots_.capacity() * sizeof(T);
    std::vector<T>().swap(slots_);
    return bytes;
  }

 private:
  std::vector<T> slots_;
  size_t capacity_;
};

}  // namespace iwarpx
