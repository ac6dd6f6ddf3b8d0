// RdmCore: the reliable-datagram message (RDM) service of one endpoint,
// without libfabric types: libfabric's connectionless send/receive and tagged
// semantics on top of RD queue pairs (progress::RdChannel, one RdQp per
// peer), with the message header of wire/rdm_msg.h (docs/wire.md §3.10,
// docs/design.md "RDM endpoint").
//
// * Every message is one RDMAP Send to the peer's QP. The send-rule chain
//   (config.send_rules) picks its channel: UD-SR goes EAGER (header + data,
//   copied by the QP into the RD stream; only up to eager_limit() bytes),
//   UD-ZCopy goes RTS: the source iovecs are registered for remote read and
//   described in the header, the receiver pulls them with RDMA Reads straight
//   into the matched receive buffer and answers FIN, which completes the send
//   (zero-copy rendezvous). With config.rndv_write (FI_IWARPX_RNDV=write,
//   rdm_core_write.cc) the RTS asks for the RDMA-write handshake instead
//   (seed 001 §5): the receiver registers the matched buffer for remote
//   write and answers CTS naming it; the sender RDMA Writes the data and
//   sends FIN (W) behind the Writes on the same QP, which completes the
//   receive (RDMAP orders the Writes' placement before the FIN's delivery)
//   and, once the QP took it, the send. The receiver follows whatever the
//   RTS asks, so endpoints with different settings interoperate.
// * Copy rendezvous (rdm_core_copy.cc; docs/design.md "Copy fallback"): a
//   message the chain gives `copy` goes as an RTS (C) without registration;
//   the matched receiver answers CTS (C) with the bytes it takes and its
//   largest fragment, and the sender sends the data as eager-sized DATA
//   Sends (from the pending pass, at most kCopyWindow in flight), which the
//   receiver copies into the buffer at their offset; the receive completes
//   with the last byte, the send once the last DATA's Send completed (as
//   EAGER). A zero-copy rendezvous whose buffer cannot be registered falls
//   back to it: the sender sends RTS (C) instead of RTS, a receiver answers
//   any RTS with CTS (C) (counted in copy_fallbacks).
// * Receives: bounce receives of bounce_size bytes. An RD QP keeps none
//   posted: it takes one from the endpoint's pool when a message arrives
//   (qp::RecvSource, rdm_core_bounce.cc, like a shared receive queue), so a
//   quiet peer holds no buffer and the buffers in use stay few and hot. A
//   connected QP keeps `bounces_per_peer` posted. An arriving message is
//   matched against posted receives (TagMatcher; untagged and tagged
//   separately) in arrival order; unmatched ones stay in their bounce as
//   unexpected messages. Bounces keep coming while the unexpected total stays
//   under unexpected_limit, and beyond it for a peer that holds fewer than
//   bounces_per_peer unexpected messages itself; otherwise the peer's QP
//   runs short of receives and the RD window closes (backpressure, not
//   loss) until unexpected messages are taken.
// * Order: one QP per peer delivers in order, so messages between a pair are
//   matched in send order (FI_ORDER_SAS, MPI's non-overtaking rule).
// * Connected channels (rdm_core_rc.cc, docs/design.md "Connected channels in
//   the RDM endpoint"): when the chain names an rc_* channel, the core listens
//   on TCP at its UDP address and port number; a peer that reaches
//   config.rc.threshold_msgs/bytes sent of messages the chain would put on
//   a connection (ChainWantsLink) gets a connected QP (MPA over TCP, at
//   most config.rc.max_links per core). Once it is established, sends to the
//   peer go on it after a SWITCH on the RD QP; the receiver matches what
//   arrives on the connection only after that SWITCH (order across the
//   change). The same EAGER/RTS/FIN protocol runs on both QPs; an RTS is
//   read and answered on the QP it came on. A connect that fails leaves the
//   peer on datagrams.
// * A broken connection falls back without loss (rdm_core_fallback.cc,
//   rc_fallback.h): EAGER, RTS and FIN on the connection are numbered and
//   kept by the sender until the peer reports them taken (TAKEN); after a
//   break both sides say on RD how many they took (BROKEN), send again on
//   RD what the other did not take, then RESENT; the receiver holds the
//   peer's later RD messages until then. Read rendezvous restart on RD, the
//   write handshake and the copy rendezvous in progress on the connection
//   (also their unexpected RTS) fail on both sides. If the RD session fails
//   too, everything fails as for any dead peer.
// * RMA and atomics follow the messages (rdm_core_rma.cc, RouteRma): on the
//   RD QP until our SWITCH, then on the connection, so one QP orders a
//   peer's messages and RMA (FI_ORDER_SAW, WAS, RAW, RAS, ...). Across the
//   switch the order holds because our first FPDU of any kind on a
//   connection (message, rendezvous Read, FIN/CTS, RC-FP credit, RMA,
//   SWITCH back) follows our SWITCH on RD (SwitchFirst), and the receiver's
//   connected QP holds the peer's requests (qp::QueuePair::HoldRequests:
//   nothing placed, answered, executed or delivered) until that SWITCH
//   arrived on RD, i.e. after everything the peer sent on RD before it.
//   While a connection is being left (a SWITCH back crossed one way only)
//   RouteRma answers kAgain. RMA outstanding on a connection that breaks
//   completes with an error (RmaFailed), never silently (it is not resent
//   by the fall-back); the idle close waits for it.
// * RC-FP (rdm_core_fp.cc, rc_fastpath.h; docs/design.md "RC-FP: the
//   RDMA-write ring"): when the chain names rc_fp, each side of a new
//   connection that is under config.rc.max_fastpath registers a receive
//   ring and names it in its hello (Request, Reply); a connection whose two
//   hellos both carry a ring has the fast path both ways. An EAGER message
//   the chain gives rc_fp goes as one RDMA Write into the peer's next slot
//   while there is a credit (else the chain's next rule applies). The
//   receiver learns of it from the QP's placement report (OnRemoteWrite), in
//   stream order with the connection's Sends, copies it into a bounce and
//   treats it as a Send that arrived there: same hold-until-SWITCH rule,
//   same matching, so RC-FP, RC-SR and the datagram channels stay in send
//   order. Credits return piggybacked on Writes the other way, else with a
//   delayed explicit Write of the consumed count (from the pending pass);
//   they are withheld while unexpected messages hold more than
//   unexpected_limit, so a fast path cannot grow that memory beyond one ring
//   per peer.
// * Idle connections (rdm_core_idle.cc, config.rc.idle_ms > 0): a
//   connection with nothing of ours pending on it and nothing sent or
//   received for idle_ms is left: a SWITCH on the connection says "my later
//   messages go on RD" (the receiver holds the peer's RD messages that
//   overtake it, as the first SWITCH's rule in reverse); the peer answers
//   with its own; each side drops the connection without failing the RD
//   session once both SWITCHes crossed and nothing of its own is pending
//   on it. Traffic reopens one on demand (the promotion thresholds). The
//   endpoint's close leaves its connections the same way (CloseStep,
//   rdm_core_close.cc), so the peer counts a close, not a failure.
// * Peers are named by RdPeerKey; PeerIdOf() gives each key a stable id used
//   for FI_DIRECTED_RECV matching and reported as the source of receives.
// * RMA and atomics are posted by the caller on the QP RouteRma() names,
//   with its ctx_bits in every context; their completions come back through
//   RdmSink::Rma*.
// * A peer whose QP fails (RD timeout, RESET, protocol error) fails its
//   outstanding sends, rendezvous reads and RMA with errors; unexpected
//   EAGER messages already received stay deliverable, unexpected RTS ones
//   fail the receive that matches them.
// * Bad input is data: a message that does not decode, or a FIN that names
//   no rendezvous of that peer, fails the peer's QP (EPROTO) and is counted.
//
// Threads: every call needs the engine lock; sink callbacks run under it, from
// inside these calls or from the engine's passes.
#pragma once

