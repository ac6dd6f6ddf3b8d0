// QueuePair: the connected-mode iWARP engine for one endpoint (RDMAP over DDP
// over MPA FPDUs on a stream Connection; RFC 5040/5041/5044/6581, WIRE.md
// §2-4, docs/design.md "Connected mode engine").
//
// Files (as in Linux siw): queue_pair.cc holds creation, posting, the state
// machine and flushing; qp_tx.cc the transmit side (segmentation into FPDUs,
// gather send with partial-write resume, Read Responses interleaved at FPDU
// boundaries, Terminate at a boundary); qp_rx.cc the receive side
// (FpduReceiver-driven direct placement, checks that yield Terminate causes).
//
// Ownership and threads: the QP borrows the Connection, the StagTable and the
// CompletionSink; all three must outlive it. No thread-safety: the caller
// (progress engine) serialises every call. Nothing blocks.
//
// Memory: the receive ring is allocated in Create() (and again by PostRecv
// after ReleaseIdle gave it back), the receive state of an FPDU by the first
// receive (and again after ReleaseIdle), the SCTP message table
// with the SCTP framing only; the parts a QP of a quiet peer does not need
// start small or come on first use, each at most once per doubling: the send
// ring (kSqInitialSlots, doubling up to sq_size), the transmit batch (one
// FPDU, then kTxBatch), the ORD queue (at the first Read or Atomic), the IRD
// queue (at the first inbound Read or Atomic Request), the Terminate image
// (when one is due) and the receive staging buffer
// (QpConfig::rx_staging_initial, doubling up to kRxStagingSize while reads
// fill it). Nothing else allocates on the data path. ReleaseIdle() gives
// the parts of an idle QP back; each comes again as above (the send ring and
// transmit slot through their grow branches, the staging through RxRead's).
//
// Borrowed memory: a Read Response is sent straight from the responder's
// registered region, resolved through the StagTable for each FPDU. If the
// socket takes only part of that FPDU, the rest is copied into a stash before
// the call returns, so no pointer into a region outlives the call that
// resolved it (the caller's lock then makes deregistration safe); if it takes
// none of it, the FPDU is dropped and built again later.
//
// Driving: the caller calls OnWritable() when the connection is writable and
// wants_write() is true, and OnReadable() when it is readable and
// wants_read() is true. Post*() also try to transmit at once.
//
// Receive read-ahead (qp_rx.cc): the receive path reads into a per-QP staging
// buffer of kRxStagingSize bytes, so one RecvV brings in an FPDU's length,
// header, small payload and trailer, and usually the next FPDUs too. Headers
// are parsed from staging and payload bytes already staged are copied to
// their destination; the rest of a payload is received straight into its
// destination (registered memory / the posted receive) with the scatter list
// [rest of payload, staging]. After an FPDU with at least kRxBulkThreshold
// payload bytes the staging part is cut to what the next header needs, so a
// bulk stream is received with no copy beyond the first staging fill.
// Contract for the progress engine:
//   - OnReadable() processes staged bytes first, then reads until the socket
//     has nothing more, the QP blocks or fails, or the budget is spent. On a
//     byte-stream LLP a RecvV that returns less than asked for ends the call
//     (the socket is empty for now; the next readiness brings the QP back),
//     so everything that arrived together costs one RecvV per wake-up. A
//     call that starts with staged bytes (after a budget stop or a blocked
//     Send) reads on once they are used up, which may cost one kWouldBlock.
//     Budget per call (QpConfig): at most rx_budget_fpdus completed FPDUs,
//     and no new RecvV once rx_budget_bytes bytes were received in the call.
//   - wants_progress(): true when OnReadable() can make progress without new
//     socket readiness (staged bytes left, or the last call stopped on its
//     budget). The caller must call OnReadable() again while it is true,
//     whether or not the poller reports the socket readable; with an
//     edge-triggered poller this is the only signal.
//   - No receive posted: when an untagged Send (or Immediate Data) arrives
//     and no receive is posted, the QP stops (wants_read() and
//     wants_progress() false): nothing more is read, so TCP flow control
//     pushes back on the peer; bytes of later FPDUs already staged stay in
//     staging (at most kRxStagingSize). PostRecv() on such a blocked QP resumes
//     receiving at once, from inside PostRecv(): it processes the staged bytes
//     and reads on like OnReadable() (completions may be reported from inside
//     PostRecv(); a PostRecv() made from a completion callback does not
//     recurse, the running receive loop continues instead).
//   - Holding the peer's requests (HoldRequests(true)): the receive side
//     stops before the first FPDU of anything the peer asks of us — Sends,
//     RDMA Writes, Read and Atomic Requests, Immediate Data — exactly like a
//     Send without a posted receive (nothing placed, answered or executed;
//     nothing more read, so TCP pushes back). Responses to our own Reads and
//     Atomics and Terminates still pass, as does the RFC 6581 RTR (a
//     zero-length Write while the QP awaits it). HoldRequests(false) resumes
//     at once, from inside the call, like PostRecv() on a blocked QP. The
//     RDM endpoint holds a new connection until the peer's SWITCH arrived on
//     its other QP (rdm/rdm_core_rma.cc).
//
// States (one handler per source state in queue_pair.cc):
//   kRts        connected; WRs flow.
//   kClosing    Disconnect() was called: WRs flushed, our write side is shut
//               after the FPDU in flight; waiting for the peer's close.
//   kTerminate  an error was detected: WRs flushed, the Terminate goes out at
//               the next FPDU boundary, then our write side is shut.
//   kError      final. Posts return kBadState.
// Error reporting: OnTerminated(cause, origin) once, then one OnError per
// outstanding WR (send queue in post order, then receives), with the cause.
// Completions for received data are reported only after the FPDU's CRC was
// verified.
//
// Markers towards the peer (markers_tx, RFC 5044 §4) are inserted by copying
// each FPDU (the slow path: mainstream peers negotiate markers off).
// LLP framing: on a byte stream (TCP, the RD stream) the QP writes and
// parses MPA FPDUs. On a connection that preserves_message_boundaries() (SCTP,
// RFC 5043) Create() puts an SctpFraming between the QP and the connection:
// one DDP segment per SCTP message (PPID 16), no MPA framing on the wire; the
// outcome must then have CRC and markers off (else kInvalid). A message the
// framing refuses (wrong PPID, longer than a ULPDU) ends in a Terminate with
// its cause, like a malformed FPDU on TCP (sctp_framing.h).
// Streams on SCTP (SendWr::stream, docs/design.md "Streams for untagged
// Sends"): a Send may travel on a stream other than 0, and a Read Response
// travels on its sink STag's stream (below); every other segment stays on
// stream 0. On SCTP the receive side therefore takes QN 0 messages
// (Sends, Immediate Data) as they arrive, interleaved across streams: the
// first segment of a message claims the next posted receive (receives are
// consumed in arrival order, not MSN order), later segments find their
// message by MSN (the framing guarantees they come on its stream, in order),
// and each message completes when its last segment is placed, whatever the
// others are doing. At most kMaxSctpStreams messages are in progress at once
// (one per stream); a reused MSN of a message in progress is refused. With
// everything on stream 0 this is exactly the TCP behaviour (MSN order).
// Read Responses on SCTP (docs/design.md "Streams for Read Responses"): the
// responder sends each on the stream its sink STag maps to
// (SctpFraming::ReadResponseStream), so responses to Reads with different
// sink STags may arrive in any order. The requester matches a Read Response
// to the oldest outstanding Read with that local STag and requires it to
// continue that Read exactly (TO = local TO + bytes placed, within its
// length, the last flag exactly on its last byte; anything else: Terminate
// DDP tagged, invalid STag or base/bounds, before a byte is placed). An
// Atomic Response (stream 0) matches the oldest outstanding Atomic and its
// request id. Outbound Reads and Atomics are then done out of order, but are
// completed (reported) in ORQ order: a done entry waits in the ORQ until
// those before it are done (qp_orq_sctp.cc). ORD counts it until then.
// When session setup negotiated unordered Read Responses
// (MpaOutcome::sctp_unordered_read_resp) a Read whose sink range overlaps an
// outstanding Read's waits in the SQ until that one is answered, and a
// response segment is matched by (STag, TO, length) to the one outstanding
// Read containing it and counted by bytes (qp_orq_sctp.cc).
// Not supported yet (Create returns kInvalid): the zero-length Send and Read
// RTRs. RFC 7306: Immediate Data
// (WriteWr::with_imm; SendWr::with_imm on a connection that negotiated the
// iwarpx Send with Immediate Data extension, work_request.h) and 64-bit atomics (PostAtomic; Atomic
// Requests share QN 1, its MSN and ORD/IRD with Read Requests; responses use QN 3).
#pragma once

