// RdStream: both directions of the reliable-datagram (RD) service between one
// local QP and one peer QP (docs/wire.md §3.6-3.7), presented to a
// qp::QueuePair as the byte-stream transport::Connection it already drives.
//
// Why a stream: the QueuePair (RDMAP over DDP, every check, Terminate,
// ORD/IRD, atomics, immediate data) is the engine DESIGN.md wants shared by
// the connected and the datagram modes. It speaks MPA FPDUs on a byte stream.
// The RD stream is reliable and in order once its windows have done their
// work, so the QP runs on it unchanged, with CRC and markers off: every FPDU
// the QP writes (2-byte ULPDU_Length | ULPDU | PAD | CRC field) becomes one RD
// data datagram carrying exactly its ULPDU (one standard DDP segment, §3.7),
// and every in-order datagram is handed back to the QP as the FPDU image of
// its ULPDU (length, ULPDU, zero pad, zero CRC field). Nothing but the ULPDU
// goes on the wire; the datagram's own CRC32c (port policy) protects it.
//
// Send side: SendV takes whole FPDUs only (a short count ends at an FPDU
// boundary, so the QP never has part of an FPDU outstanding), as many as the
// peer's credit window, the outstanding-datagram capacity and the copy
// buffer allow. Each ULPDU is copied into the copy buffer (send_buffer_bytes)
// and kept until the peer acknowledges it, so the QP may complete the work
// request at once, as over TCP once the socket took the bytes: the caller's
// buffer is free, delivery follows. SendWindow decides resends (RACK-style
// early loss detection, RTO with backoff); a datagram the socket refused
// (kWouldBlock) waits for OnSocketWritable(). The ack request R is set on the
// last datagram of each SendV call (the sender has nothing more queued right
// now) and when the window is half used (rule 9). A stream with nothing
// outstanding that cannot send for lack of credit sends PROBEs at the RTO.
//
// Bundles (docs/wire.md §3.6.1): consecutive new ULPDUs of one call (or of
// a corked run, below) without a lent tail leave together in one datagram
// of at most max_segment bytes of records (up to kMaxBundle records), each
// still its own sequence number; a resend is always a single datagram.
// Cork() (FI_MORE on the RDM endpoint) makes SendV/SendVLent/SendWhole
// accept without transmitting; Uncork() transmits everything held,
// bundled. Nothing waits unboundedly: while anything is held Deadline() is
// 0, and OnTimer() uncorks.
//
// Zero copy (lending): SendVLent names gather pieces that are registered
// memory (a Read Response's source, mem::StagTable lending). When such a
// piece is the tail of a ULPDU, only the ULPDU's head (the DDP/RDMAP header)
// is copied; the record points at the region, which the table lends until
// the datagram is acknowledged. Lent bytes count against send_buffer_bytes
// like copied ones (the flight size stays what the receiver is sized for).
// A region deregistered before that is
// reclaimed (Reclaim: the still-unacknowledged bytes are copied to the heap),
// so a resend never reads memory the application took back. Resends read the
// region again: an application that changes a region while a peer still
// reads it gets what RDMA Read promises it (undefined bytes for that read),
// and a resend of a datagram the peer already has is dropped as a duplicate.
//
// Receive side: InboundSessions classifies each datagram's session, RecvWindow
// its sequence number. An in-order datagram is acknowledged at once and joins
// the backlog the QP consumes (RecvWindow::Receive); the first one is offered
// to the QP straight from the caller's receive buffer (RdStreamOwner::
// OnStreamEvent runs while it is valid), and only what the QP does not
// consume then, and early datagrams, are copied into per-slot hold buffers.
// Backlogged datagrams shrink the credits advertised, so a QP that stops for
// lack of a posted receive closes the window without losing anything and
// without the sender taking the silence for a dead peer. Acks piggyback on
// outgoing data; standalone acks follow RecvWindow's policy (immediate on R,
// holes, duplicates, PROBEs and window updates; else every `ack_every`
// datagrams or after `ack_delay_ns`).
//
// Failure: the stream fails (RecvV and SendV return kError with `error()`)
// when the peer stops acknowledging for dead_after_ns (FI_IWARPX_RD_TIMEOUT;
// also while probing a closed window), when the peer RESETs our session
// (rule 5), or by Fail(). A stream with nothing in flight whose owner
// AwaitsPeer() probes too once it has heard nothing from the peer for
// max(RTO, dead_after_ns / 16): a live peer acks the PROBE, one that failed
// our session answers RESET, a silent one fails the stream dead_after_ns
// after it was last heard (or, after a long quiet, after probing began), so
// a Read whose peer forgot it ends in an error completion instead of
// waiting forever. The QP then reports a lost link and flushes its
// work requests with errors; the owner discards QP and stream and makes a new
// pair (a new session) for later traffic. A datagram that opens a new session
// of a peer that already had one (the peer restarted, rule 3) returns
// kPeerRestarted from OnDatagram: the owner fails this pair and hands the
// same datagram to a fresh stream made with `sessions()` of this one.
//
// Contract
// * Single-threaded (the engine lock). Callbacks to the owner happen from
//   OnDatagram, OnTimer and OnSocketWritable only, never from SendV/RecvV.
// * Memory: the copy buffer starts at kInitialBuffer bytes and doubles up to
//   send_buffer_bytes when a ULPDU does not fit and the buffer is not
//   wrapped (records keep their offsets); the record ring starts at
//   kInitialSlots, the pending and hold rings empty (allocated when the
//   socket first refuses a datagram / the QP first leaves one unconsumed),
//   and all double up to the window; hold slots grow to the largest
//   datagram they held. A peer that sends a message now and then keeps a few
//   hundred bytes, a busy one grows to the full size.
//   ReleaseIdle() gives all of them back while they hold nothing; the copy
//   buffer then starts again at kInitialBuffer (GrowTx), the rings at 1.
// * fd() is -1: readiness comes from the owner (OnStreamEvent).
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/clock.h"
#include "base/random.h"
#include "base/seq_ring.h"
#include "mem/stag_table.h"
#include "rd/dgram_port.h"
#include "rd/recv_window.h"
#include "rd/send_window.h"
#include "rd/session.h"
#include "transport/sock_addr.h"
#include "transport/transport.h"
#include "wire/dgram.h"