#include <sys/uio.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "base/lazy_deque.h"
#include "base/result.h"
#include "mem/stag_table.h"
#include "progress/endpoint_stats.h"
#include "progress/engine.h"
#include "progress/msg_channel.h"
#include "progress/msg_listener.h"
#include "progress/rd_channel.h"
#include "qp/completion_sink.h"
#include "qp/recv_source.h"
#include "rdm/bounce_pool.h"
#include "rdm/peer_counters.h"
#include "rdm/peer_stats.h"
#include "rdm/rc_fallback.h"
#include "rdm/rc_fastpath.h"
#include "rdm/rc_hello.h"
#include "rdm/send_rules.h"
#include "rdm/tag_matcher.h"
#include "transport/fault.h"
#include "wire/rdm_msg.h"

namespace iwarpx::rdm {

using PeerId = uint64_t;

// Every RDM endpoint's QP number on its own socket.
inline constexpr uint32_t kRdmQpn = 1;

// On-demand connected channels (docs/design.md "Connected channels in the RDM
// endpoint"). They exist only when the chain names rc_sr, rc_fp or rc_rdma.
struct RcConfig {
  uint64_t threshold_msgs = 64;                  // FI_IWARPX_RC_THRESHOLD_MSGS
  uint64_t threshold_bytes = uint64_t{1} << 20;  // FI_IWARPX_RC_THRESHOLD_BYTES
  uint32_t max_links = 16;                       // FI_IWARPX_MAX_RC (0: none)
  // RC-FP rings (when the chain names rc_fp): at most this many connections
  // have one; each is fp_slots slots taking messages of up to fp_max_payload
  // bytes (seed 004 §5.3: RC-FP for messages up to 2 KiB; §5.4: 8 per task).
  uint32_t max_fastpath = 8;       // FI_IWARPX_MAX_FASTPATH (0: none)
  uint32_t fp_slots = 32;          // FI_IWARPX_FASTPATH_SLOTS
  uint32_t fp_max_payload = 2048;  // FI_IWARPX_FASTPATH_SLOT_SIZE
  // A connection that carried nothing for this long is closed cleanly
  // (rdm_core_idle.cc); 0: never.
  uint32_t idle_ms = 0;         // FI_IWARPX_RC_IDLE_MS
  progress::ChannelConfig mpa;  // MPA policy and timeouts (pd: channel.pd)
  // The connected QP (role set by the channel). Its send queue also holds the
  // rendezvous Reads and FINs for what the peer sends: as deep as the
  // provider makes an RD peer's (ofi/rdm_ep.cc).
  qp::QpConfig qp = [] {
    qp::QpConfig c;
    c.sq_size = 256;
    return c;
  }();
};

struct RdmConfig {
  progress::RdChannelConfig channel;  // qpn is set to kRdmQpn
  size_t bounce_size = 16384;         // bytes per bounce receive (eager limit + header)
  // Which channel carries each message (FI_IWARPX_SEND_RULES). Every peer has
  // the two datagram channels: UD-SR is EAGER (up to eager_limit()), UD-ZCopy
  // is RTS; the connected channels are issue 5's.
  SendRuleChain send_rules = SendRuleChain::Default();
  uint32_t bounces_per_peer = 8;
  size_t unexpected_limit = size_t{64} << 20;  // bounce bytes unexpected messages may hold
  RcConfig rc;
  // Rendezvous by the RDMA-write handshake (RTS, CTS, Writes, FIN) instead of
  // the receiver's RDMA Reads (FI_IWARPX_RNDV=write); both UD-ZCopy and RC-RDMA.
  bool rndv_write = false;
};

// One finished receive.
struct RecvResult {
  size_t len = 0;        // bytes placed
  size_t truncated = 0;  // bytes of the message that did not fit (FI_ETRUNC)
  bool tagged = false;
  uint64_t tag = 0;
  bool has_data = false;
  uint64_t data = 0;
  PeerId src = 0;
  // Multi-receive buffers (RecvRequest::multi): where this message starts,
  // and whether the buffer is used up with it (libfabric FI_MULTI_RECV).
  void* buf = nullptr;
  bool released = false;
};

class RdmSink {
 public:
  virtual ~RdmSink() = default;
  virtual void SendDone(uint64_t context) = 0;
  // err: errno-style (ECONNRESET, ETIMEDOUT, EPROTO, ...).
  virtual void SendFailed(uint64_t context, int err) = 0;
  virtual void RecvDone(uint64_t context, const RecvResult& r) = 0;
  virtual void RecvFailed(uint64_t context, int err) = 0;
  // RMA/atomic work requests posted on a RouteRma() route (context: the index
  // OR-ed with the route's ctx_bits; this is the index).
  virtual void RmaDone(uint64_t context) = 0;
  virtual void RmaFailed(uint64_t context, const qp::WcError& error) = 0;
  // fi_writedata at this target: the peer's RDMA Write with Immediate Data.
  virtual void RemoteWriteData(uint64_t data, PeerId src) = 0;
  // A peer's connection or RD session changed (rdm/peer_stats.h; rare, may log).
  virtual void OnPeerEvent(PeerId /*id*/, const transport::SockAddr& /*addr*/, PeerEvent /*e*/,
                           int /*err*/) {}
};

enum class RdmStatus : uint8_t {
  kOk,
  kAgain,     // queues full (send queue, op table): retry after completions
  kNoPeer,    // the QP to the peer cannot be made
  kInvalid,   // bad arguments (too many iovecs, registration refused)
  kNoMessage  // Peek/Claim: no matching unexpected message
};

struct RecvRequest {
  bool tagged = false;
  uint64_t tag = 0;
  uint64_t ignore = 0;
  PeerId src = kAnySource;  // kAnySource: any peer
  uint64_t context = 0;
  const iovec* iov = nullptr;
  size_t count = 0;
  // FI_MULTI_RECV (untagged, one iovec): the buffer takes message after
  // message, each placed where the previous one ended, until fewer than
  // `multi_min` bytes are left; that message's result says `released`.
  // Multi-receive buffers take untagged messages ahead of ordinary untagged
  // receives, in the order they were posted.
  bool multi = false;
  size_t multi_min = 0;
};

class RdmCore final : private progress::RdChannelClient, private progress::ListenerSink {
 public:
  // iovecs per message: the QP's SGL holds the header plus three.
  static constexpr size_t kMaxIov = qp::kMaxSge - 1;
  // DATA fragments of one copy rendezvous in flight (posted, not completed).
  static constexpr uint32_t kCopyWindow = 8;

