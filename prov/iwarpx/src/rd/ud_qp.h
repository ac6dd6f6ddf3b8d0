// UdQp: a queue pair of the unreliable datagram (UD) service of datagram
// iWARP (docs/wire.md §3.5; seed 002 §4): every Send is one whole DDP message
// in one UDP datagram to (address, QP number), every received Send fills the
// oldest posted receive. Nothing is retransmitted, reordered or acked; no
// Terminate is ever sent. It rides on a DgramPort, which may be shared by
// several QPs.
//
// Contract:
// * Single-threaded (the progress engine's lock), no allocation after
//   construction.
// * PostSend sends at once when the socket takes the datagram; otherwise it
//   queues the WR (its SGL must stay valid until completion) and
//   wants_write() turns true until OnWritable() has sent the backlog, in post
//   order. A WR with `more` set (FI_MORE) is queued without sending: the
//   next WR without it, or the next OnWritable() (the following progress
//   pass), sends the queue with one sendmmsg per 64 datagrams. A send
//   completes when UDP accepted the datagram (signaled WRs only); a socket
//   error completes it with an error and the queue goes on.
// * A receive completes with the message length and the source (address,
//   QP number). A message longer than the receive is truncated: the receive
//   completes with `truncated_bytes` > 0 (libfabric FI_ETRUNC).
// * Datagrams that are not UD data, whose segment is not a Send, or that
//   find no posted receive are dropped and counted (UD is unreliable). The
//   MSN of received messages is ignored (§3.5).
// * Flush() completes every queued send and posted receive with kFlushed.
// * A QP with `receives` attaches to the port under its QPN (attached() is
//   false when another QP holds that number: it then receives nothing). A
//   send-only QP (`receives` false; a scalable endpoint's transmit context)
//   never attaches: its QPN is only the src_qpn of what it sends, and may be
//   the number of a receiving QP on the same port.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "qp/queue_pair.h"
#include "qp/work_request.h"
#include "rd/dgram_port.h"
#include "transport/sock_addr.h"
#include "wire/ddp.h"

namespace iwarpx::rd {

// Largest UD message: one datagram's ULPDU minus the untagged DDP header.
inline constexpr size_t kUdMaxMessage = wire::kDgramMaxUlpdu - 18;

struct UdConfig {
  uint32_t qpn = 0;
  uint32_t sq_depth = 256;  // both at least 1
  uint32_t rq_depth = 256;
  bool receives = true;  // attach to the port under `qpn`
};

struct UdSendWr {
  uint64_t context = 0;
  qp::Sgl sgl;
  transport::SockAddr dest;
  uint32_t dest_qpn = 0;
  uint32_t flags = qp::kWrSignaled;
  bool solicited = false;  // Send with SE
  bool more = false;       // libfabric FI_MORE: more sends follow, batch them
};

struct UdRecvInfo {
  transport::SockAddr src;
  uint32_t src_qpn = 0;
  size_t truncated_bytes = 0;  // message bytes that did not fit
};

enum class UdError : uint8_t { kSendFailed, kFlushed };

class UdSink {
 public:
  virtual ~UdSink() = default;
  virtual void OnSendComplete(uint64_t context) = 0;
  // `bytes`: what was placed (the message length unless truncated).
  virtual void OnRecvComplete(uint64_t context, size_t bytes, const UdRecvInfo& info) = 0;
  virtual void OnError(uint64_t context, qp::WcOp op, UdError error, int err) = 0;
};

struct UdCounters {
  uint64_t sent = 0;
  uint64_t received = 0;
  uint64_t not_ud = 0;      // RD datagram sent to a UD QP
  uint64_t malformed = 0;   // DDP/RDMAP segment did not parse
  uint64_t not_send = 0;    // a valid segment UD does not offer (Write, Read...)
  uint64_t no_receive = 0;  // no receive posted
};

class UdQp final : public DgramReceiver {
 public:
  UdQp(DgramPort& port, const UdConfig& config, UdSink& sink);
  ~UdQp() override;
  UdQp(const UdQp&) = delete;
  UdQp& operator=(const UdQp&) = delete;

