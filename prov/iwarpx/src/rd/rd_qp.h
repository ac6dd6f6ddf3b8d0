// RdQp: a queue pair of the reliable-datagram (RD) service: the connected
// mode's qp::QueuePair running on an RdStream to one peer QP (rd_stream.h),
// so Send/Recv, RDMA Write/Read, atomics and immediate data over datagrams
// get the same placement, protection checks and Terminate handling as over
// TCP (docs/wire.md §3.6-3.7, docs/design.md "RD queue pairs").
//
// There is no MPA exchange: both ends of every RD stream use the fixed
// outcome RdOutcome() — CRC and markers off (the datagram CRC covers each
// ULPDU), no RTR, IRD = ORD = kRdReadDepth, and the iwarpx Send with
// Immediate Data extension on. A Terminate travels as ordinary RD data.
//
// Driving (the owner, progress::RdChannel, calls under the engine lock):
//   OnDatagram  every decoded RD datagram from this peer QP (address and
//               src_qpn); kPeerRestarted: the peer started a new session —
//               the owner Fail()s this RdQp and hands the datagram to a new
//               one created with `stream().sessions()`.
//   OnTimer     when clock >= Deadline().
//   OnSocketWritable when the shared socket turns writable and
//               wants_socket_write().
//   Post*       through qp(); call Deadline() again afterwards (a receive
//               posted to a QP that had stopped may make a window update due).
// The RdQp pumps its QueuePair itself whenever the stream has news (bounded
// work per event; leftovers make Deadline() return 0).
//
// A stream that fails (peer silent for the RD timeout, RESET, Fail) makes the
// QP report a lost link: OnTerminated, then an error completion for every
// outstanding work request — also when the QP reads nothing (a Send waiting
// for a receive, requests held: QueuePair::LinkLost). failed() is then true
// and the owner discards it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "base/clock.h"
#include "base/random.h"
#include "base/result.h"
#include "mem/stag_table.h"
#include "qp/completion_sink.h"
#include "qp/queue_pair.h"
#include "rd/rd_stream.h"
#include "wire/mpa_negotiate.h"

namespace iwarpx::rd {

// Inbound and outbound Read/Atomic Requests every RD QP can hold.
inline constexpr uint16_t kRdReadDepth = 16;

struct RdQpConfig {
  RdStreamConfig stream;
  uint32_t sq_size = 64;
  uint32_t rq_size = 64;
};

// The MPA-equivalent outcome every RD QP uses (no negotiation on RD).
wire::MpaOutcome RdOutcome();

class RdQp;

// Told the first time an RdQp's stream is used after the watcher last called
// Unwatch() (RdStreamOwner::OnStreamUsed): from then on the QP may have a
// deadline, want the socket or fail, until the watcher finds it idle.
// progress::RdChannel keeps its active set this way, so its per-pass work
// grows with the peers that are busy, not with all of them.
class RdQpWatcher {
 public:
  virtual ~RdQpWatcher() = default;
  virtual void Touched(RdQp& qp) = 0;
};

class RdQp final : private RdStreamOwner {
 public:
  static Result<std::unique_ptr<RdQp>, qp::QpStatus> Create(
      DgramPort& port, const transport::SockAddr& peer, uint32_t local_qpn, uint32_t peer_qpn,
      const RdQpConfig& config, mem::StagTable& stags, uint32_t pd, qp::CompletionSink& sink,
      Random& random, const Clock& clock, const InboundSessions& sessions = {});
  ~RdQp() override;
  RdQp(const RdQp&) = delete;
  RdQp& operator=(const RdQp&) = delete;

  qp::QueuePair& qp() { return *qp_; }
  [[nodiscard]] const qp::QueuePair& qp() const { return *qp_; }
  RdStream& stream() { return *stream_; }
  [[nodiscard]] const RdStream& stream() const { return *stream_; }