  static Result<std::unique_ptr<RdmCore>, transport::IoError> Open(
      progress::Engine& engine, const transport::SockAddr& local, const RdmConfig& config,
      mem::StagTable& stags, RdmSink& sink, const transport::FaultSpec& faults = {});
  ~RdmCore() override;
  RdmCore(const RdmCore&) = delete;
  RdmCore& operator=(const RdmCore&) = delete;

  [[nodiscard]] size_t eager_limit() const { return config_.bounce_size - wire::kRdmHeaderSize; }
  // The eager channels' limits (UD-SR, RC-SR: eager_limit()); the rest any size.
  [[nodiscard]] ChannelLimits EagerLimits() const {
    ChannelLimits limits;
    limits.max_size[static_cast<int>(Channel::kUdSr)] = eager_limit();
    limits.max_size[static_cast<int>(Channel::kRcSr)] = eager_limit();
    return limits;
  }
  // Bounce buffers made so far (the pool only grows; tests and memory checks).
  [[nodiscard]] uint32_t bounces_made() const { return bounces_.count(); }
  [[nodiscard]] transport::SockAddr local_address() const { return channel_->local_address(); }
  progress::RdChannel& channel() { return *channel_; }
  [[nodiscard]] const progress::RdChannel& channel() const { return *channel_; }

  // Nothing this endpoint accepted for sending is still undelivered: every
  // RD QP has its data acknowledged (progress::RdChannel::Settled) and every
  // connection's QP has handed all of it to TCP and the peer's TCP has
  // acknowledged it (SIOCOUTQ 0), or failed. The endpoint
  // drives progress until this holds (bounded by FI_IWARPX_LINGER) before it
  // closes, so a completed send — the last reply before fi_close — is not
  // lost with the copy kept for resending.
  [[nodiscard]] bool Settled() const;
  // The endpoint's close, called until it returns true or the linger time
  // is over (rdm_core_close.cc): every established connection is left as an
  // idle one is (SWITCH back both ways, then dropped by both ends), so the
  // peer counts a close, not a failure; true once no connection is left and
  // Settled(). From the first call on, no connection is opened or accepted.
  bool CloseStep();
  // Before a close: every RD QP sends the ack it owes now, so peers waiting
  // for it (lingering in their own close) are not left to time out.
  void FlushAcks() { channel_->FlushAcks(); }

  PeerId PeerIdOf(const transport::SockAddr& addr);
  [[nodiscard]] std::optional<transport::SockAddr> AddressOf(PeerId id) const;

  // A message to `to`. `context` comes back in SendDone/SendFailed. The
  // iovecs must stay valid until then (copy first for FI_INJECT).
  RdmStatus Send(const transport::SockAddr& to, const iovec* iov, size_t count, bool tagged,
                 uint64_t tag, bool has_data, uint64_t data, uint64_t context);
  // A receive; may complete at once from an unexpected message. `queued`
  // (if given) is set when the receive only joined the posted list: nothing
  // matched and no QP was touched, so AfterPost() has nothing to do for it
  // (the caller may skip it; the next post or progress pass does it anyway).
  RdmStatus PostRecv(const RecvRequest& r, bool* queued = nullptr);
  // fi_cancel: true if the receive was still posted (it is then gone; the
  // caller reports FI_ECANCELED).
  bool CancelRecv(bool tagged, uint64_t context);
  // FI_PEEK (claim 0) or FI_PEEK|FI_CLAIM (claim = the application's
  // context): reports the first matching unexpected message in `out` (len is
  // its full size) without receiving it.
  RdmStatus Peek(const RecvRequest& r, uint64_t claim, RecvResult* out);
  // FI_CLAIM receive (or FI_CLAIM|FI_DISCARD with discard): takes the
  // message claimed by `claim` into `r` (or drops it and reports len 0).
  RdmStatus ReceiveClaimed(const RecvRequest& r, uint64_t claim, bool discard);
  // FI_PEEK|FI_DISCARD: drops the first matching unexpected message.
  // A dropped rendezvous (RTS of any kind) is answered so that its sender's
  // send completes (rdm_core_discard.cc); kAgain (message left in place)
  // when no rendezvous slot is free for that answer.
  RdmStatus DiscardUnexpected(const RecvRequest& r, RecvResult* out);

  // Where a user RMA/atomic operation to `to` goes (rdm_core_rma.cc): the
  // peer's RD QP, or its connection's QP once our SWITCH moved our messages
  // there. kAgain while the connection is being left or is ending (retry
  // after progress), kNoPeer when no QP can be made.
  struct RmaRoute {
    qp::QueuePair* qp = nullptr;
    uint64_t ctx_bits = 0;  // OR-ed into every work request's context
    PeerId peer = 0;
    bool on_rc = false;
    rd::RdQp* rd = nullptr;  // the RD QP when !on_rc (its stream is corked for FI_MORE)
  };
  RdmStatus RouteRma(const transport::SockAddr& to, RmaRoute* out);
  // Each work request posted on a route, told right before the post (a
  // completion may be reported from inside it) and again if the QP refused
  // it: what is on a connection is tracked, so that it completes with an
  // error (RmaFailed) when the connection ends, and holds the idle close.
  void RmaPosting(const RmaRoute& route, uint64_t context);
  void RmaRefused(const RmaRoute& route, uint64_t context);
  // An operation went out on `route`: counted per channel; the connection
  // is kicked and marked active.
  void RmaPosted(const RmaRoute& route);
  // FI_MORE on an RMA/atomic (docs/wire.md §3.6.1): the route's RD stream
  // holds what the post hands it (rd::RdStream::Cork) until the next
  // AfterPost without `more`, or the next progress pass (the stream's own
  // deadline), whichever comes first; then everything held leaves bundled.
  // A route on a connection is not corked (TCP has its own batching).
  void CorkRma(const RmaRoute& route);
  // After every post: `more` (FI_MORE) keeps the corked streams corked,
  // otherwise they are uncorked (their held ULPDUs transmitted) first.
  void AfterPost(bool more = false) {
    if (!more && !corked_.empty()) UncorkAll();
    channel_->AfterPost();
  }
  // RMA held by FI_MORE (CorkRma) waits for the next AfterPost().
  [[nodiscard]] bool corked() const { return !corked_.empty(); }

