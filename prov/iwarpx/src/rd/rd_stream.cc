#include "rd/rd_stream.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "transport/own_memory.h"
#include "wire/ddp.h"
#include "wire/dgram_bundle.h"
#include "wire/fpdu.h"

namespace iwarpx::rd {

namespace {

// Copies `n` bytes at stream position `pos` of the gather list `iov` to `out`.
void CopyFromIov(std::span<const iovec> iov, size_t pos, uint8_t* out, size_t n) {
  for (const iovec& v : iov) {
    if (n == 0) return;
    if (pos >= v.iov_len) {
      pos -= v.iov_len;
      continue;
    }
    const size_t take = std::min(v.iov_len - pos, n);
    std::memcpy(out, static_cast<const uint8_t*>(v.iov_base) + pos, take);
    out += take;
    n -= take;
    pos = 0;
  }
}

// Writes `src` into the scatter list at byte `*at`; returns bytes written.
size_t CopyToIov(std::span<const iovec> iov, size_t* at, ByteSpan src) {
  size_t pos = *at;
  size_t done = 0;
  for (const iovec& v : iov) {
    if (done == src.size()) break;
    if (pos >= v.iov_len) {
      pos -= v.iov_len;
      continue;
    }
    const size_t take = std::min(v.iov_len - pos, src.size() - done);
    uint8_t* to = static_cast<uint8_t*>(v.iov_base) + pos;
    // Bytes received in place (DgramPort's in-place receive) are already
    // where the QP wants them; any other overlap cannot happen, but memmove
    // keeps it defined.
    if (to != src.data() + done) std::memmove(to, src.data() + done, take);
    done += take;
    pos = 0;
  }
  *at += done;
  return done;
}

}  // namespace

RdStream::RdStream(DgramPort& port, const transport::SockAddr& peer, uint32_t local_qpn,
                   uint32_t peer_qpn, const RdStreamConfig& config, Random& random,
                   const Clock& clock, RdStreamOwner& owner, const InboundSessions& sessions,
                   mem::StagTable* lender)
    : port_(port),
      peer_(peer),
      local_qpn_(local_qpn),
      peer_qpn_(peer_qpn),
      max_segment_(config.max_segment),
      dead_after_ns_(config.send.dead_after_ns),
      clock_(clock),
      owner_(owner),
      lender_(lender),
      out_session_(random),
      in_sessions_(sessions),
      send_(config.send, *this),
      recv_(config.recv),
      had_inbound_(sessions.current() != 0),
      buf_size_(std::max(config.send_buffer_bytes, config.max_segment)),
      buf_cap_(std::min(kInitialBuffer, buf_size_)),
      tx_(config.send.capacity, kInitialSlots),
      // A resend may be queued, then acked before it left: such stale
      // cookies wait in the queue too, so it can hold more than capacity.
      pending_(2 * size_t{config.send.capacity}, 0),
      last_heard_(clock.NowNs()),
      hold_(config.recv.window, 0) {
  buf_ = std::make_unique_for_overwrite<uint8_t[]>(buf_cap_);
  if (lender_ != nullptr) lender_->AddBorrower(*this);
}

RdStream::~RdStream() {
  if (lender_ == nullptr) return;
  for (uint64_t c = tx_head_; c < tx_tail_; ++c) DropTail(tx_[c]);
  lender_->RemoveBorrower(*this);
}

void RdStream::DropTail(TxRecord& r) {
  lent_bytes_ -= r.tail_len;
  if (r.key != 0) lender_->Return(r.key);
  r.key = 0;
  r.tail = nullptr;
  r.tail_len = 0;
  r.owned.reset();
}

void RdStream::Reclaim(uint32_t stag) {
  for (uint64_t c = tx_head_; c < tx_tail_; ++c) {
    TxRecord& r = tx_[c];
    if (r.key != stag) continue;
    if (r.acked) {
      DropTail(r);  // never sent again
      continue;
    }
    OwnTail(r);
  }
}

void RdStream::OwnTail(TxRecord& r) {
  if (r.key == 0) return;  // not lent (copied, owned already, or unreadable)
  auto copy = std::make_unique_for_overwrite<uint8_t[]>(r.tail_len);
  const bool ok = transport::CopyOwnMemory(copy.get(), r.tail, r.tail_len);
  lender_->Return(r.key);
  r.key = 0;
  if (ok) {
    r.owned = std::move(copy);
    r.tail = r.owned.get();
    ++rare_stats().reclaimed;
    return;
  }
  r.unreadable = true;
  r.tail = nullptr;
  ++rare_stats().unreadable;
}

transport::SockAddr RdStream::local_address() const {
  return port_.socket().local_address();
}

transport::Status RdStream::ShutdownWrite() {
  owner_.OnStreamUsed();
  write_shut_ = true;
  return {};
}

// --- Send side -------------------------------------------------------------

bool RdStream::ReserveTx(size_t len, size_t* offset) const {
  if (tx_tail_ - tx_head_ >= tx_.capacity()) return false;
  if (buf_used_ == 0) {
    *offset = 0;
    return len <= buf_cap_;
  }
  if (buf_tail_ > buf_head_) {
    if (len <= buf_cap_ - buf_tail_) {
      *offset = buf_tail_;
      return true;
    }
    if (len <= buf_head_) {
      *offset = 0;  // wrap: the end of the buffer is left unused
      return true;
    }
    return false;
  }
  // buf_tail_ <= buf_head_ and not empty: the free bytes are [tail, head).
  if (buf_head_ - buf_tail_ >= len) {
    *offset = buf_tail_;
    return true;
  }
  return false;
}

bool RdStream::CanGrowTx(size_t len) const {
  if (buf_cap_ >= buf_size_ || tx_tail_ - tx_head_ >= tx_.capacity()) return false;
  if (buf_used_ == 0) return len <= buf_size_;
  // Not wrapped: [head, tail) keeps its offsets in the larger buffer.
  return buf_tail_ > buf_head_ && buf_tail_ + len <= buf_size_;
}

bool RdStream::GrowTx(size_t len) {
  if (!CanGrowTx(len)) return false;
  const size_t need = buf_used_ == 0 ? len : buf_tail_ + len;
  // No buffer: ReleaseIdle gave it back; it starts again as a new stream's.
  size_t cap = buf_cap_ != 0 ? buf_cap_ : std::min(kInitialBuffer, buf_size_);
  while (cap < need) cap *= 2;
  cap = std::min(cap, buf_size_);
  auto grown = std::make_unique_for_overwrite<uint8_t[]>(cap);
  if (buf_used_ != 0) std::memcpy(grown.get() + buf_head_, buf_.get() + buf_head_, buf_used_);
  buf_ = std::move(grown);
  buf_cap_ = cap;
  return true;
}

bool RdStream::PlaceTx(size_t len, size_t* offset) {
  // Grow rather than wrap: a small buffer that wraps would make the sender
  // wait for acks with little in flight.
  const bool fits_at_tail =
      buf_used_ == 0 ? len <= buf_cap_ : buf_tail_ <= buf_head_ || len <= buf_cap_ - buf_tail_;
  if (!fits_at_tail) (void)GrowTx(len);
  return ReserveTx(len, offset);
}

bool RdStream::writable() const {
  size_t offset = 0;
  return !failed() && !write_shut_ && send_.CanSend() &&
         (ReserveTx(max_segment_, &offset) || CanGrowTx(max_segment_)) &&
         buf_used_ + lent_bytes_ + max_segment_ <= buf_size_;
}

transport::IoResult RdStream::SendV(std::span<const iovec> iov) {
  return SendVLent(iov, {});
}

transport::IoResult RdStream::SendVLent(std::span<const iovec> iov,
                                        std::span<const transport::LentIov> lent) {
  owner_.OnStreamUsed();
  if (failed()) return transport::IoResult::Error(err_);
  if (write_shut_) return transport::IoResult::Error(EPIPE);
  const uint64_t now = clock_.NowNs();
  const size_t total = transport::TotalLength(iov);
  const uint64_t first_new = tx_tail_;
  // Stream positions of the lent pieces (only kept with a lender).
  std::array<LentSpan, 16>
      spans;  // written before use // NOLINT(cppcoreguidelines-pro-type-member-init)
  size_t span_count = 0;
  if (lender_ != nullptr && !lent.empty()) {
    size_t at = 0;
    size_t next = 0;
    for (size_t i = 0; i < iov.size() && next < lent.size() && span_count < spans.size(); ++i) {
      if (lent[next].index == i) {
        spans[span_count++] = {at, iov[i].iov_len, static_cast<const uint8_t*>(iov[i].iov_base),
                               lent[next].key};
        ++next;
      }
      at += iov[i].iov_len;
    }
  }
  size_t next_span = 0;
  size_t pos = 0;
  tx_blocked_ = false;
  while (total - pos >= wire::kFpduLengthSize) {
    std::array<uint8_t, wire::kFpduLengthSize> len_bytes{};
    CopyFromIov(iov, pos, len_bytes.data(), len_bytes.size());
    const size_t len = (size_t{len_bytes[0]} << 8) | len_bytes[1];
    const size_t fpdu = wire::FpduWireLength(len);
    if (total - pos < fpdu) break;
    if (len > max_segment_ || len < wire::kDgramMinDdpSegment) {
      return pos > 0 ? transport::IoResult::Ok(pos) : transport::IoResult::Error(EMSGSIZE);
    }
    // A lent piece that ends this ULPDU (a Read Response payload) stays
    // where it is; the ULPDU's head before it is copied.
    const size_t ulpdu_at = pos + wire::kFpduLengthSize;
    while (next_span < span_count && spans[next_span].pos < ulpdu_at) ++next_span;
    const LentSpan* tail = nullptr;
    if (next_span < span_count) {
      const LentSpan& ls = spans[next_span];
      if (ls.pos > ulpdu_at && ls.pos + ls.len == ulpdu_at + len) tail = &ls;
    }
    const Accepted a = AcceptUlpdu(iov, ulpdu_at, len, tail, now);
    if (a == Accepted::kNoRoom) {
      tx_blocked_ = true;
      break;
    }
    if (a == Accepted::kLendRefused) {
      return pos > 0 ? transport::IoResult::Ok(pos) : transport::IoResult::Error(EFAULT);
    }
    pos += fpdu;
  }
  if (pos == 0 && total != 0 && !tx_blocked_) {
    // Not even one whole FPDU was offered: the QP broke the contract.
    return transport::IoResult::Error(EPROTO);
  }
  TransmitFrom(first_new, now);
  if (pos == 0) return transport::IoResult::WouldBlock();
  return transport::IoResult::Ok(pos);
}

transport::IoResult RdStream::SendWhole(std::span<const iovec> ulpdu) {
  owner_.OnStreamUsed();
  if (failed()) return transport::IoResult::Error(err_);
  if (write_shut_) return transport::IoResult::Error(EPIPE);
  const size_t len = transport::TotalLength(ulpdu);
  if (len > max_segment_ || len < wire::kDgramMinDdpSegment) {
    return transport::IoResult::Error(EMSGSIZE);
  }
  const uint64_t now = clock_.NowNs();
  const uint64_t first_new = tx_tail_;
  tx_blocked_ = AcceptUlpdu(ulpdu, 0, len, nullptr, now) != Accepted::kTaken;
  TransmitFrom(first_new, now);
  if (tx_blocked_) return transport::IoResult::WouldBlock();
  return transport::IoResult::Ok(len);
}

void RdStream::TransmitFrom(uint64_t first_new, uint64_t now) {
  if (corked_) {
    // FI_MORE: kept for Uncork() (or OnTimer, due at once while held).
    if (!held_ && first_new < tx_tail_) {
      held_ = true;
      held_from_ = first_new;
    }
  } else {
    // Transmit what this call accepted, consecutive ULPDUs bundled; R on the
    // last one and when half the credit window is in flight, so the acks
    // come back without delay.
    uint64_t c = first_new;
    while (c < tx_tail_) {
      if (pending_count_ > 0) {  // the socket is backed up: they wait, singly, in order
        QueuePending(c++);
        continue;
      }
      const uint64_t end = BundleEnd(c);
      const uint32_t window = send_.right_edge() - send_.snd_una();
      const bool request = end == tx_tail_ || send_.outstanding() * 2 >= window;
      const bool sent = end - c >= wire::kBundleMinRecords ? TransmitBundle(c, end, request)
                                                           : Transmit(c, request);
      if (!sent) {
        for (uint64_t q = c; q < end; ++q) QueuePending(q);
      }
      c = end;
    }
  }
  if (tx_blocked_ && send_.outstanding() == 0 && probe_at_ == UINT64_MAX) {
    probe_at_ = now + send_.rto();  // no credit and nothing in flight: probe (CheckProbe)
  }
}

void RdStream::Uncork() {
  corked_ = false;
  if (!held_) return;
  held_ = false;
  owner_.OnStreamUsed();
  if (failed()) return;
  // Held records are never acked (AckReachesHeld), so none is released; the
  // max keeps a released slot from being sent even so.
  TransmitFrom(std::max(held_from_, tx_head_), clock_.NowNs());
}

uint64_t RdStream::BundleEnd(uint64_t first) const {
  size_t bytes = 0;
  uint64_t e = first;
  while (e < tx_tail_ && e - first < kMaxBundle) {
    const TxRecord& r = tx_[e];
    // Lent tails go alone (zero copy), and so does anything out of sequence.
    if (r.tail_len != 0 || r.unreadable || r.seq != tx_[first].seq + (e - first)) break;
    const size_t size = wire::BundleRecordSize(r.len);
    if (bytes + size > max_segment_) break;
    bytes += size;
    ++e;
  }
  return std::max(e, first + 1);
}

bool RdStream::TransmitBundle(uint64_t first, uint64_t end, bool ack_request) {
  std::array<ByteSpan, kMaxBundle> segments;
  const size_t n = end - first;
  for (size_t i = 0; i < n; ++i) {
    const TxRecord& r = tx_[first + i];
    segments[i] = ByteSpan(buf_.get() + r.offset, r.len);
  }
  wire::DgramHeader h = NewHeader(wire::DgramType::kRdData);
  h.seq = tx_[first].seq;
  h.ack_request = ack_request;
  FillAck(h);
  const transport::IoStatus s =
      port_.SendBundle(peer_, h, std::span<const ByteSpan>(segments.data(), n));
  if (s == transport::IoStatus::kWouldBlock) {
    ++rare_stats().send_blocked;
    return false;
  }
  // kError counts as a loss of each record: the window resends them singly.
  if (s == transport::IoStatus::kOk) {
    if (h.has_ack) recv_.OnAckSent();
    ++rare_stats().bundles_sent;
    rare_stats().bundled_records += n;
  }
  return true;
}

RdStream::Accepted RdStream::AcceptUlpdu(std::span<const iovec> iov, size_t ulpdu_at, size_t len,
                                         const LentSpan* tail, uint64_t now) {
  const size_t head = tail != nullptr ? tail->pos - ulpdu_at : len;
  size_t offset = 0;
  // Lent bytes count against the same budget as copied ones: lending saves
  // the copy, it does not put more data in flight than the receiver's
  // socket was sized for.
  const bool room = tail == nullptr || buf_used_ + lent_bytes_ + len <= buf_size_;
  if (!send_.CanSend() || !room || !PlaceTx(head, &offset)) return Accepted::kNoRoom;
  if (tail != nullptr && !lender_->Lend(tail->key)) return Accepted::kLendRefused;
  CopyFromIov(iov, ulpdu_at, buf_.get() + offset, head);
  if (offset == 0 && buf_used_ != 0 && buf_tail_ > buf_head_) {
    buf_used_ += buf_cap_ - buf_tail_;  // the unused end counts until released
  }
  if (buf_used_ == 0) buf_head_ = offset;
  buf_tail_ = offset + head;
  buf_used_ += head;
  tx_.Grow(tx_head_, tx_tail_ - tx_head_, tx_tail_ - tx_head_ + 1);
  TxRecord& r = tx_[tx_tail_];
  r.offset = offset;
  r.len = head;
  r.acked = false;
  r.unreadable = false;
  r.owned.reset();
  if (tail != nullptr) {
    r.key = tail->key;
    r.tail = tail->data;
    r.tail_len = tail->len;
    lent_bytes_ += tail->len;
    ++rare_stats().lent;
  } else {
    r.key = 0;
    r.tail = nullptr;
    r.tail_len = 0;
  }
  r.seq = send_.OnSent(tx_tail_, now);
  ++tx_tail_;
  ++stats_.data_sent;
  return Accepted::kTaken;
}

wire::DgramHeader RdStream::NewHeader(wire::DgramType type) const {
  wire::DgramHeader h;
  h.type = type;
  h.dst_qpn = peer_qpn_;
  h.src_qpn = local_qpn_;
  h.session = out_session_.id();
  h.syn = out_session_.syn();
  return h;
}

void RdStream::FillAck(wire::DgramHeader& h) {
  if (in_sessions_.current() == 0) return;
  const AckFields a = recv_.Ack();
  h.has_ack = true;
  h.echo_session = in_sessions_.current();
  h.ack = a.ack;
  h.has_sack = a.has_sack;
  h.sack = a.sack;
  h.credits = a.credits;
}

bool RdStream::Transmit(uint64_t cookie, bool ack_request) {
  TxRecord& r = tx_[cookie];
  if (r.unreadable) {
    // The bytes are gone (TxRecord::unreadable): ask the peer where it
    // stands instead; it may well have them (an application frees a buffer
    // once the Read is complete, while our acks are still on the way).
    SendProbe();
    return true;
  }
  wire::DgramHeader h = NewHeader(wire::DgramType::kRdData);
  h.seq = r.seq;
  h.ack_request = ack_request;
  FillAck(h);
  const std::array<ByteSpan, 2> parts{ByteSpan(buf_.get() + r.offset, r.len),
                                      ByteSpan(r.tail, r.tail_len)};
  const transport::IoStatus s =
      port_.Send(peer_, h, std::span<const ByteSpan>(parts.data(), r.tail_len != 0 ? 2 : 1));
  if (s == transport::IoStatus::kWouldBlock) {
    ++rare_stats().send_blocked;
    return false;
  }
  // kError counts as a loss: the window resends it.
  if (s == transport::IoStatus::kOk && h.has_ack) recv_.OnAckSent();
  return true;
}

void RdStream::QueuePending(uint64_t cookie) {
  pending_.Grow(pending_first_, pending_count_, pending_count_ + 1);
  pending_[pending_first_ + pending_count_] = cookie;
  ++pending_count_;
}

void RdStream::FlushPending() {
  while (pending_count_ > 0) {
    const uint64_t cookie = pending_[pending_first_];
    const bool stale = cookie < tx_head_ || tx_[cookie].acked;
    if (!stale && !Transmit(cookie, pending_count_ == 1)) return;  // still full: keep it first
    ++pending_first_;
    --pending_count_;
  }
}

void RdStream::OnSocketWritable() {
  owner_.OnStreamUsed();
  if (failed()) return;
  FlushPending();
}

void RdStream::Acked(uint32_t /*seq*/, uint64_t cookie) {
  tx_[cookie].acked = true;
}

void RdStream::Resend(uint32_t /*seq*/, uint64_t cookie) {
  ++rare_stats().retransmitted;
  // Past its first transmission a lent payload is the application's memory
  // at a time it may already believe the Read done: resend a copy.
  OwnTail(tx_[cookie]);
  for (size_t i = 0; i < pending_count_; ++i) {
    if (pending_[pending_first_ + i] == cookie) return;  // queued already
  }
  if (pending_count_ > 0 || !Transmit(cookie, false)) QueuePending(cookie);
}

void RdStream::ResendProbe(uint32_t /*seq*/, uint64_t cookie) {
  // A tail loss probe asks for an ack: what it reveals is the point. If the
  // socket is backed up, the queued datagrams will carry the news anyway.
  ++rare_stats().retransmitted;
  ++rare_stats().tail_probes;
  OwnTail(tx_[cookie]);
  if (pending_count_ == 0 && Transmit(cookie, true)) return;
  for (size_t i = 0; i < pending_count_; ++i) {
    if (pending_[pending_first_ + i] == cookie) return;
  }
  QueuePending(cookie);
}

void RdStream::ReleaseAcked() {
  while (tx_head_ < tx_tail_ && tx_[tx_head_].acked) {
    const TxRecord& r = tx_[tx_head_];
    if (r.offset != buf_head_) {
      buf_used_ -= buf_cap_ - buf_head_;  // the unused end before a wrap
    }
    buf_used_ -= r.len;
    buf_head_ = r.offset + r.len;
    if (r.tail_len != 0) DropTail(tx_[tx_head_]);
    ++tx_head_;
  }
  if (buf_used_ == 0) buf_head_ = buf_tail_ = 0;
}

bool RdStream::SendControl(const wire::DgramHeader& h) {
  return port_.Send(peer_, h, {}) == transport::IoStatus::kOk;
}

void RdStream::SendAck() {
  if (in_sessions_.current() == 0) return;
  wire::DgramHeader h = NewHeader(wire::DgramType::kRdAck);
  h.seq = send_.snd_nxt();
  FillAck(h);
  if (SendControl(h)) {
    recv_.OnAckSent();
    ++stats_.acks_sent;
  }
}

void RdStream::FlushAck() {
  if (!failed() && recv_.AckDeadline() != UINT64_MAX) SendAck();
}

void RdStream::SendProbe() {
  wire::DgramHeader h = NewHeader(wire::DgramType::kRdControl);
  h.ctrl_op = wire::DgramControlOp::kProbe;
  h.seq = send_.snd_nxt();
  FillAck(h);
  if (SendControl(h)) {
    if (h.has_ack) recv_.OnAckSent();
    ++rare_stats().probes_sent;
  }
}

wire::DgramHeader ResetHeader(uint32_t local_qpn, uint32_t peer_qpn, uint32_t session,
                              uint32_t refused) {
  wire::DgramHeader h;
  h.type = wire::DgramType::kRdControl;
  h.ctrl_op = wire::DgramControlOp::kReset;
  h.dst_qpn = peer_qpn;
  h.src_qpn = local_qpn;
  h.session = session;
  h.syn = false;  // never on a RESET (docs/wire.md §3.3)
  h.echo_session = refused;
  return h;
}

bool RdStream::AckReachesHeld(const wire::DgramHeader& h) const {
  if (!held_) return false;
  const uint32_t first_held = tx_[held_from_].seq;
  if (wire::SeqGt(h.ack, first_held)) return true;
  if (!h.has_sack) return false;
  // SACK bit i stands for seq ack + 1 + i: bits from first_held - ack - 1 on
  // name held records (all of them when the ack is first_held itself).
  const uint32_t gap = first_held - h.ack;
  if (gap == 0) return h.sack != 0;
  return gap - 1 < wire::kDgramSackBits && (h.sack >> (gap - 1)) != 0;
}

void RdStream::SendReset(uint32_t session) {
  if (SendControl(ResetHeader(local_qpn_, peer_qpn_, out_session_.id(), session))) {
    ++rare_stats().resets_sent;
  }
}

// Nothing in flight, yet something waits for the peer: a zero window (probe
// at the RTO so a window update that was lost cannot stall the stream) or
// the owner's requests awaiting their answers (probe once the peer has been
// silent for AwaitProbeGap). Either way, give up on a silent peer.
void RdStream::CheckProbe(uint64_t now) {
  const bool closed_window = tx_blocked_ && !send_.CanSend();
  if (send_.outstanding() != 0 || (!closed_window && !owner_.AwaitsPeer())) {
    probe_at_ = UINT64_MAX;
    return;
  }
  const uint64_t gap = closed_window ? send_.rto() : AwaitProbeGap();
  if (probe_at_ == UINT64_MAX) {
    probe_at_ = now + gap;
    probing_since_ = now;
    return;
  }
  if (now < probe_at_) return;
  // Silent for the RD timeout since we last heard it or, after a long quiet,
  // since probing began: a quiet peer gets its probes before it is dead.
  if (now - std::max(last_heard_, probing_since_) >= dead_after_ns_) {
    Fail(ETIMEDOUT);
    return;
  }
  if (!closed_window && now - last_heard_ < gap) {
    probe_at_ = last_heard_ + gap;  // heard lately: the answers are coming
    return;
  }
  SendProbe();
  probe_at_ = now + gap;
}

void RdStream::AwaitsChanged() {
  owner_.OnStreamUsed();
  if (!failed()) CheckProbe(clock_.NowNs());
}

uint64_t RdStream::AwaitProbeGap() const {
  return std::max<uint64_t>(send_.rto(), dead_after_ns_ / 16);
}

void RdStream::Fail(int err) {
  owner_.OnStreamUsed();
  if (failed()) return;
  err_ = err;
  probe_at_ = UINT64_MAX;
  owner_.OnStreamEvent();
}

// --- Receive side ----------------------------------------------------------

RdStream::Input RdStream::OnDatagram(const wire::DecodedDgram& d) {
  owner_.OnStreamUsed();
  if (failed()) return Input::kOk;
  const wire::DgramHeader& h = d.header;
  const uint64_t now = clock_.NowNs();
  if (h.type == wire::DgramType::kUdData) return Input::kOk;  // not RD: the owner's mistake
  if (h.type == wire::DgramType::kRdControl && h.ctrl_op == wire::DgramControlOp::kReset) {
    if (out_session_.OnReset(h.echo_session)) Fail(ECONNRESET);  // rule 5
    return Input::kOk;
  }
  switch (in_sessions_.Classify(h.session, h.syn)) {
    case SessionVerdict::kRetired: ++rare_stats().stale; return Input::kOk;
    case SessionVerdict::kReset:
      if (!d.later_record) SendReset(h.session);  // one per datagram, bundled or not
      return Input::kOk;
    case SessionVerdict::kAdopted:
      if (had_inbound_) return Input::kPeerRestarted;
      had_inbound_ = true;
      break;
    case SessionVerdict::kCurrent: break;
  }
  last_heard_ = now;
  const bool was_writable = writable();
  if (h.has_ack && !AckReachesHeld(h) && out_session_.OnAckEcho(h.echo_session)) {
    (void)send_.OnAck(AckFields{h.ack, h.has_sack, h.sack, h.credits}, now);
    ReleaseAcked();
  }
  switch (h.type) {
    case wire::DgramType::kRdData: AcceptData(d, now); break;
    case wire::DgramType::kRdAck: recv_.OnPeerSndNxt(h.seq); break;
    case wire::DgramType::kRdControl:  // PROBE (RESET was handled above)
      recv_.OnProbe();
      recv_.OnPeerSndNxt(h.seq);
      break;
    case wire::DgramType::kUdData: break;
  }
  if (readable() || (!was_writable && writable())) owner_.OnStreamEvent();
  SettleInflight();
  if (failed()) return Input::kOk;
  // A bundle's records arrive in one call each: an ack owed (every
  // ack_every datagrams, a hole) waits for the last one, which a reply
  // may carry.
  if (!d.more_records && recv_.AckDue(now)) SendAck();
  CheckProbe(now);
  return Input::kOk;
}

void RdStream::HoldCopy(uint32_t seq, UlpduView ulpdu) {
  // Every held number is in [consume_seq_, consume_seq_ + hold_.size()).
  const uint32_t off = seq - consume_seq_;
  if (off >= hold_.size()) hold_.Grow(consume_seq_, hold_.size(), size_t{off} + 1);
  HoldSlot& slot = hold_[seq];
  if (slot.bytes.size() < ulpdu.size()) slot.bytes.resize(ulpdu.size());
  if (!ulpdu.a.empty()) std::memcpy(slot.bytes.data(), ulpdu.a.data(), ulpdu.a.size());
  if (!ulpdu.b.empty())
    std::memcpy(slot.bytes.data() + ulpdu.a.size(), ulpdu.b.data(), ulpdu.b.size());
  slot.len = ulpdu.size();
  ++rare_stats().held;
}

void RdStream::AcceptData(const wire::DecodedDgram& d, uint64_t now) {
  ++stats_.data_received;
  const uint32_t seq = d.header.seq;
  const UlpduView ulpdu{d.ulpdu, d.ulpdu_placed};
  switch (recv_.OnData(seq, d.header.ack_request, now)) {
    case Arrival::kInOrder:
      if (recv_.backlog() == 0 && !inflight_active_) {
        inflight_ = ulpdu;  // offered from the caller's buffer (or in place)
        inflight_seq_ = seq;
        inflight_active_ = true;
      } else {
        HoldCopy(seq, ulpdu);
      }
      recv_.Receive(now);
      while (recv_.HeadHeld()) recv_.Receive(now);  // early ones now in order
      break;
    case Arrival::kEarly: HoldCopy(seq, ulpdu); break;
    case Arrival::kDuplicate: ++rare_stats().duplicates; break;
    case Arrival::kOutsideWindow: break;
  }
}

void RdStream::SettleInflight() {
  if (!inflight_active_) return;
  inflight_active_ = false;
  HoldCopy(inflight_seq_, inflight_);  // the QP did not take all of it now
}

RdStream::UlpduView RdStream::HeadUlpdu() const {
  if (recv_.backlog() == 0) return {};
  if (inflight_active_ && inflight_seq_ == consume_seq_) return inflight_;
  const HoldSlot& slot = hold_[consume_seq_];
  return UlpduView{ByteSpan(slot.bytes.data(), slot.len), {}};
}

bool RdStream::NextInOrder(uint32_t* seq, uint32_t* session) const {
  // After a hole the next arrivals are early ones, not rcv_nxt: no guess.
  if (failed() || recv_.backlog() != 0 || inflight_active_ || head_off_ != 0 || recv_.AnyHeld()) {
    return false;
  }
  *session = in_sessions_.current();
  *seq = recv_.rcv_nxt();
  return *session != 0;
}

bool RdStream::readable() const {
  return failed() || recv_.backlog() > 0;
}

void RdStream::PopHead() {
  if (inflight_active_ && inflight_seq_ == consume_seq_) inflight_active_ = false;
  ++consume_seq_;
  recv_.Consume();
}

ByteSpan RdStream::WholeHead() const {
  if (failed() || head_off_ != 0 || recv_.backlog() == 0) return {};
  const UlpduView u = HeadUlpdu();
  if (u.b.empty()) return u.a;
  return u.a.empty() ? u.b : ByteSpan{};
}

void RdStream::PopWhole() {
  owner_.OnStreamUsed();
  PopHead();
}

transport::IoResult RdStream::RecvV(std::span<const iovec> iov) {
  owner_.OnStreamUsed();
  if (failed()) return transport::IoResult::Error(err_);
  const size_t room = transport::TotalLength(iov);
  size_t at = 0;
  while (at < room && recv_.backlog() > 0) {
    const UlpduView ulpdu = HeadUlpdu();
    const size_t len = ulpdu.size();
    const std::array<uint8_t, wire::kFpduLengthSize> prefix{static_cast<uint8_t>(len >> 8),
                                                            static_cast<uint8_t>(len & 0xFF)};
    static constexpr std::array<uint8_t, wire::kFpduMaxTrailerSize> kZeros{};
    const size_t image = wire::FpduWireLength(len);
    // The FPDU image: prefix | ULPDU | pad + CRC field (zeros), from head_off_.
    while (head_off_ < image && at < room) {
      ByteSpan piece;
      if (head_off_ < wire::kFpduLengthSize) {
        piece = ByteSpan(prefix.data() + head_off_, wire::kFpduLengthSize - head_off_);
      } else if (head_off_ < wire::kFpduLengthSize + len) {
        piece = ulpdu.From(head_off_ - wire::kFpduLengthSize);
      } else {
        piece = ByteSpan(kZeros.data(), image - head_off_);
      }
      head_off_ += CopyToIov(iov, &at, piece);
    }
    if (head_off_ < image) break;
    head_off_ = 0;
    PopHead();
  }
  if (at == 0) return transport::IoResult::WouldBlock();
  return transport::IoResult::Ok(at);
}

// --- Timers ----------------------------------------------------------------

void RdStream::OnTimer() {
  owner_.OnStreamUsed();
  if (failed()) return;
  if (held_) Uncork();  // FI_MORE holds until the next pass at most
  const uint64_t now = clock_.NowNs();
  send_.OnTimer(now);
  if (send_.Dead(now)) {
    if (rare_ != nullptr && rare_->unreadable != 0 && in_sessions_.current() != 0) {
      // Data we could no longer read: the peer may be alive and waiting for
      // it (a Read that will never complete). A RESET of its session makes
      // its work fail with errors instead of waiting forever; three copies,
      // as nothing will repeat it.
      for (int i = 0; i < 3; ++i) SendReset(in_sessions_.current());
      Fail(EFAULT);
      return;
    }
    Fail(ETIMEDOUT);
    return;
  }
  if (recv_.AckDue(now)) SendAck();
  CheckProbe(now);
}

uint64_t RdStream::Deadline() const {
  if (failed()) return UINT64_MAX;
  if (held_) return 0;
  return std::min({send_.Deadline(), recv_.AckDeadline(), probe_at_});
}

}  // namespace iwarpx::rd
