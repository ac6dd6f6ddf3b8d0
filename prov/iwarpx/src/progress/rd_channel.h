// RdChannel: one UDP socket carrying the reliable-datagram (RD) service of an
// endpoint — the socket, its rd::DgramPort and one rd::RdQp per peer QP,
// keyed by (peer address, peer QP number), made on first use from either
// side: by Peer() when the owner sends, or when a peer's first datagram
// arrives. Knows nothing of libfabric: the owner (RdChannelClient) supplies
// the completion sink of each new QP and learns when one fails.
//
// Contract
// - Every call needs the engine lock; the channel registers itself with the
//   engine at Open and unregisters when destroyed.
// - Readiness: readable always; writable while some QP has datagrams the
//   socket refused. Each readiness callback reads at most kReadBudget
//   datagrams. Timers: deadline() is the earliest RdQp::Deadline().
// - Cost: the channel keeps an active set, the QPs whose stream was used
//   since they were last found idle (rd::RdQpWatcher); deadline(),
//   interest(), timers, socket wake-ups and the search for failed QPs visit
//   only those, so a pass costs O(busy peers), not O(peers): one hot peer
//   among 1024 quiet ones is served as fast as among 4.
// - After posting to a QP the owner calls AfterPost() (deadlines and interest
//   may have changed).
// - A peer whose QP fails (RD timeout, RESET, Terminate) is reported once
//   through RdChannelClient::PeerFailed — after its QP flushed every work
//   request with an error through its sink — and destroyed later, outside
//   any call into it; the next Peer() or datagram for that key makes a fresh
//   QP (a new session). A peer that restarted (a new session from the same
//   address and QPN) fails the old QP the same way and hands the datagram to
//   the new one.
// - Datagrams for other QP numbers than the channel's are dropped and counted
//   by the port; a peer address that is not in any AV still gets a QP (RDM
//   receives from unknown sources, FI_SOURCE reports FI_ADDR_NOTAVAIL) — but
//   only when its datagram opens a session (Y set): a datagram of a session
//   nobody here knows draws a RESET (docs/wire.md §3.6 rule 3) and a RESET
//   for no QP is dropped, both without making any state. The sessions of
//   the last kTombstones failed peers are remembered: a late datagram of
//   one of them (a retransmitted Terminate, say) draws a RESET too instead
//   of reopening a QP that would only fail again.
// - CollectStats sums the port's counters and those of every QP the channel
//   has had, including failed and destroyed ones.
// - QPs that left the active set and stay idle give their buffers back
//   (IdleSweep, every config.idle_release_ns while any is waiting: a timer
//   of the channel); the next message makes them again.
// - With a FaultSpec that has any fault (FI_IWARPX_FAULT) the socket is
//   wrapped in a transport::FaultInjector.
// - Hot socket (config.hot_socket, FI_IWARPX_RD_HOT_SOCKET): the socket is a
//   transport::HotPeerSocket, connected to the first peer other than itself
//   that gets a QP; that peer's datagrams then travel on a second socket of
//   the same address and port (the fault injector, when set, wraps both).
//   The channel registers that socket's descriptor with the engine as a
//   second Pollable (HotPoll) that forwards to it, so waits cover both;
//   writability is asked of the socket that refused a datagram. A direct
//   poll through HotPoll (the engine's busy poll of the hot descriptor) reads
//   the hot socket alone, and the main one too every kMainEvery-th time. If the
//   second socket cannot be opened or registered the channel goes on with
//   the one socket.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "base/random.h"
#include "base/result.h"
#include "mem/stag_table.h"
#include "progress/endpoint_stats.h"
#include "progress/engine.h"
#include "progress/idle_sweep.h"
#include "qp/completion_sink.h"
#include "rd/dgram_port.h"
#include "rd/rd_qp.h"
#include "transport/fault.h"
#include "transport/hot_peer_socket.h"
#include "transport/sock_addr.h"