  // Connected channels: whether this core listens for them (the chain names
  // one, max_links > 0 and the TCP bind worked), and the errno of the bind
  // when it failed (0 otherwise).
  [[nodiscard]] bool rc_available() const { return listener_ != nullptr; }
  [[nodiscard]] int rc_listen_error() const { return rc_listen_error_; }
  // Connections now held (pending, accepted or established).
  [[nodiscard]] uint32_t rc_links() const { return links_; }
  // True when sends to `to` go on its established connection.
  [[nodiscard]] bool SendsOnRc(const transport::SockAddr& to) const;
  // Connections with an RC-FP ring (at most config.rc.max_fastpath), and
  // whether messages to `to` may take the fast path (both rings known).
  [[nodiscard]] uint32_t fp_links() const { return fp_links_; }
  [[nodiscard]] bool HasFastPath(const transport::SockAddr& to) const;
  // Tests: ends the connection to `to` as a lost link would (nothing if none).
  void DropRcForTest(const transport::SockAddr& to);
  // Tests: breaks the connection's TCP socket under it (shutdown of both
  // directions), so both ends see the connection fail (rdm_core_fallback.cc).
  // False if there is no established connection to `to`.
  bool BreakRcSocketForTest(const transport::SockAddr& to);
  // Tests: fails the RD session with `to` as a peer that stopped answering
  // would (err ECANCELED, to tell it from a real timeout): PeerFailed
  // follows. False if there is none.
  bool FailRdForTest(const transport::SockAddr& to);

  struct Counters {
    uint64_t eager_sent = 0;
    uint64_t rts_sent = 0;
    uint64_t cts_sent = 0;         // CTS answers sent (write handshake or copy)
    uint64_t rndv_write_msgs = 0;  // RTS (W) sent: rendezvous by the write handshake
    uint64_t copy_msgs = 0;        // messages whose data this side sent as DATA fragments
    uint64_t copy_fallbacks = 0;   // zero-copy rendezvous turned copy (registration refused here)
    uint64_t discard_answers = 0;  // discarded RTS answered (FIN or CTS (C) for 0 bytes)
    uint64_t unexpected = 0;
    uint64_t protocol_errors = 0;
    uint64_t peers_failed = 0;
    // Messages sent per channel (EAGER on RD, RTS on RD, EAGER on a
    // connection, RTS on a connection).
    uint64_t ud_sr_msgs = 0;
    uint64_t ud_zcopy_msgs = 0;
    uint64_t rc_sr_msgs = 0;
    uint64_t rc_rdma_msgs = 0;
    uint64_t rc_fp_msgs = 0;        // EAGER by RDMA Write into the peer's ring
    uint64_t rc_fp_received = 0;    // taken from our rings
    uint64_t rc_fp_direct = 0;      // of those, delivered from the slot (one copy)
    uint64_t fp_credit_writes = 0;  // explicit credit updates posted
    uint64_t rc_opened = 0;         // connects started
    uint64_t rc_accepted = 0;       // Requests accepted
    uint64_t rc_rejected = 0;       // Requests refused (tie-break, cap, bad hello)
    uint64_t rc_failed = 0;         // connections that ended or never came up
    uint64_t rc_switches = 0;       // SWITCHes sent
    uint64_t rc_idle_closed = 0;    // connections left after FI_IWARPX_RC_IDLE_MS
    uint64_t rd_rma_ops = 0;        // RMA/atomic operations posted on RD QPs
    uint64_t rc_rma_ops = 0;        // ... and on connections (after our SWITCH)
    uint64_t rc_rma_failed = 0;     // of those, failed because their connection ended
    uint64_t rc_fallbacks = 0;      // broken connections recovered (the peer's BROKEN answered)
    uint64_t rc_resent = 0;         // messages sent again on RD after a break
    uint64_t rd_direct = 0;         // RD EAGERs delivered from the datagram, no bounce (TakeEager)
  };
  [[nodiscard]] const Counters& counters() const { return counters_; }
  // Per-peer statistics (rdm/peer_stats.h, rdm_core_stats.cc): peers are
  // numbered by PeerId, 0..peer_count()-1, in the order they were first
  // named; a peer stays listed for the life of the core. False for an id
  // that names no peer.
  [[nodiscard]] size_t peer_count() const { return peer_by_id_.size(); }
  bool Snapshot(PeerId id, PeerSnapshot* out);
  // The RD channel's counters, the connections' (also those dropped) and the
  // counters above that EndpointStats has fields for.
  void CollectStats(progress::EndpointStats* out) const;

 private:
  enum class Kind : uint8_t {
    kBounce = 1,
    kEager,
    kRts,
    kFin,
    kRead,
    kUser,
    kSwitch,
    kFp,        // an EAGER message written into the peer's RC-FP ring
    kCredit,    // an explicit RC-FP credit update
    kWrite,     // an RDMA Write of the write handshake (tx_ index)
    kFinW,      // the sender's FIN (W) after its Writes: completes the send (tx_ index)
    kCopyData,  // a DATA fragment of the copy rendezvous (the op's msg_id)
    kTaken,     // a TAKEN report, BROKEN or RESENT (peer id)
    kResend     // a message sent again on RD after a break (peer id)
  };
  // Which of a peer's QPs: the RD QP, or its connected one.
  enum class Via : uint8_t { kRd, kRc };
  struct RcLink;
  static uint64_t Ctx(Kind k, uint64_t index) {
    return (uint64_t{static_cast<uint8_t>(k)} << 56) | index;
  }
  static Kind KindOf(uint64_t ctx) { return static_cast<Kind>(ctx >> 56); }
  // The channel a message of `via` used: eager or rendezvous on that QP.
  static Channel CarriedOn(Via via, bool eager) {
    if (via == Via::kRc) return eager ? Channel::kRcSr : Channel::kRcRdma;
    return eager ? Channel::kUdSr : Channel::kUdZcopy;
  }
  static uint64_t IndexOf(uint64_t ctx) { return ctx & ((uint64_t{1} << 56) - 1); }

