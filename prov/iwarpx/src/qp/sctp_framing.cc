// SctpFraming: FPDU images <-> one SCTP message per DDP segment (see the
// header for the contract).
#include "qp/sctp_framing.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <utility>

#include "qp/work_request.h"
#include "wire/ddp.h"
#include "wire/fpdu.h"
#include "wire/rdmap.h"

namespace iwarpx::qp {

namespace {

// A read position in a gather list.
class IovCursor {
 public:
  explicit IovCursor(std::span<const iovec> iov) : iov_(iov) {}

  // Copies the next n bytes to dst (the caller checked they exist).
  void Copy(size_t n, uint8_t* dst) {
    while (n > 0) {
      const iovec& v = iov_[i_];
      const size_t k = std::min(n, v.iov_len - off_);
      std::memcpy(dst, static_cast<const uint8_t*>(v.iov_base) + off_, k);
      dst += k;
      n -= k;
      Skip(k);
    }
  }
  // Describes the next n bytes as iovecs in `out`; false if they need more
  // pieces than `out` holds.
  bool Slice(size_t n, std::span<iovec> out, size_t* count) {
    *count = 0;
    while (n > 0) {
      if (*count == out.size()) return false;
      const iovec& v = iov_[i_];
      const size_t k = std::min(n, v.iov_len - off_);
      out[(*count)++] = iovec{static_cast<uint8_t*>(v.iov_base) + off_, k};
      n -= k;
      Skip(k);
    }
    return true;
  }
  void Skip(size_t n) {
    off_ += n;
    while (i_ < iov_.size() && off_ >= iov_[i_].iov_len) {
      off_ -= iov_[i_].iov_len;
      ++i_;
    }
  }

