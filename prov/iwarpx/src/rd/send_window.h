// SendWindow: the sender half of one reliable-datagram stream (docs/wire.md
// §3.6 rules 6-12). It numbers data datagrams, honours the peer's credit
// window, processes cumulative and selective acks, and says which datagrams
// to send again:
// * early, by time-based loss detection in the manner of RACK (RFC 8985): a
//   datagram is presumed lost once a datagram *transmitted after it* has been
//   acknowledged and a reordering allowance (srtt + srtt/4, growing when a
//   resend turns out spurious, back to one step after 16 repairs without a
//   spurious one) has passed since it was sent. This also catches a lost
//   retransmission without waiting for the timer;
// * by a tail loss probe (RFC 8985 §7): when nothing has been acknowledged
//   for a probe timeout (2 x srtt + the peer's ack-request delay) while data
//   is outstanding, the most recent unacknowledged datagram is sent once more
//   with an ack request, so a lost last datagram of a burst — which no later
//   arrival can reveal — is found by the probe's ack instead of by the
//   retransmission timer (2 ms at least); one probe per flight, none before
//   the first RTT sample;
// * when the retransmission timer expires (RFC 6298 timer with backoff).
// It never touches a socket: the stream that owns it keeps the datagrams
// (identified by a caller-chosen `cookie`) and does the I/O.
//
// Contract:
// * Pure state machine on an injected time (`now`, nanoseconds, monotonic).
//   Allocates only to grow its record ring (1 record at first, doubling up
//   to capacity: the most datagrams that may be outstanding, a power of two,
//   at most 2^15). Each ack costs one pass
//   over the outstanding records.
// * Every datagram reported by OnSent is reported exactly once to
//   SendWindowSink::Acked (when cumulatively acked or SACKed, whichever comes
//   first), unless the stream is abandoned. Resend may be called several
//   times for a datagram; the owner resends the same ULPDU with fresh ack
//   fields.
// * OnAck ignores acks older than one already processed (kStale) and acks of
//   sequence numbers never sent (kInvalid); neither changes any state.
// * The credit window's right edge (ack + credits) never moves back.
// * Dead(now): data has been outstanding with no ack progress for
//   dead_after_ns (FI_IWARPX_RD_TIMEOUT); the owner then fails the stream.
//   The backoff stops at min(rto.max_ns, dead_after_ns / 8), so about eight
//   retransmissions fit in that time.
#pragma once

#include <cstdint>
#include <vector>

#include "base/seq_ring.h"
#include "rd/rto.h"
#include "wire/dgram.h"

namespace iwarpx::rd {

struct SendConfig {
  uint32_t capacity = 256;  // outstanding datagrams; power of two
  RtoConfig rto;
  uint64_t dead_after_ns = 10'000'000'000;  // no ack progress for this long: dead
  uint64_t min_reorder_ns = 50'000;         // least reordering allowance
  // The peer's delay before it answers an ack request (RecvConfig::
  // ack_request_delay_ns of the RD stream), part of the probe timeout.
  uint64_t probe_ack_delay_ns = 50'000;
};

// The ack fields of a received datagram (A set), as decoded.
struct AckFields {
  uint32_t ack = 0;
  bool has_sack = false;
  uint32_t sack = 0;
  uint16_t credits = 0;
};

class SendWindowSink {
 public:
  virtual ~SendWindowSink() = default;
  // The peer has the datagram `seq` (first report only).
  virtual void Acked(uint32_t seq, uint64_t cookie) = 0;
  // Send datagram `seq` again now.
  virtual void Resend(uint32_t seq, uint64_t cookie) = 0;
  // Send datagram `seq` again as a tail loss probe: with an ack request.
  virtual void ResendProbe(uint32_t seq, uint64_t cookie) { Resend(seq, cookie); }
};

enum class AckVerdict : uint8_t { kAccepted, kStale, kInvalid };

class SendWindow {
 public:
  SendWindow(const SendConfig& config, SendWindowSink& sink,
             uint32_t initial_seq = wire::kDgramInitialSeq,
             uint16_t initial_credits = wire::kDgramInitialCredits);

