#include "rd/rd_qp.h"

#include <algorithm>
#include <new>

namespace iwarpx::rd {

wire::MpaOutcome RdOutcome() {
  wire::MpaOutcome o;
  o.role = wire::MpaRole::kInitiator;  // Start() reports established at once
  o.revision = wire::kMpaRevision2;
  o.enhanced = true;
  o.crc = false;
  o.markers_tx = o.markers_rx = false;
  o.ird = o.ord = kRdReadDepth;
  o.peer_ird = o.peer_ord = kRdReadDepth;
  o.p2p = false;
  o.rtr = wire::MpaRtr::kNone;
  o.send_rtr = false;
  o.send_imm = true;
  return o;
}

Result<std::unique_ptr<RdQp>, qp::QpStatus> RdQp::Create(
    DgramPort& port, const transport::SockAddr& peer, uint32_t local_qpn, uint32_t peer_qpn,
    const RdQpConfig& config, mem::StagTable& stags, uint32_t pd, qp::CompletionSink& sink,
    Random& random, const Clock& clock, const InboundSessions& sessions) {
  std::unique_ptr<RdQp> r(new (std::nothrow) RdQp());
  if (!r) return Err{qp::QpStatus::kInvalid};
  RdStreamOwner& owner = *r;
  r->stream_.emplace(port, peer, local_qpn, peer_qpn, config.stream, random, clock, owner, sessions,
                     config.stream.lend_reads ? &stags : nullptr);
  qp::QpConfig qc;
  qc.sq_size = config.sq_size;
  qc.rq_size = config.rq_size;
  qc.max_fpdu_payload = config.stream.max_segment;
  qc.role = wire::MpaRole::kInitiator;
  // Most peers of an endpoint are quiet: staging starts small and doubles
  // while the peer's traffic fills it (queue_pair.h, "Memory").
  qc.rx_staging_initial = qp::kRxStagingMin;
  auto q = qp::QueuePair::Create(*r->stream_, stags, pd, RdOutcome(), qc, sink);
  if (!q.ok()) return Err{q.error()};
  r->qp_ = std::move(q).value();
  r->qp_->Start();
  return r;
}

RdQp::~RdQp() = default;

void RdQp::Pump() {
  if (pumping_) return;  // an event raised while pumping: the running loop sees it
  pumping_ = true;
  constexpr int kRounds = 64;
  pump_left_ = false;
  for (int i = 0;; ++i) {
    // Whole datagrams go to the QP without the byte-stream path when it
    // takes them (queue_pair.h TakeWholeFpdu); the rest is read as before.
    const ByteSpan whole = stream_->WholeHead();
    const bool take = !whole.empty() && qp_->wants_read();
    const bool read = take || (stream_->readable() && qp_->wants_read()) || qp_->wants_progress();
    const bool write = qp_->wants_write() && stream_->writable();
    if (!read && !write) break;
    if (i == kRounds) {
      pump_left_ = true;
      break;
    }
    if (take && qp_->TakeWholeFpdu(whole)) {
      stream_->PopWhole();
    } else if (read) {
      qp_->OnReadable();
    }
    if (write) qp_->OnWritable();
  }
  // A failed stream ends a QP that reads nothing (a Send waiting for a
  // receive, requests held) too: it would never read the error.
  if (stream_->failed() && !qp_->wants_read()) qp_->LinkLost();
  pumping_ = false;
}

void RdQp::OnTimer() {
  stream_->OnTimer();
  Pump();
}

size_t RdQp::ReleaseIdle() {
  if (pumping_ || pump_left_ || !idle() || !settled()) return 0;
  return qp_->ReleaseIdle() + stream_->ReleaseIdle();
}

uint64_t RdQp::Deadline() const {
  if (pump_left_) return 0;
  return stream_->Deadline();
}

void RdQp::OnSocketWritable() {
  stream_->OnSocketWritable();
  Pump();
}

size_t RdQp::GuessReadResponses(std::span<PlacementGuess> out) const {
  uint32_t seq = 0;
  uint32_t session = 0;
  qp::QueuePair::ReadResponseGuess g;
  if (out.empty() || !stream_->NextInOrder(&seq, &session) || !qp_->NextReadResponse(&g) ||
      g.segment < kMinPlacedPayload) {
    return 0;
  }
  size_t n = 0;
  size_t off = 0;
  while (n < out.size() && off < g.remaining) {
    const size_t len = std::min(g.segment, g.remaining - off);
    if (len < kMinPlacedPayload) break;
    out[n] = PlacementGuess{.from = stream_->peer_address(),
                            .dst_qpn = stream_->local_qpn(),
                            .src_qpn = stream_->peer_qpn(),
                            .session = session,
                            .seq = seq + static_cast<uint32_t>(n),
                            .stag = g.stag,
                            .to = g.to + off,
                            .dest = MutableByteSpan(g.dest + off, len)};
    ++n;
    off += len;
  }
  return n;
}

}  // namespace iwarpx::rd
