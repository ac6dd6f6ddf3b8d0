// FaultInjector: a DatagramSocket decorator that damages outgoing datagrams
// on purpose, deterministically for a seed (FI_IWARPX_FAULT, lossy tests).
//
// Spec string (FaultSpec::Parse): comma-separated key=value, any order, each
// key at most once, whitespace not allowed, empty string = no faults:
//   drop=N     per-mille chance a datagram is silently discarded
//   dup=N      per-mille chance it is sent twice (back to back)
//   reorder=N  per-mille chance it is held back and sent after the next
//              `gap` datagrams that do go out (so it arrives late)
//   corrupt=N  per-mille chance one random byte of it is XORed with a random
//              non-zero value before sending
//   gap=K      reorder distance, 1..64 (default 3)
//   seed=S     decimal uint64 seed of the decisions (default 1)
// N is 0..1000. Example: "drop=50,dup=10,reorder=20,corrupt=5,seed=42".
//
// Semantics (applied on send only; receive passes straight through)
// - Per datagram the injector draws four decisions in a fixed order (drop,
//   corrupt, dup, reorder) from its Random, so the sequence of faults depends
//   only on the seed and the number of datagrams sent, not on timing or
//   payload. A dropped datagram has no other fault. A corrupted datagram
//   can also be duplicated or held back (the copies carry the same damage).
//   A held-back datagram is not also duplicated.
// - A dropped or held-back datagram is reported to the caller as sent (kOk,
//   full size), as a lossy network would. Corrupted and held-back datagrams
//   are copied (the caller's buffers are not modified and may be reused at
//   once); the clean path sends the caller's iovecs without copying.
// - Held-back datagrams are released after `gap` later datagrams went out, or
//   by Flush(); a release that the inner socket refuses is lost (counted in
//   release_failed). The second copy of a duplicate is sent best effort.
// - Errors of the inner socket for the datagram itself (kWouldBlock, kError)
//   are returned unchanged. Its decisions were drawn already, so the fault
//   sequence stays a pure function of the number of datagrams offered.
// - Counters count faults applied: corrupted/dup/reorder only among datagrams
//   not dropped, dup only among those not held back; an empty datagram is
//   never corrupted.
// - Owns the inner socket; not thread-safe (as transport.h).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/random.h"
#include "base/result.h"
#include "transport/transport.h"

namespace iwarpx::transport {

struct FaultSpecError {
  enum class Code : uint8_t {
    kMissingEquals,  // an item without '='
    kUnknownKey,
    kDuplicateKey,
    kBadNumber,   // empty, non-decimal, or too large for the field
    kOutOfRange,  // per-mille > 1000, gap outside 1..64
    kEmptyItem,   // ",," or a trailing ','
  };
  Code code = Code::kBadNumber;
  size_t position = 0;  // offset of the offending item in the spec
  std::string message;  // e.g. "drop: 1200 is above 1000 (per-mille)"
};

struct FaultSpec {
  uint32_t drop = 0;  // per-mille
  uint32_t dup = 0;
  uint32_t reorder = 0;
  uint32_t corrupt = 0;
  uint32_t gap = 3;
  uint64_t seed = 1;

  static constexpr uint32_t kPerMille = 1000;
  static constexpr uint32_t kMaxGap = 64;

  static Result<FaultSpec, FaultSpecError> Parse(std::string_view spec);
  [[nodiscard]] bool any() const { return drop + dup + reorder + corrupt != 0; }
};

struct FaultCounters {
  uint64_t offered = 0;    // SendTo/SendBatch datagrams the caller handed in
  uint64_t delivered = 0;  // datagrams the inner socket accepted (copies included)
  uint64_t dropped = 0;
  uint64_t duplicated = 0;  // extra copies attempted
  uint64_t reordered = 0;   // datagrams held back
  uint64_t corrupted = 0;
  uint64_t release_failed = 0;  // held-back datagrams the inner socket refused
};

class FaultInjector final : public DatagramSocket {
 public:
  // The Random is seeded from spec.seed.
  FaultInjector(std::unique_ptr<DatagramSocket> inner, const FaultSpec& spec);

  IoResult SendTo(const SockAddr& to, std::span<const iovec> iov) override;
  BatchResult SendBatch(std::span<DgramMessage> msgs) override;
  BatchResult RecvBatch(std::span<DgramMessage> msgs) override { return inner_->RecvBatch(msgs); }
  [[nodiscard]] int fd() const override { return inner_->fd(); }
  [[nodiscard]] SockAddr local_address() const override { return inner_->local_address(); }

  // Sends every held-back datagram now (in the order they were held).
  void Flush();

  [[nodiscard]] const FaultCounters& counters() const { return counters_; }
  [[nodiscard]] const FaultSpec& spec() const { return spec_; }
  [[nodiscard]] size_t held() const { return held_.size(); }
  DatagramSocket& inner() { return *inner_; }

 private:
  struct Held {
    SockAddr to;
    std::vector<uint8_t> bytes;
    uint32_t countdown = 0;
  };

  bool Roll(uint32_t per_mille) { return rng_.Below(FaultSpec::kPerMille) < per_mille; }
  IoResult SendCopy(const SockAddr& to, const std::vector<uint8_t>& bytes);
  // Counts one datagram that went out and releases held ones that are due.
  void AfterSend();

  std::unique_ptr<DatagramSocket> inner_;
  FaultSpec spec_;
  Random rng_;
  FaultCounters counters_;
  std::deque<Held> held_;
};

}  // namespace iwarpx::transport