  // True if a new data datagram may go out now: its seq is inside the
  // peer's credit window and fewer than `capacity` are outstanding.
  [[nodiscard]] bool CanSend() const;
  // Records a new data datagram sent at `now`; returns its seq.
  // Precondition: CanSend().
  uint32_t OnSent(uint64_t cookie, uint64_t now);

  // Processes the ack fields of a datagram from the peer.
  AckVerdict OnAck(const AckFields& ack, uint64_t now);

  // Resends what is due at `now` (presumed losses, then expired timers).
  void OnTimer(uint64_t now);
  // When OnTimer has work next; UINT64_MAX if nothing is outstanding.
  [[nodiscard]] uint64_t Deadline() const;
  [[nodiscard]] bool Dead(uint64_t now) const;

  [[nodiscard]] uint32_t snd_una() const { return snd_una_; }
  [[nodiscard]] uint32_t snd_nxt() const { return snd_nxt_; }
  [[nodiscard]] uint32_t right_edge() const { return right_edge_; }
  [[nodiscard]] uint32_t outstanding() const { return snd_nxt_ - snd_una_; }
  // Frees the record ring while nothing is outstanding (the next send makes
  // it again, as its first did); the bytes given back, 0 if none.
  size_t ReleaseIdle() { return outstanding() == 0 ? ring_.Release() : 0; }
  [[nodiscard]] uint64_t rto() const { return rto_.rto(); }
  [[nodiscard]] uint64_t retransmissions() const { return retransmissions_; }
  [[nodiscard]] uint64_t timeouts() const { return timeouts_; }
  [[nodiscard]] uint32_t reorder_steps() const { return reorder_steps_; }
  [[nodiscard]] uint64_t tail_probes() const { return tail_probes_; }

 private:
  struct Record {
    uint64_t cookie = 0;
    uint64_t last_sent = 0;
    uint64_t xmit = 0;  // transmission order of the last send (or resend)
    uint16_t sends = 0;
    bool acked = false;         // SACKed or cumulatively acked
    bool lost_pending = false;  // presumed lost: resend at the next OnTimer
  };

  Record& At(uint32_t seq) { return ring_[seq]; }
  void MarkAcked(uint32_t seq, uint64_t now);
  void DetectLosses(uint64_t now);
  void Resend(uint32_t seq, uint64_t now, bool probe = false);
  // (Re)arms the tail loss probe `now` + PTO, or disarms it (see top).
  void ArmProbe(uint64_t now);
  void SendProbe(uint64_t now);

  // The parts of SendConfig used after construction (capacity is the
  // ring's, the RTO configuration the estimator's): not a copy per peer.
  // Members by size, no padding holes (one SendWindow per RD peer).
  uint64_t dead_after_ns_;
  uint64_t min_reorder_ns_;
  uint64_t probe_ack_delay_ns_;
  SendWindowSink& sink_;
  // Records [snd_una_, snd_nxt_); grows from kInitialRecords up to
  // config.capacity (a peer with one datagram in flight keeps one).
  static constexpr size_t kInitialRecords = 1;
  SeqRing<Record> ring_;
  RtoEstimator rto_;
  uint64_t min_rtt_ = UINT64_MAX;
  uint64_t xmit_counter_ = 0;
  uint64_t acked_xmit_ = 0;           // latest transmission known to have arrived
  uint64_t loss_check_ = UINT64_MAX;  // when DetectLosses has a candidate due
  uint64_t timer_ = UINT64_MAX;       // retransmission timer (absolute ns)
  uint64_t probe_at_ = UINT64_MAX;    // tail loss probe (absolute ns)
  uint64_t tail_probes_ = 0;
  uint64_t last_progress_ = 0;
  uint64_t retransmissions_ = 0;
  uint64_t timeouts_ = 0;
  uint32_t snd_una_;
  uint32_t snd_nxt_;
  uint32_t right_edge_;
  uint32_t last_ack_;
  static constexpr uint32_t kMaxReorderSteps = 16;
  uint32_t reorder_steps_ = 1;  // reordering allowance in srtt/4 steps
  static constexpr uint32_t kRecoveriesToReset = 16;
  uint32_t recoveries_ = 0;    // loss repairs since the last spurious resend
  uint32_t lost_pending_ = 0;  // records with lost_pending set
  bool probe_sent_ = false;    // this flight had its probe
};

}  // namespace iwarpx::rd
