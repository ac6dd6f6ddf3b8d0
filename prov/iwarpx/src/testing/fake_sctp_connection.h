// FakeSctpConnection: an in-memory, deterministic SctpConnection pair for
// tests of the message-preserving path (qp/sctp_framing.h and the QP over it).
//
// MakeFakeSctpPair() returns two connected ends; every SendMsg on one end is
// one message (bytes and MessageInfo) queued, in order, towards the other.
// RecvMsg returns at most one message: a message larger than the buffer, or
// than set_max_per_recv() (partial delivery), comes in several calls with
// end_of_message false until the last. set_send_capacity(n) makes SendMsg
// return kWouldBlock while the peer has n unread messages. Inject() queues a
// raw message towards an end (a misbehaving peer). ShutdownWrite() on either
// end: queued messages are still delivered, then both ends' RecvMsg return
// kClosed and SendMsg fails with EPIPE (SCTP has no half-close). Reset():
// every later call fails with ECONNRESET. sent() records the info and size
// of every message an end sent. HoldStream(s, n) lets n more messages of
// stream s through and keeps the rest queued (in both directions) while later
// messages of other streams are delivered past them, as SCTP does when a
// stream waits for a lost chunk; ReleaseStream(s) lets them through again;
// pending() counts deliverable messages only. ShuffleUnordered(seed): every
// later message sent unordered is queued at a random place after any
// partially received message instead of at the end (SCTP hands an unordered
// message over as soon as it is reassembled, past anything queued);
// overtakes() counts the queued messages they were put before.
// Both ends advertise the Adaptation Layer Indication 1 (DDP);
// set_adaptation_indication(v) changes what this end advertises (nullopt:
// none), peer_adaptation_indication() is what the other end advertises.
// fd() is -1 and doorbell() false: the fake is
// driven by calling it. Test-only, header-only, not thread-safe.
#pragma once

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "transport/sctp.h"

namespace iwarpx::testing {

class FakeSctpConnection final : public transport::SctpConnection {
 public:
  struct Message {
    std::vector<uint8_t> bytes;
    transport::MessageInfo info;
    size_t offset = 0;  // bytes already returned by partial receives
  };
  struct Sent {
    transport::MessageInfo info;
    size_t size = 0;
  };
  struct Shared {
    std::deque<Message> queue[2];  // queue[i]: messages travelling towards end i
    std::vector<Sent> sent[2];     // what end i sent
    bool shut = false;
    bool reset = false;
    size_t send_capacity = 0;  // in messages; 0 = unlimited
    size_t max_per_recv = 0;   // 0 = unlimited
    uint16_t streams = 8;
    // Held streams: how many more of their messages may be delivered.
    std::map<uint16_t, size_t> held;
    bool shuffle_unordered = false;
    std::mt19937 rng;
    size_t overtakes = 0;  // queued messages an unordered one was put before
    // What end i advertises as its Adaptation Layer Indication.
    std::optional<uint32_t> adaptation[2] = {1, 1};
  };

  FakeSctpConnection(std::shared_ptr<Shared> shared, int side)
      : shared_(std::move(shared)), side_(side) {}

  transport::IoResult SendMsg(std::span<const iovec> iov,
                              const transport::MessageInfo& info) override {
    if (shared_->reset) return transport::IoResult::Error(ECONNRESET);
    if (shared_->shut) return transport::IoResult::Error(EPIPE);
    if (info.stream >= shared_->streams) return transport::IoResult::Error(EINVAL);
    std::deque<Message>& q = shared_->queue[1 - side_];
    if (shared_->send_capacity != 0 && q.size() >= shared_->send_capacity) {
      return transport::IoResult::WouldBlock();
    }
    Message m;
    m.info = info;
    m.info.end_of_message = true;
    for (const iovec& v : iov) {
      const auto* p = static_cast<const uint8_t*>(v.iov_base);
      m.bytes.insert(m.bytes.end(), p, p + v.iov_len);
    }
    shared_->sent[side_].push_back({m.info, m.bytes.size()});
    const size_t n = m.bytes.size();
    if (info.unordered && shared_->shuffle_unordered) {
      size_t lo = 0;
      for (size_t i = 0; i < q.size(); ++i) {
        if (q[i].offset > 0) lo = i + 1;
      }
      const size_t at = lo + shared_->rng() % (q.size() - lo + 1);
      shared_->overtakes += q.size() - at;
      q.insert(q.begin() + static_cast<std::ptrdiff_t>(at), std::move(m));
    } else {
      q.push_back(std::move(m));
    }
    return transport::IoResult::Ok(n);
  }