  qp::QpStatus PostSend(const UdSendWr& wr);
  // PostSend's immediate case, reported by the caller instead of the sink:
  // with nothing queued and `more` clear, sends `wr` at once. kOk: the
  // socket took it; kError: the socket refused it for good. Both use an MSN
  // and are counted like PostSend's, and neither reaches the sink (the
  // caller reports it; `context` and `flags` are not used). kWouldBlock:
  // nothing done (a backlog, `more`, a full socket or an invalid WR): the
  // caller posts it with PostSend, with an SGL that stays valid until
  // completion (fi_inject copies its payload only then).
  transport::IoStatus SendNow(const UdSendWr& wr);
  qp::QpStatus PostRecv(const qp::RecvWr& wr);
  void OnWritable();
  void Flush();
  // Removes the posted receive with `context` (no completion); false if none.
  bool CancelRecv(uint64_t context);

  void OnDatagram(const wire::DecodedDgram& dgram, const transport::SockAddr& from) override;
  // The one-step path (DgramPort decoded a UD Send with DecodeUdSend): the
  // same receive as OnDatagram's for that datagram, without ParseSegment.
  bool OnUdSend(const wire::UdSendView& send, const transport::SockAddr& from) override;

  [[nodiscard]] bool wants_write() const { return sq_head_ != sq_tail_; }
  [[nodiscard]] uint32_t qpn() const { return config_.qpn; }
  [[nodiscard]] bool attached() const { return attached_; }
  [[nodiscard]] const UdCounters& counters() const { return counters_; }

 private:
  // Sends the WR; false when the socket would block (nothing sent).
  bool Transmit(const UdSendWr& wr);
  // The datagram of `wr` to the socket (MSN msn_ + 1); nothing accounted.
  transport::IoStatus SendOne(const UdSendWr& wr);
  // Sends the queued WRs in batches until the queue is empty or the socket
  // would block.
  void SendQueued();
  // The DDP Send header of `wr` with MSN `msn` into `buf`, and the ULPDU
  // parts (header, then the SGL) into `parts`; returns the part count.
  size_t BuildUlpdu(const UdSendWr& wr, uint32_t msn,
                    std::array<uint8_t, wire::kDdpMaxHeaderSize>& buf,
                    std::array<ByteSpan, 1 + qp::kMaxSge>& parts) const;
  [[nodiscard]] wire::DgramHeader HeaderFor(const UdSendWr& wr) const;
  // Places a received Send's payload into the oldest posted receive and
  // completes it (or counts no_receive).
  void Receive(ByteSpan payload, uint32_t src_qpn, const transport::SockAddr& from);
  // Accounts for one WR the socket took (kOk) or refused for good (kError).
  void Finish(const UdSendWr& wr, transport::IoStatus status);

  // Ring slots: a power of two, so a counter's slot is a mask, not a division.
  [[nodiscard]] size_t SqSlot(uint64_t n) const { return n & (sq_.size() - 1); }
  [[nodiscard]] size_t RqSlot(uint64_t n) const { return n & (rq_.size() - 1); }

  DgramPort& port_;
  UdConfig config_;
  UdSink& sink_;
  std::vector<UdSendWr> sq_;  // WRs waiting for socket space (bit_ceil(sq_depth) slots)
  std::vector<qp::RecvWr> rq_;
  const uint32_t sq_depth_;  // at most this many queued
  const uint32_t rq_depth_;
  uint64_t sq_head_ = 0;
  uint64_t sq_tail_ = 0;
  uint64_t rq_head_ = 0;
  uint64_t rq_tail_ = 0;
  uint32_t msn_ = 0;
  bool attached_ = false;
  UdCounters counters_;
};

}  // namespace iwarpx::rd
