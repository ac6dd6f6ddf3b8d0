// Test helpers: hex <-> bytes. Test-only; never linked into the provider.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "base/bytes.h"

namespace iwarpx::testing {

// Parses hex digits, ignoring spaces, '|' and newlines ("4d50 4120|49").
// Aborts on an odd number of digits or a non-hex character (a test bug).
inline std::vector<uint8_t> FromHex(std::string_view hex) {
  std::vector<uint8_t> out;
  int hi = -1;
  for (char c : hex) {
    int v;
    if (c >= '0' && c <= '9') {
      v = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      v = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      v = c - 'A' + 10;
    } else if (c == ' ' || c == '|' || c == '\n' || c == '\t') {
      continue;
    } else {
      std::abort();
    }
    if (hi < 0) {
      hi = v;
    } else {
      out.push_back(static_cast<uint8_t>((hi << 4) | v));
      hi = -1;
    }
  }
  if (hi >= 0) std::abort();
  return out;
}

inline std::string ToHex(ByteSpan bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    s.push_back(kDigits[b >> 4]);
    s.push_back(kDigits[b & 0xF]);
  }
  return s;
}

}  // namespace iwarpx::testing