  // Per peer key, for the life of the core (the sink of each of its QPs).
  struct Peer final : qp::CompletionSink, qp::RecvSource {
    RdmCore* core = nullptr;
    PeerId id = 0;
    // The key of the peer's entry in peers_ (stable: node-based map), not a
    // copy of it (32 bytes).
    const transport::SockAddr& addr;
    explicit Peer(const transport::SockAddr& key) : addr(key) {}
    uint32_t bounces_posted = 0;  // on the RD QP
    uint32_t rd_unexpected = 0;   // unexpected messages from the RD QP
    // The flags sit together (no padding between members: one Peer per
    // peer the endpoint ever named).
    bool starved = false;       // in starved_: its RD QP was refused a bounce
    bool tx_on_rc = false;      // our SWITCH went out: every later send goes on `link`
    bool rx_switched = false;   // the peer's SWITCH arrived: link arrivals are matched
    bool rd_replaying = false;  // replay guard of `rd_held`, as `replaying` for `held`
    // OnSwitch is matching `held`: a bounce it gives back to the link may
    // deliver the next message at once, which must queue behind the rest.
    bool replaying = false;
    // Connected channel (rdm_core_rc.cc).
    std::unique_ptr<RcLink> link;
    // The queues below are almost always empty: LazyDeque allocates nothing
    // until used (a std::deque costs ~600 bytes even when empty).
    LazyDeque<std::pair<uint32_t, size_t>> held;  // (bounce, bytes) from the link before it
    // RD messages that overtook the peer's SWITCH back (held until it
    // arrives on the link).
    LazyDeque<std::pair<uint32_t, size_t>> rd_held;
    uint64_t msgs_sent = 0;
    uint64_t bytes_sent = 0;
    uint64_t next_try_msgs = 0;  // promotion: counts at which to (re)try a connect
    uint64_t next_try_bytes = 0;
    PeerCounters stats;  // a failed session's RD counters added by PeerFailed
    // The lossless fall-back (rdm_core_fallback.cc): made with the first
    // connection or BROKEN (200 bytes a datagram-only peer never needs; it
    // also holds the SWITCH header, sent only to a connected peer).
    std::unique_ptr<FbState> fb;
    std::array<LazyDeque<uint32_t>, 2> fin_wait;    // per Via: FINs waiting for room
    std::array<LazyDeque<uint32_t>, 2> read_wait;   // per Via: rendezvous with Reads to post
    std::array<LazyDeque<uint32_t>, 2> write_wait;  // per Via: sends with Writes/FIN to post
    void OnSendComplete(uint64_t context) override {
      core->OnSendComplete(*this, Via::kRd, context);
    }
    void OnRecvComplete(uint64_t context, size_t bytes, const qp::RecvInfo& info) override {
      core->OnRecvComplete(*this, Via::kRd, context, bytes, info);
    }
    void OnRdmaComplete(uint64_t context, qp::WcOp op) override {
      core->OnRdmaComplete(*this, Via::kRd, context, op);
    }
    void OnError(uint64_t context, qp::WcOp op, const qp::WcError& error) override {
      core->OnError(*this, Via::kRd, context, op, error);
    }
    void OnEstablished() override {}
    void OnTerminated(wire::TermCause /*cause*/, qp::TermOrigin /*origin*/) override {}
    bool Supply(qp::QueuePair& q) override { return core->SupplyBounce(*this, q); }
    bool TakeSend(qp::QueuePair& /*q*/, ByteSpan payload) override {
      return core->TakeEager(*this, payload);
    }
  };
  // Work done from the engine's pending pass, outside any call into a QP:
  // destroying dropped links, and posting the Reads and FINs that waited for
  // send-queue room (a QP's send completion must not post to it again from
  // inside its own transmit path).
  struct Deferred final : progress::Pollable {
    RdmCore* core = nullptr;
    [[nodiscard]] int fd() const override { return -1; }
    [[nodiscard]] uint32_t interest() const override { return 0; }
    void OnReady(uint32_t /*events*/) override {}
    [[nodiscard]] bool has_pending_work() const override {
      return !core->graveyard_.empty() || !core->flush_.empty();
    }
    [[nodiscard]] std::optional<uint64_t> deadline() const override {
      return core->TimerDeadline();
    }
    void OnTimer() override { core->OnTimers(); }
    void OnPendingWork() override { core->RunDeferred(); }
  };
  // The RC-FP state of one connection: our ring (registered for the peer's
  // Writes; deregistered when the link goes) and, once the peer's hello
  // named one, the peer's.
  struct FpLink {
    mem::StagTable* stags = nullptr;
    std::unique_ptr<uint8_t[]> mem;
    FpRingDesc own;
    std::optional<FpRx> rx;
    std::optional<FpTx> tx;
    std::array<uint8_t, kFpCreditWordSize> credit_out{};  // source of credit Writes
    bool credit_wanted = false;  // an explicit update waits for the pending pass
    FpLink() = default;
    FpLink(const FpLink&) = delete;
    FpLink& operator=(const FpLink&) = delete;
    ~FpLink() {
      if (own.stag != 0) (void)stags->Deregister(own.stag);
    }
  };
  // One connection of a peer: its MsgChannel and the sink of its QP. Once
  // `dead` (dropped), it reports nothing and waits in graveyard_ to be
  // destroyed outside any call into it.
  struct RcLink final : progress::ChannelSink {
    RdmCore* core = nullptr;
    Peer* peer = nullptr;
    std::unique_ptr<FpLink> fp;  // before `ch`: the QP goes first
    std::unique_ptr<progress::MsgChannel> ch;
    qp::QueuePair* qp = nullptr;  // set once the QP exists
    bool outgoing = false;
    bool up = false;
    bool dead = false;
    // Idle teardown: last traffic, and the SWITCH back each way.
    uint64_t last_active_ns = 0;
    bool back_sent = false;
    bool back_got = false;
    // User RMA work requests outstanding on it (contexts; rdm_core_rma.cc).
    std::deque<uint64_t> rma;
    std::array<uint8_t, wire::kRdmHeaderSize> back_header{};
    uint32_t bounces_posted = 0;
    void OnQpReady(qp::QueuePair& q) override {
      if (!dead) core->RcQpReady(*this, q);
    }
    void OnConnectFailed(const cm::CepError& /*error*/, ByteSpan /*reject*/) override {
      if (!dead) core->RcDown(*this);
    }
    void OnSendComplete(uint64_t context) override {
      if (!dead) core->OnSendComplete(*peer, Via::kRc, context);
    }
    void OnRecvComplete(uint64_t context, size_t bytes, const qp::RecvInfo& info) override {
      if (!dead) core->OnRecvComplete(*peer, Via::kRc, context, bytes, info);
    }
    void OnRdmaComplete(uint64_t context, qp::WcOp op) override {
      if (!dead) core->OnRdmaComplete(*peer, Via::kRc, context, op);
    }
    void OnError(uint64_t context, qp::WcOp op, const qp::WcError& error) override {
      if (!dead) core->OnError(*peer, Via::kRc, context, op, error);
    }
    void OnEstablished() override {
      if (!dead) core->RcUp(*this);
    }
    void OnRemoteWrite(uint32_t stag) override {
      if (!dead) core->OnFpWrite(*this, stag);
    }
    void OnTerminated(wire::TermCause /*cause*/, qp::TermOrigin /*origin*/) override {
      if (!dead) core->RcDown(*this);
    }
    // Held until the peer's SWITCH, or out of bounces: the peer may have
    // failed our RD session and will send neither. Falling back now loses
    // nothing (what was unread is resent on RD), and a failed session is
    // then seen there (its RESET).
    bool EndWhenGoneWhileBlocked() override { return true; }
  };
  // A send: EAGER (header) or RTS (header, registrations, waiting for FIN).
  struct TxOp {
    bool used = false;
    Kind kind = Kind::kEager;
    Via via = Via::kRd;
    uint64_t context = 0;
    PeerId peer = 0;
    uint32_t msg_id = 0;
    bool sent = false;      // RTS: the Send completed
    bool fin_seen = false;  // RTS: the FIN arrived
    std::array<uint8_t, wire::kRdmRtsMaxSize> header{};
    std::array<uint32_t, kMaxIov> stags{};
    uint8_t stag_count = 0;
    // The write handshake (rdm_core_write.cc): the source pieces, the CTS's
    // sink segments and where posting the Writes stopped; the FIN (W).
    bool write = false;
    bool cts_seen = false;
    bool fin_posted = false;
    uint64_t size = 0;  // the message's length (a CTS may take less, never more)
    std::array<iovec, kMaxIov> iov{};
    uint8_t iov_count = 0;
    std::array<wire::RdmSegment, wire::kRdmMaxSegments> dst{};
    uint8_t dst_count = 0;
    uint8_t si = 0;
    uint8_t di = 0;
    uint64_t s_off = 0;
    uint64_t d_off = 0;
    uint64_t todo = 0;  // bytes not yet covered by a posted Write
    std::array<uint8_t, wire::kRdmHeaderSize> fin{};
    // The copy rendezvous (rdm_core_copy.cc): iov/si/s_off/todo walk the
    // source; DATA headers in flight live in `frags` (slot seq % window).
    bool copy = false;
    uint64_t frag_max = 0;  // payload bytes per DATA (the CTS's, bounded by ours)
    uint64_t c_off = 0;     // message offset of the next DATA
    uint32_t frags_out = 0;
    uint32_t frag_seq = 0;
    std::array<std::array<uint8_t, wire::kRdmHeaderSize>, kCopyWindow> frags{};
  };
  // A posted receive.
  struct RxOp {
    bool used = false;
    RecvRequest req;
    std::array<iovec, kMaxIov> iov{};
    size_t offset = 0;  // multi-receive: bytes of the buffer taken so far
  };
  // An unexpected message, kept in its bounce.
  struct Unexp {
    bool used = false;
    uint32_t bounce = 0;
    PeerId src = 0;
    Via via = Via::kRd;  // the QP it came on (an RTS is read on it)
    wire::RdmHeader header;
    size_t payload_offset = 0;
    bool dead = false;  // RTS whose peer failed: its data is gone
  };
  // A rendezvous receive: reads outstanding, then the FIN.
  struct RndvOp {
    bool used = false;
    uint64_t context = 0;
    PeerId peer = 0;
    Via via = Via::kRd;
    RecvResult result;
    uint32_t reads_left = 0;
    bool failed = false;
    int err = 0;
    std::array<uint32_t, kMaxIov> stags{};
    uint8_t stag_count = 0;
    // The FIN (read handshake) or the CTS (write handshake) to send.
    std::array<uint8_t, wire::kRdmRtsMaxSize> fin{};
    uint8_t fin_len = wire::kRdmHeaderSize;
    uint32_t msg_id = 0;
    // Write handshake: the CTS is out (or waits for room) and the sender's
    // FIN (W) has not arrived; cts_done: the CTS's send completed. The op is
    // free once both are over.
    bool write_waiting = false;
    bool cts_done = false;
    // The Reads still to post (ContinueReads): the source segments, the
    // registered sink pieces and where the posting stopped.
    struct Piece {
      uint32_t stag = 0;
      uint64_t to = 0;
      uint64_t len = 0;
    };
    std::array<wire::RdmSegment, wire::kRdmMaxSegments> src{};
    uint8_t src_count = 0;
    std::array<Piece, kMaxIov> sinks{};
    uint8_t sink_count = 0;
    uint8_t si = 0;
    uint8_t di = 0;
    uint64_t s_off = 0;
    uint64_t d_off = 0;
    uint64_t todo = 0;  // bytes not yet covered by a posted Read
    // Copy rendezvous: the receive buffer's pieces and the bytes placed so
    // far (DATA must come in order: offset == received).
    bool copy = false;
    std::array<iovec, kMaxIov> dst_iov{};
    uint8_t dst_iov_count = 0;
    uint64_t received = 0;
  };