#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/bytes.h"
#include "base/compact_vec.h"
#include "base/result.h"
#include "mem/stag_table.h"
#include "qp/completion_sink.h"
#include "qp/placed_ranges.h"
#include "qp/qp_params.h"
#include "qp/recv_source.h"
#include "qp/sctp_framing.h"
#include "qp/work_request.h"
#include "transport/sctp_message_queue.h"
#include "transport/transport.h"
#include "wire/ddp.h"
#include "wire/error.h"
#include "wire/fpdu.h"
#include "wire/markers.h"
#include "wire/mpa_negotiate.h"
#include "wire/rdmap.h"

namespace iwarpx::qp {

enum class [[nodiscard]] QpStatus : uint8_t{
    kOk,
    kQueueFull,      // send or receive ring full; retry after completions
    kInvalid,        // bad arguments (SGL, lengths, ORD 0 for a Read, config)
    kBadState,       // the QP is not in kRts
    kNotNegotiated,  // Send with Immediate Data, but the MPA exchange did not agree on it
};

enum class QpState : uint8_t { kRts, kClosing, kTerminate, kError };

const char* ToString(QpState s);

inline constexpr size_t kMinFpduPayload = 128;
// MULPDU used instead of a larger configured one when markers go to the peer.
inline constexpr size_t kMaxMarkedFpduPayload = 16384;
// Bytes an FPDU adds to its ULPDU without markers: the 2-byte length, up to 3
// pad bytes and the CRC.
inline constexpr size_t kFpduOverhead =
    wire::kFpduLengthSize + wire::kFpduMaxPad + wire::kFpduCrcSize;
// Receive staging (read-ahead) buffer, allocated once per QP.
inline constexpr size_t kRxStagingSize = size_t{16} * 1024;
// The smallest QpConfig::rx_staging_initial (holds a bulk stream's trailer,
// next length and header with room to spare).
inline constexpr size_t kRxStagingMin = 256;
// An FPDU with at least this many payload bytes marks a bulk stream: the
// staging part of the next reads is cut to the next header.
inline constexpr size_t kRxBulkThreshold = 1024;

// Receive-path counters (tests and the provider's extension stats).
struct RxStats {
  uint64_t recv_calls = 0;     // RecvV calls, every outcome counted
  uint64_t fpdus = 0;          // FPDUs completed with a verified CRC
  uint64_t direct_bytes = 0;   // payload bytes received straight into their destination
  uint64_t staged_copies = 0;  // payload bytes copied to their destination from staging or
                               // from a whole FPDU the connection offered (TakeWholeFpdu)
  uint64_t bad_crc = 0;        // FPDUs whose MPA CRC did not match (the QP Terminates)
  uint64_t sends_taken = 0;    // whole Sends the RecvSource consumed (TakeSend), no receive used
};

// Transmit-path counters: FPDUs framed and the payload they carry (data
// after the DDP/RDMAP header, as RxStats counts it), once per FPDU.
struct TxStats {
  uint64_t fpdus = 0;
  uint64_t payload_bytes = 0;
};

// Terminates this QP sent (a protocol or protection error it detected) and
// received from the peer: at most one of the two is ever non-zero, and it is 1.
struct TermStats {
  uint64_t sent = 0;
  uint64_t received = 0;
};

class QueuePair {
 public:
  // Validates the configuration and the negotiated outcome and allocates all
  // queues. The QP starts in kRts; call Start() next.
  // `early`: SCTP messages session setup received before its answer
  // (cm::SetupEndpoint::TakeEarlySegments): the QP receives them before
  // anything else from the connection, as if they were still queued there
  // (SctpFraming). Not empty on a connection without SCTP framing: kInvalid.
  static Result<std::unique_ptr<QueuePair>, QpStatus> Create(
      transport::Connection& conn, mem::StagTable& stags, uint32_t pd, const wire::MpaOutcome& mpa,
      const QpConfig& config, CompletionSink& sink, transport::SctpMessageQueue early = {});
  ~QueuePair();
  QueuePair(const QueuePair&) = delete;
  QueuePair& operator=(const QueuePair&) = delete;

