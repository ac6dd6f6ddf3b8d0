#include "transport/fault.h"

#include <charconv>
#include <cstring>

namespace iwarpx::transport {
namespace {

FaultSpecError SpecError(FaultSpecError::Code code, size_t position, std::string message) {
  return FaultSpecError{code, position, std::move(message)};
}

std::vector<uint8_t> Flatten(std::span<const iovec> iov) {
  std::vector<uint8_t> out(TotalLength(iov));
  size_t at = 0;
  for (const iovec& v : iov) {
    if (v.iov_len == 0) continue;
    std::memcpy(out.data() + at, v.iov_base, v.iov_len);
    at += v.iov_len;
  }
  return out;
}

}  // namespace

Result<FaultSpec, FaultSpecError> FaultSpec::Parse(std::string_view spec) {
  FaultSpec out;
  if (spec.empty()) return out;
  struct Field {
    std::string_view key;
    bool seen;
  };
  Field fields[] = {{"drop", false},    {"dup", false}, {"reorder", false},
                    {"corrupt", false}, {"gap", false}, {"seed", false}};
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t end = spec.find(',', pos);
    if (end == std::string_view::npos) end = spec.size();
    const std::string_view item = spec.substr(pos, end - pos);
    if (item.empty()) {
      return Err{SpecError(FaultSpecError::Code::kEmptyItem, pos, "empty item in fault spec")};
    }
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return Err{SpecError(FaultSpecError::Code::kMissingEquals, pos,
                           "'" + std::string(item) + "': expected key=value")};
    }
    const std::string_view key = item.substr(0, eq);
    const std::string_view text = item.substr(eq + 1);
    Field* field = nullptr;
    for (Field& f : fields) {
      if (f.key == key) field = &f;
    }
    if (field == nullptr) {
      return Err{SpecError(FaultSpecError::Code::kUnknownKey, pos,
                           "unknown fault key '" + std::string(key) +
                               "' (known: drop, dup, reorder, corrupt, gap, seed)")};
    }
    if (field->seen) {
      return Err{SpecError(FaultSpecError::Code::kDuplicateKey, pos,
                           "fault key '" + std::string(key) + "' given twice")};
    }
    field->seen = true;
    uint64_t value = 0;
    const char* text_end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), text_end, value);
    if (text.empty() || ec != std::errc() || ptr != text_end) {
      return Err{
          SpecError(FaultSpecError::Code::kBadNumber, pos,
                    std::string(key) + ": '" + std::string(text) + "' is not a decimal number")};
    }
    if (key == "seed") {
      out.seed = value;
    } else if (key == "gap") {
      if (value < 1 || value > kMaxGap) {
        return Err{SpecError(FaultSpecError::Code::kOutOfRange, pos,
                             "gap: " + std::string(text) + " is outside 1..64")};
      }
      out.gap = static_cast<uint32_t>(value);
    } else {
      if (value > kPerMille) {
        return Err{
            SpecError(FaultSpecError::Code::kOutOfRange, pos,
                      std::string(key) + ": " + std::string(text) + " is above 1000 (per-mille)")};
      }
      const auto per_mille = static_cast<uint32_t>(value);
      if (key == "drop") out.drop = per_mille;
      if (key == "dup") out.dup = per_mille;
      if (key == "reorder") out.reorder = per_mille;
      if (key == "corrupt") out.corrupt = per_mille;
    }
    pos = end + 1;
    if (end == spec.size()) break;
  }
  return out;
}

FaultInjector::FaultInjector(std::unique_ptr<DatagramSocket> inner, const FaultSpec& spec)
    : inner_(std::move(inner)), spec_(spec), rng_(spec.seed) {}

IoResult FaultInjector::SendCopy(const SockAddr& to, const std::vector<uint8_t>& bytes) {
  const iovec v{const_cast<uint8_t*>(bytes.data()), bytes.size()};
  return inner_->SendTo(to, std::span<const iovec>(&v, 1));
}

IoResult FaultInjector::SendTo(const SockAddr& to, std::span<const iovec> iov) {
  ++counters_.offered;
  const bool drop = Roll(spec_.drop);
  const bool corrupt = Roll(spec_.corrupt);
  const bool dup = Roll(spec_.dup);
  const bool reorder = Roll(spec_.reorder);
  const size_t size = TotalLength(iov);
  if (drop) {
    ++counters_.dropped;
    return IoResult::Ok(size);
  }
  std::vector<uint8_t> copy;
  const bool copied = (corrupt && size > 0) || reorder;
  if (copied) copy = Flatten(iov);
  if (corrupt && size > 0) {
    const uint64_t index = rng_.Below(size);
    const auto mask = static_cast<uint8_t>(1 + rng_.Below(255));
    copy[index] ^= mask;
    ++counters_.corrupted;
  }
  if (reorder) {
    held_.push_back(Held{to, std::move(copy), spec_.gap});
    ++counters_.reordered;
    return IoResult::Ok(size);
  }
  const IoResult r = copied ? SendCopy(to, copy) : inner_->SendTo(to, iov);
  if (!r.ok()) return r;
  ++counters_.delivered;
  if (dup) {
    ++counters_.duplicated;
    const IoResult again = copied ? SendCopy(to, copy) : inner_->SendTo(to, iov);
    if (again.ok()) ++counters_.delivered;
  }
  AfterSend();
  return r;
}

void FaultInjector::AfterSend() {
  for (Held& h : held_) {
    if (h.countdown > 0) --h.countdown;
  }
  // All holds start with the same countdown, so the due ones are at the front.
  while (!held_.empty() && held_.front().countdown == 0) {
    const Held h = std::move(held_.front());
    held_.pop_front();
    if (SendCopy(h.to, h.bytes).ok()) {
      ++counters_.delivered;
    } else {
      ++counters_.release_failed;
    }
  }
}

void FaultInjector::Flush() {
  while (!held_.empty()) {
    const Held h = std::move(held_.front());
    held_.pop_front();
    if (SendCopy(h.to, h.bytes).ok()) {
      ++counters_.delivered;
    } else {
      ++counters_.release_failed;
    }
  }
}

BatchResult FaultInjector::SendBatch(std::span<DgramMessage> msgs) {
  const size_t n = msgs.size() < kMaxBatch ? msgs.size() : kMaxBatch;
  for (size_t i = 0; i < n; ++i) {
    const IoResult r = SendTo(msgs[i].addr, msgs[i].iov);
    if (!r.ok()) {
      if (i > 0) return {i, IoStatus::kOk, 0};
      return {0, r.status, r.err};
    }
    msgs[i].bytes = r.bytes;
    msgs[i].truncated = false;
  }
  return {n, IoStatus::kOk, 0};
}

}  // namespace iwarpx::transport