namespace iwarpx::rd {

struct RdStreamConfig {
  SendConfig send;  // capacity: outstanding datagrams; dead_after_ns: FI_IWARPX_RD_TIMEOUT
  // window: datagrams held and credits advertised. An ack request waits
  // 50 µs for a reply to carry it: nothing completes on an ack here (sends
  // complete when copied), so only the sender's window waits that long.
  RecvConfig recv{.ack_request_delay_ns = 50'000};
  // Largest ULPDU per datagram; the QP's max_fpdu_payload must not exceed it.
  size_t max_segment = wire::kDgramMaxUlpdu;
  // Bytes of unacknowledged ULPDUs kept for resending; at least max_segment.
  size_t send_buffer_bytes = size_t{1} << 20;
  // Read Response payloads are kept by reference to the lent region, not
  // copied (RdQp passes its StagTable as the lender; FI_IWARPX_RD_LEND).
  bool lend_reads = true;
};

struct RdStreamStats {
  uint64_t data_sent = 0;      // data datagrams, first transmissions
  uint64_t retransmitted = 0;  // tail probes included
  uint64_t tail_probes = 0;    // tail loss probes (send_window.h)
  uint64_t acks_sent = 0;      // standalone RD acks
  uint64_t probes_sent = 0;
  uint64_t resets_sent = 0;
  uint64_t send_blocked = 0;  // datagrams the socket refused for now
  uint64_t data_received = 0;
  uint64_t duplicates = 0;
  uint64_t held = 0;             // datagrams copied into hold slots
  uint64_t lent = 0;             // data datagrams sent with a lent (uncopied) payload
  uint64_t reclaimed = 0;        // lent payloads copied because their region went away
                                 // or before a resend
  uint64_t unreadable = 0;       // lent payloads whose memory was gone when needed again
  uint64_t stale = 0;            // datagrams of a retired session of the peer, dropped
  uint64_t bundles_sent = 0;     // datagrams carrying several ULPDUs (docs/wire.md §3.6.1)
  uint64_t bundled_records = 0;  // ULPDUs (of data_sent) that left in them
};

// A RESET refusing the peer's `refused` session (docs/wire.md §3.6 rule 3),
// sent as `session` (any non-zero id of the sender; receivers only read the
// echo). RdStream sends it for its own streams; a channel sends it without a
// stream to a datagram whose session nobody here knows, so such a datagram
// costs no state.
wire::DgramHeader ResetHeader(uint32_t local_qpn, uint32_t peer_qpn, uint32_t session,
                              uint32_t refused);

// The owner drives the QP when the stream has news.
class RdStreamOwner {
 public:
  virtual ~RdStreamOwner() = default;
  // In-order bytes arrived, the send window opened, or the stream failed:
  // let the QP read (while readable()) and write (while writable()).
  virtual void OnStreamEvent() = 0;
  // The stream is being used: a send, receive, shutdown, datagram, timer,
  // socket wake-up or failure is starting. From here on it may have a
  // deadline, want the socket or fail (the owner's owner watches it until it
  // is idle again: progress::RdChannel's active set). Must be cheap.
  virtual void OnStreamUsed() {}
  // Work is waiting for the peer's answer although the stream may have
  // nothing in flight (the QP's Read or Atomic Requests were acknowledged,
  // their responses have not come; or the owner's own protocol waits): the
  // stream then probes (see "Failure"). Must be cheap.
  [[nodiscard]] virtual bool AwaitsPeer() const { return false; }
};

class RdStream final : public transport::Connection, private SendWindowSink, private mem::Borrower {
 public:
  enum class Input : uint8_t { kOk, kPeerRestarted };

