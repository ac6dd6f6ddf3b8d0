// RdmCore's connected channels: listening, promotion, the tie-break, the
// SWITCH order rule and failure (docs/design.md "Connected channels in the
// RDM endpoint"; the contract is in rdm_core.h).
#include <algorithm>
#include <cerrno>

#include "rdm/rc_hello.h"
#include "rdm/rdm_core.h"

namespace iwarpx::rdm {

namespace {

bool NamesRc(const SendRuleChain& chain) {
  const ChannelSet named = chain.named();
  return named.Has(Channel::kRcSr) || named.Has(Channel::kRcFp) || named.Has(Channel::kRcRdma);
}

constexpr int kListenBacklog = 64;

}  // namespace

void RdmCore::OpenListener() {
  if (config_.rc.max_links == 0 || !NamesRc(config_.send_rules)) return;
  progress::ChannelConfig cc = config_.rc.mpa;
  cc.pd = config_.channel.pd;
  // TCP at the UDP socket's own address and port number (another name space).
  auto l =
      progress::MsgListener::Listen(engine_, channel_->local_address(), cc, kListenBacklog, *this);
  if (!l.ok()) {
    rc_listen_error_ = l.error();
    return;
  }
  listener_ = std::move(l).value();
}

bool RdmCore::SendsOnRc(const transport::SockAddr& to) const {
  const auto it = peers_.find(to.HostLocal());
  return it != peers_.end() && it->second->tx_on_rc;
}

void RdmCore::DropRcForTest(const transport::SockAddr& to) {
  const auto it = peers_.find(to.HostLocal());
  if (it == peers_.end() || it->second->link == nullptr) return;
  RcDown(*it->second->link);
}

bool RdmCore::FailRdForTest(const transport::SockAddr& to) {
  rd::RdQp* q = channel_->Find({to.HostLocal(), kRdmQpn});
  if (q == nullptr) return false;
  q->Fail(ECANCELED);
  channel_->AfterPost();
  return true;
}

void RdmCore::CollectStats(progress::EndpointStats* out) const {
  channel_->CollectStats(out);
  progress::Add(links_gone_, out);
  for (const auto& [addr, p] : peers_) {
    if (p->link != nullptr && p->link->ch != nullptr) p->link->ch->CollectStats(out);
  }
  out->rdm_ud_sr_msgs += counters_.ud_sr_msgs;
  out->rdm_ud_zcopy_msgs += counters_.ud_zcopy_msgs;
  out->rdm_rc_sr_msgs += counters_.rc_sr_msgs;
  out->rdm_rc_rdma_msgs += counters_.rc_rdma_msgs;
  out->rdm_rc_fp_msgs += counters_.rc_fp_msgs;
  out->rdm_rndv_write_msgs += counters_.rndv_write_msgs;
  out->rdm_copy_msgs += counters_.copy_msgs;
  out->rdm_copy_fallbacks += counters_.copy_fallbacks;
  out->rdm_rc_fallbacks += counters_.rc_fallbacks;
  out->rdm_rc_resent += counters_.rc_resent;
  out->rdm_rd_direct += counters_.rd_direct;
  out->rc_opened += counters_.rc_opened;
  out->rc_accepted += counters_.rc_accepted;
  out->rc_rejected += counters_.rc_rejected;
  out->rc_failed += counters_.rc_failed;
  out->rdm_rd_rma_ops += counters_.rd_rma_ops;
  out->rdm_rc_rma_ops += counters_.rc_rma_ops;
  out->rdm_rc_rma_failed += counters_.rc_rma_failed;
}

bool RdmCore::ChainWantsLink(uint64_t size) const {
  ChannelLimits limits = EagerLimits();
  limits.max_size[static_cast<int>(Channel::kRcFp)] =
      FpWanted() ? std::min<uint64_t>(config_.rc.fp_max_payload, eager_limit()) : 0;
  const ChannelSet all{Channel::kUdSr, Channel::kUdZcopy, Channel::kCopy,
                       Channel::kRcSr, Channel::kRcRdma,  Channel::kRcFp};
  const Channel c = config_.send_rules.Select(size, peers_.size(), all, limits);
  return c == Channel::kRcSr || c == Channel::kRcRdma || c == Channel::kRcFp;
}

void RdmCore::CountAndPromote(Peer& p, uint64_t bytes) {
  if (listener_ != nullptr && p.link == nullptr && !ChainWantsLink(bytes)) return;
  ++p.msgs_sent;
  p.bytes_sent += bytes;
  if (listener_ == nullptr || p.link != nullptr || links_ >= config_.rc.max_links || FbBusy(p) ||
      closing_) {
    return;
  }
  if (p.next_try_msgs == 0) {
    p.next_try_msgs = config_.rc.threshold_msgs;
    p.next_try_bytes = config_.rc.threshold_bytes;
  }
  if (p.msgs_sent < p.next_try_msgs && p.bytes_sent < p.next_try_bytes) return;
  // Whatever happens, the next attempt needs another threshold's worth.
  p.next_try_msgs = p.msgs_sent + config_.rc.threshold_msgs;
  p.next_try_bytes = p.bytes_sent + config_.rc.threshold_bytes;
  auto link = std::make_unique<RcLink>();
  link->core = this;
  link->peer = &p;
  link->outgoing = true;
  link->fp = MakeFpLink();
  progress::ChannelConfig cc = config_.rc.mpa;
  cc.pd = config_.channel.pd;
  transport::SockAddr from = channel_->local_address();
  from.set_port(0);
  if (from.is_any()) from = transport::SockAddr();
  std::array<uint8_t, kRcHelloMaxSize> hello{};
  const size_t hello_len = RcHelloFor(*link, hello);
  auto ch = progress::MsgChannel::Connect(engine_, stags_, cc, config_.rc.qp, p.addr, from,
                                          ByteSpan(hello.data(), hello_len), *link);
  ++counters_.rc_opened;
  ++p.stats.events().rc_opened;
  sink_.OnPeerEvent(p.id, p.addr, PeerEvent::kRcConnecting, 0);
  if (!ch.ok()) {
    ++counters_.rc_failed;
    ++p.stats.events().rc_closed;
    sink_.OnPeerEvent(p.id, p.addr, PeerEvent::kRcClosed, ch.error());
    DropFpLink(*link);
    return;
  }
  link->ch = std::move(ch).value();
  p.link = std::move(link);
  ++links_;
}

void RdmCore::OnRequest(progress::MsgChannel& channel) {
  const std::optional<transport::SockAddr> caller =
      RcCaller(channel.peer_address(), channel.peer_private_data());
  auto refuse = [&] {
    ++counters_.rc_rejected;
    (void)channel.Reject({});
  };
  if (!caller) return refuse();
  Peer& p = PeerFor(*caller);
  if (FbBusy(p) || closing_) return refuse();  // still recovering from a broken one; closing
  if (p.link != nullptr) {
    // Simultaneous connects: the lower address's connection wins. Ours is
    // still pending here (an initiator is established only by the peer's
    // accept, which the peer refuses while its own connect is pending).
    const bool ours_wins = RcLower(channel_->local_address().HostLocal(), p.addr);
    if (!p.link->outgoing || p.link->up || ours_wins) return refuse();
    DropLink(p, ECONNRESET);
  }
  if (links_ >= config_.rc.max_links) return refuse();
  std::unique_ptr<progress::MsgChannel> owned = listener_->Take(&channel);
  if (owned == nullptr) return;
  auto link = std::make_unique<RcLink>();
  link->core = this;
  link->peer = &p;
  link->ch = std::move(owned);
  const std::optional<RcHello> hello = DecodeRcHelloFull(link->ch->peer_private_data());
  if (hello && hello->ring) link->fp = MakeFpLink();
  FpTakePeerRing(*link, hello ? hello->ring : std::nullopt);
  p.link = std::move(link);
  ++links_;
  ++counters_.rc_accepted;
  ++p.stats.events().rc_accepted;
  sink_.OnPeerEvent(p.id, p.addr, PeerEvent::kRcAccepted, 0);
  RcLink& l = *p.link;
  std::array<uint8_t, kRcHelloMaxSize> reply{};
  const size_t reply_len = RcHelloFor(l, reply);
  if (l.ch->Accept(ByteSpan(reply.data(), reply_len), stags_, config_.channel.pd, config_.rc.qp,
                   l) != 0 &&
      !l.dead) {
    RcDown(l);
  }
}

void RdmCore::RcQpReady(RcLink& link, qp::QueuePair& q) {
  link.qp = &q;
  link.bounces_posted = 0;
  // Nothing the peer asks on it runs before its SWITCH (rdm_core_rma.cc).
  if (!link.peer->rx_switched) q.HoldRequests(true);
  FbNewLink(*link.peer);
  PostBounces(*link.peer, Via::kRc);
}

void RdmCore::RcUp(RcLink& link) {
  link.up = true;
  sink_.OnPeerEvent(link.peer->id, link.peer->addr, PeerEvent::kRcUp, 0);
  MarkActive(*link.peer);
  if (link.outgoing) {
    // The Reply's hello: the fast path if it names a ring (a Reply that is
    // not a hello means none).
    const std::optional<RcHello> hello = DecodeRcHelloFull(link.ch->peer_private_data());
    FpTakePeerRing(link, hello ? hello->ring : std::nullopt);
  }
}

void RdmCore::RcDown(RcLink& link) {
  Peer& p = *link.peer;
  // Left idle by both sides (both SWITCHes back crossed): the peer closed
  // it after everything it sent had arrived.
  const bool clean = link.back_sent && link.back_got && LinkQuiet(p);
  const bool was_up = link.up;
  // Broken while the RD session lives: recovered without loss (rdm_core_fallback.cc).
  if (was_up && !clean && FallBack(p)) return;
  ++(clean ? counters_.rc_idle_closed : counters_.rc_failed);
  DropLink(p, ECONNRESET);
  // A connection that carried messages may have lost some whose sends
  // completed: fail the peer's RD session too, so nothing is lost silently.
  if (was_up && !clean) {
    if (rd::RdQp* q = channel_->Find({p.addr, kRdmQpn}); q != nullptr) {
      q->Fail(ECONNRESET);
      channel_->AfterPost();
    }
  }
}

void RdmCore::DropLink(Peer& p, int err) {
  if (p.link == nullptr) return;
  ++p.stats.events().rc_closed;
  sink_.OnPeerEvent(p.id, p.addr, PeerEvent::kRcClosed, err);
  if (p.link->ch != nullptr) p.link->ch->CollectStats(&links_gone_);  // counts only grow
  DropFpLink(*p.link);  // its memory stays until the QP is gone (graveyard)
  FailLinkRma(*p.link, err);
  p.link->dead = true;
  graveyard_.push_back(std::move(p.link));
  if (deferred_added_) engine_.Update(deferred_);
  --links_;
  p.tx_on_rc = false;
  p.rx_switched = false;
  p.replaying = false;
  for (const auto& [bounce, bytes] : p.held) FreeBounce(bounce);
  p.held.clear();
  p.read_wait[static_cast<size_t>(Via::kRc)].clear();  // their ops fail below
  DropWriteRendezvous(p, Via::kRc, err);
  DropFins(p, Via::kRc);
  // What waits on the connection will hear nothing more from it.
  for (uint32_t i = 0; i < tx_.size(); ++i) {
    TxOp& op = tx_[i];
    if (!op.used || op.peer != p.id || op.via != Via::kRc) continue;
    for (uint8_t k = 0; k < op.stag_count; ++k) (void)stags_.Deregister(op.stags[k]);
    const uint64_t context = op.context;
    op.used = false;
    tx_free_.push_back(i);
    sink_.SendFailed(context, err);
  }
  for (uint32_t i = 0; i < rndv_.size(); ++i) {
    RndvOp& op = rndv_[i];
    if (!op.used || op.peer != p.id || op.via != Via::kRc) continue;
    const bool reading = op.reads_left > 0 || op.todo > 0;
    for (uint8_t k = 0; k < op.stag_count; ++k) (void)stags_.Deregister(op.stags[k]);
    op.stag_count = 0;
    op.used = false;
    rndv_free_.push_back(i);
    // A rendezvous whose FIN was already posted has been reported.
    if (reading) sink_.RecvFailed(op.context, err);
  }
  for (Unexp& u : unexp_) {
    if (u.used && u.src == p.id && u.via == Via::kRc && u.header.op == wire::RdmOp::kRts) {
      u.dead = true;
    }
  }
}

RdmStatus RdmCore::SendSwitch(Peer& p) {
  rd::RdQp* q = channel_->Find({p.addr, kRdmQpn});
  if (q == nullptr) return RdmStatus::kNoPeer;
  wire::RdmHeader h;
  h.op = wire::RdmOp::kSwitch;
  std::array<uint8_t, wire::kRdmHeaderSize>& header = Fb(p).switch_header;
  if (!wire::EncodeRdmHeader(h, header).ok()) return RdmStatus::kInvalid;
  qp::SendWr wr;
  wr.sgl.Add(header.data(), wire::kRdmHeaderSize);
  wr.context = Ctx(Kind::kSwitch, p.id);
  switch (q->qp().PostSend(wr)) {
    case qp::QpStatus::kOk: break;
    case qp::QpStatus::kQueueFull: return RdmStatus::kAgain;
    case qp::QpStatus::kBadState: return RdmStatus::kNoPeer;
    default: return RdmStatus::kInvalid;
  }
  p.tx_on_rc = true;
  ++counters_.rc_switches;
  return RdmStatus::kOk;
}

void RdmCore::OnSwitch(Peer& p, Via via) {
  if (via != Via::kRd || p.rx_switched) {
    ProtocolError(p, "SWITCH on the connection or twice");
    return;
  }
  p.rx_switched = true;
  // Every RD message sent before the SWITCH has been through Arrived; the
  // held ones follow in their arrival order (and what arrives meanwhile
  // queues behind them).
  p.replaying = true;
  while (p.replaying && !p.held.empty()) {
    const auto [bounce, bytes] = p.held.front();
    p.held.pop_front();
    auto m = wire::DecodeRdmMessage(ByteSpan(bounces_.Buf(bounce), bytes));
    if (!m.ok()) {  // decoded once already; cannot happen
      FreeBounce(bounce);
      continue;
    }
    if (m->header.op == wire::RdmOp::kSwitch) {  // the SWITCH back (rdm_core_idle.cc)
      Repost(p, Via::kRc, bounce);
      OnSwitchBack(p);
      continue;
    }
    if (m->header.op == wire::RdmOp::kFin) {  // held behind them: counted in order
      Repost(p, Via::kRc, bounce);
      FbTook(p, m->header);
      OnFin(p, m->header);
      continue;
    }
    Arrived(p, Via::kRc, bounce, *m);
  }
  p.replaying = false;
  ReleaseLinkHold(p);
}

}  // namespace iwarpx::rdm
