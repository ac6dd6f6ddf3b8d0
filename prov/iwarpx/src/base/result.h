// Result<T, E>: a value or a typed error, never an exception.
//
// Contract: the stack does not throw. Every fallible function returns either
// a Result<T, E> (a value on success) or a bare error enum. Callers must look
// at the result ([[nodiscard]]). value() on an error and error() on a value
// are programming errors (checked with assert in debug builds), never a
// consequence of peer input: peer input always yields an error value.
#pragma once

#include <cassert>
#include <type_traits>
#include <utility>

namespace iwarpx {

// Wraps an error so that Result<T, E> can be built from it unambiguously.
template <class E>
struct Err {
  E error;
};
template <class E>
Err(E) -> Err<E>;

template <class T, class E>
class [[nodiscard]] Result {
  static_assert(!std::is_same_v<T, E>, "value and error types must differ");

 public:
  Result(T value) : ok_(true), value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Err<E> err) : ok_(false), error_(err.error) {}     // NOLINT(google-explicit-constructor)

  [[nodiscard]] bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }

  [[nodiscard]] const T& value() const& {
    assert(ok_);
    return value_;
  }
  T& value() & {
    assert(ok_);
    return value_;
  }
  T&& value() && {
    assert(ok_);
    return std::move(value_);
  }
  [[nodiscard]] const T& operator*() const& { return value(); }
  const T* operator->() const { return &value(); }

  [[nodiscard]] E error() const {
    assert(!ok_);
    return error_;
  }

 private:
  bool ok_;
  T value_{};
  E error_{};
};

}  // namespace iwarpx