  RdStream(DgramPort& port, const transport::SockAddr& peer, uint32_t local_qpn, uint32_t peer_qpn,
           const RdStreamConfig& config, Random& random, const Clock& clock, RdStreamOwner& owner,
           const InboundSessions& sessions = {}, mem::StagTable* lender = nullptr);
  ~RdStream() override;

  // A decoded RD datagram (data, ack or control) from this peer QP. `d`
  // views the caller's buffer, valid during the call only.
  Input OnDatagram(const wire::DecodedDgram& d);
  // Resends, acks, probes and the dead-peer check due at clock.NowNs().
  void OnTimer();
  // When OnTimer has work next (UINT64_MAX: none; 0 while corked with
  // ULPDUs held).
  [[nodiscard]] uint64_t Deadline() const;
  // FI_MORE: hold what SendV/SendVLent/SendWhole take from now on instead of
  // transmitting it (the window, sequence numbers and copies are as usual).
  void Cork() { corked_ = true; }
  // Transmits everything held, bundled, and stops holding.
  void Uncork();
  [[nodiscard]] bool corked() const { return corked_; }
  // Records per bundle at most (a bundle is also at most max_segment bytes).
  static constexpr size_t kMaxBundle = 128;
  // The socket became writable: send what it refused before.
  void OnSocketWritable();
  [[nodiscard]] bool wants_socket_write() const { return pending_count_ > 0; }
  // Everything SendV took has been acknowledged by the peer (nothing to
  // resend, nothing waiting for the socket), or the stream failed: closing
  // now loses nothing the QP completed. What an endpoint waits for at close.
  [[nodiscard]] bool settled() const {
    return failed() || (send_.outstanding() == 0 && pending_count_ == 0);
  }
  // Sends the ack the receive window owes now instead of at its deadline
  // (an endpoint about to close: the peer must not wait for it in vain).
  void FlushAck();
  // Fails the stream with `err` (errno-style, e.g. ECONNRESET); the owner is told.
  void Fail(int err);
  // The owner's AwaitsPeer() turned true: the probe is scheduled now (see
  // "Failure") instead of at the next datagram or timer.
  void AwaitsChanged();
  // Gives back the copy buffer and the rings while they hold nothing
  // (nothing unacknowledged or waiting for the socket, no datagram held or
  // backlogged); each is made again, at its initial size, by the next
  // datagram that needs it (rd_stream_idle.cc). The window state (sequence
  // numbers, RTT estimate, sessions) stays. Returns the bytes given back.
  // For an owner that found the stream idle for a while, not per message.
  size_t ReleaseIdle();

