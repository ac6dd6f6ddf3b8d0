#include "rd/rto.h"

#include <algorithm>

namespace iwarpx::rd {

RtoEstimator::RtoEstimator(const RtoConfig& config)
    : min_ns_(config.min_ns), max_ns_(config.max_ns) {
  Set(config.initial_ns);
}

void RtoEstimator::Set(uint64_t base) {
  rto_ = std::clamp(base, min_ns_, max_ns_);
  base_ = rto_;
}

// RFC 6298 §2: alpha = 1/8, beta = 1/4, RTO = SRTT + 4 * RTTVAR.
void RtoEstimator::OnSample(uint64_t rtt_ns) {
  if (!has_sample_) {
    srtt_ = rtt_ns;
    rttvar_ = rtt_ns / 2;
    has_sample_ = true;
  } else {
    const uint64_t err = srtt_ > rtt_ns ? srtt_ - rtt_ns : rtt_ns - srtt_;
    rttvar_ = rttvar_ - rttvar_ / 4 + err / 4;
    srtt_ = srtt_ - srtt_ / 8 + rtt_ns / 8;
  }
  Set(srtt_ + 4 * rttvar_);
}

void RtoEstimator::OnTimeout() {
  rto_ = rto_ > max_ns_ / 2 ? max_ns_ : rto_ * 2;
}

}  // namespace iwarpx::rd