  transport::IoResult RecvMsg(std::span<const iovec> iov, transport::MessageInfo& info) override {
    if (shared_->reset) return transport::IoResult::Error(ECONNRESET);
    std::deque<Message>& q = shared_->queue[side_];
    std::map<uint16_t, size_t> allowance = shared_->held;
    auto it = std::find_if(q.begin(), q.end(),
                           [&allowance](const Message& msg) { return Take(msg, allowance); });
    if (it == q.end()) {
      return shared_->shut && q.empty() ? transport::IoResult::Closed()
                                        : transport::IoResult::WouldBlock();
    }
    Message& m = *it;
    size_t budget = std::min(transport::TotalLength(iov), m.bytes.size() - m.offset);
    if (shared_->max_per_recv != 0) budget = std::min(budget, shared_->max_per_recv);
    size_t moved = 0;
    for (const iovec& v : iov) {
      const size_t n = std::min(v.iov_len, budget - moved);
      std::memcpy(v.iov_base, m.bytes.data() + m.offset + moved, n);
      moved += n;
      if (moved == budget) break;
    }
    m.offset += moved;
    info = m.info;
    info.end_of_message = m.offset == m.bytes.size();
    if (info.end_of_message) {
      auto h = shared_->held.find(m.info.stream);
      if (h != shared_->held.end() && h->second > 0) --h->second;
      q.erase(it);
    }
    return transport::IoResult::Ok(moved);
  }

  [[nodiscard]] uint16_t outbound_streams() const override { return shared_->streams; }
  [[nodiscard]] bool doorbell() const override { return false; }
  [[nodiscard]] transport::SctpBackend backend() const override {
    return transport::SctpBackend::kUsrsctp;
  }
  // The fake has no retransmissions: the default limits, as configured.
  [[nodiscard]] Result<transport::SctpLimits, int> limits() const override {
    return transport::SctpLimits{};
  }
  [[nodiscard]] std::optional<uint32_t> peer_adaptation_indication() const override {
    return shared_->adaptation[1 - side_];
  }
  [[nodiscard]] bool connected() const override { return true; }
  transport::IoResult FinishConnect() override { return transport::IoResult::Ok(0); }
  transport::Status ShutdownWrite() override {
    shared_->shut = true;
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
  void set_send_capacity(size_t messages) { shared_->send_capacity = messages; }
  void set_max_per_recv(size_t n) { shared_->max_per_recv = n; }
  void Reset() {
    shared_->reset = true;
    shared_->queue[0].clear();
    shared_->queue[1].clear();
  }
  // Queues a raw message towards this end.
  void Inject(std::vector<uint8_t> bytes, const transport::MessageInfo& info) {
    Message m;
    m.bytes = std::move(bytes);
    m.info = info;
    shared_->queue[side_].push_back(std::move(m));
  }
  void set_adaptation_indication(std::optional<uint32_t> v) { shared_->adaptation[side_] = v; }
  void HoldStream(uint16_t stream, size_t let_through = 0) { shared_->held[stream] = let_through; }
  void ReleaseStream(uint16_t stream) { shared_->held.erase(stream); }
  void ShuffleUnordered(uint32_t seed) {
    shared_->shuffle_unordered = true;
    shared_->rng.seed(seed);
  }
  // Messages queued towards this end, not yet (completely) received and not
  // on a held stream.
  [[nodiscard]] size_t pending() const {
    std::map<uint16_t, size_t> allowance = shared_->held;
    size_t n = 0;
    for (const Message& m : shared_->queue[side_]) {
      if (Take(m, allowance)) ++n;
    }
    return n;
  }
  [[nodiscard]] const std::vector<Sent>& sent() const { return shared_->sent[side_]; }
  [[nodiscard]] size_t overtakes() const { return shared_->overtakes; }
  // The oldest message queued towards this end (pending() > 0).
  [[nodiscard]] const Message& front() const { return shared_->queue[side_].front(); }

 private:
  static constexpr int kBasePort = 41000;

  // Whether `m` may be delivered next, counting it against its stream's
  // allowance (a message begun is always finished).
  static bool Take(const Message& m, std::map<uint16_t, size_t>& allowance) {
    if (m.offset > 0) return true;
    auto h = allowance.find(m.info.stream);
    if (h == allowance.end()) return true;
    if (h->second == 0) return false;
    --h->second;
    return true;
  }

  std::shared_ptr<Shared> shared_;
  int side_;
};

inline std::pair<std::unique_ptr<FakeSctpConnection>, std::unique_ptr<FakeSctpConnection>>
MakeFakeSctpPair() {
  auto shared = std::make_shared<FakeSctpConnection::Shared>();
  return {std::make_unique<FakeSctpConnection>(shared, 0),
          std::make_unique<FakeSctpConnection>(shared, 1)};
}

}  // namespace iwarpx::testing