  [[nodiscard]] bool failed() const { return err_ != 0; }
  [[nodiscard]] int error() const { return err_; }
  // RecvV would return bytes (or the failure).
  [[nodiscard]] bool readable() const;
  // Whole-FPDU delivery (qp::QueuePair::TakeWholeFpdu): the next FPDU's
  // ULPDU in one piece, when none of its FPDU image was read by RecvV yet
  // and the datagram is contiguous (empty otherwise, and when failed). The
  // span is valid until the stream is next driven (OnDatagram, OnTimer,
  // RecvV, SendV...). PopWhole() then drops that FPDU, as RecvV does once it
  // delivered all of its image.
  [[nodiscard]] ByteSpan WholeHead() const;
  void PopWhole();
  // SendV would take at least one FPDU of the largest size.
  [[nodiscard]] bool writable() const;
  [[nodiscard]] const InboundSessions& sessions() const { return in_sessions_; }
  // The counters (by value: those bumped per datagram live in the stream,
  // the others in a block made at their first count; rd_stream_stats.cc).
  [[nodiscard]] RdStreamStats stats() const;
  [[nodiscard]] const SendWindow& send_window() const { return send_; }
  [[nodiscard]] const RecvWindow& recv_window() const { return recv_; }
  // Bytes of the copy buffer allocated now (it grows with the flight).
  [[nodiscard]] size_t send_buffer_allocated() const { return buf_cap_; }
  [[nodiscard]] uint32_t peer_qpn() const { return peer_qpn_; }
  [[nodiscard]] uint32_t local_qpn() const { return local_qpn_; }
  // For an in-place receive guess (DgramPort::PlacementPredictor): the
  // sequence number and peer session of the next datagram that, arriving in
  // order, would be offered straight to the QP with nothing ahead of it (no
  // backlog, nothing in flight). False if there is no such datagram now (a
  // backlog, datagrams held after a hole, no peer session yet, the stream
  // failed).
  bool NextInOrder(uint32_t* seq, uint32_t* session) const;

  // transport::Connection (a byte stream of FPDUs without CRC or markers).
  transport::IoResult SendV(std::span<const iovec> iov) override;
  // Lent pieces are kept by reference when a lender was given (see above).
  transport::IoResult SendVLent(std::span<const iovec> iov,
                                std::span<const transport::LentIov> lent) override;
  // One ULPDU as one data datagram, without an FPDU image to take apart
  // (qp::QueuePair's whole-Send path): the same copy, window and credit
  // rules as SendV; kWouldBlock with nothing taken when they leave no room.
  transport::IoResult SendWhole(std::span<const iovec> ulpdu) override;
  transport::IoResult RecvV(std::span<const iovec> iov) override;
  [[nodiscard]] bool preserves_message_boundaries() const override { return false; }
  [[nodiscard]] bool connected() const override { return true; }
  transport::IoResult FinishConnect() override { return transport::IoResult::Ok(0); }
  transport::Status ShutdownWrite() override;
  [[nodiscard]] int fd() const override { return -1; }
  [[nodiscard]] transport::SockAddr local_address() const override;
  [[nodiscard]] transport::SockAddr peer_address() const override { return peer_; }

 private:
  // One unacknowledged data datagram: its ULPDU is buf_[offset, offset + len)
  // followed by tail[0, tail_len) (lent region memory of STag `key`, or
  // `owned` once reclaimed; tail_len 0: the whole ULPDU is in buf_).
  struct TxRecord {
    uint32_t seq = 0;
    size_t offset = 0;
    size_t len = 0;
    bool acked = false;
    uint32_t key = 0;  // non-zero while a lend of `key` is held
    const uint8_t* tail = nullptr;
    size_t tail_len = 0;
    std::unique_ptr<uint8_t[]> owned;
    // The lent tail could not be read back (its memory was unmapped while
    // lent): never sent again, a PROBE goes instead; the peer's ack ends it,
    // or the dead timeout fails the stream (EFAULT) after a RESET that fails
    // the peer's session too.
    bool unreadable = false;
  };
  // A lent piece of a SendVLent gather list, by stream position.
  struct LentSpan {
    size_t pos = 0;
    size_t len = 0;
    const uint8_t* data = nullptr;
    uint32_t key = 0;
  };
  // A datagram of the receive window kept for later delivery.
  struct HoldSlot {
    std::vector<uint8_t> bytes;  // the ULPDU
    size_t len = 0;
  };

