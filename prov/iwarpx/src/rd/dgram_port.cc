#include "rd/dgram_port.h"

#include <algorithm>
#include <cerrno>

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
  return receivers_.emplace(qpn, receiver).second;
}

void DgramPort::Detach(uint32_t qpn) {
  receivers_.erase(qpn);
}

transport::IoStatus DgramPort::Send(const transport::SockAddr& to, const wire::DgramHeader& header,
                                    std::span<const ByteSpan> ulpdu) {
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
    const size_t want = std::min(budget - done, msgs_.size());
    const transport::BatchResult r = socket_.RecvBatch(std::span(msgs_.data(), want));
    if (r.count == 0) break;
    for (size_t i = 0; i < r.count; ++i) {
      Dispatch(ByteSpan(buffers_.data() + i * wire::kDgramMaxSize, msgs_[i].bytes),
               msgs_[i].truncated, msgs_[i].addr);
    }
    done += r.count;
    if (r.count < want) break;
  }
  return done;
}

void DgramPort::Dispatch(ByteSpan bytes, bool truncated, const transport::SockAddr& from) {
  if (truncated) {
    ++counters_.truncated;
    return;
  }
  auto d = wire::DecodeDgram(bytes, /*verify_crc=*/true);
  if (!d.ok()) {
    if (d.error() == wire::WireError::kBadCrc) {
      ++counters_.bad_crc;
    } else {
      ++counters_.malformed;
    }
    return;
  }
  if (config_.require_crc && !d->crc_present) {
    ++counters_.no_crc;
    return;
  }
  auto it = receivers_.find(d->header.dst_qpn);
  if (it == receivers_.end()) {
    ++counters_.unknown_qpn;
    return;
  }
  ++counters_.delivered;
  it->second->OnDatagram(*d, from);
}

}  // namespace iwarpx::rd