  RdmCore(progress::Engine& engine, const RdmConfig& config, mem::StagTable& stags, RdmSink& sink);

  // RdChannelClient.
  qp::CompletionSink& PeerSink(const progress::RdPeerKey& key) override;
  void PeerCreated(const progress::RdPeerKey& key, rd::RdQp& qp) override;
  void PeerFailed(const progress::RdPeerKey& key, const rd::RdQp& qp) override;
  // ListenerSink (rdm_core_rc.cc).
  void OnRequest(progress::MsgChannel& channel) override;
  void OnRequestGone(progress::MsgChannel& /*channel*/) override {}

  // The peer named `name` (a wildcard address means this host: HostLocal).
  Peer& PeerFor(const transport::SockAddr& name);
  Peer* PeerById(PeerId id);
  // The QP `via` names for `p`, or nullptr (no RD QP; no established link).
  qp::QueuePair* QpOf(Peer& p, Via via);
  uint32_t* BouncesOf(Peer& p, Via via);
  void PostBounces(Peer& p, Via via);
  bool PostBounce(Peer& p, Via via, uint32_t bounce);
  // A bounce whose message is done: back to `via`'s QP while it is short of
  // receives, else to the free list.
  void Repost(Peer& p, Via via, uint32_t bounce);
  // The engine re-reads interest after work was posted to `via` outside its
  // own callbacks.
  void Kick(Peer& p, Via via);
  // Bounces kept posted on `via`'s QP: none on RD (SupplyBounce gives one
  // when a message arrives), bounces_per_peer on a connection.
  [[nodiscard]] uint32_t BounceTarget(Via via) const {
    return via == Via::kRd ? 0 : config_.bounces_per_peer;
  }
  // rdm_core_bounce.cc: a bounce for p's RD QP `q` now, unless unexpected
  // messages hold too much (then p waits in starved_ until FeedStarved).
  bool SupplyBounce(Peer& p, qp::QueuePair& q);
  [[nodiscard]] bool MayTakeBounce(const Peer& p) const;
  void FeedStarved();
  uint32_t AllocBounce() { return bounces_.Alloc(); }
  void FreeBounce(uint32_t b) { bounces_.Free(b); }

  // Completions of one peer's QPs.
  void OnSendComplete(Peer& p, Via via, uint64_t ctx);
  void OnRecvComplete(Peer& p, Via via, uint64_t ctx, size_t bytes, const qp::RecvInfo& info);
  // A decoded message `m` (in bounce `bounce`, `bytes` long) from `via`:
  // FIN and SWITCH acted on, EAGER/RTS matched or held (the SWITCH rule).
  void Incoming(Peer& p, Via via, uint32_t bounce, size_t bytes, const wire::RdmMessage& m);
  void OnRdmaComplete(Peer& p, Via via, uint64_t ctx, qp::WcOp op);
  // FINs that found the send queue full (rndv_ indices) go out as its work
  // completes; DropFins frees those of a QP that failed.
  qp::QpStatus PostFin(Peer& p, Via via, uint32_t index);
  void FlushFins(Peer& p, Via via);
  // After a completion of `via`: its waiting Reads and FINs are retried from
  // the pending pass.
  void ScheduleFlush(Peer& p, Via via);
  void RunDeferred();
  void DropFins(Peer& p, Via via);
  void OnError(Peer& p, Via via, uint64_t ctx, qp::WcOp op, const qp::WcError& error);
  void ProtocolError(Peer& p, const char* why);
  // Adds the RD counters of p's failed session `q` to p.stats (rdm_core_stats.cc).
  static void CountRdSession(Peer& p, const rd::RdQp& q);