  // SendWindowSink.
  void Acked(uint32_t seq, uint64_t cookie) override;
  void Resend(uint32_t seq, uint64_t cookie) override;
  void ResendProbe(uint32_t seq, uint64_t cookie) override;
  // mem::Borrower.
  void Reclaim(uint32_t stag) override;
  void DropTail(TxRecord& r);
  // Replaces a lent tail by a copy of its own (the lend ends), read through
  // the kernel (transport/own_memory.h) so an application that unmapped the
  // region gives `unreadable` instead of a fault. Before any resend.
  void OwnTail(TxRecord& r);

  // SendV helpers.
  // Takes the ULPDU at stream position `ulpdu_at` of `iov` (`len` bytes;
  // `tail`: its lent last piece, or nullptr) into the copy buffer and a new
  // record with the next sequence number; not transmitted yet.
  enum class Accepted : uint8_t { kTaken, kNoRoom, kLendRefused };
  Accepted AcceptUlpdu(std::span<const iovec> iov, size_t ulpdu_at, size_t len,
                       const LentSpan* tail, uint64_t now);
  // Transmits (or queues for the socket) the records from `first_new` on.
  void TransmitFrom(uint64_t first_new, uint64_t now);
  bool ReserveTx(size_t len, size_t* offset) const;
  // Whether GrowTx(len) would make room for `len` bytes, and doing it.
  [[nodiscard]] bool CanGrowTx(size_t len) const;
  bool GrowTx(size_t len);
  // ReserveTx after growing the buffer if `len` does not fit at its tail.
  bool PlaceTx(size_t len, size_t* offset);
  // Sends record `cookie`; false if the socket refused it for now.
  bool Transmit(uint64_t cookie, bool ack_request);
  // One past the last record that can leave in one bundle with `first`
  // (first + 1: it goes alone).
  [[nodiscard]] uint64_t BundleEnd(uint64_t first) const;
  // Sends records [first, end) as one bundle; false if the socket refused it.
  bool TransmitBundle(uint64_t first, uint64_t end, bool ack_request);
  void QueuePending(uint64_t cookie);
  void FlushPending();
  void ReleaseAcked();
  // Addresses, session and Y of every RD datagram this stream sends.
  [[nodiscard]] wire::DgramHeader NewHeader(wire::DgramType type) const;
  void FillAck(wire::DgramHeader& h);
  void SendAck();
  void SendProbe();
  void SendReset(uint32_t session);
  // True when the ack fields of `h` reach a record this corked stream holds:
  // numbered at AcceptUlpdu but never sent, so no honest peer can ack it.
  // Such an ack is ignored whole (it would release records Uncork() still
  // transmits).
  [[nodiscard]] bool AckReachesHeld(const wire::DgramHeader& h) const;
  bool SendControl(const wire::DgramHeader& h);
  void CheckProbe(uint64_t now);
  [[nodiscard]] uint64_t AwaitProbeGap() const;

  // Receive helpers.
  void AcceptData(const wire::DecodedDgram& d, uint64_t now);
  // A ULPDU in up to two pieces: a ‖ b (b: the part received in place).
  struct UlpduView {
    ByteSpan a, b;
    [[nodiscard]] size_t size() const { return a.size() + b.size(); }
    // The bytes from `off` to the end of the piece `off` falls in.
    [[nodiscard]] ByteSpan From(size_t off) const {
      return off < a.size() ? a.subspan(off) : b.subspan(off - a.size());
    }
  };
  void HoldCopy(uint32_t seq, UlpduView ulpdu);
  void SettleInflight();
  // The head datagram's ULPDU (in flight or held), or empty if none is ready.
  [[nodiscard]] UlpduView HeadUlpdu() const;
  // The head datagram was delivered whole: the next one becomes the head.
  void PopHead();
  void Notify();