  // Sends the RTR (initiator with send_rtr) and reports OnEstablished on the
  // initiator; a responder with established_after_rtr reports it when the
  // RTR arrives (and sends nothing before).
  void Start();

  QpStatus PostSend(const SendWr& wr);
  QpStatus PostRecv(const RecvWr& wr);
  // Receives on demand (qp/recv_source.h; nullptr: none): asked for one
  // when a Send or Immediate Data finds the receive queue empty.
  void SetRecvSource(RecvSource* source) { recv_source_ = source; }
  QpStatus PostWrite(const WriteWr& wr);
  QpStatus PostRead(const ReadWr& wr);
  QpStatus PostAtomic(const AtomicWr& wr);
  // Stops (true) or resumes (false) the receive side before the peer's next
  // request FPDU (file comment, "Holding the peer's requests").
  void HoldRequests(bool hold);
  [[nodiscard]] bool requests_held() const { return hold_requests_; }

  // Orderly local close: flushes every WR (origin kLocalClose) and shuts the
  // write side after the FPDU in flight.
  void Disconnect();
  // The LLP reported the connection ended (the peer's close or reset) while
  // the QP reads nothing (a Send waits for a receive, or requests are held):
  // ends it as reading the end would (kConnectionLost: OnTerminated, every
  // WR flushed), without reading what came before the end.
  void LinkLost();

