// CompactVec<T>: a heap array that knows its length, for members sized now
// and then rather than pushed to (a queue pair's rings: made, doubled, given
// back). 16 bytes where a std::vector is 24 (a pointer and a 32-bit length),
// and nothing allocated while empty; an RDM endpoint keeps a QueuePair with
// seven of them per peer.
//
// Contract: the members below behave as std::vector's with capacity() ==
// size(): CompactVec(n) and resize(n) value-initialise new elements and
// resize keeps the first min(size, n) by moving them (a resize to another
// length always reallocates; to the same length does nothing); assign(n, v)
// makes n copies of v. At most 2^32 - 1 elements. Iterators are pointers,
// invalidated by resize, assign, swap and destruction. Not thread-safe.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

namespace iwarpx {

template <class T>
class CompactVec {
 public:
  using value_type = T;

  CompactVec() = default;
  explicit CompactVec(size_t n) { resize(n); }
  CompactVec(CompactVec&& o) noexcept
      : data_(std::move(o.data_)), size_(std::exchange(o.size_, 0)) {}
  CompactVec& operator=(CompactVec&& o) noexcept {
    data_ = std::move(o.data_);
    size_ = std::exchange(o.size_, 0);
    return *this;
  }
  CompactVec(const CompactVec&) = delete;
  CompactVec& operator=(const CompactVec&) = delete;
  ~CompactVec() = default;

  [[nodiscard]] size_t size() const { return size_; }
  [[nodiscard]] size_t capacity() const { return size_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  T& operator[](size_t i) {
    assert(i < size_);
    return data_[i];
  }
  const T& operator[](size_t i) const {
    assert(i < size_);
    return data_[i];
  }
  T* begin() { return data_.get(); }
  T* end() { return data_.get() + size_; }
  const T* begin() const { return data_.get(); }
  const T* end() const { return data_.get() + size_; }

  void resize(size_t n) {
    assert(n <= UINT32_MAX);
    if (n == size_) return;
    std::unique_ptr<T[]> grown = n == 0 ? nullptr : std::make_unique<T[]>(n);
    std::move(data_.get(), data_.get() + std::min<size_t>(size_, n), grown.get());
    data_ = std::move(grown);
    size_ = static_cast<uint32_t>(n);
  }
  void assign(size_t n, const T& v) {
    resize(0);
    resize(n);
    std::fill(begin(), end(), v);
  }
  void swap(CompactVec& o) noexcept {
    data_.swap(o.data_);
    std::swap(size_, o.size_);
  }

 private:
  std::unique_ptr<T[]> data_;
  uint32_t size_ = 0;
};

}  // namespace iwarpx
