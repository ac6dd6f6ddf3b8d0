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
//   (zero-copy rendezvous).
// * Receives: each peer QP keeps `bounces_per_peer` bounce receives of
//   bounce_size bytes posted. An arriving message is matched against posted
//   receives (TagMatcher; untagged and tagged separately) in arrival order;
//   unmatched ones stay in their bounce as unexpected messages (a fresh
//   bounce replaces it while the unexpected total stays under
//   unexpected_limit; beyond it the peer's QP runs short of receives and the
//   RD window closes: backpressure, not loss).
// * Order: one QP per peer delivers in order, so messages between a pair are
//   matched in send order (FI_ORDER_SAS, MPI's non-overtaking rule).
// * Peers are named by RdPeerKey; PeerIdOf() gives each key a stable id used
//   for FI_DIRECTED_RECV matching and reported as the source of receives.
// * RMA and atomics go to Qp(key) directly with contexts made by
//   UserContext(); their completions come back through RdmSink::Rma*.
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

#include "base/result.h"
#include "mem/stag_table.h"
#include "progress/engine.h"
#include "progress/rd_channel.h"
#include "qp/completion_sink.h"
#include "rdm/send_rules.h"
#include "rdm/tag_matcher.h"
#include "transport/fault.h"
#include "wire/rdm_msg.h"

namespace iwarpx::rdm {

using PeerId = uint64_t;

// Every RDM endpoint's QP number on its own socket.
inline constexpr uint32_t kRdmQpn = 1;

struct RdmConfig {
  progress::RdChannelConfig channel;  // qpn is set to kRdmQpn
  size_t bounce_size = 16384;         // bytes per bounce receive (eager limit + header)
  // Which channel carries each message (FI_IWARPX_SEND_RULES). Every peer has
  // the two datagram channels: UD-SR is EAGER (up to eager_limit()), UD-ZCopy
  // is RTS; the connected channels are issue 5's.
  SendRuleChain send_rules = SendRuleChain::Default();
  uint32_t bounces_per_peer = 8;
  size_t unexpected_limit = size_t{64} << 20;  // bounce bytes unexpected messages may hold
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
  // RMA/atomic work requests posted with UserContext(context).
  virtual void RmaDone(uint64_t context) = 0;
  virtual void RmaFailed(uint64_t context, const qp::WcError& error) = 0;
  // fi_writedata at this target: the peer's RDMA Write with Immediate Data.
  virtual void RemoteWriteData(uint64_t data, PeerId src) = 0;
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

class RdmCore final : private progress::RdChannelClient {
 public:
  // iovecs per message: the QP's SGL holds the header plus three.
  static constexpr size_t kMaxIov = qp::kMaxSge - 1;

  static Result<std::unique_ptr<RdmCore>, transport::IoError> Open(
      progress::Engine& engine, const transport::SockAddr& local, const RdmConfig& config,
      mem::StagTable& stags, RdmSink& sink, const transport::FaultSpec& faults = {});
  ~RdmCore() override;
  RdmCore(const RdmCore&) = delete;
  RdmCore& operator=(const RdmCore&) = delete;

  [[nodiscard]] size_t eager_limit() const { return config_.bounce_size - wire::kRdmHeaderSize; }
  [[nodiscard]] transport::SockAddr local_address() const { return channel_->local_address(); }
  progress::RdChannel& channel() { return *channel_; }
  [[nodiscard]] const progress::RdChannel& channel() const { return *channel_; }

  PeerId PeerIdOf(const transport::SockAddr& addr);
  [[nodiscard]] std::optional<transport::SockAddr> AddressOf(PeerId id) const;

  // A message to `to`. `context` comes back in SendDone/SendFailed. The
  // iovecs must stay valid until then (copy first for FI_INJECT).
  RdmStatus Send(const transport::SockAddr& to, const iovec* iov, size_t count, bool tagged,
                 uint64_t tag, bool has_data, uint64_t data, uint64_t context);
  // A receive; may complete at once from an unexpected message.
  RdmStatus PostRecv(const RecvRequest& r);
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
  RdmStatus DiscardUnexpected(const RecvRequest& r, RecvResult* out);

  // The QP to `to` for RMA and atomics (made if needed), or nullptr.
  rd::RdQp* Qp(const transport::SockAddr& to);
  static uint64_t UserContext(uint64_t context) { return Ctx(Kind::kUser, context); }
  void AfterPost() { channel_->AfterPost(); }

  struct Counters {
    uint64_t eager_sent = 0;
    uint64_t rts_sent = 0;
    uint64_t unexpected = 0;
    uint64_t protocol_errors = 0;
    uint64_t peers_failed = 0;
  };
  [[nodiscard]] const Counters& counters() const { return counters_; }

 private:
  enum class Kind : uint8_t { kBounce = 1, kEager, kRts, kFin, kRead, kUser };
  static uint64_t Ctx(Kind k, uint64_t index) {
    return (uint64_t{static_cast<uint8_t>(k)} << 56) | index;
  }
  static Kind KindOf(uint64_t ctx) { return static_cast<Kind>(ctx >> 56); }
  static uint64_t IndexOf(uint64_t ctx) { return ctx & ((uint64_t{1} << 56) - 1); }