  void OnWritable();
  void OnReadable();
  // Whole FPDUs from a message-preserving connection (qp_rx_whole.cc): an RD
  // stream offers the ULPDU of its next FPDU, in one piece, before any byte of
  // that FPDU went through RecvV. True: the QP took it, with the same checks,
  // placement, completions and Terminates as the byte-stream path; the caller
  // drops that FPDU from the connection (it must not be read again). False,
  // with nothing taken: the QP is not between FPDUs with staging empty, runs
  // CRC, markers or SCTP framing, is not RTS, holds requests, is inside its
  // receive loop, cannot place it now (a Send with no receive posted) or the
  // header does not parse; the caller then uses OnReadable(), which reads the
  // same FPDU byte by byte and reports any error as before. Completions may
  // be reported from inside the call; the connection must not be read from
  // them (a PostRecv() made there does not read: it returns).
  // A whole Send with no receive posted is first offered to the RecvSource
  // (recv_source.h TakeSend): taken, it uses its MSN and completes nothing.
  bool TakeWholeFpdu(ByteSpan ulpdu);
  [[nodiscard]] bool wants_write() const;
  [[nodiscard]] bool wants_read() const;
  // Call OnReadable() again without waiting for readiness (file comment).
  [[nodiscard]] bool wants_progress() const;
  // Received bytes waiting in the staging buffer (may be non-zero while the
  // QP is blocked for lack of a receive, or after it failed).
  [[nodiscard]] size_t rx_staged_bytes() const { return rx_stage_tail_ - rx_stage_head_; }
  [[nodiscard]] const RxStats& rx_stats() const { return rx_stats_; }
  [[nodiscard]] const TxStats& tx_stats() const { return tx_stats_; }
  // The negotiated MPA outcome (CRC, markers) this QP runs with.
  [[nodiscard]] const wire::MpaOutcome& mpa() const { return mpa_; }
  [[nodiscard]] TermStats term_stats() const { return {term_stats_.sent, term_stats_.received}; }
  // Streams a Send may use (SendWr::stream < this): the SCTP association's,
  // at most kMaxSctpStreams; 1 over TCP.
  [[nodiscard]] uint16_t tx_streams() const {
    return framing_ ? std::max<uint16_t>(framing_->tx_streams(), 1) : 1;
  }
  // The SCTP framing adapter (its per-stream counters; tests), null on TCP.
  [[nodiscard]] const SctpFraming* sctp_framing() const { return framing_.get(); }
  // Where the payload of the next Read Response would be placed if it came
  // now as the next FPDU (an in-place receive guess, rd::DgramPort): the
  // oldest outstanding Read's sink STag, the TO the response must continue
  // at, its resolved address (checked for local write), the bytes still due,
  // and the payload size of the responses seen so far that were not last
  // (0 until one was seen). False when the next FPDU would not be that
  // response with nothing placed before it: not RTS, SCTP framing, part of
  // an FPDU received or staged, the receive held, no Read at the head of
  // the ORQ, or its sink no longer resolves.
  struct ReadResponseGuess {
    uint32_t stag = 0;
    uint64_t to = 0;
    uint8_t* dest = nullptr;
    size_t remaining = 0;
    size_t segment = 0;
  };
  bool NextReadResponse(ReadResponseGuess* out) const;
  // Send queue entries a Post* could still take.
  [[nodiscard]] size_t sq_free() const { return sq_capacity_ - (sq_tail_ - sq_head_); }

  [[nodiscard]] QpState state() const { return state_; }
  [[nodiscard]] bool established() const { return established_; }
  // Outstanding outbound Reads (at most ORD) and inbound ones (at most IRD).
  [[nodiscard]] size_t outstanding_reads() const { return orq_count_; }
  [[nodiscard]] size_t inbound_reads() const { return irq_count_; }
  // Gives back what a QP with nothing in progress keeps between messages
  // (file comment, "Memory"; qp_idle.cc): the send ring, the transmit
  // slot, the receive staging, the receive ring and the ORD/IRD queues,
  // each only while it holds nothing (no WR outstanding, no receive posted,
  // nothing staged or being transmitted, no Read or Atomic either way), and
  // the receive state of an FPDU between FPDUs (not with markers).
  // Every part is made again, at its initial size, by the first call that
  // needs it, exactly as after Create(). Only in kRts and not on SCTP (its
  // message table spans messages). Returns the bytes given back (0: none).
  // For an owner that finds the QP idle for a while (progress::IdleSweep),
  // not for the data path: a part given back costs an allocation again.
  size_t ReleaseIdle();

