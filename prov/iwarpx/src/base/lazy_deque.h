// LazyDeque<T>: a std::deque that allocates nothing until its first element.
// libstdc++'s std::deque allocates its map and a first 512-byte node when it
// is constructed, even if it stays empty; an object holding several that are
// almost always empty (an RDM peer's wait queues: 8 of them, 4.6 KiB per peer)
// pays that for nothing. LazyDeque makes the deque on the first push and
// keeps it (a queue used once is likely to be used again).
//
// Contract: the members below behave as std::deque's; front() and pop_front()
// need a non-empty queue (as std::deque's); clear() frees the storage.
// Iterators are std::deque's, invalidated as std::deque's are, and by clear()
// and swap(). Not thread-safe.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <utility>

namespace iwarpx {

template <class T>
class LazyDeque {
 public:
  using value_type = T;
  using iterator = typename std::deque<T>::iterator;
  using const_iterator = typename std::deque<T>::const_iterator;

  [[nodiscard]] bool empty() const { return d_ == nullptr || d_->empty(); }
  [[nodiscard]] size_t size() const { return d_ == nullptr ? 0 : d_->size(); }
  T& front() { return d_->front(); }
  const T& front() const { return d_->front(); }
  void pop_front() { d_->pop_front(); }
  void push_back(const T& v) { Get().push_back(v); }
  void push_back(T&& v) { Get().push_back(std::move(v)); }
  void push_front(const T& v) { Get().push_front(v); }
  template <class... Args>
  T& emplace_back(Args&&... args) {
    return Get().emplace_back(std::forward<Args>(args)...);
  }
  void clear() { d_.reset(); }
  // Removes every element equal to `v` (std::erase for a std::deque);
  // returns how many.
  size_t remove(const T& v) { return d_ == nullptr ? 0 : std::erase(*d_, v); }
  void swap(LazyDeque& other) noexcept { d_.swap(other.d_); }

  iterator begin() { return d_ == nullptr ? iterator() : d_->begin(); }
  iterator end() { return d_ == nullptr ? iterator() : d_->end(); }
  const_iterator begin() const { return d_ == nullptr ? const_iterator() : d_->cbegin(); }
  const_iterator end() const { return d_ == nullptr ? const_iterator() : d_->cend(); }

  // Whether storage is allocated (tests).
  [[nodiscard]] bool allocated() const { return d_ != nullptr; }

 private:
  std::deque<T>& Get() {
    if (d_ == nullptr) d_ = std::make_unique<std::deque<T>>();
    return *d_;
  }
  std::unique_ptr<std::deque<T>> d_;
};

}  // namespace iwarpx