namespace iwarpx::progress {

struct RdPeerKey {
  transport::SockAddr addr;
  uint32_t qpn = 0;
  friend bool operator==(const RdPeerKey&, const RdPeerKey&) = default;
};

struct RdPeerKeyHash {
  size_t operator()(const RdPeerKey& k) const {
    return transport::SockAddrHash{}(k.addr) ^ (size_t{k.qpn} * 0x9E3779B97F4A7C15ull);
  }
};

class RdChannelClient {
 public:
  virtual ~RdChannelClient() = default;
  // A QP to `key` is being made: the sink for its completions (must outlive
  // the QP; the channel destroys QPs before itself).
  virtual qp::CompletionSink& PeerSink(const RdPeerKey& key) = 0;
  // The QP to `key` was made (before any datagram reaches it): post its
  // receives here.
  virtual void PeerCreated(const RdPeerKey& /*key*/, rd::RdQp& /*qp*/) {}
  // The QP to `key` failed and flushed; it is destroyed after this returns
  // (`qp`: no longer found by Find; its stream's error() and stats() are
  // final).
  virtual void PeerFailed(const RdPeerKey& key, const rd::RdQp& qp) = 0;
};

struct RdChannelConfig {
  uint32_t qpn = 0;  // our QP number on the socket
  rd::PortConfig port;
  // qp.stream.max_segment 0 chooses per peer: kLoopbackSegment to loopback
  // addresses, kPathSegment (a 1500-byte MTU) to others (docs/wire.md §3.7).
  rd::RdQpConfig qp;
  uint32_t pd = 0;
  uint64_t seed = 0;  // sessions; 0: from the clock and the address
  // SO_RCVBUF/SO_SNDBUF asked for (the kernel caps them at net.core.rmem_max /
  // wmem_max). The default 208 KiB receive buffer holds less than one peer's
  // send buffer (1 MiB): at 1 MiB messages 5.5 % of datagrams overflowed it and
  // waited for retransmission. 0 keeps the system default.
  int socket_buffer_bytes = 4 << 20;
  // Read Response payloads received in place, straight into the Read's sink
  // (rd::DgramPort's in-place receive; FI_IWARPX_RD_PLACE).
  bool place_reads = true;
  // QPs idle this long (at most twice that) give their buffers back
  // (progress/idle_sweep.h; FI_IWARPX_RD_IDLE_RELEASE); 0: never.
  uint64_t idle_release_ns = 0;
  // A connected second socket for the first peer (see the file comment).
  bool hot_socket = true;
};

inline constexpr size_t kLoopbackSegment = wire::kDgramMaxUlpdu;
inline constexpr size_t kPathSegment = wire::DgramMaxUlpduLength(1500 - 28);

class RdChannel final : public Pollable,
                        private rd::DgramReceiver,
                        private rd::RdQpWatcher,
                        private rd::PlacementPredictor {
 public:
  static constexpr size_t kReadBudget = 64;
  static constexpr size_t kTombstones = 1024;

  static Result<std::unique_ptr<RdChannel>, transport::IoError> Open(
      Engine& engine, const transport::SockAddr& local, const RdChannelConfig& config,
      mem::StagTable& stags, RdChannelClient& client, const transport::FaultSpec& faults = {});
  ~RdChannel() override;

  // The QP to `key`, made if there is none; nullptr if it cannot be made.
  rd::RdQp* Peer(const RdPeerKey& key);
  // The QP to `key` if it exists.
  rd::RdQp* Find(const RdPeerKey& key);
  void AfterPost();
  // Every QP has settled (rd::RdQp::settled): closing the channel now loses
  // nothing a peer was promised. Visits every QP (called at close only).
  [[nodiscard]] bool Settled() const;
  // Every QP sends the ack it owes now (before a close: rd::RdStream::FlushAck).
  void FlushAcks();
  [[nodiscard]] transport::SockAddr local_address() const { return socket_->local_address(); }
  [[nodiscard]] size_t peers() const { return peers_.size(); }
  // QPs in the active set (for tests).
  [[nodiscard]] size_t active_peers() const { return active_.size(); }
  // The idle sweep (queued QPs, releases; for tests and stats).
  [[nodiscard]] const IdleSweep& idle_sweep() const { return sweep_; }
  rd::DgramPort& port() { return *port_; }
  void CollectStats(EndpointStats* out) const;
  // The receive buffer the kernel granted (0: not asked, or unknown).
  [[nodiscard]] int rcvbuf_bytes() const { return rcvbuf_bytes_; }
  // The peer the hot socket is connected to (none: no hot socket yet, or off).
  [[nodiscard]] std::optional<transport::SockAddr> hot_peer() const {
    if (!hot_added_) return std::nullopt;
    return hot_socket_->peer();
  }

  // Pollable.
  [[nodiscard]] int fd() const override { return socket_->fd(); }
  [[nodiscard]] uint32_t interest() const override;
  void OnReady(uint32_t events) override;
  [[nodiscard]] std::optional<uint64_t> deadline() const override;
  void OnTimer() override;
  bool PollDirect() override;

 private:
  struct Entry {
    std::unique_ptr<rd::RdQp> qp;
  };
  // The hot socket's descriptor in the engine: everything goes to the channel.
  // Registered only while hot_socket_ is set, so its members use it unchecked.
  class HotPoll final : public Pollable {
   public:
    explicit HotPoll(RdChannel& ch) : ch_(ch) {}
    [[nodiscard]] int fd() const override { return ch_.hot_socket_->hot_fd(); }
    [[nodiscard]] uint32_t interest() const override;
    void OnReady(uint32_t events) override;
    bool PollDirect() override;

   private:
    RdChannel& ch_;
    uint32_t direct_polls_ = 0;
  };
  // Direct polls of the hot socket read the main one too once in this many
  // (its datagrams are also found by the engine's epoll passes, where the
  // main socket stays registered).
  static constexpr uint32_t kMainEvery = 16;

  RdChannel(Engine& engine, const RdChannelConfig& config, mem::StagTable& stags,
            RdChannelClient& client);
  void OnDatagram(const wire::DecodedDgram& d, const transport::SockAddr& from) override;
  // rd::PlacementPredictor: the guesses of the QP that last received a
  // payload worth placing (hot_), as rd::RdQp::GuessReadResponses makes them.
  size_t PredictPlacement(std::span<rd::PlacementGuess> out) override {
    return hot_ != nullptr ? hot_->GuessReadResponses(out) : 0;
  }
  // rd::RdQpWatcher: `qp` joins the active set.
  void Touched(rd::RdQp& qp) override { active_.push_back(&qp); }
  rd::RdQp* Make(const RdPeerKey& key, const rd::InboundSessions& sessions);
  void Retire(const RdPeerKey& key);
  [[nodiscard]] rd::InboundSessions TombOf(const RdPeerKey& key) const;
  // Answers a datagram that has no QP and opens none with a stateless RESET.
  void RefuseSession(const wire::DecodedDgram& d, const transport::SockAddr& from);
  // Reports and retires failed QPs of the active set, drops idle ones from
  // it; destroys retired QPs (never while a call into them may be on the
  // stack: only at the end of engine callbacks).
  void Reap(bool destroy);
  // A copy of the active set (callbacks may change it while it is visited).
  [[nodiscard]] std::vector<rd::RdQp*> Snapshot() const { return active_; }
  // Some QP waits for the socket to take a datagram it refused.
  [[nodiscard]] bool WantsWrite() const;
  // Connects the hot socket to `peer` if it has none yet and registers HotPoll.
  void MaybeConnectHot(const transport::SockAddr& peer);
  // Interest of HotPoll may have changed with the channel's.
  void UpdateHot();

  Engine& engine_;
  RdChannelConfig config_;
  mem::StagTable& stags_;
  RdChannelClient& client_;
  Random random_;
  std::unique_ptr<transport::DatagramSocket> socket_;
  transport::FaultInjector* faults_ = nullptr;      // socket_ itself when FI_IWARPX_FAULT is set
  transport::HotPeerSocket* hot_socket_ = nullptr;  // socket_ or under faults_; config.hot_socket
  HotPoll hot_poll_{*this};
  bool hot_added_ = false;  // hot_poll_ is registered with the engine
  std::unique_ptr<rd::DgramPort> port_;
  std::unordered_map<RdPeerKey, Entry, RdPeerKeyHash> peers_;
  std::vector<std::unique_ptr<rd::RdQp>> retired_;
  // The QP that last received a data datagram of rd::RdQp::kMinPlacedPayload
  // bytes or more: the one whose next datagrams are guessed (never a retired one).
  rd::RdQp* hot_ = nullptr;
  // The peer Find() found last (nullptr: none): a busy peer's datagrams and
  // sends skip the hash lookup. Forgotten before its entry leaves peers_.
  RdPeerKey last_key_;
  rd::RdQp* last_qp_ = nullptr;
  // The active set: QPs of peers_ with watched() set, each once.
  std::vector<rd::RdQp*> active_;
  IdleSweep sweep_;     // QPs that left the active set, until they give their buffers back
  EndpointStats gone_;  // QPs retired so far, and datagrams that made no QP
  // Inbound sessions of failed peers (current one retired), oldest first in tomb_order_.
  std::unordered_map<RdPeerKey, rd::InboundSessions, RdPeerKeyHash> tombs_;
  std::deque<RdPeerKey> tomb_order_;
  int rcvbuf_bytes_ = 0;
  bool in_callback_ = false;  // inside an engine callback: calls into QPs may be on the stack
};

}  // namespace iwarpx::progress
