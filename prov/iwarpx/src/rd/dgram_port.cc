#include "rd/dgram_port.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "wire/ddp.h"
#include "wire/dgram_bundle.h"
#include "wire/rdmap.h"

namespace iwarpx::rd {

DgramPort::DgramPort(transport::DatagramSocket& socket, const PortConfig& config)
    : socket_(socket),
      config_(config),
      buffers_(std::clamp<size_t>(config.batch, 1, transport::DatagramSocket::kMaxBatch) *
               wire::kDgramMaxSize),
      iovs_(buffers_.size() / wire::kDgramMaxSize),
      msgs_(iovs_.size()) {
  for (size_t i = 0; i < iovs_.size(); ++i) {
    iovs_[i] = iovec{buffers_.data() + i * wire::kDgramMaxSize, wire::kDgramMaxSize};
    msgs_[i].iov = std::span<const iovec>(&iovs_[i], 1);
  }
}

bool DgramPort::Attach(uint32_t qpn, DgramReceiver* receiver) {
  last_receiver_ = nullptr;
  return receivers_.emplace(qpn, receiver).second;
}

void DgramPort::Detach(uint32_t qpn) {
  last_receiver_ = nullptr;
  receivers_.erase(qpn);
}

DgramReceiver* DgramPort::ReceiverFor(uint32_t qpn) {
  if (last_receiver_ != nullptr && last_qpn_ == qpn) return last_receiver_;
  const auto it = receivers_.find(qpn);
  if (it == receivers_.end()) return nullptr;
  last_qpn_ = qpn;
  last_receiver_ = it->second;
  return last_receiver_;
}

transport::IoStatus DgramPort::Send(const transport::SockAddr& to, const wire::DgramHeader& header,
                                    std::span<const ByteSpan> ulpdu) {
  size_t ulpdu_size = 0;
  for (const ByteSpan part : ulpdu) ulpdu_size += part.size();
  if (ulpdu_size <= kFlatUlpduMax) {
    const auto n = wire::EncodeDgram(header, ulpdu, config_.crc, MutableByteSpan(flat_));
    if (!n.ok()) {
      ++counters_.send_errors;
      return transport::IoStatus::kError;
    }
    const iovec one{flat_.data(), *n};
    const transport::IoResult r = socket_.SendTo(to, std::span<const iovec>(&one, 1));
    if (r.status == transport::IoStatus::kError) ++counters_.send_errors;
    return r.status;
  }
  auto framing = wire::FrameDgram(header, ulpdu, config_.crc);
  if (!framing.ok()) {
    ++counters_.send_errors;
    return transport::IoStatus::kError;
  }
  std::array<iovec, 2 + 8> iov{};
  if (ulpdu.size() > iov.size() - 2) {
    ++counters_.send_errors;
    return transport::IoStatus::kError;
  }
  size_t n = 0;
  const ByteSpan head = framing->HeaderBytes();
  iov[n++] = iovec{const_cast<uint8_t*>(head.data()), head.size()};
  for (const ByteSpan part : ulpdu) {
    if (!part.empty()) iov[n++] = iovec{const_cast<uint8_t*>(part.data()), part.size()};
  }
  const ByteSpan tail = framing->TrailerBytes();
  iov[n++] = iovec{const_cast<uint8_t*>(tail.data()), tail.size()};
  const transport::IoResult r = socket_.SendTo(to, std::span<const iovec>(iov.data(), n));
  if (r.status == transport::IoStatus::kError) ++counters_.send_errors;
  return r.status;
}

transport::IoStatus DgramPort::SendBundle(const transport::SockAddr& to,
                                          const wire::DgramHeader& header,
                                          std::span<const ByteSpan> segments) {
  if (bundle_ == nullptr) bundle_ = std::make_unique_for_overwrite<uint8_t[]>(wire::kDgramMaxSize);
  const auto n = wire::EncodeDgramBundle(header, segments, config_.crc,
                                         MutableByteSpan(bundle_.get(), wire::kDgramMaxSize));
  if (!n.ok()) {
    ++counters_.send_errors;
    return transport::IoStatus::kError;
  }
  const iovec one{bundle_.get(), *n};
  const transport::IoResult r = socket_.SendTo(to, std::span<const iovec>(&one, 1));
  if (r.status == transport::IoStatus::kError) ++counters_.send_errors;
  if (r.status == transport::IoStatus::kOk) ++counters_.bundles_sent;
  return r.status;
}

transport::IoStatus DgramPort::SendUd(const transport::SockAddr& to,
                                      const wire::UdSendFields& fields,
                                      std::span<const ByteSpan> payload) {
  const auto n = wire::EncodeUdSend(fields, payload, config_.crc, MutableByteSpan(flat_));
  if (n.ok()) {
    const iovec one{flat_.data(), *n};
    const transport::IoResult r = socket_.SendTo(to, std::span<const iovec>(&one, 1));
    if (r.status == transport::IoStatus::kError) ++counters_.send_errors;
    return r.status;
  }
  // Larger than flat_ (more than 238 payload bytes): header, DDP
  // header and the caller's parts in one gather send.
  wire::SendParams params;
  params.solicited_event = fields.solicited;
  params.msn = fields.msn;
  std::array<uint8_t, wire::kDdpUntaggedHeaderSize> ddp{};
  std::array<ByteSpan, 1 + 8> parts{};
  const auto h = wire::EncodeSendHeader(params, ddp);
  if (n.error() != wire::WireError::kNoSpace || !h.ok() || payload.size() > parts.size() - 1) {
    ++counters_.send_errors;
    return transport::IoStatus::kError;
  }
  parts[0] = ByteSpan(ddp.data(), *h);
  std::copy(payload.begin(), payload.end(), parts.begin() + 1);
  wire::DgramHeader header;
  header.type = wire::DgramType::kUdData;
  header.dst_qpn = fields.dst_qpn;
  header.src_qpn = fields.src_qpn;
  return Send(to, header, std::span(parts.data(), 1 + payload.size()));
}

transport::BatchResult DgramPort::SendBatch(std::span<const OutDgram> out) {
  constexpr size_t kMax = transport::DatagramSocket::kMaxBatch;
  constexpr size_t kIovPer = 2 + 8;  // header, ULPDU parts, trailer
  std::array<wire::DgramFraming, kMax> framing;
  std::array<std::array<iovec, kIovPer>, kMax> iovs{};
  std::array<transport::DgramMessage, kMax> msgs;
  const size_t n = std::min(out.size(), kMax);
  size_t framed = 0;
  for (; framed < n; ++framed) {
    const OutDgram& d = out[framed];
    auto f = wire::FrameDgram(d.header, d.ulpdu, config_.crc);
    if (!f.ok() || d.ulpdu.size() > kIovPer - 2) break;
    framing[framed] = *f;
    std::array<iovec, kIovPer>& iov = iovs[framed];
    size_t k = 0;
    const ByteSpan head = framing[framed].HeaderBytes();
    iov[k++] = iovec{const_cast<uint8_t*>(head.data()), head.size()};
    for (const ByteSpan part : d.ulpdu) {
      if (!part.empty()) iov[k++] = iovec{const_cast<uint8_t*>(part.data()), part.size()};
    }
    const ByteSpan tail = framing[framed].TrailerBytes();
    iov[k++] = iovec{const_cast<uint8_t*>(tail.data()), tail.size()};
    msgs[framed].addr = *d.to;
    msgs[framed].iov = std::span<const iovec>(iov.data(), k);
  }
  if (framed == 0) {
    ++counters_.send_errors;  // the first one cannot be framed (too large)
    return {0, transport::IoStatus::kError, EMSGSIZE};
  }
  const transport::BatchResult r = socket_.SendBatch(std::span(msgs.data(), framed));
  if (r.status == transport::IoStatus::kError) ++counters_.send_errors;
  return r;
}

size_t DgramPort::OnReadable(size_t budget) {
  size_t done = 0;
  while (done < budget) {
    // After a read that found nothing, the next asks for one datagram (a
    // recvmsg): busy polls of a ping-pong peer are mostly empty. A read that
    // gets it ends this call (asking again would cost a system call before
    // the caller sees the message) and the next read takes a whole batch.
    const bool probe = last_read_empty_;
    const size_t want = probe ? 1 : std::min(budget - done, msgs_.size());
    const size_t guessed = predictor_ != nullptr ? Guess(want) : 0;
    const transport::BatchResult r = socket_.RecvBatch(std::span(msgs_.data(), want));
    if (guessed == 0 && r.count > 0 && guess_skip_ > 0) --guess_skip_;
    // Every guessed message is checked, a right one decoded (its CRC read
    // from the sink) and a wrong one put back together, before the first is
    // dispatched: dispatching places data, which could land on another
    // guess's dest still holding a datagram's bytes, and may complete or
    // fail a Read, after which the application may free its sink.
    bool hit = false;
    bool costly_miss = false;
    for (size_t i = 0; i < guessed; ++i) {
      if (i < r.count) {
        const Settled how = Settle(i);
        matched_[i] = how == Settled::kHit ? 1 : 0;
        hit = hit || how == Settled::kHit;
        costly_miss = costly_miss || how == Settled::kCostlyMiss;
      }
      msgs_[i].iov = std::span<const iovec>(&iovs_[i], 1);
    }
    if (hit) {
      guess_backoff_ = 0;
    } else if (costly_miss) {
      guess_backoff_ = std::min(2 * guess_backoff_ + 1, kMaxGuessBackoff);
      guess_skip_ = guess_backoff_;
    }
    for (size_t i = 0; i < r.count; ++i) {
      if (i < guessed && matched_[i] != 0) {
        const SplitDecode& sd = split_[i];
        if (sd.ok) {
          DeliverDecoded(sd.dgram, msgs_[i].addr);
        } else {
          CountUndecodable(sd.err);
        }
        continue;
      }
      Dispatch(ByteSpan(Buffer(i), msgs_[i].bytes), msgs_[i].truncated, msgs_[i].addr);
    }
    done += r.count;
    last_read_empty_ = r.count == 0;
    if (r.count < want || probe) break;
  }
  return done;
}

size_t DgramPort::Guess(size_t want) {
  if (guess_skip_ > 0) return 0;  // counted down by reads that got datagrams
  if (guesses_.empty()) {
    guesses_.resize(msgs_.size());
    in_place_.resize(msgs_.size());
    matched_.resize(msgs_.size());
    split_.resize(msgs_.size());
  }
  const size_t n = std::min(predictor_->PredictPlacement(std::span(guesses_.data(), want)), want);
  for (size_t i = 0; i < n; ++i) {
    const MutableByteSpan dest = guesses_[i].dest;
    if (dest.empty() ||
        dest.size() > wire::kDgramMaxSize - kHeadPiece - wire::kDgramMaxTrailerSize) {
      return i;  // not a payload the port can take in place: the rest as usual
    }
    InPlace& p = in_place_[i];
    p.iov[0] = iovec{p.head.data(), p.head.size()};
    p.iov[1] = iovec{dest.data(), dest.size()};
    // The tail lies where it would in the port's buffer, so putting a wrong
    // guess back together copies only the head and the dest part.
    p.iov[2] =
        iovec{Buffer(i) + kHeadPiece + dest.size(), wire::kDgramMaxSize - kHeadPiece - dest.size()};
    msgs_[i].iov = std::span<const iovec>(p.iov.data(), p.iov.size());
  }
  return n;
}

DgramPort::Settled DgramPort::Settle(size_t i) {
  const PlacementGuess& g = guesses_[i];
  const InPlace& p = in_place_[i];
  const transport::DgramMessage& m = msgs_[i];
  const size_t payload = g.dest.size();
  const size_t ulpdu = wire::kDgramMinDdpSegment + payload;
  const uint8_t* h = p.head.data();
  const bool match = !m.truncated && m.bytes == wire::DgramSize(ulpdu) &&
                     h[3] == static_cast<uint8_t>(wire::DgramType::kRdData) &&
                     (LoadBe16(h + 4) & wire::kDgramFlagBundle) == 0 && LoadBe16(h + 6) == ulpdu &&
                     LoadBe32(h + 12) == g.dst_qpn && LoadBe32(h + 16) == g.src_qpn &&
                     LoadBe32(h + 20) == g.session && LoadBe32(h + 28) == g.seq &&
                     (h[wire::kDgramHeaderSize] & wire::kDdpFlagTagged) != 0 &&
                     (h[wire::kDgramHeaderSize + 1] & wire::kRdmapOpcodeMask) ==
                         static_cast<uint8_t>(wire::RdmapOpcode::kRdmaReadResponse) &&
                     LoadBe32(h + wire::kDgramHeaderSize + 2) == g.stag &&
                     LoadBe64(h + wire::kDgramHeaderSize + 6) == g.to && m.addr == g.from;
  if (match) {
    ++counters_.placed;
    auto d = wire::DecodeDgramSplit(
        ByteSpan(p.head.data(), p.head.size()), g.dest,
        ByteSpan(static_cast<const uint8_t*>(p.iov[2].iov_base), m.bytes - kHeadPiece - payload),
        /*verify_crc=*/true);
    SplitDecode& sd = split_[i];
    sd.ok = d.ok();
    if (d.ok()) {
      sd.dgram = *d;
    } else {
      sd.err = d.error();
    }
    return Settled::kHit;
  }
  ++counters_.place_misses;
  uint8_t* buf = Buffer(i);
  std::memcpy(buf, h, std::min(m.bytes, kHeadPiece));
  const size_t landed = m.bytes > kHeadPiece ? std::min(m.bytes - kHeadPiece, payload) : 0;
  if (landed > 0) std::memcpy(buf + kHeadPiece, g.dest.data(), landed);
  return landed >= kCostlyMiss ? Settled::kCostlyMiss : Settled::kMiss;
}

void DgramPort::Dispatch(ByteSpan bytes, bool truncated, const transport::SockAddr& from) {
  if (truncated) {
    ++counters_.truncated;
    return;
  }
  if (const auto ud = wire::DecodeUdSend(bytes, /*verify_crc=*/true);
      ud && DeliverUdSend(*ud, from)) {
    return;
  }
  auto d = wire::DecodeDgram(bytes, /*verify_crc=*/true);
  if (d.ok()) {
    DeliverDecoded(*d, from);
  } else {
    CountUndecodable(d.error());
  }
}

void DgramPort::CountUndecodable(wire::WireError e) {
  if (e == wire::WireError::kBadCrc) {
    ++counters_.bad_crc;
  } else {
    ++counters_.malformed;
  }
}

bool DgramPort::DeliverUdSend(const wire::UdSendView& send, const transport::SockAddr& from) {
  // The same checks, counted the same way, as DeliverDecoded.
  if (config_.require_crc && !send.crc_present) {
    ++counters_.no_crc;
    return true;
  }
  DgramReceiver* r = ReceiverFor(send.fields.dst_qpn);
  if (r == nullptr) {
    ++counters_.unknown_qpn;
    return true;
  }
  if (!r->OnUdSend(send, from)) return false;
  ++counters_.delivered;
  return true;
}

void DgramPort::DeliverDecoded(const wire::DecodedDgram& d, const transport::SockAddr& from) {
  if (config_.require_crc && !d.crc_present) {
    ++counters_.no_crc;
    return;
  }
  DgramReceiver* r = ReceiverFor(d.header.dst_qpn);
  if (r == nullptr) {
    ++counters_.unknown_qpn;
    return;
  }
  ++counters_.delivered;
  if (d.header.bundle) {
    DeliverBundle(d, from);
    return;
  }
  r->OnDatagram(d, from);
}

void DgramPort::DeliverBundle(const wire::DecodedDgram& d, const transport::SockAddr& from) {
  ++counters_.bundles;
  // DecodeDgram checked every record: the walk below meets no bad one.
  wire::DecodedDgram one;
  one.header = d.header;
  one.header.bundle = false;
  one.crc_present = d.crc_present;
  one.crc_checked = d.crc_checked;
  wire::BundleReader records(d.ulpdu);
  ByteSpan next;
  bool more = records.Next(&next);
  while (more) {
    one.ulpdu = next;
    more = records.Next(&next);
    one.header.ack_request = d.header.ack_request && !more;  // R: the last record's
    one.more_records = more;
    // The receiver of each record is looked up again: a call may detach it.
    DgramReceiver* r = ReceiverFor(one.header.dst_qpn);
    if (r == nullptr) {
      ++counters_.unknown_qpn;
      return;
    }
    r->OnDatagram(one, from);
    one.later_record = true;
    // The ack fields count once, with the first record.
    one.header.has_ack = one.header.has_sack = false;
    one.header.credits = 0;
    one.header.echo_session = one.header.ack = one.header.sack = 0;
    ++one.header.seq;
  }
}

}  // namespace iwarpx::rd