 private:
  enum class SqOp : uint8_t { kSend, kWrite, kRead, kAtomic };
  // Fields ordered by size (no padding holes): the send ring holds one per
  // slot, one on a quiet peer's QP.
  struct SqEntry {
    uint64_t context = 0;
    Sgl sgl;
    size_t length = 0;
    uint64_t remote_to = 0;
    uint64_t local_to = 0;
    size_t tx_done = 0;  // payload bytes cut into FPDUs so far
    size_t rx_done = 0;  // Read: response bytes placed so far
    uint64_t imm = 0;
    // Atomic: the RFC 7306 request fields on the 8-byte word (work_request.h)
    // and where the original value's lane goes.
    uint64_t operand = 0;
    uint64_t operand_mask = 0;
    uint64_t compare = 0;
    uint64_t compare_mask = 0;
    void* result = nullptr;
    uint64_t xor_operand = 0;  // on the word, in the lane
    uint32_t flags = 0;
    uint32_t remote_stag = 0;
    uint32_t local_stag = 0;
    uint16_t stream = 0;  // Send on SCTP: SendWr::stream
    SqOp op = SqOp::kSend;
    bool completed = false;  // reported (or unsignaled and finished)
    bool has_imm = false;    // Write / Send followed by Immediate Data
    bool imm_next = false;   // Send: its data is cut; the Immediate Data is next
    wire::AtomicOp atomic_op = wire::AtomicOp::kFetchAdd;
    uint8_t result_size = 8;
    uint8_t result_shift = 0;
    bool xor_loop = false;  // AtomicWr::xor_loop: compare_data is the guess
  };
  struct RqEntry {
    uint64_t context = 0;
    Sgl sgl;
    size_t length = 0;
    bool done = false;  // SCTP: completed out of order, not yet retired
  };
  // SCTP: a QN 0 message being received (see the file comment).
  struct RxMsg {
    bool active = false;
    uint32_t msn = 0;
    uint64_t rq_seq = 0;  // the receive it claimed
    size_t mo = 0;        // bytes placed so far
  };
  // An inbound Read Request being answered.
  struct IrqEntry {
    uint32_t sink_stag = 0;
    uint64_t sink_to = 0;
    // The source is kept as STag/TO, never as a pointer: each Read Response
    // FPDU re-resolves it at send time, so a region deregistered or
    // invalidated after the request arrived is refused, not read.
    uint32_t source_stag = 0;
    uint64_t source_to = 0;
    size_t length = 0;
    size_t done = 0;
    // An Atomic Request, executed when it reaches the head (after the Read
    // Requests that arrived before it have been answered).
    bool atomic = false;
    wire::AtomicRequestBody request;  // target re-resolved when executed
  };
  // What to do when an FPDU has been fully written.
  enum class TxDone : uint8_t { kNothing, kSqSegment, kTerminate };
  // The FPDU being written: header bytes, framing, and the gather list.
  // Fields ordered by size (no padding holes).
  struct TxFpdu {
    std::array<uint8_t, 72> header{};
    wire::FpduFraming framing;
    std::array<iovec, kMaxSge + 3> iov{};
    size_t header_size = 0;
    size_t iov_count = 0;
    size_t total = 0;
    size_t sent = 0;
    uint64_t sq_seq = 0;  // kSqSegment: the WR's sequence number
    // The payload points into a region only borrowed through an STag (a Read
    // Response source): it must not be referenced once the call that
    // resolved it returns (see StashBorrowedPayload).
    // Offered to the connection as lent memory (transport::LentIov): iov[lent_iov]
    // is the payload, in the region of STag lent_key.
    uint32_t lent_key = 0;
    uint16_t stream = 0;  // SCTP stream (SctpFraming, "Streams")
    bool active = false;
    TxDone done = TxDone::kNothing;
    bool last = false;  // kSqSegment: the WR's last FPDU; a Read Response: its Read's last
    bool borrowed = false;
    uint8_t lent_iov = 0;
    bool stashed = false;    // its rest lives in tx_stash_ (and markers use it too)
    bool unordered = false;  // SCTP: sent unordered (a Read Response, negotiated)
  };
  enum class RxDest : uint8_t { kNone, kTagged, kRecv };
  enum class Dispatch : uint8_t { kProceed, kBlock, kFailed };
  // Internal state-machine events.
  enum class Event : uint8_t {
    kLocalError,    // we detected a protocol/protection error: send Terminate
    kTermReceived,  // the peer's Terminate arrived
    kLinkDown,      // EOF/reset from the LLP
    kDisconnect,    // local Disconnect()
    kTermSent,      // our Terminate (or close) is written
  };

  QueuePair(std::unique_ptr<SctpFraming> framing, transport::Connection& conn,
            mem::StagTable& stags, uint32_t pd, const wire::MpaOutcome& mpa, const QpConfig& config,
            CompletionSink& sink);

  // --- queue_pair.cc
  QpStatus PostSq(const SqEntry& entry);
  void Fire(Event ev, wire::TermCause cause, ByteSpan offending, size_t segment_length);
  void StateRts(Event ev, wire::TermCause cause, ByteSpan offending, size_t segment_length);
  void StateClosing(Event ev);
  void StateTerminate(Event ev);
  void FlushAll(const WcError& error);
  void Shutdown();
  void RetireSq();
  void CompleteSq(uint64_t seq);
  SqEntry& Sq(uint64_t index) { return sq_[index % sq_.size()]; }
  const SqEntry& Sq(uint64_t index) const { return sq_[index % sq_.size()]; }
  void MarkEstablished();

