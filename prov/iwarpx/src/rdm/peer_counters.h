// PeerCounters: what an RDM peer keeps of its PeerStats (rdm/peer_stats.h),
// sized for a peer that uses one or two channels and never connects — most
// peers of an endpoint with many (issue 5 item 6; docs/design.md "A quiet
// peer costs what it uses"). PeerStats is 248 bytes (six channels' counters
// and the connection/session counts); PeerCounters is 96.
//
// Contract
// - The counts of the first two channels a peer uses live inline (a peer
//   that moves to its connection uses UD-SR, then RC-SR); the other
//   channels' counts live in a block made when a third channel is counted,
//   and the rare event counts (connections opened, accepted, closed; RD
//   sessions failed; a failed session's resends and probes) in one made by
//   the first `events()`. Both stay while the peer lives. A connected peer
//   keeps 96 + 64 bytes, less than the PeerStats it replaces.
// - Snapshot() returns exactly what a PeerStats counted with the same calls
//   would hold (peer_counters_test.cc checks it against one).
// - The message path (CountSent/CountReceived) costs one or two compares
//   more than a PeerStats' array index, and allocates only on a peer's third
//   channel's first message. Plain increments: the engine lock guards the peer.
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "rdm/peer_stats.h"
#include "rdm/send_rules.h"

namespace iwarpx::rdm {

class PeerCounters {
 public:
  // The counters a peer bumps now and then, not per message.
  struct Events {
    uint64_t rc_opened = 0;
    uint64_t rc_accepted = 0;
    uint64_t rc_closed = 0;
    uint64_t rd_failed = 0;
    uint64_t rd_retransmitted = 0;
    uint64_t rd_probes_sent = 0;
  };

  void CountSent(Channel c, uint64_t bytes) {
    ChannelCounts& n = At(c);
    ++n.msgs_sent;
    n.bytes_sent += bytes;
  }
  void CountReceived(Channel c, uint64_t bytes) {
    ChannelCounts& n = At(c);
    ++n.msgs_received;
    n.bytes_received += bytes;
  }
  // An RD session (queue pair) was made with the peer: every peer has one.
  void AddRdSession() { ++rd_sessions_; }
  // The rare counts, made on first use.
  Events& events() {
    if (events_ == nullptr) events_ = std::make_unique<Events>();
    return *events_;
  }

  [[nodiscard]] PeerStats Snapshot() const;
  // Whether the block of further channels / of events exists (tests).
  [[nodiscard]] bool channels_allocated() const { return more_ != nullptr; }
  [[nodiscard]] bool events_allocated() const { return events_ != nullptr; }

 private:
  static constexpr uint8_t kNoChannel = 0xff;
  static constexpr size_t kInline = 2;

  ChannelCounts& At(Channel c) {
    const auto i = static_cast<uint8_t>(c);
    if (i == ch_[0]) return counts_[0];
    if (i == ch_[1]) return counts_[1];
    return AtSlow(i);
  }
  ChannelCounts& AtSlow(uint8_t i);

  std::array<ChannelCounts, kInline> counts_{};  // of channels ch_[0], ch_[1]
  uint64_t rd_sessions_ = 0;
  std::unique_ptr<Events> events_;
  // Channels past the first two (their slots of ch_ stay unused here).
  std::unique_ptr<std::array<ChannelCounts, kChannelCount>> more_;
  std::array<uint8_t, kInline> ch_{kNoChannel, kNoChannel};
};

}  // namespace iwarpx::rdm
