// RecvWindow: the receiver half of one reliable-datagram stream (docs/wire.md
// §3.6 rules 6-10, 12). It classifies arriving data datagrams (in order,
// early, duplicate, outside the window), remembers which early ones the owner
// has buffered, and decides when an ack is due and what it says (cumulative
// ack, 32-bit SACK map, credits).
//
// Contract:
// * Pure state machine on an injected time; no allocation after
//   construction (the held bitmap, one bit per slot, is made there). Not
//   copyable. `window` (a power of two, at most 2^15) is both the number
//   of datagrams the owner can hold and the credits advertised, so the right
//   edge rcv_nxt + window only moves forward.
// * OnData never advances rcv_nxt by itself. For kInOrder the owner either
//   delivers the datagram and calls Advance(), or takes it into its backlog
//   and calls Receive(), or keeps it and calls Hold(), or drops it (the peer
//   will resend it). For kEarly the owner must keep the datagram (it is
//   marked held). After every Advance()/Receive() the owner delivers the held
//   head while HeadHeld() and calls Advance() or Receive() again.
// * Backlog: Receive() moves rcv_nxt (the datagram is acknowledged) without
//   consuming it; Consume() later consumes the oldest one. Backlogged
//   datagrams keep their slots, so the credits advertised are `window` minus
//   the backlog: a consumer that stalls closes the window instead of losing
//   data, and the right edge rcv_nxt + credits still never moves back. When
//   Consume() opens the edge by half a window beyond the last one advertised,
//   an ack (a window update) is due at once.
// * Ack policy (rule 8): an ack is due at once after an early or duplicate
//   datagram, a PROBE or a peer's snd_nxt beyond rcv_nxt; `ack_request_delay_ns`
//   after an ack request (R; 0: at once); otherwise after `ack_every` advances
//   or `ack_delay_ns` after the first unacknowledged advance. Ack() reports the fields to send;
//   OnAckSent() (called when they went out, alone or piggybacked) clears what is due.
#pragma once

#include <cstdint>
#include <memory>

#include "rd/send_window.h"

namespace iwarpx::rd {

struct RecvConfig {
  uint32_t window = 256;  // power of two, <= 2^15
  uint32_t ack_every = 16;
  uint64_t ack_delay_ns = 1'000'000;
  // An ack request (R) makes an ack due after this delay instead of at once
  // (0: at once), so that a reply the application sends meanwhile carries it.
  uint64_t ack_request_delay_ns = 0;
};

enum class Arrival : uint8_t {
  kInOrder,        // seq == rcv_nxt: deliver (then Advance) or Hold
  kEarly,          // inside the window after a hole: marked held, keep it
  kDuplicate,      // already received: drop (an ack is now due)
  kOutsideWindow,  // beyond the advertised window: drop
};

class RecvWindow {
 public:
  explicit RecvWindow(const RecvConfig& config, uint32_t initial_seq = wire::kDgramInitialSeq);

  Arrival OnData(uint32_t seq, bool ack_request, uint64_t now);
  // The datagram at rcv_nxt was delivered and consumed: move past it.
  void Advance(uint64_t now);
  // The datagram at rcv_nxt was received in order but not consumed yet: move
  // past it and add it to the backlog (its slot stays reserved).
  void Receive(uint64_t now);
  // The oldest backlogged datagram was consumed. Precondition: backlog() > 0.
  void Consume();
  [[nodiscard]] uint32_t backlog() const { return backlog_; }
  // Keep the in-order datagram (rcv_nxt) for later delivery.
  void Hold();
  // The datagram at rcv_nxt is held and can be delivered now.
  [[nodiscard]] bool HeadHeld() const;
  // Some datagram is held (early ones after a hole): what arrives next is
  // likely more early ones, not rcv_nxt.
  [[nodiscard]] bool AnyHeld() const {
    for (uint32_t k = 0; k < held_words(); ++k) {
      if (held_[k] != 0) return true;
    }
    return false;
  }

  // A PROBE, or an ack/PROBE whose seq (the peer's snd_nxt) is given.
  void OnProbe();
  void OnPeerSndNxt(uint32_t snd_nxt);

  [[nodiscard]] AckFields Ack() const;
  [[nodiscard]] bool AckDue(uint64_t now) const;
  // When an ack becomes due with no further arrivals; UINT64_MAX if never.
  [[nodiscard]] uint64_t AckDeadline() const;
  void OnAckSent();

  [[nodiscard]] uint32_t rcv_nxt() const { return rcv_nxt_; }
  [[nodiscard]] uint64_t duplicates() const { return duplicates_; }
  [[nodiscard]] uint64_t outside_window() const { return outside_window_; }

 private:
  // One bit per window slot (seq & mask_): held. A window of 256 costs 32
  // bytes per peer.
  [[nodiscard]] bool Held(uint32_t seq) const {
    const uint32_t i = seq & mask_;
    return ((held_[i / 64] >> (i % 64)) & 1) != 0;
  }
  void SetHeld(uint32_t seq, bool held) {
    const uint32_t i = seq & mask_;
    const uint64_t bit = uint64_t{1} << (i % 64);
    held_[i / 64] = held ? (held_[i / 64] | bit) : (held_[i / 64] & ~bit);
  }

  [[nodiscard]] uint32_t window() const { return mask_ + 1; }
  [[nodiscard]] uint32_t held_words() const { return (mask_ + 64) / 64; }

  // Members by size, no padding (one RecvWindow per RD peer). The config is
  // kept as the three fields used after construction (window = mask_ + 1).
  uint64_t ack_delay_ns_;
  uint64_t ack_request_delay_ns_;
  uint64_t ack_soon_ = UINT64_MAX;  // an ack request's deadline
  uint64_t first_unacked_ = 0;      // time of the first advance not yet acked
  uint64_t duplicates_ = 0;
  uint64_t outside_window_ = 0;
  std::unique_ptr<uint64_t[]> held_;  // held_words() words
  uint32_t ack_every_;
  uint32_t mask_;
  uint32_t rcv_nxt_;
  uint32_t unacked_advances_ = 0;
  uint32_t backlog_ = 0;      // received in order, not consumed
  uint32_t advertised_edge_;  // rcv_nxt + credits in the last ack sent
  bool ack_now_ = false;
};

}  // namespace iwarpx::rd
