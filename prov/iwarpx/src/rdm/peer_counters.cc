#include "rdm/peer_counters.h"

namespace iwarpx::rdm {

ChannelCounts& PeerCounters::AtSlow(uint8_t i) {
  for (size_t k = 0; k < kInline; ++k) {
    if (ch_[k] == kNoChannel) {
      ch_[k] = i;
      return counts_[k];
    }
  }
  if (more_ == nullptr) more_ = std::make_unique<std::array<ChannelCounts, kChannelCount>>();
  return (*more_)[i];
}

PeerStats PeerCounters::Snapshot() const {
  PeerStats s;
  if (more_ != nullptr) s.channel = *more_;
  for (size_t k = 0; k < kInline; ++k) {
    if (ch_[k] != kNoChannel) s.channel[ch_[k]] = counts_[k];
  }
  s.rd_sessions = rd_sessions_;
  if (events_ != nullptr) {
    s.rc_opened = events_->rc_opened;
    s.rc_accepted = events_->rc_accepted;
    s.rc_closed = events_->rc_closed;
    s.rd_failed = events_->rd_failed;
    s.rd_retransmitted = events_->rd_retransmitted;
    s.rd_probes_sent = events_->rd_probes_sent;
  }
  return s;
}

}  // namespace iwarpx::rdm