  // Per peer key, for the life of the core (the sink of each of its QPs).
  struct Peer final : qp::CompletionSink {
    RdmCore* core = nullptr;
    PeerId id = 0;
    transport::SockAddr addr;
    uint32_t bounces_posted = 0;
    void OnSendComplete(uint64_t context) override { core->OnSendComplete(*this, context); }
    void OnRecvComplete(uint64_t context, size_t bytes, const qp::RecvInfo& info) override {
      core->OnRecvComplete(*this, context, bytes, info);
    }
    void OnRdmaComplete(uint64_t context, qp::WcOp op) override {
      core->OnRdmaComplete(*this, context, op);
    }
    void OnError(uint64_t context, qp::WcOp op, const qp::WcError& error) override {
      core->OnError(*this, context, op, error);
    }
    void OnEstablished() override {}
    void OnTerminated(wire::TermCause /*cause*/, qp::TermOrigin /*origin*/) override {}
  };
  struct Bounce {
    std::unique_ptr<uint8_t[]> buf;
  };
  // A send: EAGER (header) or RTS (header, registrations, waiting for FIN).
  struct TxOp {
    bool used = false;
    Kind kind = Kind::kEager;
    uint64_t context = 0;
    PeerId peer = 0;
    uint32_t msg_id = 0;
    bool sent = false;      // RTS: the Send completed
    bool fin_seen = false;  // RTS: the FIN arrived
    std::array<uint8_t, wire::kRdmRtsMaxSize> header{};
    std::array<uint32_t, kMaxIov> stags{};
    uint8_t stag_count = 0;
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
    wire::RdmHeader header;
    size_t payload_offset = 0;
    bool dead = false;  // RTS whose peer failed: its data is gone
  };
  // A rendezvous receive: reads outstanding, then the FIN.
  struct RndvOp {
    bool used = false;
    uint64_t context = 0;
    PeerId peer = 0;
    RecvResult result;
    uint32_t reads_left = 0;
    bool failed = false;
    int err = 0;
    std::array<uint32_t, kMaxIov> stags{};
    uint8_t stag_count = 0;
    std::array<uint8_t, wire::kRdmHeaderSize> fin{};
  };

  RdmCore(progress::Engine& engine, const RdmConfig& config, mem::StagTable& stags, RdmSink& sink);

  // RdChannelClient.
  qp::CompletionSink& PeerSink(const progress::RdPeerKey& key) override;
  void PeerCreated(const progress::RdPeerKey& key, rd::RdQp& qp) override;
  void PeerFailed(const progress::RdPeerKey& key) override;

  // The peer named `name` (a wildcard address means this host: HostLocal).
  Peer& PeerFor(const transport::SockAddr& name);
  Peer* PeerById(PeerId id);
  void PostBounces(Peer& p, rd::RdQp& qp);
  bool PostBounce(Peer& p, rd::RdQp& qp, uint32_t bounce);
  uint32_t AllocBounce();
  void FreeBounce(uint32_t b) { free_bounces_.push_back(b); }

  // Completions of one peer's QP.
  void OnSendComplete(Peer& p, uint64_t ctx);
  void OnRecvComplete(Peer& p, uint64_t ctx, size_t bytes, const qp::RecvInfo& info);
  void OnRdmaComplete(Peer& p, uint64_t ctx, qp::WcOp op);
  void OnError(Peer& p, uint64_t ctx, qp::WcOp op, const qp::WcError& error);
  void ProtocolError(Peer& p, const char* why);

  // Matching and delivery.
  TagMatcher& MatcherFor(bool tagged) { return tagged ? tagged_ : untagged_; }
  void Arrived(Peer& p, uint32_t bounce, const wire::RdmMessage& m);
  // `multi`: the placement in a multi-receive buffer (buf, released), or null.
  void Deliver(const RecvRequest& r, const iovec* iov, PeerId src, const wire::RdmHeader& h,
               ByteSpan payload, const RecvResult* multi = nullptr);
  void StartRendezvous(const RecvRequest& r, const iovec* iov, PeerId src, const wire::RdmHeader& h,
                       const RecvResult* multi = nullptr);
  // An untagged message for the oldest multi-receive buffer: reserves its
  // room (releasing the buffer when too little is left) and places it.
  void PlaceInMulti(PeerId src, const wire::RdmHeader& h, ByteSpan payload);
  // Fills a freshly posted multi-receive buffer from unexpected messages.
  void DrainIntoMulti();
  void FinishRendezvous(uint32_t index);
  void OnFin(Peer& p, const wire::RdmHeader& h);
  void DeliverUnexpected(const RecvRequest& r, const iovec* iov, uint32_t unexp);
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
  std::unordered_map<transport::SockAddr, std::unique_ptr<Peer>, transport::SockAddrHash> peers_;
  std::vector<Peer*> peer_by_id_;
  std::vector<Bounce> bounces_;
  std::vector<uint32_t> free_bounces_;
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
  TagMatcher tagged_;
  TagMatcher untagged_;
  Counters counters_;
};

}  // namespace iwarpx::rdm
