#include "progress/rd_channel.h"

#include <algorithm>
#include <cerrno>
#include <utility>

#include "transport/poller.h"
#include "transport/udp.h"

namespace iwarpx::progress {

RdChannel::RdChannel(Engine& engine, const RdChannelConfig& config, mem::StagTable& stags,
                     RdChannelClient& client)
    : engine_(engine),
      config_(config),
      stags_(stags),
      client_(client),
      random_(config.seed != 0 ? config.seed : engine.clock().NowNs() ^ 0x6977726478ull),
      sweep_(engine.clock(), config.idle_release_ns) {}

Result<std::unique_ptr<RdChannel>, transport::IoError> RdChannel::Open(
    Engine& engine, const transport::SockAddr& local, const RdChannelConfig& config,
    mem::StagTable& stags, RdChannelClient& client, const transport::FaultSpec& faults) {
  auto socket = transport::UdpSocket::Bind(local);
  if (!socket.ok()) return Err{socket.error()};
  std::unique_ptr<RdChannel> ch(new RdChannel(engine, config, stags, client));
  // Best effort: a smaller buffer only costs retransmissions. HotPeerSocket
  // sizes its main socket and every connected socket it opens later.
  auto size_buffers = [&](auto& sock) {
    if (config.socket_buffer_bytes <= 0) return;
    (void)sock.SetSendBufferSize(config.socket_buffer_bytes);
    auto got = sock.SetRecvBufferSize(config.socket_buffer_bytes);
    if (got.ok()) ch->rcvbuf_bytes_ = *got / 2;  // Linux reports twice what it grants
  };
  std::unique_ptr<transport::DatagramSocket> base;
  if (config.hot_socket) {
    auto hot = transport::HotPeerSocket::Create(std::move(socket).value());
    if (!hot.ok()) return Err{hot.error()};  // the main socket is gone with it
    size_buffers(*hot.value());
    ch->hot_socket_ = hot.value().get();
    base = std::move(hot).value();
  } else {
    size_buffers(*socket.value());
    base = std::move(socket).value();
  }
  if (faults.any()) {
    auto injector = std::make_unique<transport::FaultInjector>(std::move(base), faults);
    ch->faults_ = injector.get();
    ch->socket_ = std::move(injector);
  } else {
    ch->socket_ = std::move(base);
  }
  ch->port_ = std::make_unique<rd::DgramPort>(*ch->socket_, config.port);
  if (config.place_reads) ch->port_->SetPredictor(ch.get());
  if (!ch->port_->Attach(config.qpn, ch.get())) {
    return Err{transport::IoError{transport::IoStatus::kError, EADDRINUSE}};
  }
  if (const transport::Status s = engine.Add(*ch); !s.ok()) {
    return Err{transport::IoError{transport::IoStatus::kError, s.err}};
  }
  return ch;
}

RdChannel::~RdChannel() {
  hot_ = nullptr;
  last_qp_ = nullptr;
  port_->SetPredictor(nullptr);
  if (hot_added_) engine_.Remove(hot_poll_);
  engine_.Remove(*this);
  port_->Detach(config_.qpn);
  peers_.clear();  // QPs go before the port they send through
  retired_.clear();
}

rd::RdQp* RdChannel::Make(const RdPeerKey& key, const rd::InboundSessions& sessions) {
  rd::RdQpConfig qc = config_.qp;
  if (qc.stream.max_segment == 0) {
    qc.stream.max_segment = key.addr.is_loopback() ? kLoopbackSegment : kPathSegment;
  }
  auto q = rd::RdQp::Create(*port_, key.addr, config_.qpn, key.qpn, qc, stags_, config_.pd,
                            client_.PeerSink(key), random_, engine_.clock(), sessions);
  if (!q.ok()) return nullptr;
  rd::RdQp* p = q.value().get();
  p->SetWatcher(this);
  peers_[key].qp = std::move(q).value();
  ++gone_.rd_peers;
  MaybeConnectHot(key.addr);
  client_.PeerCreated(key, *p);
  return p;
}

void RdChannel::MaybeConnectHot(const transport::SockAddr& peer) {
  if (hot_socket_ == nullptr || hot_socket_->connected() || peer == socket_->local_address()) {
    return;
  }
  if (!hot_socket_->Connect(peer).ok()) {
    hot_socket_ = nullptr;  // no second try: go on with the one socket
    return;
  }
  if (!engine_.Add(hot_poll_).ok()) {
    // Nobody would wait on it: its datagrams (none yet, or a few, which the
    // RD streams resend) must come to the main socket again.
    hot_socket_->Disconnect();
    hot_socket_ = nullptr;
    return;
  }
  hot_added_ = true;
}

void RdChannel::UpdateHot() {
  if (hot_added_) engine_.Update(hot_poll_);
}

bool RdChannel::WantsWrite() const {
  return std::any_of(active_.begin(), active_.end(),
                     [](const rd::RdQp* q) { return q->wants_socket_write(); });
}

uint32_t RdChannel::HotPoll::interest() const {
  uint32_t want = transport::Poller::kReadable;
  if (ch_.hot_socket_->hot_blocked() && ch_.WantsWrite()) {
    want |= transport::Poller::kWritable;
  }
  return want;
}

void RdChannel::HotPoll::OnReady(uint32_t events) {
  ch_.OnReady(events);
  ch_.engine_.Update(ch_);  // the engine updates this one itself
}

bool RdChannel::HotPoll::PollDirect() {
  ch_.hot_socket_->set_hot_only(++direct_polls_ % kMainEvery != 0);
  const bool got = ch_.PollDirect();
  ch_.hot_socket_->set_hot_only(false);
  ch_.engine_.Update(ch_);
  return got;
}

rd::RdQp* RdChannel::Find(const RdPeerKey& key) {
  if (last_qp_ != nullptr && last_key_ == key) return last_qp_;
  auto it = peers_.find(key);
  if (it == peers_.end()) return nullptr;
  last_key_ = key;
  last_qp_ = it->second.qp.get();
  return last_qp_;
}

rd::RdQp* RdChannel::Peer(const RdPeerKey& key) {
  if (rd::RdQp* q = Find(key); q != nullptr) return q;
  return Make(key, TombOf(key));
}

void RdChannel::Retire(const RdPeerKey& key) {
  auto it = peers_.find(key);
  if (it == peers_.end()) return;
  rd::RdQp& q = *it->second.qp;
  AddRdStream(q.stream(), &gone_);
  AddQp(q.qp(), &gone_);
  ++gone_.rd_peers_failed;
  rd::InboundSessions tomb = q.stream().sessions();
  tomb.RetireCurrent();
  if (tombs_.insert_or_assign(key, tomb).second) {
    tomb_order_.push_back(key);
    if (tomb_order_.size() > kTombstones) {
      tombs_.erase(tomb_order_.front());
      tomb_order_.pop_front();
    }
  }
  if (q.watched()) std::erase(active_, &q);
  sweep_.Forget(q);
  if (hot_ == &q) hot_ = nullptr;
  if (last_qp_ == &q) last_qp_ = nullptr;
  q.SetWatcher(nullptr);
  retired_.push_back(std::move(it->second.qp));
  peers_.erase(it);
  client_.PeerFailed(key, *retired_.back());
}

void RdChannel::Reap(bool destroy) {
  // Failed QPs are retired (Retire takes them out of the active set); idle
  // ones leave it until their stream is used again. A failed QP is never
  // idle (RdQp::idle), and a QP can only fail while its stream is in use,
  // so nothing outside the set needs looking at.
  std::vector<rd::RdQp*> failed;
  size_t kept = 0;
  for (rd::RdQp* q : active_) {
    if (q->failed()) {
      failed.push_back(q);
      active_[kept++] = q;
    } else if (q->idle()) {
      q->Unwatch();
      sweep_.WentIdle(*q);
    } else {
      active_[kept++] = q;
    }
  }
  active_.resize(kept);
  for (rd::RdQp* q : failed) {
    const RdPeerKey key{q->stream().peer_address(), q->stream().peer_qpn()};
    if (Find(key) == q) Retire(key);
  }
  if (destroy && !in_callback_) retired_.clear();
}

void RdChannel::OnDatagram(const wire::DecodedDgram& d, const transport::SockAddr& from) {
  if (d.header.type == wire::DgramType::kUdData) return;  // UD traffic has no place here
  const RdPeerKey key{from, d.header.src_qpn};
  rd::RdQp* q = Find(key);
  if (q == nullptr) {
    // Only a datagram that opens a new session makes a QP. A RESET for a QP
    // we no longer have needs nothing; a datagram of a session we do not
    // know (we restarted, or it is forged) or of a failed peer's session (a
    // late retransmission) is refused statelessly.
    if (d.header.type == wire::DgramType::kRdControl &&
        d.header.ctrl_op == wire::DgramControlOp::kReset) {
      ++gone_.rd_stale;
      return;
    }
    auto tomb = tombs_.find(key);
    const bool known_dead = tomb != tombs_.end() && tomb->second.Knows(d.header.session);
    if (!d.header.syn || known_dead) {
      RefuseSession(d, from);
      return;
    }
    q = Make(key, TombOf(key));
    if (q == nullptr) return;
  }
  if (d.ulpdu.size() + d.ulpdu_placed.size() >= rd::RdQp::kMinPlacedPayload) hot_ = q;
  if (q->OnDatagram(d) == rd::RdStream::Input::kPeerRestarted) {
    const rd::InboundSessions sessions = q->stream().sessions();
    q->Fail(ECONNRESET);
    Retire(key);
    q = Make(key, sessions);
    if (q == nullptr) return;
    (void)q->OnDatagram(d);
  }
  if (q->failed()) Retire(key);
}

rd::InboundSessions RdChannel::TombOf(const RdPeerKey& key) const {
  // A new QP to a failed peer still knows that peer's old sessions.
  auto it = tombs_.find(key);
  return it != tombs_.end() ? it->second : rd::InboundSessions{};
}

void RdChannel::RefuseSession(const wire::DecodedDgram& d, const transport::SockAddr& from) {
  if (d.later_record) return;  // its bundle's first record answered already
  uint32_t session = 0;
  while (session == 0) session = random_.Next32();
  const wire::DgramHeader reset =
      rd::ResetHeader(config_.qpn, d.header.src_qpn, session, d.header.session);
  if (port_->Send(from, reset, {}) == transport::IoStatus::kOk) ++gone_.rd_resets_sent;
}

void RdChannel::CollectStats(EndpointStats* out) const {
  AddPort(port_->counters(), out);
  if (faults_ != nullptr) AddFaults(faults_->counters(), out);
  for (const auto& [key, e] : peers_) {
    AddRdStream(e.qp->stream(), out);
    AddQp(e.qp->qp(), out);
  }
  Add(gone_, out);
}

uint32_t RdChannel::interest() const {
  uint32_t want = transport::Poller::kReadable;
  // With a hot socket, only the socket that refused a datagram is waited on
  // (the other one is writable and would wake every pass); neither flagged
  // (a refusal before the hot socket existed): this one.
  const bool hot_only = hot_added_ && hot_socket_->hot_blocked() && !hot_socket_->main_blocked();
  if (!hot_only && WantsWrite()) want |= transport::Poller::kWritable;
  return want;
}

void RdChannel::OnReady(uint32_t events) {
  in_callback_ = true;
  if ((events & transport::Poller::kWritable) != 0) {
    for (rd::RdQp* q : Snapshot()) {
      if (q->wants_socket_write()) q->OnSocketWritable();
    }
  }
  if ((events & (transport::Poller::kReadable | transport::Poller::kError)) != 0) {
    port_->OnReadable(kReadBudget);
  }
  in_callback_ = false;
  Reap(true);
  UpdateHot();
}

bool RdChannel::PollDirect() {
  in_callback_ = true;
  const bool got = port_->OnReadable(kReadBudget) > 0;
  in_callback_ = false;
  Reap(true);
  UpdateHot();
  return got;
}

std::optional<uint64_t> RdChannel::deadline() const {
  uint64_t next = UINT64_MAX;
  for (const rd::RdQp* q : active_) next = std::min(next, q->Deadline());
  next = std::min(next, sweep_.due());
  if (!retired_.empty()) next = 0;  // destroy them soon
  if (next == UINT64_MAX) return std::nullopt;
  return next;
}

void RdChannel::OnTimer() {
  const uint64_t now = engine_.clock().NowNs();
  in_callback_ = true;
  for (rd::RdQp* q : Snapshot()) {
    if (q->Deadline() <= now) q->OnTimer();
  }
  if (sweep_.due() <= now) sweep_.Run(now);
  in_callback_ = false;
  Reap(true);
  UpdateHot();  // a resend may have been refused by the hot socket
}

bool RdChannel::Settled() const {
  return std::all_of(peers_.begin(), peers_.end(), [](const auto& kv) {
    return kv.second.qp == nullptr || kv.second.qp->settled();
  });
}

void RdChannel::FlushAcks() {
  for (auto& [key, e] : peers_) {
    if (e.qp != nullptr) e.qp->FlushAck();
  }
}

void RdChannel::AfterPost() {
  // Also called from completion callbacks (a sink reposting): then a failed
  // QP may still be on the stack, so it is only retired, not destroyed.
  Reap(!in_callback_);
  engine_.Update(*this);
  UpdateHot();
}

}  // namespace iwarpx::progress