  // Connected channels (rdm_core_rc.cc).
  void OpenListener();
  // Sends counted; a connect started when the peer crossed a threshold.
  // Until the peer has a connection, only sends that ChainWantsLink accepts
  // are counted.
  void CountAndPromote(Peer& p, uint64_t bytes);
  // Whether the chain would carry a message of `size` bytes on an rc_*
  // channel if the peer had a connection (with RC-FP room for a slot's
  // payload when the chain names rc_fp): a peer whose messages all stay on
  // datagrams anyway is not worth a connection (the Aptus design opens one
  // for a peer busy with what it would carry).
  [[nodiscard]] bool ChainWantsLink(uint64_t size) const;
  // The SWITCH on the RD QP before the first send on the link.
  RdmStatus SendSwitch(Peer& p);
  void RcQpReady(RcLink& link, qp::QueuePair& q);
  void RcUp(RcLink& link);
  void RcDown(RcLink& link);
  // Ends p's link: what waits on it fails with `err`, the switch state is
  // reset, the link is destroyed later (ReapLinks).
  void DropLink(Peer& p, int err);
  void ReapLinks() { graveyard_.clear(); }
  // The peer's SWITCH: link arrivals held so far are matched, in order.
  void OnSwitch(Peer& p, Via via);

  // RMA on connections and the first use of a link (rdm_core_rma.cc).
  // Before our first FPDU of any kind on p's connection (`via` kRc): our
  // SWITCH on RD (kOk: sent now or before, or `via` is RD; kQueueFull: the
  // RD send queue is full, retry after its next completion; kBadState).
  qp::QpStatus SwitchFirst(Peer& p, Via via);
  // The peer's SWITCH arrived: its requests on the connection go ahead.
  void ReleaseLinkHold(Peer& p);
  // A user work request finished (completed or failed) on `via`.
  void RmaFinished(Peer& p, Via via, uint64_t ctx);
  // The connection ends: its outstanding user RMA fails with `err`.
  void FailLinkRma(RcLink& link, int err);

  // RC-FP (rdm_core_fp.cc).
  [[nodiscard]] bool FpWanted() const;
  // A ring for `link` when under the cap (nullptr otherwise); counted.
  std::unique_ptr<FpLink> MakeFpLink();
  void DropFpLink(RcLink& link);
  // The hello naming our UDP port and, if `link` has one, our ring.
  size_t RcHelloFor(const RcLink& link, std::array<uint8_t, kRcHelloMaxSize>& out) const;
  // The peer's hello (Request or Reply) as seen by `link`: its ring, if any,
  // becomes our FpTx when we have a ring too; otherwise ours is dropped.
  void FpTakePeerRing(RcLink& link, const std::optional<FpRingDesc>& ring);
  // The RC-FP channel's room for `p`: the largest message, or 0 (no ring,
  // no credit, link not up).
  [[nodiscard]] uint64_t FpRoom(const Peer& p) const;
  // Posts op `index`'s EAGER header and payload as one Write into the peer's
  // next slot.
  qp::QpStatus SendFp(Peer& p, uint32_t index, const iovec* iov, size_t count);
  // The consumed count to tell the peer about our ring now: what it knows
  // already while unexpected messages are over their limit (withheld).
  uint32_t FpCreditsNow(const FpLink& fp);
  void OnFpWrite(RcLink& link, uint32_t stag);
  // An explicit credit update for p's ring, from the pending pass.
  void ScheduleFpCredit(Peer& p);
  void FlushFpCredit(Peer& p);
  // Unexpected memory fell back under its limit: credits withheld go out.
  void ReleaseFpCredits();

  // The deferred work's timers: the idle check and the await check, each run
  // when due (rdm_core_await.cc).
  [[nodiscard]] std::optional<uint64_t> TimerDeadline() const;
  void OnTimers();
  // Rendezvous that wait on a peer with nothing in flight on RD (our RTS or
  // CTS acknowledged, the answer not come): every RD timeout / 16 while any
  // rendezvous is open, the RD QPs of the peers they wait on are marked
  // (rd::RdQp::SetAwaited) and probe, so a peer that failed our session or
  // went ends them with errors (rdm_core_await.cc).
  void ArmAwaitCheck();
  void OnAwaitTimer();

  // Idle connections (rdm_core_idle.cc).
  [[nodiscard]] std::optional<uint64_t> IdleDeadline() const;
  void OnIdleTimer();
  void MarkActive(Peer& p);
  // Nothing of ours waits on p's connection (sends, rendezvous, held, queues).
  [[nodiscard]] bool LinkQuiet(const Peer& p) const;
  // Our SWITCH back on the connection (from the pending pass or the timer).
  void SendBack(Peer& p);
  // The peer's SWITCH back arrived on the connection.
  void OnSwitchBack(Peer& p);
  // Both SWITCHes crossed and nothing is pending: the link goes, cleanly.
  void MaybeCloseIdle(Peer& p);

  // The lossless fall-back of a broken connection (rdm_core_fallback.cc).
  // A new connection's QP: numbering starts again.
  void FbNewLink(Peer& p);
  // Sends to p wait (EAGAIN) until our resends are out; no connect meanwhile.
  [[nodiscard]] static bool FbBlocksSends(const Peer& p);
  [[nodiscard]] static bool FbBusy(const Peer& p);
  // The copies kept for p are at their bound: a send on the connection waits.
  [[nodiscard]] static bool FbFull(const Peer& p);
  // A numbered message just posted on p's connection: kept (payload gathered
  // from `iov` after `header`).
  void FbKeep(Peer& p, ByteSpan header, const iovec* iov, size_t count);
  // A numbered message of the peer's taken from the connection.
  void FbTook(Peer& p, const wire::RdmHeader& h);
  // The connection broke while the RD session lives: recover instead of
  // failing (false: no RD session, the caller fails the peer).
  bool FallBack(Peer& p);
  void OnTaken(Peer& p, Via via, const wire::RdmHeader& h);
  // RD messages of p held while we wait for its RESENT.
  [[nodiscard]] static bool FbHolds(const Peer& p);
  // A SWITCH on RD for a connection that broke: only noted (true).
  bool FbSwitch(Peer& p);
  // Reports, BROKEN, resends and RESENT that wait for room; from the pending pass.
  void FbRun(Peer& p, Via via);
  [[nodiscard]] static bool FbWantsRun(const Peer& p, Via via);
  void FbSent(Peer& p, Via via, uint64_t ctx, bool ok);
  // The RD session failed: everything kept is gone with it.
  static void FbReset(Peer& p);
  // p's fall-back state, made on first use.
  static FbState& Fb(Peer& p);
  // Matches p's RD messages held (rd_held) in their order (rdm_core_idle.cc).
  void ReplayRdHeld(Peer& p);