  // --- qp_tx.cc
  void ProcessTx();
  // What BuildNext builds now: a queued Terminate first, then (in RTS and not
  // held) the RTR, then Read and Atomic Responses taking turns with the SQ.
  enum class NextFpdu : uint8_t { kNone, kTerminate, kRtr, kReadResponse, kAtomicResponse, kSq };
  NextFpdu Next() const;
  // Builds `next` (what Next() just said) into tx_; false: nothing to send now.
  bool BuildNext(NextFpdu next);
  bool BuildSqFpdu();
  // The Atomic Request of SQ entry `seq` (its first or, for an XOR loop, a
  // later attempt), queued on the ORQ.
  Result<size_t, wire::WireError> EncodeAtomic(uint64_t seq);
  bool BuildReadResponse();
  bool BuildAtomicResponse();
  void BuildTerminate();
  void SetPayload(const Sgl& sgl, size_t offset, size_t len);
  bool Frame();
  bool FrameWithMarkers();
  bool WriteBatch();  // false: would block or failed
  size_t TxBatchLimit() const;
  // The k-th oldest FPDU of the batch.
  TxFpdu& Slot(size_t k) { return tx_ring_[(tx_head_ + k) % tx_ring_.size()]; }
  // Copies the unsent rest of a borrowed FPDU into tx_stash_, so that no
  // pointer into a region survives the call: the application may deregister
  // and free it as soon as it can take the engine lock.
  void StashBorrowedPayload(TxFpdu& f);
  // The last FPDU of the batch is a Read Response of which the connection
  // took nothing (called newest first for each such FPDU; an RD stream whose
  // window is full refuses whole FPDUs): drop it and give its bytes back to
  // its IRQ entry, so it is built again, from the region resolved anew, when
  // the connection takes more. Stashing it instead copied every 64 KiB
  // response the window held back. Over TCP and SCTP too (a full socket): a
  // source region closed before the rebuild then ends the Read with a
  // Terminate one FPDU earlier than the stash did, as every later FPDU of
  // that Read would have.
  void UnbuildReadResponse(TxFpdu& f);
  void FinishTxFpdu();
  bool SqHasWork() const;
  // --- qp_tx_whole.cc
  // A Send or an RDMA Write of one segment straight to the connection
  // (Connection::SendWhole) when nothing else is queued or owed: no
  // send-queue entry, no FPDU framing. False with nothing sent otherwise
  // (PostSq's path then).
  bool SendWhole(const SendWr& wr);
  bool WriteWhole(const WriteWr& wr);
  // An RDMA Read Request the same way (`e`: the Read's send-queue entry as
  // PostRead made it); the entry goes in place with its ORQ entry as
  // BuildSqFpdu leaves them, so its response completes it as before.
  bool ReadWhole(const SqEntry& e);
  // Whether a ULPDU of `payload` bytes behind a `header_size`-byte header may
  // go whole now: RTS, no framing, CRC or markers, nothing queued, built,
  // owed or outstanding, and it fits one segment.
  [[nodiscard]] bool WholeAllowed(size_t header_size, size_t payload) const;
  // Hands `header` + the non-empty pieces of `sgl` to the connection as one
  // ULPDU and counts it; false (nothing sent) when the connection refuses.
  bool HandWhole(std::span<const uint8_t> header, const Sgl& sgl);

  // --- qp_rx.cc
  void ProcessRx();
  void DrainClosing();
  bool RxStep();  // false: stop (would block, blocked, closed, failed, budget)
  bool RxBlocked() const;
  bool RxFromStaging();
  bool RxHeaderBytes(ByteSpan staged);
  // How many ULPDU bytes are header, from the DDP and RDMAP control bytes:
  // the DDP header for opcodes that may carry payload, the whole ULPDU for
  // those that may not (0: such a ULPDU is longer than the header copy).
  static size_t RxHeaderTarget(uint8_t ddp_ctrl, uint8_t rdmap_ctrl, size_t ulpdu_len);
  bool RxPayloadFromStaging(ByteSpan staged);
  bool RxRead();
  size_t PayloadIov(size_t offset, size_t len, std::span<iovec> out) const;
  Dispatch DispatchHeader();
  // TakeWholeFpdu's offer of a whole plain Send to the RecvSource (TakeSend);
  // true if it took `payload`.
  bool OfferSend(const wire::PlainSend& s, ByteSpan payload);
  [[nodiscard]] bool HeldByRequestHold() const;
  Dispatch DispatchSend();
  // No receive posted (TCP/RD receive queue), after asking the RecvSource.
  bool RqEmpty();
  Dispatch DispatchTagged(bool read_response);
  Dispatch DispatchReadRequest();
  Dispatch DispatchImmediate();
  Dispatch DispatchSendSctp();
  Dispatch DispatchImmediateSctp();
  // SCTP: reports receive `seq` (claimed in arrival order) and retires the
  // completed prefix of the receive queue.
  void CompleteRecvSctp(uint64_t seq, size_t bytes, const RecvInfo& info);
  RxMsg* FindRxMsg(uint32_t msn);
  Dispatch DispatchAtomicRequest();
  Dispatch DispatchAtomicResponse();
  // --- qp_orq_sctp.cc (SCTP: responses matched by STag, completed in order)
  void PushOrq(uint64_t seq);
  Dispatch DispatchReadResponseSctp();
  Dispatch DispatchReadResponseUnordered();
  // The k-th ORQ entry from the head if it is a Read still waiting for its
  // response (its slot in *slot), else nullptr: what both SCTP matchers scan.
  [[nodiscard]] const SqEntry* PendingReadSctp(size_t k, size_t* slot) const;
  Dispatch DispatchAtomicResponseSctp();
  // Unordered Read Responses: true while Read `e`'s sink range overlaps an
  // outstanding Read's (it waits in the SQ until that one is answered).
  [[nodiscard]] bool ReadWaitsSctp(const SqEntry& e) const;
  // The current Read Response segment is placed: count it, and on its last
  // segment mark the Read done. False after RxFail.
  bool FinishReadResponseSctp();
  // Pops the done prefix of the ORQ, completing each done entry in order.
  void RetireOrqSctp();
  void RxFpduComplete();
  void RxFail(wire::TermCause cause);
  bool AdmitInboundRequest(uint32_t msn);  // QN 1: MSN order and IRD room
  bool AdvanceRx(ByteSpan bytes);
  void ResetRxFpdu();
  bool HandleIo(const transport::IoResult& r);
  // The FPDU receiver's configuration (from the negotiated outcome).
  [[nodiscard]] wire::FpduRxConfig RxConfig() const;
  // Staging made again after ReleaseIdle gave it back (not on the data path:
  // RxRead makes it through its grow branch).
  void EnsureStaging();

