// SimDatagramNet: an in-memory datagram network for tests. Each
// SimDatagramSocket (a transport::DatagramSocket with its own address) sends
// into the inbound queue of the socket whose address is the destination;
// datagrams to unknown addresses vanish. Delivery order is send order; loss,
// duplication, reordering and corruption come from wrapping a socket in
// transport::FaultInjector. Sockets can be cut off (everything they send or
// would receive is lost) and made to refuse sends (kWouldBlock).
// Deterministic, header-only, test-only, not thread-safe; fd() is -1.
#pragma once

#include <sys/uio.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "transport/transport.h"

namespace iwarpx::testing {

class SimDatagramNet;

class SimDatagramSocket final : public transport::DatagramSocket {
 public:
  SimDatagramSocket(SimDatagramNet& net, uint16_t port) : net_(net), port_(port) {}
  ~SimDatagramSocket() override;

  transport::IoResult SendTo(const transport::SockAddr& to, std::span<const iovec> iov) override;
  transport::BatchResult SendBatch(std::span<transport::DgramMessage> msgs) override {
    size_t i = 0;
    for (; i < msgs.size() && i < kMaxBatch; ++i) {
      const transport::IoResult r = SendTo(msgs[i].addr, msgs[i].iov);
      if (!r.ok()) {
        return i > 0 ? transport::BatchResult{i} : transport::BatchResult{0, r.status, r.err};
      }
      msgs[i].bytes = r.bytes;
    }
    return {i};
  }
  transport::BatchResult RecvBatch(std::span<transport::DgramMessage> msgs) override {
    size_t i = 0;
    for (; i < msgs.size() && i < kMaxBatch && !inbound_.empty(); ++i) {
      const auto& [from, bytes] = inbound_.front();
      size_t at = 0;
      for (const iovec& v : msgs[i].iov) {
        const size_t n = std::min(v.iov_len, bytes.size() - at);
        if (n > 0) std::memcpy(v.iov_base, bytes.data() + at, n);
        at += n;
      }
      msgs[i].addr = from;
      msgs[i].bytes = at;
      msgs[i].truncated = at < bytes.size();
      inbound_.pop_front();
    }
    if (i == 0) return {0, transport::IoStatus::kWouldBlock, 0};
    return {i};
  }
  [[nodiscard]] int fd() const override { return -1; }
  [[nodiscard]] transport::SockAddr local_address() const override {
    return transport::SockAddr::Loopback4(port_);
  }

  [[nodiscard]] size_t queued() const { return inbound_.size(); }
  void set_cut(bool cut) { cut_ = cut; }
  [[nodiscard]] bool cut() const { return cut_; }
  void set_refuse_sends(bool refuse) { refuse_ = refuse; }
  [[nodiscard]] uint64_t sent() const { return sent_; }

 private:
  friend class SimDatagramNet;
  SimDatagramNet& net_;
  uint16_t port_;
  bool cut_ = false;
  bool refuse_ = false;
  uint64_t sent_ = 0;
  std::deque<std::pair<transport::SockAddr, std::vector<uint8_t>>> inbound_;
};

class SimDatagramNet {
 public:
  // A socket at 127.0.0.1:`port`; the net does not own it.
  std::unique_ptr<SimDatagramSocket> Open(uint16_t port) {
    auto s = std::make_unique<SimDatagramSocket>(*this, port);
    sockets_[port] = s.get();
    return s;
  }
  void Forget(uint16_t port) { sockets_.erase(port); }
  SimDatagramSocket* Find(uint16_t port) {
    auto it = sockets_.find(port);
    return it == sockets_.end() ? nullptr : it->second;
  }
  // Datagrams waiting in any socket.
  [[nodiscard]] size_t queued() const {
    size_t n = 0;
    for (const auto& [port, s] : sockets_) n += s->queued();
    return n;
  }

 private:
  std::map<uint16_t, SimDatagramSocket*> sockets_;
};

inline SimDatagramSocket::~SimDatagramSocket() {
  net_.Forget(port_);
}

inline transport::IoResult SimDatagramSocket::SendTo(const transport::SockAddr& to,
                                                     std::span<const iovec> iov) {
  if (refuse_) return transport::IoResult::WouldBlock();
  std::vector<uint8_t> bytes;
  for (const iovec& v : iov) {
    const auto* p = static_cast<const uint8_t*>(v.iov_base);
    bytes.insert(bytes.end(), p, p + v.iov_len);
  }
  const size_t n = bytes.size();
  ++sent_;
  SimDatagramSocket* dst = net_.Find(to.port());
  if (!cut_ && dst != nullptr && !dst->cut_) {
    dst->inbound_.emplace_back(local_address(), std::move(bytes));
  }
  return transport::IoResult::Ok(n);
}

}  // namespace iwarpx::testing
