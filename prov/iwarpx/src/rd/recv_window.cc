#include "rd/recv_window.h"

#include <algorithm>
#include <cassert>

namespace iwarpx::rd {

using wire::SeqGt;
using wire::SeqInWindow;
using wire::SeqLt;

RecvWindow::RecvWindow(const RecvConfig& config, uint32_t initial_seq)
    : ack_delay_ns_(config.ack_delay_ns),
      ack_request_delay_ns_(config.ack_request_delay_ns),
      ack_every_(config.ack_every),
      mask_(config.window - 1),
      rcv_nxt_(initial_seq),
      advertised_edge_(initial_seq + config.window) {
  assert(config.window != 0 && (config.window & mask_) == 0 && config.window <= 0x8000);
  held_ = std::make_unique<uint64_t[]>(held_words());  // zeroed
}

Arrival RecvWindow::OnData(uint32_t seq, bool ack_request, uint64_t now) {
  if (ack_request) {
    if (ack_request_delay_ns_ == 0) {
      ack_now_ = true;
    } else if (now + ack_request_delay_ns_ < ack_soon_) {
      ack_soon_ = now + ack_request_delay_ns_;
    }
  }
  if (SeqLt(seq, rcv_nxt_)) {
    ++duplicates_;
    ack_now_ = true;
    return Arrival::kDuplicate;
  }
  if (!SeqInWindow(seq, rcv_nxt_, window() - backlog_)) {
    ++outside_window_;
    return Arrival::kOutsideWindow;
  }
  if (Held(seq)) {
    ++duplicates_;
    ack_now_ = true;
    return Arrival::kDuplicate;
  }
  if (seq == rcv_nxt_) return Arrival::kInOrder;
  SetHeld(seq, true);
  ack_now_ = true;  // a hole: tell the sender at once
  return Arrival::kEarly;
}

void RecvWindow::Advance(uint64_t now) {
  Receive(now);
  Consume();
}

void RecvWindow::Receive(uint64_t now) {
  SetHeld(rcv_nxt_, false);
  ++rcv_nxt_;
  ++backlog_;
  if (unacked_advances_++ == 0) first_unacked_ = now;
}

void RecvWindow::Consume() {
  assert(backlog_ > 0);
  --backlog_;
  const uint32_t edge = rcv_nxt_ + (window() - backlog_);
  if (wire::SeqDiff(advertised_edge_, edge) >= static_cast<int32_t>(window() / 2)) {
    ack_now_ = true;  // window update: the sender may be waiting for credit
  }
}

void RecvWindow::Hold() {
  SetHeld(rcv_nxt_, true);
}

bool RecvWindow::HeadHeld() const {
  return Held(rcv_nxt_);
}

void RecvWindow::OnProbe() {
  ack_now_ = true;
}

void RecvWindow::OnPeerSndNxt(uint32_t snd_nxt) {
  if (SeqGt(snd_nxt, rcv_nxt_)) ack_now_ = true;  // datagrams are missing at the tail
}

AckFields RecvWindow::Ack() const {
  AckFields a;
  a.ack = rcv_nxt_;
  a.credits = static_cast<uint16_t>(window() - backlog_);
  // Every datagram sent carries an ack: the 32 bit tests only when some
  // datagram is held at all (~400 instructions per datagram otherwise).
  if (AnyHeld()) {
    for (uint32_t i = 0; i < wire::kDgramSackBits && i + 1 < window() - backlog_; ++i) {
      if (Held(rcv_nxt_ + 1 + i)) a.sack |= 1u << i;
    }
  }
  a.has_sack = a.sack != 0;
  return a;
}

bool RecvWindow::AckDue(uint64_t now) const {
  return ack_now_ || now >= ack_soon_ || unacked_advances_ >= ack_every_ ||
         (unacked_advances_ != 0 && now - first_unacked_ >= ack_delay_ns_);
}

uint64_t RecvWindow::AckDeadline() const {
  if (ack_now_ || unacked_advances_ >= ack_every_) return 0;
  const uint64_t delayed = unacked_advances_ != 0 ? first_unacked_ + ack_delay_ns_ : UINT64_MAX;
  return std::min(delayed, ack_soon_);
}

void RecvWindow::OnAckSent() {
  advertised_edge_ = rcv_nxt_ + (window() - backlog_);
  ack_now_ = false;
  ack_soon_ = UINT64_MAX;
  unacked_advances_ = 0;
}

}  // namespace iwarpx::rd