  // Members are grouped by size (pointers and 64-bit counters, then 32-bit,
  // then bytes) so the object has no padding holes; the rings are
  // CompactVecs (16 bytes, not a std::vector's 24): an RDM endpoint keeps
  // one QueuePair per datagram peer. Parts only some QPs use are allocated
  // on first use: the SCTP message table (with the framing), the ORQ (first
  // Read or Atomic), the IRQ (first inbound one), the Terminate image.

  // Message-preserving LLP (SCTP): the framing adapter conn_ refers to.
  std::unique_ptr<SctpFraming> framing_;
  transport::Connection& conn_;
  mem::StagTable& stags_;
  CompletionSink& sink_;
  RecvSource* recv_source_ = nullptr;
  // The outcome and effective config, shared with the QPs that have equal
  // ones (qp/qp_params.h); mpa_ and config_ name its two parts.
  std::shared_ptr<const QpParams> params_;
  const wire::MpaOutcome& mpa_;
  const QpConfig& config_;

  // Send queue: entries [sq_head_, sq_tail_), next to transmit sq_tx_; entry
  // i lives at sq_[i % sq_.size()]. The storage starts at kSqInitialSlots and
  // doubles when full, up to sq_capacity_ (config.sq_size): a QP that never
  // has many sends outstanding (most peers of an RDM endpoint) does not pay
  // for a deep queue's 200-byte entries.
  // One slot to start: a quiet peer has one send outstanding at a time (an
  // RDM message's Send completes when the RD stream copied it).
  static constexpr size_t kSqInitialSlots = 1;
  // Doubles the send ring (or makes it, kSqInitialSlots, after ReleaseIdle).
  void GrowSq();
  CompactVec<SqEntry> sq_;
  size_t sq_capacity_ = 0;
  uint64_t sq_head_ = 0;
  uint64_t sq_tx_ = 0;
  uint64_t sq_tail_ = 0;
  // Receive queue. On SCTP receives are claimed in arrival order from
  // rq_next_ on and complete out of order (RqEntry::done); rq_head_ is the
  // oldest not yet completed. Over TCP rq_next_ stays unused.
  CompactVec<RqEntry> rq_;
  uint64_t rq_head_ = 0;
  uint64_t rq_next_ = 0;
  uint64_t rq_tail_ = 0;
  // SCTP: messages in progress (kMaxSctpStreams slots, made with the
  // framing; null on TCP and the RD stream), and the current segment's.
  std::unique_ptr<std::array<RxMsg, kMaxSctpStreams>> rx_msgs_;
  RxMsg* rx_msg_ = nullptr;
  // Outstanding outbound Reads (SQ slots), in request order; ORD slots made
  // at the first Read or Atomic (PushOrq).
  CompactVec<uint64_t> orq_;  // SQ sequence numbers
  // SCTP: the state of each ORQ slot (qp_orq_sctp.cc). kDone: its response
  // is in, complete it when it reaches the head; kRetired: an XOR loop's
  // missed attempt, dropped silently when it reaches the head.
  enum class OrqSlot : uint8_t { kPending, kDone, kRetired };
  CompactVec<OrqSlot> orq_state_;
  size_t rx_orq_slot_ = 0;  // SCTP: the ORQ slot the current response answers
  // SCTP, unordered Read Responses: bytes placed per ORQ slot (made at the
  // first Read or Atomic of a QP that negotiated them; null otherwise).
  std::unique_ptr<PlacedRanges> orq_placed_;
  // An XOR compare-and-swap loop in progress (AtomicWr::xor_loop) holds the
  // send queue: xor_seq_ is its entry, xor_retry_ says its next guess is due.
  uint64_t xor_seq_ = 0;
  size_t orq_head_ = 0;
  size_t orq_count_ = 0;
  size_t ord_ = 0;
  // Inbound Read Requests, in arrival order.
  CompactVec<IrqEntry> irq_;
  size_t irq_head_ = 0;
  size_t irq_count_ = 0;

  // Transmit batch: FPDUs [tx_head_, tx_head_ + tx_count_) of the ring are
  // built and not yet completely written; tx_ is the one being built. The
  // ring starts with one slot (a TxFpdu is 256 bytes) and grows to kTxBatch
  // once a batch filled it with more work waiting (tx_ring_wanted_), at a
  // moment it is empty (a built FPDU's iovecs point into its own slot): a QP
  // that sends one message now and then (an RDM peer) keeps one slot.
  static constexpr size_t kTxBatch = 16;
  static constexpr size_t kTxBatchBytes = size_t{512} * 1024;
  CompactVec<TxFpdu> tx_ring_ = CompactVec<TxFpdu>(1);
  size_t tx_head_ = 0;
  size_t tx_count_ = 0;
  TxFpdu* tx_ = tx_ring_.data();
  // One FPDU with markers, allocated on first use (Stash()): a QP whose
  // connection takes whole FPDUs and has no markers (an RD stream) never
  // needs it, so it costs an RDM peer nothing.
  uint8_t* Stash() {
    if (!tx_stash_) tx_stash_ = std::make_unique_for_overwrite<uint8_t[]>(tx_stash_size_);
    return tx_stash_.get();
  }
  size_t tx_stash_size_ = 0;
  std::unique_ptr<uint8_t[]> tx_stash_;
  // Markers towards the peer (mpa_.markers_tx): FPDUs are copied into
  // tx_marker_body_, then marked into tx_stash_ (RFC 5044 §4; the peer asked).
  CompactVec<uint8_t> tx_marker_body_;
  wire::MarkerInserter marker_tx_;
  // The Terminate to send (DDP/RDMAP header image), made when an error is
  // detected (StateRts); sent by BuildTerminate.
  struct TermImage {
    std::array<uint8_t, 72> bytes{};
    size_t size = 0;
  };
  std::unique_ptr<TermImage> term_;

