// Bounded big-endian byte access for wire codecs.
//
// Contract: ByteReader never reads outside the span it was given. Every read
// returns false (and leaves the output untouched) when fewer bytes remain than
// requested; after a failed read the reader is marked failed and all later
// reads fail too, so a codec may issue a sequence of reads and check ok() once.
// ByteWriter is the mirror image over a caller-owned output span: a write that
// does not fit fails and sets the failed flag; nothing is written past the end.
// Neither class allocates or owns memory. Not thread-safe (value types).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace iwarpx {

using ByteSpan = std::span<const uint8_t>;
using MutableByteSpan = std::span<uint8_t>;

inline uint16_t LoadBe16(const uint8_t* p) {
  return static_cast<uint16_t>((uint16_t{p[0]} << 8) | p[1]);
}
inline uint32_t LoadBe32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}
inline uint64_t LoadBe64(const uint8_t* p) {
  return (uint64_t{LoadBe32(p)} << 32) | LoadBe32(p + 4);
}
inline void StoreBe16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
inline void StoreBe32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}
inline void StoreBe64(uint8_t* p, uint64_t v) {
  StoreBe32(p, static_cast<uint32_t>(v >> 32));
  StoreBe32(p + 4, static_cast<uint32_t>(v));
}

class ByteReader {
 public:
  explicit ByteReader(ByteSpan data) : data_(data) {}

  [[nodiscard]] size_t remaining() const { return data_.size() - pos_; }
  [[nodiscard]] size_t position() const { return pos_; }
  [[nodiscard]] bool ok() const { return ok_; }
  // The bytes not yet consumed (empty after a failure).
  [[nodiscard]] ByteSpan rest() const { return ok_ ? data_.subspan(pos_) : ByteSpan{}; }

  bool ReadU8(uint8_t& out) {
    return Read(1, [&](const uint8_t* p) { out = p[0]; });
  }
  bool ReadBe16(uint16_t& out) {
    return Read(2, [&](const uint8_t* p) { out = LoadBe16(p); });
  }
  bool ReadBe32(uint32_t& out) {
    return Read(4, [&](const uint8_t* p) { out = LoadBe32(p); });
  }
  bool ReadBe64(uint64_t& out) {
    return Read(8, [&](const uint8_t* p) { out = LoadBe64(p); });
  }
  // Copies exactly out.size() bytes.
  bool ReadBytes(MutableByteSpan out) {
    return Read(out.size(), [&](const uint8_t* p) {
      if (!out.empty()) std::memcpy(out.data(), p, out.size());
    });
  }
  // Returns a view of the next n bytes without copying.
  bool ReadView(size_t n, ByteSpan& out) {
    return Read(n, [&](const uint8_t* p) { out = ByteSpan(p, n); });
  }
  bool Skip(size_t n) {
    return Read(n, [](const uint8_t*) {});
  }

 private:
  template <class F>
  bool Read(size_t n, F&& f) {
    if (!ok_ || n > remaining()) {
      ok_ = false;
      return false;
    }
    f(data_.data() + pos_);
    pos_ += n;
    return true;
  }

  ByteSpan data_;
  size_t pos_ = 0;
  bool ok_ = true;
};

class ByteWriter {
 public:
  explicit ByteWriter(MutableByteSpan out) : out_(out) {}

  [[nodiscard]] size_t written() const { return pos_; }
  [[nodiscard]] size_t remaining() const { return out_.size() - pos_; }
  [[nodiscard]] bool ok() const { return ok_; }
  // The bytes written so far.
  [[nodiscard]] ByteSpan view() const { return ByteSpan(out_.data(), pos_); }

  bool WriteU8(uint8_t v) {
    return Write(1, [&](uint8_t* p) { p[0] = v; });
  }
  bool WriteBe16(uint16_t v) {
    return Write(2, [&](uint8_t* p) { StoreBe16(p, v); });
  }
  bool WriteBe32(uint32_t v) {
    return Write(4, [&](uint8_t* p) { StoreBe32(p, v); });
  }
  bool WriteBe64(uint64_t v) {
    return Write(8, [&](uint8_t* p) { StoreBe64(p, v); });
  }
  bool WriteBytes(ByteSpan v) {
    return Write(v.size(), [&](uint8_t* p) {
      if (!v.empty()) std::memcpy(p, v.data(), v.size());
    });
  }
  bool WriteZeros(size_t n) {
    return Write(n, [&](uint8_t* p) {
      if (n != 0) std::memset(p, 0, n);
    });
  }

 private:
  template <class F>
  bool Write(size_t n, F&& f) {
    if (!ok_ || n > remaining()) {
      ok_ = false;
      return false;
    }
    f(out_.data() + pos_);
    pos_ += n;
    return true;
  }

  MutableByteSpan out_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace iwarpx
