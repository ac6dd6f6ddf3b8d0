// Transmit side of the QueuePair: cuts work requests into FPDUs of at most
// config.max_fpdu_payload ULPDU bytes, encodes each FPDU's DDP/RDMAP header
// into tx_->header, asks FrameFpdu for prefix and trailer and writes
// [prefix, header, payload pieces..., trailer] with one gather SendV. A short
// write is resumed from tx_->sent on the next OnWritable(). Read Responses
// alternate with send-queue FPDUs, and a Terminate replaces the next FPDU,
// both only at FPDU boundaries (a new FPDU is built only when none is active).
#include <algorithm>
#include <atomic>
#include <cstring>

#include "qp/queue_pair.h"
#include "wire/rdmap.h"

namespace iwarpx::qp {

namespace {
// RTR zero-length RDMA Write (RFC 6581): STag 1, TO 0 as siw sends it.
constexpr uint32_t kRtrStag = 1;

// a + b where a set bit in `boundaries` stops the carry out of that bit.
uint64_t MaskedAdd(uint64_t a, uint64_t b, uint64_t boundaries) {
  uint64_t sum = 0;
  uint64_t carry = 0;
  for (unsigned i = 0; i < 64; ++i) {
    const uint64_t s = ((a >> i) & 1u) + ((b >> i) & 1u) + carry;
    sum |= (s & 1u) << i;
    carry = (s >> 1) & ~(boundaries >> i) & 1u;
  }
  return sum;
}
}  // namespace

void QueuePair::ProcessTx() {
  while (!write_shut_) {
    if (tx_ring_wanted_ && tx_count_ == 0) {
      // Nothing built: no iovec points into the ring, it may move. Empty:
      // ReleaseIdle gave it back; one slot again, as a new QP has.
      tx_ring_wanted_ = false;
      tx_ring_.resize(tx_ring_.empty() ? 1 : kTxBatch);
      tx_head_ = 0;
      tx_ = tx_ring_.data();
    }
    // Gather FPDUs into the batch: one SendV carries them all.
    size_t bytes = 0;
    for (size_t k = 0; k < tx_count_; ++k) {
      const TxFpdu& f = tx_ring_[(tx_head_ + k) % tx_ring_.size()];
      bytes += f.total - f.sent;
    }
    while (tx_count_ < TxBatchLimit() && bytes < kTxBatchBytes) {
      // A stashed FPDU goes last: the stash holds one FPDU, so no later FPDU
      // may need it before that one is out. A borrowed one (a Read Response)
      // may be followed only by more Read Responses, so that what the
      // connection did not take can be given back (WriteBatch's caller
      // below): at 64 KiB per FPDU one send per FPDU cost a Read over TCP a
      // third of the rate of a Write, whose FPDUs go 16 to a send.
      const NextFpdu next = Next();
      if (tx_count_ > 0 && (Slot(tx_count_ - 1).stashed ||
                            (Slot(tx_count_ - 1).borrowed && next != NextFpdu::kReadResponse))) {
        break;
      }
      tx_ = &tx_ring_[(tx_head_ + tx_count_) % tx_ring_.size()];
      if (!BuildNext(next)) break;
      ++tx_count_;
      bytes += tx_->total;
    }
    if (tx_count_ == tx_ring_.size() && tx_ring_.size() < kTxBatch && !mpa_.markers_tx &&
        (rtr_pending_ || irq_count_ > 0 || SqHasWork())) {
      tx_ring_wanted_ = true;  // a full batch with more to build: grow when it is out
    }
    if (tx_count_ == 0) {
      if (shutdown_after_tx_) Shutdown();
      return;
    }
    if (!WriteBatch()) {
      // No pointer into a region outlives this call: the Read Responses the
      // connection took nothing of are given back, newest first (each undoes
      // one BuildReadResponse), and the one it took part of (the oldest
      // left: the batch's borrowed FPDUs are its last ones) is stashed.
      while (tx_count_ > 0 && Slot(tx_count_ - 1).borrowed && Slot(tx_count_ - 1).sent == 0) {
        UnbuildReadResponse(Slot(tx_count_ - 1));
      }
      if (tx_count_ > 0 && Slot(tx_count_ - 1).borrowed) StashBorrowedPayload(Slot(tx_count_ - 1));
      return;
    }
  }
}

size_t QueuePair::TxBatchLimit() const {
  // Marked FPDUs are built in the one stash buffer: one at a time.
  return mpa_.markers_tx ? 1 : tx_ring_.size();
}

bool QueuePair::SqHasWork() const {
  if (xor_busy_) return xor_retry_ && orq_count_ < ord_;  // only the loop's next guess
  if (sq_tx_ >= sq_tail_) return false;
  const SqEntry& e = Sq(sq_tx_);
  const bool ord_op = e.op == SqOp::kRead || e.op == SqOp::kAtomic;
  if (ord_op && orq_count_ >= ord_) return false;  // ORD reached: queue
  if (framing_ && ReadWaitsSctp(e)) return false;  // overlaps an outstanding Read: queue
  if ((e.flags & kWrFence) != 0 && orq_count_ > 0) return false;
  return true;
}

QueuePair::NextFpdu QueuePair::Next() const {
  if (terminate_queued_) return NextFpdu::kTerminate;
  if (state_ != QpState::kRts || tx_held_) return NextFpdu::kNone;
  if (rtr_pending_) return NextFpdu::kRtr;
  const bool sq = SqHasWork();
  if (irq_count_ > 0 && (!sq || prefer_irq_)) {
    return irq_[irq_head_].atomic ? NextFpdu::kAtomicResponse : NextFpdu::kReadResponse;
  }
  return sq ? NextFpdu::kSq : NextFpdu::kNone;
}

bool QueuePair::BuildNext(NextFpdu next) {
  tx_->stream = 0;
  tx_->unordered = false;
  if (next == NextFpdu::kNone) return false;
  if (next == NextFpdu::kTerminate) {
    terminate_queued_ = false;
    BuildTerminate();
    return Frame();
  }
  tx_->iov_count = 2;
  tx_->done = TxDone::kNothing;
  tx_->borrowed = false;
  tx_->stashed = false;
  switch (next) {
    case NextFpdu::kRtr: {
      rtr_pending_ = false;
      auto n = wire::EncodeWriteHeader(kRtrStag, 0, true, tx_->header);
      if (!n.ok()) return false;
      tx_->header_size = *n;
      return Frame();
    }
    case NextFpdu::kReadResponse: prefer_irq_ = false; return BuildReadResponse();
    case NextFpdu::kAtomicResponse: prefer_irq_ = false; return BuildAtomicResponse();
    case NextFpdu::kSq: prefer_irq_ = true; return BuildSqFpdu();
    case NextFpdu::kNone:
    case NextFpdu::kTerminate: break;  // handled above
  }
  return false;
}

void QueuePair::SetPayload(const Sgl& sgl, size_t offset, size_t len) {
  for (uint8_t i = 0; i < sgl.count && len > 0; ++i) {
    const Sge& s = sgl.sge[i];
    if (offset >= s.len) {
      offset -= s.len;
      continue;
    }
    const size_t n = std::min(s.len - offset, len);
    tx_->iov[tx_->iov_count++] = iovec{static_cast<uint8_t*>(s.addr) + offset, n};
    len -= n;
    offset = 0;
  }
}

Result<size_t, wire::WireError> QueuePair::EncodeAtomic(uint64_t seq) {
  const SqEntry& e = Sq(seq);
  wire::AtomicRequestBody body;
  body.op = e.atomic_op;
  body.request_id = static_cast<uint32_t>(seq);
  body.remote_stag = e.remote_stag;
  body.remote_to = e.remote_to;
  body.add_or_swap_data = e.operand;
  body.add_or_swap_mask = e.operand_mask;
  body.compare_data = e.compare;
  body.compare_mask = e.compare_mask;
  PushOrq(seq);
  return wire::EncodeAtomicRequest(tx_msn_read_++, body, tx_->header);
}

bool QueuePair::BuildSqFpdu() {
  if (xor_busy_) {  // the XOR loop's next guess (SqHasWork)
    xor_retry_ = false;
    auto n = EncodeAtomic(xor_seq_);
    if (!n.ok()) return false;
    tx_->header_size = *n;
    return Frame();
  }
  const uint64_t seq = sq_tx_;
  SqEntry& e = Sq(seq);
  Result<size_t, wire::WireError> n = Err{wire::WireError::kInvalidArgument};
  if (e.op == SqOp::kRead) {
    wire::ReadRequestBody body;
    body.sink_stag = e.local_stag;
    body.sink_to = e.local_to;
    body.read_size = static_cast<uint32_t>(e.length);
    body.source_stag = e.remote_stag;
    body.source_to = e.remote_to;
    n = wire::EncodeReadRequest(tx_msn_read_++, body, tx_->header);
    PushOrq(seq);
    ++sq_tx_;
  } else if (e.op == SqOp::kAtomic) {
    n = EncodeAtomic(seq);
    ++sq_tx_;
    if (e.xor_loop) {
      xor_busy_ = true;
      xor_seq_ = seq;
    }
  } else if (e.has_imm && (e.op == SqOp::kSend ? e.imm_next : e.tx_done == e.length)) {
    // The Write's data is out (or was empty), or the Send's last segment
    // (which announced it) is: its Immediate Data message.
    n = wire::EncodeImmediateData(false, tx_msn_send_++, e.imm, tx_->header);
    tx_->done = TxDone::kSqSegment;
    tx_->sq_seq = seq;
    tx_->last = true;
    ++sq_tx_;
  } else {
    const bool send = e.op == SqOp::kSend;
    const size_t room = config_.max_fpdu_payload -
                        (send ? wire::kDdpUntaggedHeaderSize : wire::kDdpTaggedHeaderSize);
    const size_t len = std::min(e.length - e.tx_done, room);
    const bool last = e.tx_done + len == e.length;
    if (send) {
      wire::SendParams p;
      p.msn = tx_msn_send_;
      p.mo = static_cast<uint32_t>(e.tx_done);
      p.last = last;
      p.imm_follows = last && e.has_imm;
      n = wire::EncodeSendHeader(p, tx_->header);
      tx_->stream = e.stream;
    } else {
      n = wire::EncodeWriteHeader(e.remote_stag, e.remote_to + e.tx_done, last, tx_->header);
    }
    SetPayload(e.sgl, e.tx_done, len);
    e.tx_done += len;
    tx_->done = TxDone::kSqSegment;
    tx_->sq_seq = seq;
    tx_->last = last && !e.has_imm;
    if (last) {
      if (send) ++tx_msn_send_;
      if (!e.has_imm) ++sq_tx_;
      e.imm_next = e.has_imm;
    }
  }
  if (!n.ok()) return false;
  tx_->header_size = *n;
  return Frame();
}

bool QueuePair::BuildReadResponse() {
  IrqEntry& r = irq_[irq_head_];
  const size_t len =
      std::min(r.length - r.done, config_.max_fpdu_payload - wire::kDdpTaggedHeaderSize);
  const bool last = r.done + len == r.length;
  auto n = wire::EncodeReadResponseHeader(r.sink_stag, r.sink_to + r.done, last, tx_->header);
  // SCTP: on the sink STag's stream, unordered when the session negotiated
  // it (sctp_framing.h, "Streams").
  if (framing_) {
    tx_->stream = SctpFraming::ReadResponseStream(r.sink_stag, tx_streams());
    tx_->unordered = mpa_.sctp_unordered_read_resp;
  }
  if (len > 0) {
    // The source stays registered memory of the application and is read at
    // send time (as siw does), not copied; it is resolved again here so a
    // region deregistered since the request arrived is never touched.
    auto src = stags_.Resolve(r.source_stag, r.source_to + r.done, len, mem::kRemoteRead, pd_);
    if (!src.ok()) {
      Fire(Event::kLocalError, mem::RdmapSourceCause(src.error()), ByteSpan{}, 0);
      return false;
    }
    tx_->lent_iov = static_cast<uint8_t>(tx_->iov_count);
    tx_->lent_key = r.source_stag;
    tx_->iov[tx_->iov_count++] = iovec{*src, len};
    tx_->borrowed = true;
  }
  r.done += len;
  tx_->last = last;  // UnbuildReadResponse undoes what follows
  if (last) {
    irq_head_ = (irq_head_ + 1) % irq_.size();
    --irq_count_;
  }
  if (!n.ok()) return false;
  tx_->header_size = *n;
  return Frame();
}

bool QueuePair::BuildAtomicResponse() {
  IrqEntry& r = irq_[irq_head_];
  // Executed now, in order with the Read Responses before it. Masks: bits set
  // in the swap mask are replaced, bits set in the compare mask are compared;
  // for a fetch-add a set mask bit ends a field (no carry out of it), so mask
  // 0 is one plain 64-bit add (the masked fetch-add of the IB extended
  // atomics; to be checked against the RFC 7306 text).
  const wire::AtomicRequestBody& q = r.request;
  // Resolved again at execution time: the region may have gone away since the
  // request was checked on arrival.
  auto where =
      stags_.Resolve(q.remote_stag, q.remote_to, sizeof(uint64_t), mem::kRemoteAtomic, pd_);
  if (!where.ok() || (reinterpret_cast<uintptr_t>(*where) & 7u) != 0) {  // NOLINT
    Fire(Event::kLocalError,
         where.ok() ? wire::term::kRdmapBaseBounds : mem::RdmapSourceCause(where.error()),
         ByteSpan{}, 0);
    return false;
  }
  std::atomic_ref<uint64_t> target(*reinterpret_cast<uint64_t*>(*where));  // NOLINT
  uint64_t original = 0;
  switch (q.op) {
    case wire::AtomicOp::kFetchAdd:
      if (q.add_or_swap_mask == 0) {
        original = target.fetch_add(q.add_or_swap_data);
      } else {
        original = target.load();
        while (!target.compare_exchange_weak(
            original, MaskedAdd(original, q.add_or_swap_data, q.add_or_swap_mask))) {
        }
      }
      break;
    case wire::AtomicOp::kSwap: {
      original = target.load();
      while (!target.compare_exchange_weak(
          original, (original & ~q.add_or_swap_mask) | (q.add_or_swap_data & q.add_or_swap_mask))) {
      }
      break;
    }
    case wire::AtomicOp::kCmpSwap: {
      original = target.load();
      while ((original & q.compare_mask) == (q.compare_data & q.compare_mask) &&
             !target.compare_exchange_weak(
                 original,
                 (original & ~q.add_or_swap_mask) | (q.add_or_swap_data & q.add_or_swap_mask))) {
      }
      break;
    }
  }
  wire::AtomicResponseBody body;
  body.original_request_id = q.request_id;
  body.original_remote_data = original;
  auto n = wire::EncodeAtomicResponse(tx_msn_atomic_resp_++, body, tx_->header);
  irq_head_ = (irq_head_ + 1) % irq_.size();
  --irq_count_;
  if (!n.ok()) return false;
  tx_->header_size = *n;
  return Frame();
}

void QueuePair::BuildTerminate() {
  std::copy_n(term_->bytes.begin(), term_->size, tx_->header.begin());
  tx_->header_size = term_->size;
  tx_->iov_count = 2;
  tx_->done = TxDone::kTerminate;
}

bool QueuePair::Frame() {
  std::array<ByteSpan, kMaxSge + 1> parts;
  size_t count = 0;
  parts[count++] = ByteSpan(tx_->header.data(), tx_->header_size);
  for (size_t i = 2; i < tx_->iov_count; ++i) {
    parts[count++] =
        ByteSpan(static_cast<const uint8_t*>(tx_->iov[i].iov_base), tx_->iov[i].iov_len);
  }
  auto framing = wire::FrameFpdu(std::span<const ByteSpan>(parts.data(), count), mpa_.crc,
                                 config_.max_fpdu_payload);
  if (!framing.ok()) return false;  // cannot happen: segments are cut to fit
  tx_->framing = *framing;
  if (framing_ && (tx_->stream != 0 || tx_->unordered)) {
    SctpFraming::SetImageStream(
        tx_->framing.trailer_bytes.data() + tx_->framing.trailer_size - wire::kFpduCrcSize,
        tx_->stream, tx_->unordered);
  }
  ++tx_stats_.fpdus;
  for (size_t i = 1; i < count; ++i) tx_stats_.payload_bytes += parts[i].size();
  const ByteSpan prefix = tx_->framing.prefix();
  const ByteSpan trailer = tx_->framing.trailer();
  tx_->iov[0] = iovec{const_cast<uint8_t*>(prefix.data()), prefix.size()};  // NOLINT
  tx_->iov[1] = iovec{tx_->header.data(), tx_->header_size};
  tx_->iov[tx_->iov_count++] =
      iovec{const_cast<uint8_t*>(trailer.data()), trailer.size()};  // NOLINT
  tx_->total = transport::TotalLength(std::span<const iovec>(tx_->iov.data(), tx_->iov_count));
  tx_->sent = 0;
  tx_->active = true;
  if (mpa_.markers_tx) return FrameWithMarkers();
  return true;
}

bool QueuePair::FrameWithMarkers() {
  // The body is ULPDU_Length | ULPDU | PAD: everything framed but the CRC.
  size_t n = 0;
  for (size_t i = 0; i < tx_->iov_count; ++i) {
    size_t len = tx_->iov[i].iov_len;
    if (i + 1 == tx_->iov_count) len -= wire::kFpduCrcSize;
    if (n + len > tx_marker_body_.size()) return false;  // cannot happen: sized for MULPDU
    if (len != 0) std::memcpy(tx_marker_body_.data() + n, tx_->iov[i].iov_base, len);
    n += len;
  }
  auto marked = marker_tx_.Insert(ByteSpan(tx_marker_body_.data(), n), mpa_.crc,
                                  MutableByteSpan(Stash(), tx_stash_size_));
  if (!marked.ok()) return false;
  tx_->iov[0] = iovec{tx_stash_.get(), *marked};
  tx_->iov_count = 1;
  tx_->total = *marked;
  tx_->borrowed = false;  // copied
  return true;
}

bool QueuePair::WriteBatch() {
  while (tx_count_ > 0 && !write_shut_) {
    // Not zeroed: entries are written before they are used (zeroing 1.8 KiB
    // per batch was measurable per message).
    std::array<iovec, kTxBatch*(kMaxSge + 3)> v;  // NOLINT(cppcoreguidelines-pro-type-member-init)
    std::array<transport::LentIov, kTxBatch>
        lent;  // NOLINT(cppcoreguidelines-pro-type-member-init)
    size_t count = 0;
    size_t lent_count = 0;
    for (size_t k = 0; k < tx_count_; ++k) {
      const TxFpdu& f = Slot(k);
      size_t skip = f.sent;
      for (size_t i = 0; i < f.iov_count; ++i) {
        const iovec& p = f.iov[i];
        if (skip >= p.iov_len) {
          skip -= p.iov_len;
          continue;
        }
        if (f.borrowed && i == f.lent_iov) lent[lent_count++] = {count, f.lent_key};
        v[count++] = iovec{static_cast<uint8_t*>(p.iov_base) + skip, p.iov_len - skip};
        skip = 0;
      }
    }
    const transport::IoResult r =
        lent_count == 0
            ? conn_.SendV(std::span<const iovec>(v.data(), count))
            : conn_.SendVLent(std::span<const iovec>(v.data(), count),
                              std::span<const transport::LentIov>(lent.data(), lent_count));
    if (r.status == transport::IoStatus::kOk) {
      if (r.bytes == 0) return false;
      size_t left = r.bytes;
      while (left > 0 && tx_count_ > 0) {
        TxFpdu& f = Slot(0);
        const size_t take = std::min(left, f.total - f.sent);
        f.sent += take;
        left -= take;
        if (f.sent == f.total) FinishTxFpdu();
      }
      continue;
    }
    if (r.status == transport::IoStatus::kWouldBlock) return false;
    for (TxFpdu& f : tx_ring_) f.active = false;
    tx_count_ = 0;
    write_shut_ = true;  // the connection is dead; never write again
    Fire(Event::kLinkDown, wire::term::kLlpStreamLost, {}, 0);
    return false;
  }
  return !write_shut_;
}

void QueuePair::UnbuildReadResponse(TxFpdu& f) {
  // The batch's last FPDU (only Read Responses follow a borrowed one) was
  // built by BuildReadResponse from the IRQ head, or from the entry before it
  // if it was the Read's last: give its bytes back to that entry. Nothing ran
  // in between (or only the builds of later ones, already undone), so the
  // entry is still there.
  const size_t len = f.iov[f.lent_iov].iov_len;
  if (f.last) {
    irq_head_ = (irq_head_ + irq_.size() - 1) % irq_.size();
    ++irq_count_;
  }
  irq_[irq_head_].done -= len;
  prefer_irq_ = true;  // it goes next, as it would have
  --tx_stats_.fpdus;
  tx_stats_.payload_bytes -= len;
  f.active = false;
  f.borrowed = false;
  --tx_count_;
}

void QueuePair::StashBorrowedPayload(TxFpdu& f) {
  const size_t rest = f.total - f.sent;
  if (rest > tx_stash_size_) return;  // cannot happen: the stash holds a whole FPDU
  size_t skip = f.sent;
  size_t out = 0;
  for (size_t i = 0; i < f.iov_count; ++i) {
    const iovec& p = f.iov[i];
    if (skip >= p.iov_len) {
      skip -= p.iov_len;
      continue;
    }
    std::memcpy(Stash() + out, static_cast<const uint8_t*>(p.iov_base) + skip, p.iov_len - skip);
    out += p.iov_len - skip;
    skip = 0;
  }
  f.iov[0] = iovec{tx_stash_.get(), out};
  f.iov_count = 1;
  f.total = out;
  f.sent = 0;
  f.borrowed = false;
  f.stashed = true;
}

void QueuePair::FinishTxFpdu() {
  // The oldest FPDU of the batch is out: pop it, then act on it.
  TxFpdu& f = Slot(0);
  f.active = false;
  const TxDone done = f.done;
  const uint64_t seq = f.sq_seq;
  const bool last = f.last;
  tx_head_ = (tx_head_ + 1) % tx_ring_.size();
  --tx_count_;
  switch (done) {
    case TxDone::kNothing: break;
    case TxDone::kSqSegment:
      if (last) CompleteSq(seq);
      break;
    case TxDone::kTerminate: Fire(Event::kTermSent, wire::term::kLlpStreamLost, {}, 0); break;
  }
}

}  // namespace iwarpx::qp
