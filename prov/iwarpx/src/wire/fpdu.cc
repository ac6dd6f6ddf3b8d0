#include "wire/fpdu.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "base/crc32c.h"
#include "wire/markers.h"

namespace iwarpx::wire {

namespace {
constexpr uint8_t kZeroPad[kFpduMaxPad] = {0, 0, 0};
}  // namespace

size_t MaxUlpduLength(size_t emss, bool markers) {
  size_t overhead = kFpduLengthSize + kFpduCrcSize + emss % 4;
  if (markers) overhead += kMarkerSize * ((emss + kMarkerInterval - 1) / kMarkerInterval);
  if (emss <= overhead) return 0;
  return std::min(emss - overhead, kMaxUlpduLength);
}

// ---------------------------------------------------------------------------
// Transmit

Result<FpduFraming, WireError> FrameFpdu(std::span<const ByteSpan> parts, bool crc_enabled,
                                         size_t max_ulpdu) {
  const size_t limit = std::min(max_ulpdu, kMaxUlpduLength);
  size_t total = 0;
  for (ByteSpan part : parts) {
    if (part.size() > limit - total) return Err{WireError::kFpduTooLong};
    total += part.size();
  }
  FpduFraming f;
  StoreBe16(f.prefix_bytes.data(), static_cast<uint16_t>(total));
  const size_t pad = PadFor(total);
  f.trailer_size = static_cast<uint8_t>(pad + kFpduCrcSize);  // trailer_bytes are zero
  if (crc_enabled) {
    uint32_t state = Crc32cExtend(kCrc32cInit, f.prefix());
    for (ByteSpan part : parts) state = Crc32cExtend(state, part);
    state = Crc32cExtend(state, ByteSpan(kZeroPad, pad));
    f.crc = Crc32cFinalize(state);
    StoreCrcWire(f.trailer_bytes.data() + pad, f.crc);
  }
  return f;
}

Result<size_t, WireError> EncodeFpdu(ByteSpan ulpdu, bool crc_enabled, MutableByteSpan out) {
  if (ulpdu.size() > kMaxUlpduLength) return Err{WireError::kFpduTooLong};
  const size_t total = FpduWireLength(ulpdu.size());
  if (out.size() < total) return Err{WireError::kNoSpace};
  const ByteSpan parts[] = {ulpdu};
  auto framing = FrameFpdu(parts, crc_enabled);
  if (!framing.ok()) return Err{framing.error()};
  uint8_t* p = out.data();
  std::memcpy(p, framing->prefix_bytes.data(), kFpduLengthSize);
  if (!ulpdu.empty()) std::memcpy(p + kFpduLengthSize, ulpdu.data(), ulpdu.size());
  std::memcpy(p + kFpduLengthSize + ulpdu.size(), framing->trailer_bytes.data(),
              framing->trailer_size);
  return total;
}

// ---------------------------------------------------------------------------
// FpduReceiver

FpduReceiver::FpduReceiver(const FpduRxConfig& config)
    : config_(config), max_ulpdu_(std::min(config.max_ulpdu, kMaxUlpduLength)) {
  position_ = config.stream_offset;
  to_marker_ = BytesToNextMarker(position_);
  StartFpdu();
}

void FpduReceiver::StartFpdu() {
  phase_ = Phase::kLength;
  fpdu_start_ = position_;
  crc_state_ = kCrc32cInit;
  length_got_ = 0;
  ulpdu_length_ = 0;
  ulpdu_got_ = 0;
  pad_ = 0;
  trailer_got_ = 0;
}

void FpduReceiver::Fail(WireError e) {
  failed_ = true;
  error_ = e;
}

void FpduReceiver::Crc(ByteSpan s) {
  if (config_.crc) crc_state_ = Crc32cExtend(crc_state_, s);
}

FpduReceiver::Stage FpduReceiver::stage() const {
  if (failed_) return Stage::kFailed;
  if (InMarker()) return Stage::kMarker;
  switch (phase_) {
    case Phase::kLength: return Stage::kLength;
    case Phase::kUlpdu: return Stage::kUlpdu;
    case Phase::kTrailer: return Stage::kTrailer;
  }
  return Stage::kFailed;
}

size_t FpduReceiver::PhaseRemaining() const {
  switch (phase_) {
    case Phase::kLength: return kFpduLengthSize - length_got_;
    case Phase::kUlpdu: return ulpdu_length_ - ulpdu_got_;
    case Phase::kTrailer: return pad_ + kFpduCrcSize - trailer_got_;
  }
  return 0;
}

size_t FpduReceiver::Needed() const {
  if (failed_) return 0;
  if (InMarker()) return kMarkerSize - marker_got_;
  const size_t remaining = PhaseRemaining();
  return config_.markers ? std::min(remaining, to_marker_) : remaining;
}

bool FpduReceiver::TakeMarker(ByteSpan s) {
  std::memcpy(marker_.data() + marker_got_, s.data(), s.size());
  marker_got_ += s.size();
  if (marker_got_ < kMarkerSize) return true;
  marker_got_ = 0;
  to_marker_ = kMarkerInterval - kMarkerSize;
  const uint64_t marker_pos = position_ - kMarkerSize;
  if (!MarkerValid(marker_.data(), marker_pos - fpdu_start_, config_.strict_marker_reserved)) {
    Fail(WireError::kBadMarker);
    return false;
  }
  Crc(ByteSpan(marker_.data(), kMarkerSize));
  return true;
}

bool FpduReceiver::TakeLength(ByteSpan s) {
  std::memcpy(length_.data() + length_got_, s.data(), s.size());
  length_got_ += s.size();
  if (length_got_ < kFpduLengthSize) return true;
  Crc(ByteSpan(length_.data(), kFpduLengthSize));
  ulpdu_length_ = LoadBe16(length_.data());
  if (ulpdu_length_ > max_ulpdu_) {
    Fail(WireError::kFpduTooLong);
    return false;
  }
  if (ulpdu_length_ < config_.min_ulpdu) {
    Fail(WireError::kFpduTooShort);
    return false;
  }
  pad_ = PadFor(ulpdu_length_);
  phase_ = ulpdu_length_ != 0 ? Phase::kUlpdu : Phase::kTrailer;
  return true;
}

bool FpduReceiver::TakeTrailer(ByteSpan s) {
  // PAD values are ignored (they only enter the CRC); the rest is the CRC field.
  const size_t pad_left = trailer_got_ < pad_ ? pad_ - trailer_got_ : 0;
  const size_t pad_bytes = std::min(pad_left, s.size());
  Crc(s.first(pad_bytes));
  const ByteSpan crc_bytes = s.subspan(pad_bytes);
  if (!crc_bytes.empty()) {
    std::memcpy(crc_field_.data() + (trailer_got_ + pad_bytes - pad_), crc_bytes.data(),
                crc_bytes.size());
  }
  trailer_got_ += s.size();
  if (trailer_got_ < pad_ + kFpduCrcSize) return true;
  if (config_.crc && LoadCrcWire(crc_field_.data()) != Crc32cFinalize(crc_state_)) {
    Fail(WireError::kBadCrc);
    return false;
  }
  return true;
}

Result<FpduReceiver::Step, WireError> FpduReceiver::Advance(ByteSpan bytes) {
  if (failed_) return Err{error_};
  const size_t n = std::min(bytes.size(), Needed());
  if (n == 0) return Step{};
  const ByteSpan s = bytes.first(n);
  position_ += n;

  if (InMarker()) {
    if (!TakeMarker(s)) return Err{error_};
    return Step{n, false};
  }
  if (config_.markers) to_marker_ -= n;

  switch (phase_) {
    case Phase::kLength:
      if (!TakeLength(s)) return Err{error_};
      break;
    case Phase::kUlpdu:
      Crc(s);
      ulpdu_got_ += n;
      if (ulpdu_got_ == ulpdu_length_) phase_ = Phase::kTrailer;
      break;
    case Phase::kTrailer:
      if (!TakeTrailer(s)) return Err{error_};
      if (trailer_got_ == pad_ + kFpduCrcSize) {
        StartFpdu();
        return Step{n, true};
      }
      break;
  }
  return Step{n, false};
}

// ---------------------------------------------------------------------------
// FpduStreamParser

FpduStreamParser::FpduStreamParser(const FpduRxConfig& config)
    : receiver_(config),
      capacity_(std::min(config.max_ulpdu, kMaxUlpduLength)),
      buffer_(std::make_unique_for_overwrite<uint8_t[]>(capacity_ == 0 ? 1 : capacity_)) {}

void FpduStreamParser::Feed(ByteSpan chunk, FpduVisitor& visitor) {
  if (error_reported_) return;
  while (!chunk.empty()) {
    if (receiver_.stage() == FpduReceiver::Stage::kUlpdu) {
      const size_t n = std::min(chunk.size(), receiver_.Needed());
      if (receiver_.ulpdu_offset() == 0 && n == receiver_.ulpdu_length()) {
        // The whole ULPDU is contiguous in this chunk: keep a view, no copy.
        direct_ = chunk.data();
        direct_size_ = n;
      } else {
        // ulpdu_offset() + n <= ulpdu_length() <= capacity_ (checked by the receiver).
        std::memcpy(buffer_.get() + fill_, chunk.data(), n);
        fill_ += n;
      }
    }
    auto step = receiver_.Advance(chunk);
    if (!step.ok()) {
      error_reported_ = true;
      direct_ = nullptr;
      fill_ = 0;
      visitor.OnError(step.error());
      return;
    }
    chunk = chunk.subspan(step->consumed);
    if (step->fpdu_complete) {
      const ByteSpan ulpdu =
          direct_ != nullptr ? ByteSpan(direct_, direct_size_) : ByteSpan(buffer_.get(), fill_);
      direct_ = nullptr;
      direct_size_ = 0;
      fill_ = 0;
      visitor.OnFpdu(ulpdu);
    }
  }
  // The chunk's memory is the caller's only until we return: keep a copy of a
  // ULPDU whose FPDU has not completed yet.
  if (direct_ != nullptr) {
    std::memcpy(buffer_.get(), direct_, direct_size_);
    fill_ = direct_size_;
    direct_ = nullptr;
    direct_size_ = 0;
  }
}

}  // namespace iwarpx::wire
