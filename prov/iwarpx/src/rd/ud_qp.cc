#include "rd/ud_qp.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>

#include "wire/rdmap.h"

namespace iwarpx::rd {

using qp::QpStatus;

UdQp::UdQp(DgramPort& port, const UdConfig& config, UdSink& sink)
    : port_(port),
      config_(config),
      sink_(sink),
      sq_(std::bit_ceil(std::max<uint32_t>(config.sq_depth, 1))),
      rq_(std::bit_ceil(std::max<uint32_t>(config.rq_depth, 1))),
      sq_depth_(std::max<uint32_t>(config.sq_depth, 1)),
      rq_depth_(std::max<uint32_t>(config.rq_depth, 1)) {
  if (config_.receives) attached_ = port_.Attach(config_.qpn, this);
}

UdQp::~UdQp() {
  if (attached_) port_.Detach(config_.qpn);
}

size_t UdQp::BuildUlpdu(const UdSendWr& wr, uint32_t msn,
                        std::array<uint8_t, wire::kDdpMaxHeaderSize>& buf,
                        std::array<ByteSpan, 1 + qp::kMaxSge>& parts) const {
  wire::SendParams params;
  params.solicited_event = wr.solicited;
  params.msn = msn;
  auto n = wire::EncodeSendHeader(params, buf);
  size_t count = 0;
  parts[count++] = ByteSpan(buf.data(), n.ok() ? *n : 0);
  for (uint8_t i = 0; i < wr.sgl.count; ++i) {
    parts[count++] = ByteSpan(static_cast<const uint8_t*>(wr.sgl.sge[i].addr), wr.sgl.sge[i].len);
  }
  return count;
}

wire::DgramHeader UdQp::HeaderFor(const UdSendWr& wr) const {
  wire::DgramHeader h;
  h.type = wire::DgramType::kUdData;
  h.dst_qpn = wr.dest_qpn;
  h.src_qpn = config_.qpn;
  return h;
}

void UdQp::Finish(const UdSendWr& wr, transport::IoStatus status) {
  ++msn_;  // RFC 5041: one MSN per message on this queue (§3.5)
  if (status == transport::IoStatus::kOk) {
    ++counters_.sent;
    if ((wr.flags & qp::kWrSignaled) != 0) sink_.OnSendComplete(wr.context);
  } else {
    sink_.OnError(wr.context, qp::WcOp::kSend, UdError::kSendFailed, 0);
  }
}

transport::IoStatus UdQp::SendOne(const UdSendWr& wr) {
  std::array<ByteSpan, qp::kMaxSge> payload;
  const uint8_t count = std::min<uint8_t>(wr.sgl.count, qp::kMaxSge);
  for (uint8_t i = 0; i < count; ++i) {
    payload[i] = ByteSpan(static_cast<const uint8_t*>(wr.sgl.sge[i].addr), wr.sgl.sge[i].len);
  }
  const wire::UdSendFields fields{wr.dest_qpn, config_.qpn, msn_ + 1, wr.solicited};
  return port_.SendUd(wr.dest, fields, std::span(payload.data(), count));
}

bool UdQp::Transmit(const UdSendWr& wr) {
  const transport::IoStatus s = SendOne(wr);
  if (s == transport::IoStatus::kWouldBlock) return false;
  Finish(wr, s);
  return true;
}

void UdQp::SendQueued() {
  constexpr size_t kBatch = transport::DatagramSocket::kMaxBatch;
  std::array<std::array<uint8_t, wire::kDdpMaxHeaderSize>, kBatch> ddp{};
  std::array<std::array<ByteSpan, 1 + qp::kMaxSge>, kBatch> parts;
  std::array<DgramPort::OutDgram, kBatch> out;
  while (sq_head_ != sq_tail_) {
    const size_t n = std::min<uint64_t>(sq_tail_ - sq_head_, kBatch);
    for (size_t i = 0; i < n; ++i) {
      const UdSendWr& wr = sq_[SqSlot(sq_head_ + i)];
      const size_t count = BuildUlpdu(wr, msn_ + 1 + static_cast<uint32_t>(i), ddp[i], parts[i]);
      out[i] = DgramPort::OutDgram{&wr.dest, HeaderFor(wr), std::span(parts[i].data(), count)};
    }
    const transport::BatchResult r = port_.SendBatch(std::span(out.data(), n));
    for (size_t i = 0; i < r.count; ++i) {
      Finish(sq_[SqSlot(sq_head_)], transport::IoStatus::kOk);
      ++sq_head_;
    }
    if (r.count > 0) continue;
    if (r.status != transport::IoStatus::kError) return;  // would block: OnWritable goes on
    Finish(sq_[SqSlot(sq_head_)], transport::IoStatus::kError);
    ++sq_head_;
  }
}

QpStatus UdQp::PostSend(const UdSendWr& wr) {
  if (!wr.sgl.Valid() || wr.sgl.Length() > kUdMaxMessage) return QpStatus::kInvalid;
  if (sq_head_ == sq_tail_ && !wr.more && Transmit(wr)) return QpStatus::kOk;
  if (sq_tail_ - sq_head_ >= sq_depth_) return QpStatus::kQueueFull;
  sq_[SqSlot(sq_tail_++)] = wr;
  if (!wr.more) SendQueued();
  return QpStatus::kOk;
}

transport::IoStatus UdQp::SendNow(const UdSendWr& wr) {
  if (sq_head_ != sq_tail_ || wr.more || !wr.sgl.Valid() || wr.sgl.Length() > kUdMaxMessage) {
    return transport::IoStatus::kWouldBlock;
  }
  const transport::IoStatus s = SendOne(wr);
  if (s == transport::IoStatus::kWouldBlock) return s;
  ++msn_;  // as Finish: one MSN per message, sent or refused
  if (s == transport::IoStatus::kOk) ++counters_.sent;
  return s;
}

void UdQp::OnWritable() {
  SendQueued();
}

QpStatus UdQp::PostRecv(const qp::RecvWr& wr) {
  if (!wr.sgl.Valid()) return QpStatus::kInvalid;
  if (rq_tail_ - rq_head_ >= rq_depth_) return QpStatus::kQueueFull;
  rq_[RqSlot(rq_tail_++)] = wr;
  return QpStatus::kOk;
}

void UdQp::Flush() {
  while (sq_head_ != sq_tail_) {
    const UdSendWr& wr = sq_[SqSlot(sq_head_++)];
    sink_.OnError(wr.context, qp::WcOp::kSend, UdError::kFlushed, 0);
  }
  while (rq_head_ != rq_tail_) {
    const qp::RecvWr& wr = rq_[RqSlot(rq_head_++)];
    sink_.OnError(wr.context, qp::WcOp::kRecv, UdError::kFlushed, 0);
  }
}

bool UdQp::CancelRecv(uint64_t context) {
  for (uint64_t i = rq_head_; i != rq_tail_; ++i) {
    if (rq_[RqSlot(i)].context != context) continue;
    for (uint64_t j = i; j + 1 != rq_tail_; ++j) rq_[RqSlot(j)] = rq_[RqSlot(j + 1)];
    --rq_tail_;
    return true;
  }
  return false;
}

void UdQp::OnDatagram(const wire::DecodedDgram& dgram, const transport::SockAddr& from) {
  if (dgram.header.type != wire::DgramType::kUdData) {
    ++counters_.not_ud;
    return;
  }
  auto seg = wire::ParseSegment(dgram.ulpdu);
  if (!seg.ok()) {
    ++counters_.malformed;
    return;
  }
  if (seg->opcode != wire::RdmapOpcode::kSend && seg->opcode != wire::RdmapOpcode::kSendWithSe) {
    ++counters_.not_send;
    return;
  }
  Receive(seg->payload, dgram.header.src_qpn, from);
}

bool UdQp::OnUdSend(const wire::UdSendView& send, const transport::SockAddr& from) {
  Receive(send.payload, send.fields.src_qpn, from);
  return true;
}

void UdQp::Receive(ByteSpan payload, uint32_t src_qpn, const transport::SockAddr& from) {
  if (rq_head_ == rq_tail_) {
    ++counters_.no_receive;
    return;
  }
  const qp::RecvWr& r = rq_[RqSlot(rq_head_++)];
  size_t placed = 0;
  for (uint8_t i = 0; i < r.sgl.count && placed < payload.size(); ++i) {
    const size_t n = std::min(r.sgl.sge[i].len, payload.size() - placed);
    if (n > 0) std::memcpy(r.sgl.sge[i].addr, payload.data() + placed, n);
    placed += n;
  }
  UdRecvInfo info;
  info.src = from;
  info.src_qpn = src_qpn;
  info.truncated_bytes = payload.size() - placed;
  ++counters_.received;
  sink_.OnRecvComplete(r.context, placed, info);
}

}  // namespace iwarpx::rd
