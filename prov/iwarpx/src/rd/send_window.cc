#include "rd/send_window.h"

#include <algorithm>
#include <cassert>

namespace iwarpx::rd {

using wire::SeqGt;
using wire::SeqLt;

namespace {

// The backoff stops at dead_after_ns / 8, so about eight retransmissions fit
// in the RD timeout whatever it is: a run of losses on a lossy path is not
// taken for a dead peer as soon (doubling from 20 ms up to 1 s tries only
// seven times in a 2 s timeout).
RtoConfig CappedRto(const SendConfig& c) {
  RtoConfig r = c.rto;
  r.max_ns = std::max(r.min_ns, std::min(r.max_ns, c.dead_after_ns / 8));
  return r;
}

}  // namespace

SendWindow::SendWindow(const SendConfig& config, SendWindowSink& sink, uint32_t initial_seq,
                       uint16_t initial_credits)
    : dead_after_ns_(config.dead_after_ns),
      min_reorder_ns_(config.min_reorder_ns),
      probe_ack_delay_ns_(config.probe_ack_delay_ns),
      sink_(sink),
      ring_(config.capacity, kInitialRecords),
      rto_(CappedRto(config)),
      snd_una_(initial_seq),
      snd_nxt_(initial_seq),
      right_edge_(initial_seq + initial_credits),
      last_ack_(initial_seq) {
  assert(config.capacity != 0 && (config.capacity & (config.capacity - 1)) == 0 &&
         config.capacity <= 0x8000);
}

bool SendWindow::CanSend() const {
  return SeqLt(snd_nxt_, right_edge_) && outstanding() < ring_.capacity();
}

uint32_t SendWindow::OnSent(uint64_t cookie, uint64_t now) {
  assert(CanSend());
  if (outstanding() == 0) {
    last_progress_ = now;
    timer_ = now + rto_.rto();
  }
  ring_.Grow(snd_una_, outstanding(), outstanding() + 1);
  const uint32_t seq = snd_nxt_++;
  At(seq) = Record{.cookie = cookie, .last_sent = now, .xmit = ++xmit_counter_, .sends = 1};
  ArmProbe(now);
  return seq;
}

void SendWindow::MarkAcked(uint32_t seq, uint64_t now) {
  Record& r = At(seq);
  if (r.acked) return;
  r.acked = true;
  if (r.lost_pending) --lost_pending_;
  r.lost_pending = false;
  if (r.xmit > acked_xmit_) acked_xmit_ = r.xmit;
  if (r.sends > 1 && now - r.last_sent < min_rtt_) {
    // Acked faster than any round trip: the first copy arrived and the
    // resend was spurious, so this path reorders more than allowed for.
    if (reorder_steps_ < kMaxReorderSteps) ++reorder_steps_;
    recoveries_ = 0;
  }
  sink_.Acked(seq, r.cookie);
}

AckVerdict SendWindow::OnAck(const AckFields& a, uint64_t now) {
  if (SeqGt(a.ack, snd_nxt_)) return AckVerdict::kInvalid;
  if (SeqLt(a.ack, last_ack_)) return AckVerdict::kStale;
  const uint32_t prev_ack = last_ack_;
  last_ack_ = a.ack;
  const uint32_t edge = a.ack + a.credits;
  if (SeqGt(edge, right_edge_)) right_edge_ = edge;

  // RTT sample (Karn's rule and more): from datagrams sent once that this
  // ack reports for the first time although the previous ack could already
  // have reported them (inside its cumulative edge + SACK map): they arrived
  // since then. The most recently sent of them measures the path. Others may
  // have waited at the receiver behind a hole, out of the SACK map's reach.
  uint64_t rtt = UINT64_MAX;
  auto sample = [&](uint32_t seq) {
    const Record& r = At(seq);
    if (!r.acked && r.sends == 1 && wire::SeqInWindow(seq, prev_ack, wire::kDgramSackBits + 1)) {
      rtt = std::min(rtt, now - r.last_sent);
    }
  };
  const bool cumulative = SeqLt(snd_una_, a.ack);
  bool progress = cumulative;
  while (SeqLt(snd_una_, a.ack)) {
    sample(snd_una_);
    MarkAcked(snd_una_, now);
    ++snd_una_;
  }
  if (a.has_sack) {
    for (uint32_t i = 0; i < wire::kDgramSackBits; ++i) {
      if (((a.sack >> i) & 1u) == 0) continue;
      const uint32_t seq = a.ack + 1 + i;
      if (!SeqLt(seq, snd_nxt_)) break;  // beyond what was sent: ignore the rest
      if (!At(seq).acked) progress = true;
      sample(seq);
      MarkAcked(seq, now);
    }
  }
  if (rtt != UINT64_MAX) {
    rto_.OnSample(rtt);
    min_rtt_ = std::min(min_rtt_, rtt);
  } else if (cumulative) {
    rto_.ResetBackoff();  // the peer is answering: no need to keep backing off
  }
  // Any newly acknowledged datagram shows the peer is alive; only a
  // cumulative ack restarts the timer (RFC 6298 (5.3)), so a lost oldest
  // datagram is not kept waiting by SACKs of later ones.
  if (progress) {
    last_progress_ = now;
    probe_sent_ = false;  // a new flight: it may have its own probe
    ArmProbe(now);
  }
  if (cumulative) timer_ = outstanding() == 0 ? UINT64_MAX : now + rto_.rto();
  DetectLosses(now);
  return AckVerdict::kAccepted;
}

// An unacknowledged datagram transmitted before the latest one known to have
// arrived is lost once it has had srtt + k * srtt/4 (each step at least
// min_reorder_ns) to arrive, k starting at 1 and growing with every spurious
// resend seen (RFC 8985's adaptive reordering window, without DSACK); before
// that, remember when to look again.
void SendWindow::DetectLosses(uint64_t now) {
  loss_check_ = UINT64_MAX;
  const uint64_t srtt = rto_.has_sample() ? rto_.srtt() : rto_.rto();
  const uint64_t wait = srtt + reorder_steps_ * std::max(srtt / 4, min_reorder_ns_);
  // Only datagrams the last ack could have reported (its cumulative edge and
  // SACK map): beyond that the receiver may hold them without saying so.
  const uint32_t reach = last_ack_ + wire::kDgramSackBits + 1;
  for (uint32_t seq = snd_una_; SeqLt(seq, snd_nxt_) && SeqLt(seq, reach); ++seq) {
    Record& r = At(seq);
    if (r.acked || r.lost_pending || r.xmit >= acked_xmit_) continue;
    if (now - r.last_sent >= wait) {
      r.lost_pending = true;
      ++lost_pending_;
    } else {
      loss_check_ = std::min(loss_check_, r.last_sent + wait);
    }
  }
}

void SendWindow::Resend(uint32_t seq, uint64_t now, bool probe) {
  Record& r = At(seq);
  r.last_sent = now;
  r.xmit = ++xmit_counter_;
  if (r.sends < UINT16_MAX) ++r.sends;
  ++retransmissions_;
  if (probe) {
    sink_.ResendProbe(seq, r.cookie);
  } else {
    sink_.Resend(seq, r.cookie);
  }
}

void SendWindow::ArmProbe(uint64_t now) {
  if (outstanding() == 0 || probe_sent_ || !rto_.has_sample()) {
    probe_at_ = UINT64_MAX;
    return;
  }
  const uint64_t pto = std::max(2 * rto_.srtt() + probe_ack_delay_ns_, 2 * min_reorder_ns_);
  probe_at_ = now + pto;
}

void SendWindow::SendProbe(uint64_t now) {
  probe_at_ = UINT64_MAX;
  probe_sent_ = true;
  // The most recent datagram the peer has not acknowledged.
  uint32_t seq = snd_nxt_ - 1;
  while (SeqGt(seq, snd_una_) && At(seq).acked) --seq;
  if (At(seq).acked) return;
  ++tail_probes_;
  Resend(seq, now, /*probe=*/true);
}

void SendWindow::OnTimer(uint64_t now) {
  if (now >= loss_check_) DetectLosses(now);
  bool recovered = false;
  for (uint32_t seq = snd_una_; lost_pending_ != 0 && SeqLt(seq, snd_nxt_); ++seq) {
    Record& r = At(seq);
    if (!r.lost_pending) continue;
    r.lost_pending = false;
    --lost_pending_;
    Resend(seq, now);
    recovered = true;
  }
  // RFC 8985 §6.2 (4): the reordering allowance only grows with spurious
  // resends; after kRecoveriesToReset recoveries without one, it goes back to
  // a single step, so a burst of apparent reordering (a busy CPU) does not
  // slow every later repair below the retransmission timer for good.
  if (recovered && ++recoveries_ >= kRecoveriesToReset) {
    reorder_steps_ = 1;
    recoveries_ = 0;
  }
  if (now >= probe_at_ && lost_pending_ == 0 && outstanding() != 0) SendProbe(now);
  if (timer_ == UINT64_MAX || now < timer_) return;
  // Timeout (RFC 6298 (5.4)): resend the oldest unacknowledged datagram
  // only. Later ones may well be held by the receiver beyond the reach of the
  // 32-bit SACK map; the acks this resend draws show what is really missing,
  // and loss detection takes it from there.
  if (SeqLt(snd_una_, snd_nxt_)) Resend(snd_una_, now);
  rto_.OnTimeout();
  ++timeouts_;
  timer_ = now + rto_.rto();
}

uint64_t SendWindow::Deadline() const {
  if (lost_pending_ != 0) return 0;
  return std::min({timer_, loss_check_, probe_at_});
}

bool SendWindow::Dead(uint64_t now) const {
  return outstanding() != 0 && now - last_progress_ >= dead_after_ns_;
}

}  // namespace iwarpx::rd
