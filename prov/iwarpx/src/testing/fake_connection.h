// FakeConnection: an in-memory, deterministic Connection pair for tests.
//
// MakeFakeConnectionPair(max_per_call) returns two connected ends; bytes sent
// on one arrive, in order, on the other. Each SendV/RecvV moves at most
// `max_per_call` bytes (0 = unlimited) so tests exercise partial I/O on
// every boundary, and a send queue limit (set_send_capacity) makes SendV
// return kWouldBlock when the peer has that many unread bytes. An empty
// receive queue gives kWouldBlock, or kClosed once the peer called
// ShutdownWrite()/Close(). Reset() makes both ends fail every later call with
// kError ECONNRESET (unread data is discarded, as a TCP RST does).
// recv_calls() and send_calls() count the RecvV and SendV calls made on an end
// (syscall-count tests).
// SendWhole() is refused (kWouldBlock, as on TCP) unless set_whole_sends(true)
// on that end: then it sends the ULPDU as a CRC-less FPDU image (length,
// ULPDU, pad, zero CRC field), all or nothing, counted by whole_sends().
// preserves_message_boundaries() is false (a byte stream, like TCP); fd() is
// -1, so the fake is driven by calling it, not by a Poller.
// Test-only, header-only, not thread-safe; the two ends share state through a
// shared_ptr, so either may be destroyed first.
#pragma once

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "transport/transport.h"

namespace iwarpx::testing {

class FakeConnection final : public transport::Connection {
 public:
  struct Shared {
    std::deque<uint8_t> queue[2];  // queue[i]: bytes travelling towards end i
    bool write_shut[2] = {false, false};
    bool reset = false;
    size_t max_per_call = 0;
    size_t send_capacity = 0;        // 0 = unlimited
    size_t recv_calls[2] = {0, 0};   // RecvV calls made on end i
    size_t send_calls[2] = {0, 0};   // SendV calls made on end i
    bool whole[2] = {false, false};  // SendWhole accepted on end i
    size_t whole_sends[2] = {0, 0};
  };

  FakeConnection(std::shared_ptr<Shared> shared, int side)
      : shared_(std::move(shared)), side_(side) {}

  transport::IoResult SendV(std::span<const iovec> iov) override {
    ++shared_->send_calls[side_];
    if (shared_->reset) return transport::IoResult::Error(ECONNRESET);
    if (shared_->write_shut[side_]) return transport::IoResult::Error(EPIPE);
    std::deque<uint8_t>& q = shared_->queue[1 - side_];
    size_t budget = Budget(transport::TotalLength(iov));
    if (shared_->send_capacity != 0) {
      const size_t room = q.size() < shared_->send_capacity ? shared_->send_capacity - q.size() : 0;
      budget = std::min(budget, room);
      if (budget == 0 && transport::TotalLength(iov) != 0) {
        return transport::IoResult::WouldBlock();
      }
    }
    size_t moved = 0;
    for (const iovec& v : iov) {
      const auto* p = static_cast<const uint8_t*>(v.iov_base);
      const size_t n = std::min(v.iov_len, budget - moved);
      q.insert(q.end(), p, p + n);
      moved += n;
      if (moved == budget) break;
    }
    return transport::IoResult::Ok(moved);
  }

  transport::IoResult RecvV(std::span<const iovec> iov) override {
    ++shared_->recv_calls[side_];
    if (shared_->reset) return transport::IoResult::Error(ECONNRESET);
    const size_t want = transport::TotalLength(iov);
    if (want == 0) return transport::IoResult::Ok(0);
    std::deque<uint8_t>& q = shared_->queue[side_];
    if (q.empty()) {
      return shared_->write_shut[1 - side_] ? transport::IoResult::Closed()
                                            : transport::IoResult::WouldBlock();
    }
    const size_t budget = std::min(Budget(want), q.size());
    size_t moved = 0;
    for (const iovec& v : iov) {
      auto* p = static_cast<uint8_t*>(v.iov_base);
      const size_t n = std::min(v.iov_len, budget - moved);
      std::copy_n(q.begin(), n, p);
      q.erase(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(n));
      moved += n;
      if (moved == budget) break;
    }
    return transport::IoResult::Ok(moved);
  }

