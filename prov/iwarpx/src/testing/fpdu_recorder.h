// Test helpers for FPDU-level tests: byte-vector builders and a visitor that
// records what an FpduStreamParser delivers. Test-only; never linked into the
// provider.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "base/bytes.h"
#include "wire/error.h"
#include "wire/fpdu.h"

namespace iwarpx::testing {

using Bytes = std::vector<uint8_t>;

// n bytes counting up from `start` (wrapping at 256).
inline Bytes Iota(size_t n, uint8_t start = 0) {
  Bytes v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(start + i);
  return v;
}

inline Bytes RandomBytes(std::mt19937& rng, size_t n) {
  Bytes v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// Records every delivered ULPDU (a copy, and where the view pointed) and every
// error, in order.
struct FpduRecorder : wire::FpduVisitor {
  std::vector<Bytes> fpdus;
  std::vector<const uint8_t*> views;
  std::vector<wire::WireError> errors;
  void OnFpdu(ByteSpan ulpdu) override {
    fpdus.emplace_back(ulpdu.begin(), ulpdu.end());
    views.push_back(ulpdu.data());
  }
  void OnError(wire::WireError e) override { errors.push_back(e); }
};

}  // namespace iwarpx::testing
