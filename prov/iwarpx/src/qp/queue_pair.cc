// QueuePair creation, posting, the state machine (one function per source
// state) and flushing. Transmit: qp_tx.cc; receive: qp_rx.cc.
#include "qp/queue_pair.h"

#include <algorithm>
#include <bit>
#include <new>
#include <utility>

#include "wire/terminate.h"

namespace iwarpx::qp {

const char* ToString(QpState s) {
  switch (s) {
    case QpState::kRts: return "RTS";
    case QpState::kClosing: return "CLOSING";
    case QpState::kTerminate: return "TERMINATE";
    case QpState::kError: return "ERROR";
  }
  return "?";
}

namespace {

// With markers towards the peer an FPDU must keep every FPDUPTR within 16
// bits: marked FPDUs are capped at kMaxMarkedFpduPayload.
QpConfig EffectiveConfig(const QpConfig& config, const wire::MpaOutcome& mpa) {
  QpConfig c = config;
  if (mpa.markers_tx) c.max_fpdu_payload = std::min(c.max_fpdu_payload, kMaxMarkedFpduPayload);
  return c;
}

}  // namespace

wire::FpduRxConfig QueuePair::RxConfig() const {
  wire::FpduRxConfig c;
  c.crc = mpa_.crc;
  c.markers = mpa_.markers_rx;
  c.max_ulpdu = wire::kMaxUlpduLength;
  return c;
}

Result<std::unique_ptr<QueuePair>, QpStatus> QueuePair::Create(
    transport::Connection& conn, mem::StagTable& stags, uint32_t pd, const wire::MpaOutcome& mpa,
    const QpConfig& config, CompletionSink& sink, transport::SctpMessageQueue early) {
  if (config.sq_size == 0 || config.rq_size == 0 || config.max_fpdu_payload < kMinFpduPayload ||
      config.max_fpdu_payload > wire::kMaxUlpduLength || config.rx_budget_fpdus == 0 ||
      config.rx_budget_bytes == 0 || config.rx_staging_initial < kRxStagingMin ||
      config.rx_staging_initial > kRxStagingSize ||
      !std::has_single_bit(config.rx_staging_initial)) {
    return Err{QpStatus::kInvalid};
  }
  if (mpa.send_rtr && mpa.rtr != wire::MpaRtr::kWrite) return Err{QpStatus::kInvalid};
  std::unique_ptr<SctpFraming> framing;
  if (conn.preserves_message_boundaries()) {
    // RFC 5043: no MPA on SCTP, so nothing of MPA's framing may be negotiated.
    auto* sctp = dynamic_cast<transport::SctpConnection*>(&conn);
    if (sctp == nullptr || mpa.crc || mpa.markers_tx || mpa.markers_rx) {
      return Err{QpStatus::kInvalid};
    }
    framing.reset(new (std::nothrow)
                      SctpFraming(*sctp, mpa.sctp_unordered_read_resp, std::move(early)));
    if (!framing) return Err{QpStatus::kInvalid};
  } else if (!early.empty()) {
    return Err{QpStatus::kInvalid};
  }
  std::unique_ptr<QueuePair> qp(
      new (std::nothrow) QueuePair(std::move(framing), conn, stags, pd, mpa, config, sink));
  if (!qp) return Err{QpStatus::kInvalid};
  return qp;
}

QueuePair::QueuePair(std::unique_ptr<SctpFraming> framing, transport::Connection& conn,
                     mem::StagTable& stags, uint32_t pd, const wire::MpaOutcome& mpa,
                     const QpConfig& config, CompletionSink& sink)
    : framing_(std::move(framing)),
      conn_(framing_ ? static_cast<transport::Connection&>(*framing_) : conn),
      stags_(stags),
      sink_(sink),
      params_(ShareQpParams(mpa, EffectiveConfig(config, mpa))),
      mpa_(params_->mpa),
      config_(params_->config),
      sq_(std::min<size_t>(config.sq_size, kSqInitialSlots)),
      sq_capacity_(config.sq_size),
      rq_(config.rq_size),
      rx_msgs_(framing_ ? std::make_unique<std::array<RxMsg, kMaxSctpStreams>>() : nullptr),
      // orq_ (mpa.ord entries) is made at the first Read or Atomic (PushOrq),
      // irq_ (mpa.ird entries) at the first inbound Read/Atomic Request.
      ord_(mpa.ord),
      tx_stash_size_(wire::MarkedFpduLength(0, config.max_fpdu_payload + kFpduOverhead) +
                     wire::kMarkerSize),
      tx_marker_body_(mpa.markers_tx ? config.max_fpdu_payload + kFpduOverhead : 0),
      rx_stage_(std::make_unique_for_overwrite<uint8_t[]>(config.rx_staging_initial)),
      rx_stage_size_(config.rx_staging_initial),
      pd_(pd),
      rx_short_read_drains_(!conn.preserves_message_boundaries()) {}

QueuePair::~QueuePair() = default;

void QueuePair::Start() {
  if (config_.role == wire::MpaRole::kInitiator) {
    rtr_pending_ = mpa_.send_rtr;
    MarkEstablished();
  } else if (mpa_.established_after_rtr) {
    awaiting_rtr_ = true;
    tx_held_ = true;
  } else {
    tx_held_ = mpa_.hold_tx_until_first_fpdu;
    MarkEstablished();
  }
  ProcessTx();
}

void QueuePair::MarkEstablished() {
  if (established_) return;
  established_ = true;
  sink_.OnEstablished();
}

QpStatus QueuePair::PostSq(const SqEntry& entry) {
  if (state_ != QpState::kRts) return QpStatus::kBadState;
  if (sq_tail_ - sq_head_ >= sq_capacity_) return QpStatus::kQueueFull;
  if (sq_tail_ - sq_head_ >= sq_.size()) GrowSq();
  Sq(sq_tail_) = entry;
  ++sq_tail_;
  ProcessTx();
  return QpStatus::kOk;
}

void QueuePair::GrowSq() {
  // Live entries keep their sequence numbers; only their slots move. No
  // reference into sq_ is held across a Post* (callers look entries up by
  // sequence number after any call that can reach the sink).
  decltype(sq_) grown(std::min(std::max(sq_.size() * 2, kSqInitialSlots), sq_capacity_));
  for (uint64_t i = sq_head_; i < sq_tail_; ++i) grown[i % grown.size()] = sq_[i % sq_.size()];
  sq_.swap(grown);
}

QpStatus QueuePair::PostSend(const SendWr& wr) {
  if (!wr.sgl.Valid() || wr.sgl.Length() > UINT32_MAX) return QpStatus::kInvalid;
  if (wr.with_imm && !mpa_.send_imm) return QpStatus::kNotNegotiated;
  if (wr.stream != 0 && (!framing_ || wr.stream >= framing_->tx_streams() || wr.with_imm)) {
    return QpStatus::kInvalid;
  }
  if (SendWhole(wr)) return QpStatus::kOk;
  SqEntry e;
  e.op = SqOp::kSend;
  e.context = wr.context;
  e.flags = wr.flags;
  e.sgl = wr.sgl;
  e.length = wr.sgl.Length();
  e.has_imm = wr.with_imm;
  e.imm = wr.imm;
  e.stream = wr.stream;
  return PostSq(e);
}

QpStatus QueuePair::PostWrite(const WriteWr& wr) {
  if (!wr.sgl.Valid() || wire::TaggedRangeWraps(wr.remote_to, wr.sgl.Length())) {
    return QpStatus::kInvalid;
  }
  if (WriteWhole(wr)) return QpStatus::kOk;
  SqEntry e;
  e.op = SqOp::kWrite;
  e.context = wr.context;
  e.flags = wr.flags;
  e.sgl = wr.sgl;
  e.length = wr.sgl.Length();
  e.remote_stag = wr.remote_stag;
  e.remote_to = wr.remote_to;
  e.has_imm = wr.with_imm;
  e.imm = wr.imm;
  return PostSq(e);
}

QpStatus QueuePair::PostRead(const ReadWr& wr) {
  if (ord_ == 0 || wire::TaggedRangeWraps(wr.remote_to, wr.length) ||
      wire::TaggedRangeWraps(wr.local_to, wr.length)) {
    return QpStatus::kInvalid;
  }
  SqEntry e;
  e.op = SqOp::kRead;
  e.context = wr.context;
  e.flags = wr.flags;
  e.length = wr.length;
  e.remote_stag = wr.remote_stag;
  e.remote_to = wr.remote_to;
  e.local_stag = wr.local_stag;
  e.local_to = wr.local_to;
  if (ReadWhole(e)) return QpStatus::kOk;
  return PostSq(e);
}

QpStatus QueuePair::PostAtomic(const AtomicWr& wr) {
  const bool narrow = wr.size == 4;
  if (ord_ == 0 || wr.op > wire::AtomicOp::kCmpSwap || (wr.size != 8 && !narrow) ||
      (wr.remote_to & (wr.size - 1u)) != 0) {
    return QpStatus::kInvalid;
  }
  SqEntry e;
  e.op = SqOp::kAtomic;
  e.context = wr.context;
  e.flags = wr.flags;
  e.remote_stag = wr.remote_stag;
  e.remote_to = wr.remote_to & ~uint64_t{7};
  e.atomic_op = wr.op;
  e.result = wr.result;
  e.result_size = wr.size;
  uint64_t lane = UINT64_MAX;
  if (narrow) {
    // The 4-byte target's lane within its 8-byte word, in this host's order.
    const bool upper_half = (wr.remote_to & 4u) != 0;
    const bool high = std::endian::native == std::endian::little ? upper_half : !upper_half;
    e.result_shift = high ? 32 : 0;
    lane = uint64_t{UINT32_MAX} << e.result_shift;
  }
  e.operand = (wr.operand << e.result_shift) & lane;
  e.compare = (wr.compare << e.result_shift) & lane;
  e.compare_mask = lane;
  // Fetch-add's mask marks field boundaries (carry stops above a set bit):
  // none for one 64-bit add, bit 31 and 63 for two independent 32-bit lanes
  // (the other lane adds 0). Compare-swap replaces the lane's bits, swap the
  // bits of the lane that swap_mask selects.
  if (wr.xor_loop) {
    e.atomic_op = wire::AtomicOp::kCmpSwap;
    e.xor_loop = true;
    e.xor_operand = e.operand;
    e.compare = 0;  // first guess: the lane is 0, so the new value is the operand
    e.operand_mask = lane;
  } else if (wr.op == wire::AtomicOp::kFetchAdd) {
    e.operand_mask = narrow ? 0x8000000080000000ull : 0;
  } else if (wr.op == wire::AtomicOp::kSwap) {
    e.operand_mask = (wr.swap_mask << e.result_shift) & lane;  // masked swap
  } else {
    e.operand_mask = lane;
  }
  return PostSq(e);
}

QpStatus QueuePair::PostRecv(const RecvWr& wr) {
  if (!wr.sgl.Valid() || wr.sgl.Length() > UINT32_MAX) return QpStatus::kInvalid;
  if (state_ != QpState::kRts) return QpStatus::kBadState;
  if (rq_tail_ - rq_head_ >= rq_.size()) {
    if (!rq_.empty()) return QpStatus::kQueueFull;
    rq_.resize(config_.rq_size);  // given back by ReleaseIdle
  }
  const bool was_blocked = RxBlocked();
  RqEntry& r = rq_[rq_tail_ % rq_.size()];
  r.context = wr.context;
  r.sgl = wr.sgl;
  r.length = wr.sgl.Length();
  r.done = false;
  ++rq_tail_;
  // Resume a receive path stopped for lack of a receive: its staged bytes
  // get no new socket readiness (queue_pair.h, "No receive posted").
  if (was_blocked) ProcessRx();
  return QpStatus::kOk;
}

void QueuePair::HoldRequests(bool hold) {
  hold_requests_ = hold;
  if (hold || !rx_held_) return;
  // Resume where the hold stopped: the header waits in rxf_->hdr and later
  // bytes may be staged; no new socket readiness comes for them.
  rx_held_ = false;
  if (state_ == QpState::kRts) ProcessRx();
}

void QueuePair::Disconnect() {
  Fire(Event::kDisconnect, wire::term::kLlpStreamLost, {}, 0);
}

void QueuePair::LinkLost() {
  if (rx_closed_) return;  // the end was read: the QP already had the event
  rx_closed_ = true;
  Fire(Event::kLinkDown, wire::term::kLlpStreamLost, {}, 0);
}

void QueuePair::OnWritable() {
  ProcessTx();
}
void QueuePair::OnReadable() {
  ProcessRx();
}

bool QueuePair::wants_write() const {
  if (write_shut_) return false;
  if (tx_count_ > 0 || terminate_queued_ || shutdown_after_tx_) return true;
  if (state_ != QpState::kRts || tx_held_) return false;
  return rtr_pending_ || irq_count_ > 0 || SqHasWork();
}

bool QueuePair::wants_read() const {
  if (rx_closed_) return false;
  if (state_ == QpState::kClosing) return true;
  if (state_ != QpState::kRts) return false;
  return !RxBlocked();
}

bool QueuePair::wants_progress() const {
  if (rx_closed_) return false;
  if (state_ == QpState::kClosing) return rx_budget_hit_;
  if (state_ != QpState::kRts || RxBlocked()) return false;
  return rx_budget_hit_ || rx_stage_head_ < rx_stage_tail_;
}

// Stopped on an untagged Send (or Immediate Data) with no receive posted, or
// on a request while the peer's requests are held.
bool QueuePair::RxBlocked() const {
  if (!rx_hdr_done_ || rx_dispatched_) return false;
  if (rx_held_) return true;  // HoldRequests
  if (framing_) return rx_wait_recv_ && rq_next_ == rq_tail_;
  return rq_head_ == rq_tail_;
}

// --- State machine -------------------------------------------------------

void QueuePair::Fire(Event ev, wire::TermCause cause, ByteSpan offending, size_t segment_length) {
  switch (state_) {
    case QpState::kRts: StateRts(ev, cause, offending, segment_length); break;
    case QpState::kClosing: StateClosing(ev); break;
    case QpState::kTerminate: StateTerminate(ev); break;
    case QpState::kError: break;
  }
}

void QueuePair::StateRts(Event ev, wire::TermCause cause, ByteSpan offending,
                         size_t segment_length) {
  switch (ev) {
    case Event::kLocalError: {
      state_ = QpState::kTerminate;
      const wire::TerminateHeader th = wire::MakeTerminate(cause, offending, segment_length);
      term_ = std::make_unique<TermImage>();
      auto n = wire::EncodeTerminateSegment(1, th, term_->bytes);
      if (!n.ok()) {
        n = wire::EncodeTerminateSegment(1, wire::MakeTerminate(cause), term_->bytes);
      }
      term_->size = n.ok() ? *n : 0;
      terminate_queued_ = term_->size != 0;
      ++term_stats_.sent;
      sink_.OnTerminated(cause, TermOrigin::kSent);
      FlushAll(WcError{TermOrigin::kSent, cause});
      if (!terminate_queued_) shutdown_after_tx_ = true;
      ProcessTx();
      break;
    }
    case Event::kTermReceived:
      state_ = QpState::kError;
      ++term_stats_.received;
      sink_.OnTerminated(cause, TermOrigin::kReceived);
      FlushAll(WcError{TermOrigin::kReceived, cause});
      Shutdown();
      break;
    case Event::kLinkDown:
      state_ = QpState::kError;
      sink_.OnTerminated(wire::term::kLlpStreamLost, TermOrigin::kConnectionLost);
      FlushAll(WcError{TermOrigin::kConnectionLost, wire::term::kLlpStreamLost});
      Shutdown();
      break;
    case Event::kDisconnect:
      state_ = QpState::kClosing;
      sink_.OnTerminated(cause, TermOrigin::kLocalClose);
      FlushAll(WcError{TermOrigin::kLocalClose, cause});
      shutdown_after_tx_ = true;
      ProcessTx();
      break;
    case Event::kTermSent: break;
  }
}

void QueuePair::StateClosing(Event ev) {
  switch (ev) {
    case Event::kTermReceived: ++term_stats_.received; [[fallthrough]];
    case Event::kLinkDown:
      state_ = QpState::kError;
      Shutdown();
      break;
    case Event::kLocalError:
    case Event::kDisconnect:
    case Event::kTermSent: break;
  }
}

void QueuePair::StateTerminate(Event ev) {
  switch (ev) {
    case Event::kTermSent:
    case Event::kLinkDown:
      state_ = QpState::kError;
      Shutdown();
      break;
    case Event::kLocalError:
    case Event::kTermReceived:
    case Event::kDisconnect: break;
  }
}

void QueuePair::Shutdown() {
  shutdown_after_tx_ = false;
  if (write_shut_) return;
  write_shut_ = true;
  (void)conn_.ShutdownWrite();
}

void QueuePair::FlushAll(const WcError& error) {
  for (uint64_t i = sq_head_; i < sq_tail_; ++i) {
    SqEntry& e = Sq(i);
    if (e.completed) continue;
    e.completed = true;
    const WcOp op = e.op == SqOp::kSend    ? WcOp::kSend
                    : e.op == SqOp::kWrite ? WcOp::kWrite
                    : e.op == SqOp::kRead  ? WcOp::kRead
                                           : WcOp::kAtomic;
    sink_.OnError(e.context, op, error);
  }
  sq_head_ = sq_tx_ = sq_tail_;
  orq_head_ = orq_count_ = 0;
  irq_head_ = irq_count_ = 0;
  rtr_pending_ = false;
  for (uint64_t i = rq_head_; i < rq_tail_; ++i) {
    RqEntry& r = rq_[i % rq_.size()];
    if (r.done) continue;  // SCTP: completed out of order already
    sink_.OnError(r.context, WcOp::kRecv, error);
  }
  rq_head_ = rq_next_ = rq_tail_;
  if (rx_msgs_) {
    for (RxMsg& m : *rx_msgs_) m.active = false;
  }
  ResetRxFpdu();
}

void QueuePair::CompleteSq(uint64_t seq) {
  if (state_ != QpState::kRts || seq < sq_head_ || seq >= sq_tail_) return;
  SqEntry& e = Sq(seq);
  if (e.completed) return;
  e.completed = true;
  if ((e.flags & kWrSignaled) != 0) {
    switch (e.op) {
      case SqOp::kSend: sink_.OnSendComplete(e.context); break;
      case SqOp::kWrite: sink_.OnRdmaComplete(e.context, WcOp::kWrite); break;
      case SqOp::kRead: sink_.OnRdmaComplete(e.context, WcOp::kRead); break;
      case SqOp::kAtomic: sink_.OnRdmaComplete(e.context, WcOp::kAtomic); break;
    }
  }
  RetireSq();
}

void QueuePair::RetireSq() {
  while (sq_head_ < sq_tx_ && Sq(sq_head_).completed) ++sq_head_;
}

}  // namespace iwarpx::qp