  DgramPort& port_;
  transport::SockAddr peer_;
  uint32_t local_qpn_;
  uint32_t peer_qpn_;
  // What the stream needs of its RdStreamConfig after construction (the
  // windows keep their own parts): not a copy of all of it, per peer.
  size_t max_segment_;
  uint64_t dead_after_ns_;
  const Clock& clock_;
  RdStreamOwner& owner_;
  mem::StagTable* lender_;
  OutboundSession out_session_;
  InboundSessions in_sessions_;
  SendWindow send_;
  RecvWindow recv_;
  int err_ = 0;
  bool write_shut_ = false;
  bool had_inbound_ = false;  // a peer session was adopted once
  bool tx_blocked_ = false;   // the last SendV stopped for lack of credit or room
  bool corked_ = false;       // Cork(): accepted ULPDUs wait for Uncork()
  bool held_ = false;         // records [held_from_, tx_tail_) wait for Uncork()
  bool inflight_active_ = false;
  // Counters bumped per datagram; the rest of RdStreamStats (resends,
  // probes, resets, refusals, duplicates, holds, lending, stale sessions) is
  // counted in rare_, made by rare_stats() at the first of them: a quiet
  // peer's stream keeps 32 bytes of counters, not 112.
  struct HotStats {
    uint64_t data_sent = 0;
    uint64_t acks_sent = 0;
    uint64_t data_received = 0;
  };
  HotStats stats_;
  std::unique_ptr<RdStreamStats> rare_;  // its data_sent/acks_sent/data_received unused
  RdStreamStats& rare_stats() {
    if (rare_ == nullptr) rare_ = std::make_unique<RdStreamStats>();
    return *rare_;
  }

  // Copy buffer and records: records [tx_head_, tx_tail_) are unreleased, in
  // send order; their bytes occupy buf_ from buf_head_ up to buf_tail_
  // (wrapping at buf_cap_; a record that would straddle the end starts at 0).
  // Two small messages' ULPDUs (an RDM EAGER of 8 bytes is ~60 bytes).
  static constexpr size_t kInitialBuffer = 128;
  std::unique_ptr<uint8_t[]> buf_;
  size_t buf_size_;  // budget: unreleased ULPDU bytes (copied and lent) at most
  size_t buf_cap_;   // bytes of buf_, up to buf_size_
  size_t buf_head_ = 0;
  size_t buf_tail_ = 0;
  size_t buf_used_ = 0;    // bytes between head and tail, wasted ends included
  size_t lent_bytes_ = 0;  // tails of unreleased records (lent or reclaimed)
  // The record ring starts at kInitialSlots, the pending and hold rings at
  // none; they grow to the window's depth only when that much is in flight
  // (base/seq_ring.h).
  static constexpr size_t kInitialSlots = 1;  // one datagram in flight
  SeqRing<TxRecord> tx_;
  uint64_t tx_head_ = 0;
  uint64_t tx_tail_ = 0;
  // Records waiting for the socket (cookies), oldest first.
  SeqRing<uint64_t> pending_;
  uint64_t pending_first_ = 0;
  size_t pending_count_ = 0;
  uint64_t held_from_ = 0;
  uint64_t probe_at_ = UINT64_MAX;
  uint64_t last_heard_ = 0;     // last datagram from the peer (dead check while probing)
  uint64_t probing_since_ = 0;  // when the current run of probes was scheduled

  // Receive: the backlog is [consume_seq_, rcv_nxt); the datagram
  // inflight_seq_ may still be in the caller's buffer (inflight_), every
  // other one is in its hold slot (seq & (window - 1)), as are early ones.
  UlpduView inflight_;
  uint32_t consume_seq_ = wire::kDgramInitialSeq;
  uint32_t inflight_seq_ = 0;
  SeqRing<HoldSlot> hold_;
  size_t head_off_ = 0;  // bytes of the oldest backlogged FPDU image already delivered
};

}  // namespace iwarpx::rd