  RdStream::Input OnDatagram(const wire::DecodedDgram& d) { return stream_->OnDatagram(d); }
  void OnTimer();
  [[nodiscard]] uint64_t Deadline() const;
  void OnSocketWritable();
  [[nodiscard]] bool wants_socket_write() const { return stream_->wants_socket_write(); }
  void Fail(int err) { stream_->Fail(err); }
  // The owner's own work waits on the peer (an RDM rendezvous whose RTS or
  // CTS was acknowledged): the stream probes while nothing is in flight, as
  // for the QP's unanswered Reads (rd_stream.h "Failure").
  void SetAwaited(bool on) {
    if (awaited_ == on) return;
    awaited_ = on;
    if (on) stream_->AwaitsChanged();
  }
  void FlushAck() { stream_->FlushAck(); }
  // Guesses for an in-place receive (DgramPort::PlacementPredictor): the
  // next datagrams of this peer, if they are the rest of the Read at the head
  // of the QP's ORQ, arriving in order, each a full segment of the size its
  // earlier responses had (the last one what remains). Returns how many were
  // written; 0 when the stream or the QP would not take the next datagram
  // straight into place (rd_stream.h NextInOrder, queue_pair.h
  // NextReadResponse) or payloads would be smaller than kMinPlacedPayload.
  size_t GuessReadResponses(std::span<PlacementGuess> out) const;
  static constexpr size_t kMinPlacedPayload = 4096;
  // The watcher (at most one; nullptr: none) and its mark: watched() is set
  // when Touched() is called and cleared by Unwatch().
  void SetWatcher(RdQpWatcher* w) { watcher_ = w; }
  [[nodiscard]] bool watched() const { return watched_; }
  void Unwatch() { watched_ = false; }
  // Nothing to do until the stream is used again: no deadline, no datagram
  // waiting for the socket, not failed.
  [[nodiscard]] bool idle() const {
    return Deadline() == UINT64_MAX && !wants_socket_write() && !failed();
  }
  // Nothing accepted for sending is left to deliver: the QP has nothing
  // ready to write (a completed send, an inject, a Read Response owed) and
  // the stream has everything acknowledged — or the QP or stream failed.
  // Work waiting for the peer (an outstanding Read, a Read held back by ORD)
  // does not count: closing discards it with the endpoint.
  [[nodiscard]] bool settled() const {
    return qp_->state() == qp::QpState::kError || stream_->failed() ||
           (!qp_->wants_write() && stream_->settled());
  }
  // Discard this RdQp: the QP has flushed (kError) and either the stream
  // failed or everything it sent — a Terminate last — has been acknowledged
  // (so a peer that is still there learns why; a lost one would also draw a
  // RESET from the fresh QP that replaces this one, docs/wire.md §3.6 rule 13).
  [[nodiscard]] bool failed() const {
    if (qp_->state() != qp::QpState::kError) return false;
    return stream_->failed() ||
           (stream_->send_window().outstanding() == 0 && !stream_->wants_socket_write());
  }
  // Gives back the buffers of a QP with nothing in progress (qp::QueuePair::
  // ReleaseIdle, RdStream::ReleaseIdle): only while idle() and settled() and
  // not inside a pump. Every part comes again with the next message.
  // Returns the bytes given back (0: not idle, or nothing left to give).
  size_t ReleaseIdle();
  // The idle sweep's marks (progress/idle_sweep.h): `queued` while in its
  // queue, `recent` when the QP went idle since the sweep last looked.
  struct SweepMark {
    bool queued = false;
    bool recent = false;
  };
  SweepMark& sweep_mark() { return sweep_mark_; }

 private:
  RdQp() = default;
  void OnStreamEvent() override { Pump(); }
  // Read or Atomic Requests not yet answered, or the owner's mark
  // (SetAwaited); rd_stream.h "Failure".
  [[nodiscard]] bool AwaitsPeer() const override {
    return awaited_ || (qp_ != nullptr && qp_->outstanding_reads() > 0);
  }
  void OnStreamUsed() override {
    if (watcher_ == nullptr || watched_) return;
    watched_ = true;
    watcher_->Touched(*this);
  }
  void Pump();

  // The stream lives in the RdQp's own allocation (one malloc chunk per
  // peer, not two; made in Create, before the QP that drives it, and
  // destroyed after it).
  std::optional<RdStream> stream_;
  std::unique_ptr<qp::QueuePair> qp_;
  RdQpWatcher* watcher_ = nullptr;
  bool awaited_ = false;    // SetAwaited
  bool pump_left_ = false;  // the last Pump stopped on its bound with work left
  bool pumping_ = false;
  bool watched_ = false;
  SweepMark sweep_mark_;
};

}  // namespace iwarpx::rd