  // Matching and delivery.
  TagMatcher& MatcherFor(bool tagged) { return tagged ? tagged_ : untagged_; }
  void Arrived(Peer& p, Via via, uint32_t bounce, const wire::RdmMessage& m);
  // An RD QP's whole Send with no bounce posted (qp::RecvSource::TakeSend):
  // an EAGER that a posted receive matches, with nothing of p held for the
  // order rules, is delivered from `bytes` at once (one copy, no bounce);
  // anything else is left (false, nothing changed) to the bounce path, which
  // also reports what does not decode.
  bool TakeEager(Peer& p, ByteSpan bytes);
  // `m` for a posted receive (or multi-receive buffer), if one matches:
  // delivered (EAGER: copied out of m.payload) or its rendezvous started.
  bool DeliverIfPosted(Peer& p, Via via, const wire::RdmMessage& m);
  // `multi`: the placement in a multi-receive buffer (buf, released), or null.
  void Deliver(const RecvRequest& r, const iovec* iov, PeerId src, const wire::RdmHeader& h,
               ByteSpan payload, const RecvResult* multi = nullptr);
  void StartRendezvous(const RecvRequest& r, const iovec* iov, PeerId src, Via via,
                       const wire::RdmHeader& h, const RecvResult* multi = nullptr);
  // An untagged message for the oldest multi-receive buffer: reserves its
  // room (releasing the buffer when too little is left) and places it.
  void PlaceInMulti(PeerId src, Via via, const wire::RdmHeader& h, ByteSpan payload);
  // Fills a freshly posted multi-receive buffer from unexpected messages.
  void DrainIntoMulti();
  void FinishRendezvous(uint32_t index);
  // Registers the first op.result.len bytes of `iov` with `access` into
  // op.stags/op.sinks (one region per piece); op.failed/err on a refusal.
  void RegisterSinks(RndvOp& op, const iovec* iov, size_t count, uint32_t access);
  // Posts the Reads of rendezvous `index` that fit the send queue; false when
  // it filled up first (the caller queues the index in read_wait). Finishes
  // the rendezvous when nothing is left to read.
  bool ContinueReads(Peer& p, uint32_t index);
  void FlushReads(Peer& p, Via via);
  // A QP failed: its waiting rendezvous fail.
  void DropReads(Peer& p, Via via);
  // The write handshake (rdm_core_write.cc). Receiver: StartWriteRendezvous
  // registers the sinks for remote write and sends the CTS; OnWritten is the
  // sender's FIN (W). Sender: OnCts posts the Writes and the FIN (W) as the
  // send queue allows (ContinueWrites; the rest waits in write_wait).
  void StartWriteRendezvous(Peer& p, uint32_t index, const iovec* iov, size_t count);
  void OnCts(Peer& p, Via via, const wire::RdmHeader& h);
  bool ContinueWrites(Peer& p, uint32_t index);
  void FlushWrites(Peer& p, Via via);
  void OnWritten(Peer& p, Via via, const wire::RdmHeader& h);
  // A QP of p failed: receives waiting for its FIN (W) fail, and its
  // queued Writes are forgotten (their sends fail with the peer's sends).
  void DropWriteRendezvous(Peer& p, Via via, int err);
  // The copy rendezvous (rdm_core_copy.cc). Receiver: StartCopyRendezvous
  // answers with the CTS (C) (also the fallback when registration failed);
  // OnCopyData places one DATA (offset and length checked against the
  // matched buffer, else a protocol error). Sender: OnCopyCts queues the op
  // in write_wait (also a read or write RTS the receiver turned copy);
  // ContinueCopy posts DATA from the pending pass while the window and the
  // send queue have room; OnCopySent/OnCopyFailed take their completions.
  void StartCopyRendezvous(Peer& p, uint32_t index, const iovec* iov, size_t count);
  // A zero-copy receive whose buffer could not be registered (op.failed
  // after RegisterSinks): releases what was registered, counts the fallback
  // and answers with the copy rendezvous instead.
  void FallBackToCopy(Peer& p, uint32_t index, const iovec* iov, size_t count);
  // Ends send op `index` with SendFailed(err) and frees its slot.
  void FailTx(uint32_t index, int err);
  void OnCopyData(Peer& p, Via via, const wire::RdmMessage& m);
  void OnCopyCts(Peer& p, Via via, const wire::RdmHeader& h);
  bool ContinueCopy(Peer& p, uint32_t index);
  void OnCopySent(uint64_t ctx);
  void OnCopyFailed(uint64_t ctx, int err);
  // The op of a DATA completion context, or nullptr (freed or reused).
  TxOp* CopyOpOf(uint64_t ctx);
  void MaybeFinishCopySend(uint32_t index);
  void FreeRndv(uint32_t index);
  void OnFin(Peer& p, const wire::RdmHeader& h);
  void DeliverUnexpected(const RecvRequest& r, const iovec* iov, uint32_t unexp);
  // A discarded unexpected message `e`: an RTS is answered (FIN or CTS (C),
  // size 0) from rendezvous slot `index`, which is freed otherwise.
  void AnswerDiscarded(uint32_t index, const Unexp& e);
  void ReleaseUnexpected(uint32_t unexp);
  std::optional<uint32_t> TakeUnexpected(const RecvRequest& r);

  // A free index of `v` (grown up to `max`); deques keep element addresses
  // stable, which the QP relies on for header buffers it has not sent yet.
  template <class T>
  static std::optional<uint32_t> Alloc(std::deque<T>& v, std::vector<uint32_t>& free_list,
                                       size_t max);

  progress::Engine& engine_;
  RdmConfig config_;
  mem::StagTable& stags_;
  RdmSink& sink_;
  std::unique_ptr<progress::RdChannel> channel_;
  std::unique_ptr<progress::MsgListener> listener_;
  int rc_listen_error_ = 0;
  uint32_t links_ = 0;
  uint32_t fp_links_ = 0;
  uint64_t next_idle_check_ns_ = 0;   // 0: no timer
  uint64_t next_await_check_ns_ = 0;  // 0: no timer
  std::vector<PeerId> awaited_;       // peers whose RD QP is marked (sorted)
  bool closing_ = false;              // CloseStep was called: no new connections
  bool fp_withheld_ = false;          // credits held back over the unexpected limit
  std::vector<std::unique_ptr<RcLink>> graveyard_;
  progress::EndpointStats links_gone_;  // counters of connections dropped (CollectStats)
  Deferred deferred_;
  bool deferred_added_ = false;
  std::vector<std::pair<PeerId, Via>> flush_;  // queues of waiting Reads/FINs to retry
  std::unordered_map<transport::SockAddr, std::unique_ptr<Peer>, transport::SockAddrHash> peers_;
  // PeerFor's last answer and the name it was asked (before HostLocal).
  transport::SockAddr last_name_;
  Peer* last_peer_ = nullptr;
  std::vector<Peer*> peer_by_id_;
  BouncePool bounces_;
  std::vector<PeerId> starved_;  // peers whose RD QP waits for a bounce
  std::vector<PeerId> corked_;   // peers whose RD stream CorkRma corked
  void UncorkAll();
  bool fp_arriving_ = false;  // Incoming() is handling a message from an RC-FP ring
  size_t unexpected_bytes_ = 0;
  std::deque<TxOp> tx_;
  std::vector<uint32_t> tx_free_;
  std::deque<RxOp> rx_;
  std::vector<uint32_t> rx_free_;
  std::deque<uint32_t> multi_;  // posted multi-receive buffers (rx_ indices), oldest first
  std::deque<Unexp> unexp_;
  std::vector<uint32_t> unexp_free_;
  std::deque<RndvOp> rndv_;
  std::vector<uint32_t> rndv_free_;
  uint32_t next_msg_gen_ = 1;
  uint32_t posting_tx_ = UINT32_MAX;  // the tx_ op Send is posting (FallBack leaves it to Send)
  TagMatcher tagged_;
  TagMatcher untagged_;
  Counters counters_;
};

}  // namespace iwarpx::rdm
