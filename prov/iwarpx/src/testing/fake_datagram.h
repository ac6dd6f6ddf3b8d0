// RecordingDatagramSocket: a DatagramSocket fake that records every datagram
// sent through it (destination and flattened bytes) and hands queued
// datagrams to RecvBatch. Tests inspect sent() and the SendTo/SendBatch call
// counts, queue inbound datagrams with Inject(), make sends fail with
// set_send_error() and would-block after a budget with set_send_budget(). Deterministic,
// header-only, test-only, not thread-safe; fd() is -1.
#pragma once

#include <sys/uio.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <vector>

#include "transport/transport.h"

namespace iwarpx::testing {

class RecordingDatagramSocket final : public transport::DatagramSocket {
 public:
  struct Datagram {
    transport::SockAddr addr;
    std::vector<uint8_t> bytes;
  };

  transport::IoResult SendTo(const transport::SockAddr& to, std::span<const iovec> iov) override {
    ++sendto_calls_;
    return Record(to, iov);
  }

  transport::BatchResult SendBatch(std::span<transport::DgramMessage> msgs) override {
    ++batch_calls_;
    size_t i = 0;
    for (; i < msgs.size() && i < kMaxBatch; ++i) {
      const transport::IoResult r = Record(msgs[i].addr, msgs[i].iov);
      if (!r.ok())
        return i > 0 ? transport::BatchResult{i} : transport::BatchResult{0, r.status, r.err};
      msgs[i].bytes = r.bytes;
    }
    return {i};
  }

  transport::BatchResult RecvBatch(std::span<transport::DgramMessage> msgs) override {
    size_t i = 0;
    for (; i < msgs.size() && i < kMaxBatch && !inbound_.empty(); ++i) {
      const Datagram& d = inbound_.front();
      size_t at = 0;
      for (const iovec& v : msgs[i].iov) {
        const size_t n = std::min(v.iov_len, d.bytes.size() - at);
        if (n > 0) std::memcpy(v.iov_base, d.bytes.data() + at, n);
        at += n;
      }
      msgs[i].addr = d.addr;
      msgs[i].bytes = at;
      msgs[i].truncated = at < d.bytes.size();
      inbound_.pop_front();
    }
    if (i == 0) return {0, transport::IoStatus::kWouldBlock, 0};
    return {i};
  }

  [[nodiscard]] int fd() const override { return -1; }
  [[nodiscard]] transport::SockAddr local_address() const override {
    return transport::SockAddr::Loopback4(kPort);
  }

  void Inject(Datagram d) { inbound_.push_back(std::move(d)); }
  void set_send_error(transport::IoStatus status, int err = 0) {
    send_status_ = status;
    send_err_ = err;
  }
  // After `n` more datagrams, sends report kWouldBlock (SIZE_MAX: never).
  void set_send_budget(size_t n) { budget_ = n; }
  [[nodiscard]] const std::vector<Datagram>& sent() const { return sent_; }
  void clear_sent() { sent_.clear(); }
  // SendTo and SendBatch calls made by the code under test.
  [[nodiscard]] uint64_t sendto_calls() const { return sendto_calls_; }
  [[nodiscard]] uint64_t batch_calls() const { return batch_calls_; }

 private:
  static constexpr uint16_t kPort = 41000;

  transport::IoResult Record(const transport::SockAddr& to, std::span<const iovec> iov) {
    if (send_status_ != transport::IoStatus::kOk) return {0, send_status_, send_err_};
    if (budget_ == 0) return transport::IoResult::WouldBlock();
    if (budget_ != SIZE_MAX) --budget_;
    Datagram d{to, {}};
    for (const iovec& v : iov) {
      const auto* p = static_cast<const uint8_t*>(v.iov_base);
      d.bytes.insert(d.bytes.end(), p, p + v.iov_len);
    }
    const size_t n = d.bytes.size();
    sent_.push_back(std::move(d));
    return transport::IoResult::Ok(n);
  }

  std::vector<Datagram> sent_;
  std::deque<Datagram> inbound_;
  transport::IoStatus send_status_ = transport::IoStatus::kOk;
  int send_err_ = 0;
  size_t budget_ = SIZE_MAX;
  uint64_t sendto_calls_ = 0;
  uint64_t batch_calls_ = 0;
};

}  // namespace iwarpx::testing