 private:
  std::span<const iovec> iov_;
  size_t i_ = 0;
  size_t off_ = 0;
};

// Fills `iov` from position *at on with `src`; returns the bytes written.
size_t CopyToIov(std::span<const iovec> iov, size_t* at, const uint8_t* src, size_t n) {
  size_t done = 0;
  size_t pos = 0;
  for (const iovec& v : iov) {
    if (done == n) break;
    if (*at >= pos + v.iov_len) {
      pos += v.iov_len;
      continue;
    }
    const size_t into = *at - pos;
    const size_t k = std::min(v.iov_len - into, n - done);
    std::memcpy(static_cast<uint8_t*>(v.iov_base) + into, src + done, k);
    done += k;
    *at += k;
    pos += v.iov_len;
  }
  return done;
}

}  // namespace

SctpFraming::SctpFraming(transport::SctpConnection& sctp, bool accept_unordered,
                         transport::SctpMessageQueue early)
    : accept_unordered_(accept_unordered),
      sctp_(sctp),
      early_(std::move(early)),
      rx_buf_(std::make_unique_for_overwrite<uint8_t[]>(wire::kMaxUlpduLength)) {}

uint16_t SctpFraming::tx_streams() const {
  return std::min(sctp_.outbound_streams(), kMaxSctpStreams);
}

void SctpFraming::SetImageStream(uint8_t* crc_field, uint16_t stream, bool unordered) {
  crc_field[0] = unordered ? static_cast<uint8_t>(kImageUnordered >> 24) : 0;
  crc_field[1] = 0;
  crc_field[2] = static_cast<uint8_t>(stream >> 8);
  crc_field[3] = static_cast<uint8_t>(stream & 0xFF);
}

uint16_t SctpFraming::ReadResponseStream(uint32_t sink_stag, uint16_t streams) {
  if (streams <= 1) return 0;
  return static_cast<uint16_t>(1 + sink_stag % (streams - 1u));
}

transport::IoResult SctpFraming::SendV(std::span<const iovec> iov) {
  const size_t total = transport::TotalLength(iov);
  IovCursor cur(iov);
  size_t pos = 0;
  transport::MessageInfo info;
  info.ppid = kSctpPpidDdpSegment;
  info.unordered = false;
  bool blocked = false;
  bool bad_stream = false;
  while (total - pos >= wire::kFpduLengthSize) {
    std::array<uint8_t, wire::kFpduLengthSize> len_bytes{};
    IovCursor peek = cur;
    peek.Copy(len_bytes.size(), len_bytes.data());
    const size_t len = (size_t{len_bytes[0]} << 8) | len_bytes[1];
    const size_t image = wire::FpduWireLength(len);
    if (total - pos < image) break;
    // The stream, from the image's CRC field (its last 4 bytes).
    std::array<uint8_t, wire::kFpduCrcSize> field{};
    IovCursor at = cur;
    at.Skip(image - field.size());
    at.Copy(field.size(), field.data());
    const uint32_t word = (uint32_t{field[0]} << 24) | (uint32_t{field[1]} << 16) |
                          (uint32_t{field[2]} << 8) | field[3];
    const uint32_t stream = word & ~kImageUnordered;
    if (stream != 0 && stream >= tx_streams()) {
      bad_stream = true;
      break;
    }
    info.stream = static_cast<uint16_t>(stream);
    info.unordered = (word & kImageUnordered) != 0;
    // A ULPDU is the DDP header plus at most kMaxSge payload pieces, or one
    // stashed piece: kMaxSge + 2 always suffices.
    std::array<iovec, kMaxSge + 2> parts{};
    size_t count = 0;
    if (!peek.Slice(len, parts, &count)) break;
    const transport::IoResult r = sctp_.SendMsg(std::span<const iovec>(parts.data(), count), info);
    if (r.status == transport::IoStatus::kWouldBlock) {
      blocked = true;
      break;
    }
    if (r.status != transport::IoStatus::kOk) return pos > 0 ? transport::IoResult::Ok(pos) : r;
    ++messages_sent_;
    if (info.unordered) ++unordered_sent_;
    ++sent_on_[info.stream];
    cur.Skip(image);
    pos += image;
  }
  if (pos > 0 || total == 0) return transport::IoResult::Ok(pos);
  // Nothing taken: blocked, or the first image is incomplete or names a
  // stream the association does not have (caller bugs).
  if (blocked) return transport::IoResult::WouldBlock();
  return transport::IoResult::Error(bad_stream ? EINVAL : EMSGSIZE);
}

transport::IoResult SctpFraming::ReceiveMessage() {
  while (true) {
    transport::MessageInfo info;
    transport::IoResult r;
    if (rx_fill_ == 0 && !early_.empty()) {
      // A message received before the Accept: as if RecvMsg returned it.
      const ByteSpan m = early_.front();
      info = early_.front_info();
      const size_t n = std::min(m.size(), wire::kMaxUlpduLength);
      std::memcpy(rx_buf_.get(), m.data(), n);
      info.end_of_message = n == m.size();  // longer: refused below
      early_.Pop();
      r = transport::IoResult::Ok(n);
    } else {
      const iovec v{rx_buf_.get() + rx_fill_, wire::kMaxUlpduLength - rx_fill_};
      r = sctp_.RecvMsg(std::span<const iovec>(&v, 1), info);
      if (r.status != transport::IoStatus::kOk) return r;
    }
    if (rx_fill_ == 0) {
      rx_ppid_ = info.ppid;
      rx_stream_ = info.stream;
      rx_unordered_ = info.unordered;
    }
    if (info.ppid != kSctpPpidDdpSegment || info.ppid != rx_ppid_ || info.stream != rx_stream_ ||
        info.unordered != rx_unordered_) {
      Refuse(wire::term::kLlpInvalidReqRep);
      return transport::IoResult::Error(EPROTO);
    }
    rx_fill_ += r.bytes;
    if (info.end_of_message) break;
    if (rx_fill_ == wire::kMaxUlpduLength) {
      Refuse(wire::term::kLlpMarkerMismatch);  // longer than any ULPDU
      return transport::IoResult::Error(EPROTO);
    }
    if (r.bytes == 0) return transport::IoResult::WouldBlock();
  }
  msg_len_ = rx_fill_;
  rx_fill_ = 0;
  if (!AdmitOnStream()) return transport::IoResult::Error(EPROTO);
  image_len_ = wire::FpduWireLength(msg_len_);
  image_off_ = 0;
  ++messages_received_;
  if (rx_unordered_) ++unordered_received_;
  ++received_on_[rx_stream_];
  return transport::IoResult::Ok(msg_len_);
}

bool SctpFraming::AdmitOnStream() {
  if (rx_stream_ >= kMaxSctpStreams) {
    Refuse(wire::term::kLlpInvalidReqRep);
    return false;
  }
  auto h = wire::DecodeDdpHeader(ByteSpan(rx_buf_.get(), msg_len_));
  if (!h.ok() && rx_unordered_) {
    Refuse(wire::term::kLlpInvalidReqRep);  // only Read Responses go unordered
    return false;
  }
  if (!h.ok()) return true;  // the QP refuses it, as a malformed FPDU on TCP
  const auto op = static_cast<wire::RdmapOpcode>(h->rsvd_ulp0 & wire::kRdmapOpcodeMask);
  const bool send =
      op == wire::RdmapOpcode::kSend || op == wire::RdmapOpcode::kSendWithInvalidate ||
      op == wire::RdmapOpcode::kSendWithSe || op == wire::RdmapOpcode::kSendWithSeAndInvalidate;
  const bool immediate =
      op == wire::RdmapOpcode::kImmediateData || op == wire::RdmapOpcode::kImmediateDataWithSe;
  const bool qn0 = !h->tagged && h->qn == wire::kQnSend && (send || immediate);
  // Read Responses may come on any stream (the sender picks it by sink STag);
  // the QP matches each to its Read by STag and TO (queue_pair.h).
  const bool read_response = h->tagged && op == wire::RdmapOpcode::kRdmaReadResponse;
  if (rx_unordered_ && (!read_response || !accept_unordered_)) {
    Refuse(wire::term::kLlpInvalidReqRep);
    return false;
  }
  if (rx_stream_ != 0 && !read_response && (!qn0 || !send)) {
    Refuse(wire::term::kLlpInvalidReqRep);
    return false;
  }
  if (!qn0) return true;
  StreamRx& st = rx_streams_[rx_stream_];
  if (st.open) {
    // The message in progress on this stream must continue first.
    if (h->msn != st.msn) {
      Refuse(wire::term::kDdpUntaggedMsnRange);
      return false;
    }
    if (h->mo != st.next_mo) {
      Refuse(wire::term::kDdpUntaggedInvalidMo);
      return false;
    }
  } else {
    if (h->mo != 0) {
      Refuse(wire::term::kDdpUntaggedInvalidMo);
      return false;
    }
    if (static_cast<int32_t>(h->msn - st.msn) <= 0) {
      Refuse(wire::term::kDdpUntaggedMsnRange);
      return false;
    }
  }
  st.msn = h->msn;
  st.next_mo = uint64_t{h->mo} + (msg_len_ - h->size());
  st.open = !h->last;
  return true;
}

transport::IoResult SctpFraming::RecvV(std::span<const iovec> iov) {
  const size_t room = transport::TotalLength(iov);
  if (room == 0) return transport::IoResult::Ok(0);
  size_t at = 0;
  while (at < room) {
    if (image_off_ == image_len_) {
      if (refusal_) break;
      const transport::IoResult r = ReceiveMessage();
      if (r.status != transport::IoStatus::kOk) {
        if (at > 0) break;  // deliver what is complete; the next call sees it again
        return r;
      }
    }
    // The image: ULPDU_Length | message | zero PAD and CRC field.
    const std::array<uint8_t, wire::kFpduLengthSize> prefix{static_cast<uint8_t>(msg_len_ >> 8),
                                                            static_cast<uint8_t>(msg_len_ & 0xFF)};
    static constexpr std::array<uint8_t, wire::kFpduMaxTrailerSize> kZeros{};
    while (image_off_ < image_len_ && at < room) {
      const uint8_t* src = nullptr;
      size_t n = 0;
      if (image_off_ < wire::kFpduLengthSize) {
        src = prefix.data() + image_off_;
        n = wire::kFpduLengthSize - image_off_;
      } else if (image_off_ < wire::kFpduLengthSize + msg_len_) {
        src = rx_buf_.get() + (image_off_ - wire::kFpduLengthSize);
        n = wire::kFpduLengthSize + msg_len_ - image_off_;
      } else {
        src = kZeros.data();
        n = image_len_ - image_off_;
      }
      image_off_ += CopyToIov(iov, &at, src, n);
    }
  }
  if (at == 0 && refusal_) return transport::IoResult::Error(EPROTO);
  return transport::IoResult::Ok(at);
}

}  // namespace iwarpx::qp
