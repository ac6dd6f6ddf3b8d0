// Retransmission timeout of one reliable-datagram stream (docs/wire.md §3.6
// rule 11): RFC 6298's smoothed RTT and variance, clamped to [min, max], with
// exponential backoff after a timeout.
//
// Contract:
// * Pure arithmetic on nanoseconds; no clock of its own, no allocation.
// * OnSample takes an RTT measured from a datagram sent exactly once (Karn's
//   rule is the caller's job: never sample a retransmitted datagram). A sample
//   also ends any backoff.
// * rto() is always within [min_ns, max_ns]; OnTimeout doubles it (capped),
//   ResetBackoff (the peer acknowledged new data) undoes the doubling.
#pragma once

#include <cstdint>

namespace iwarpx::rd {

struct RtoConfig {
  uint64_t initial_ns = 20'000'000;  // before the first sample
  uint64_t min_ns = 2'000'000;       // loopback RTTs are microseconds; timers are not
  uint64_t max_ns = 1'000'000'000;
};

class RtoEstimator {
 public:
  explicit RtoEstimator(const RtoConfig& config = {});

  void OnSample(uint64_t rtt_ns);
  void OnTimeout();
  void ResetBackoff() { rto_ = base_; }

  [[nodiscard]] uint64_t rto() const { return rto_; }
  [[nodiscard]] bool has_sample() const { return has_sample_; }
  [[nodiscard]] uint64_t srtt() const { return srtt_; }

 private:
  void Set(uint64_t base);

  // The clamp of RtoConfig (initial_ns is used by the constructor only);
  // one estimator per RD peer, so no copy of the rest.
  uint64_t min_ns_;
  uint64_t max_ns_;
  uint64_t srtt_ = 0;
  uint64_t rttvar_ = 0;
  uint64_t rto_ = 0;
  uint64_t base_ = 0;  // rto_ without backoff
  bool has_sample_ = false;
};

}  // namespace iwarpx::rd