  // Receive state of the FPDU in progress: the receiver, the header copy
  // and the decoded segment (400 bytes), made by the first ProcessRx and
  // given back by ReleaseIdle between FPDUs (not with markers: their
  // position spans FPDUs), so a quiet RD peer does not keep it.
  struct RxFpdu {
    explicit RxFpdu(const wire::FpduRxConfig& c) : rx(c) {}
    wire::FpduReceiver rx;
    std::array<uint8_t, 128> hdr{};
    wire::Segment seg;
    // ULPDU length of a whole FPDU being taken (TakeWholeFpdu), 0 otherwise:
    // the segment length a Terminate reports (the receiver never saw it).
    size_t whole_len = 0;
  };
  std::unique_ptr<RxFpdu> rxf_;
  size_t rx_hdr_target_ = 0;
  size_t rx_payload_len_ = 0;
  size_t rx_payload_done_ = 0;
  uint8_t* rx_tagged_ = nullptr;
  const Sgl* rx_sgl_ = nullptr;
  size_t rx_sgl_offset_ = 0;  // MO of this segment within the receive buffer
  size_t rx_send_mo_ = 0;     // bytes of the current inbound Send message so far
  // A Send announced its Immediate Data (iwarpx extension): the receive at
  // the RQ head holds its rx_imm_bytes_ bytes and completes with the next
  // QN-0 message, which must be that Immediate Data (rx_imm_due_).
  size_t rx_imm_bytes_ = 0;
  // SCTP: the receive the Send claimed (its rq_ sequence), completed by the
  // Immediate Data that follows it on stream 0.
  uint64_t rx_imm_rq_seq_ = 0;
  // Staging: bytes [rx_stage_head_, rx_stage_tail_) were received and not
  // yet consumed. RecvV only happens with staging empty, so no compaction.
  std::unique_ptr<uint8_t[]> rx_stage_;
  size_t rx_stage_size_ = 0;
  size_t rx_stage_head_ = 0;
  size_t rx_stage_tail_ = 0;
  size_t rx_pass_fpdus_ = 0;  // this pass: FPDUs completed
  size_t rx_pass_bytes_ = 0;  // this pass: bytes received
  RxStats rx_stats_;
  TxStats tx_stats_;

  // 32-bit fields.
  uint32_t pd_;
  uint32_t rx_read_segment_ = 0;  // payload of the last Read Response that was not last
  uint32_t tx_msn_send_ = 1;
  uint32_t tx_msn_read_ = 1;
  uint32_t tx_msn_atomic_resp_ = 1;
  uint32_t rx_msn_send_ = 1;
  uint32_t rx_msn_read_ = 1;
  uint32_t rx_msn_atomic_resp_ = 1;

  // Byte-sized state and flags.
  // Terminates sent / received: each at most 1 (TermStats), so a byte each.
  struct {
    uint8_t sent = 0;
    uint8_t received = 0;
  } term_stats_;
  QpState state_ = QpState::kRts;
  bool established_ = false;
  bool awaiting_rtr_ = false;
  bool tx_held_ = false;
  bool rtr_pending_ = false;
  bool write_shut_ = false;
  bool terminate_queued_ = false;
  bool shutdown_after_tx_ = false;
  bool rx_wait_recv_ = false;   // SCTP: the current segment waits for a posted receive
  bool hold_requests_ = false;  // HoldRequests(true)
  bool rx_held_ = false;        // the current FPDU is a request stopped by the hold
  bool xor_busy_ = false;
  bool xor_retry_ = false;
  bool prefer_irq_ = false;
  bool tx_ring_wanted_ = false;
  bool rx_hdr_done_ = false;
  bool rx_dispatched_ = false;
  bool rx_closed_ = false;
  RxDest rx_dest_ = RxDest::kNone;
  bool rx_imm_due_ = false;
  bool rx_imm_solicited_ = false;
  bool rx_stage_grow_ = false;    // the last read filled staging: double it before the next
  bool rx_bulk_ = false;          // the last FPDU dispatched had a bulk payload
  bool rx_running_ = false;       // inside ProcessRx (PostRecv must not recurse)
  bool rx_budget_hit_ = false;    // the last ProcessRx stopped on its budget
  bool rx_short_read_drains_;     // byte stream: a short RecvV means "empty for now"
  bool rx_pass_drained_ = false;  // this pass: a RecvV came back short
};

}  // namespace iwarpx::qp