  [[nodiscard]] bool preserves_message_boundaries() const override { return false; }
  [[nodiscard]] bool connected() const override { return true; }
  transport::IoResult FinishConnect() override { return transport::IoResult::Ok(0); }
  transport::Status ShutdownWrite() override {
    shared_->write_shut[side_] = true;
    return {};
  }
  [[nodiscard]] int fd() const override { return -1; }
  [[nodiscard]] transport::SockAddr local_address() const override {
    return transport::SockAddr::Loopback4(static_cast<uint16_t>(kBasePort + side_));
  }
  [[nodiscard]] transport::SockAddr peer_address() const override {
    return transport::SockAddr::Loopback4(static_cast<uint16_t>(kBasePort + 1 - side_));
  }

  // Test controls (affect both ends).
  void set_max_per_call(size_t n) { shared_->max_per_call = n; }
  void set_send_capacity(size_t n) { shared_->send_capacity = n; }
  void set_whole_sends(bool on) { shared_->whole[side_] = on; }
  [[nodiscard]] size_t whole_sends() const { return shared_->whole_sends[side_]; }
  transport::IoResult SendWhole(std::span<const iovec> ulpdu) override {
    if (!shared_->whole[side_]) return transport::IoResult::WouldBlock();
    const size_t len = transport::TotalLength(ulpdu);
    const size_t pad = (4 - (2 + len) % 4) % 4;
    std::vector<uint8_t> image;
    image.reserve(2 + len + pad + 4);
    image.push_back(static_cast<uint8_t>(len >> 8));
    image.push_back(static_cast<uint8_t>(len & 0xFF));
    for (const iovec& v : ulpdu) {
      const auto* p = static_cast<const uint8_t*>(v.iov_base);
      image.insert(image.end(), p, p + v.iov_len);
    }
    image.resize(image.size() + pad + 4, 0);
    if (shared_->send_capacity != 0 &&
        shared_->queue[1 - side_].size() + image.size() > shared_->send_capacity) {
      return transport::IoResult::WouldBlock();
    }
    const size_t saved = shared_->max_per_call;
    shared_->max_per_call = 0;  // all or nothing
    const iovec v{image.data(), image.size()};
    const transport::IoResult r = SendV(std::span<const iovec>(&v, 1));
    shared_->max_per_call = saved;
    if (!r.ok()) return r;
    ++shared_->whole_sends[side_];
    return transport::IoResult::Ok(len);
  }
  void Close() { (void)ShutdownWrite(); }
  void Reset() {
    shared_->reset = true;
    shared_->queue[0].clear();
    shared_->queue[1].clear();
  }
  // Bytes sent towards this end and not yet received.
  [[nodiscard]] size_t pending() const { return shared_->queue[side_].size(); }
  // RecvV calls made on this end so far (every outcome counts).
  [[nodiscard]] size_t recv_calls() const { return shared_->recv_calls[side_]; }
  [[nodiscard]] size_t send_calls() const { return shared_->send_calls[side_]; }

 private:
  static constexpr int kBasePort = 40000;

  [[nodiscard]] size_t Budget(size_t want) const {
    return shared_->max_per_call == 0 ? want : std::min(want, shared_->max_per_call);
  }

  std::shared_ptr<Shared> shared_;
  int side_;
};

inline std::pair<std::unique_ptr<FakeConnection>, std::unique_ptr<FakeConnection>>
MakeFakeConnectionPair(size_t max_per_call = 0) {
  auto shared = std::make_shared<FakeConnection::Shared>();
  shared->max_per_call = max_per_call;
  return {std::make_unique<FakeConnection>(shared, 0), std::make_unique<FakeConnection>(shared, 1)};
}

}  // namespace iwarpx::testing
