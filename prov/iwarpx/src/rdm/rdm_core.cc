#include "rdm/rdm_core.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace iwarpx::rdm {

namespace {

constexpr size_t kMaxTxOps = 1u << 16;  // msg_id carries the index in 16 bits
constexpr size_t kMaxRxOps = 1u << 20;
constexpr size_t kMaxRndv = 1u << 16;

size_t IovBytes(const iovec* iov, size_t count) {
  size_t n = 0;
  for (size_t i = 0; i < count; ++i) n += iov[i].iov_len;
  return n;
}

int ErrnoOf(const qp::WcError& e) {
  switch (e.origin) {
    case qp::TermOrigin::kConnectionLost: return ECONNRESET;
    case qp::TermOrigin::kLocalClose: return ECANCELED;
    case qp::TermOrigin::kSent:
    case qp::TermOrigin::kReceived: return ECONNABORTED;
  }
  return EIO;
}

}  // namespace

template <class T>
std::optional<uint32_t> RdmCore::Alloc(std::deque<T>& v, std::vector<uint32_t>& free_list,
                                       size_t max) {
  if (!free_list.empty()) {
    const uint32_t i = free_list.back();
    free_list.pop_back();
    v[i] = T{};
    v[i].used = true;
    return i;
  }
  if (v.size() >= max) return std::nullopt;
  v.emplace_back();
  v.back().used = true;
  return static_cast<uint32_t>(v.size() - 1);
}

RdmCore::RdmCore(progress::Engine& engine, const RdmConfig& config, mem::StagTable& stags,
                 RdmSink& sink)
    : engine_(engine),
      config_(config),
      stags_(stags),
      sink_(sink),
      bounces_(std::max(config.bounce_size, wire::kRdmRtsMaxSize)) {}

Result<std::unique_ptr<RdmCore>, transport::IoError> RdmCore::Open(
    progress::Engine& engine, const transport::SockAddr& local, const RdmConfig& config,
    mem::StagTable& stags, RdmSink& sink, const transport::FaultSpec& faults) {
  std::unique_ptr<RdmCore> core(new RdmCore(engine, config, stags, sink));
  core->config_.channel.qpn = kRdmQpn;
  core->config_.bounce_size = std::max(config.bounce_size, wire::kRdmRtsMaxSize);
  // With an ephemeral port the kernel picks the UDP number; the connected
  // channels need the same number free on TCP, so a few picks are tried.
  constexpr int kPortTries = 8;
  for (int tries = 0;; ++tries) {
    auto ch = progress::RdChannel::Open(engine, local, core->config_.channel, stags, *core, faults);
    if (!ch.ok()) return Err{ch.error()};
    core->channel_ = std::move(ch).value();
    core->OpenListener();
    if (core->rc_listen_error_ != EADDRINUSE || local.port() != 0 || tries + 1 == kPortTries) {
      break;
    }
    core->channel_.reset();
    core->rc_listen_error_ = 0;
  }
  core->deferred_.core = core.get();
  core->deferred_added_ = engine.Add(core->deferred_).ok();
  return core;
}

RdmCore::~RdmCore() {
  // Connections first (their QPs report to the peers), then the listener and
  // the RD QPs.
  for (auto& [addr, p] : peers_) {
    if (p->link) p->link->dead = true;
    p->link.reset();
  }
  graveyard_.clear();
  if (deferred_added_) engine_.Remove(deferred_);
  listener_.reset();
  channel_.reset();  // QPs first: they report to the peers below
  for (TxOp& op : tx_) {
    for (uint8_t i = 0; i < op.stag_count; ++i) (void)stags_.Deregister(op.stags[i]);
  }
  for (RndvOp& op : rndv_) {
    for (uint8_t i = 0; i < op.stag_count; ++i) (void)stags_.Deregister(op.stags[i]);
  }
}

bool RdmCore::Settled() const {
  for (const auto& [addr, p] : peers_) {
    const RcLink* l = p->link.get();
    if (l == nullptr || l->dead || l->qp == nullptr || l->qp->state() == qp::QpState::kError) {
      continue;
    }
    // Handed to TCP is not enough: closing a socket with unread input resets
    // it and drops what the peer's TCP has not acknowledged.
    if (l->qp->wants_write() || (l->ch != nullptr && l->ch->unacknowledged_bytes() > 0)) {
      return false;
    }
  }
  return channel_->Settled();
}

// --- Peers ---------------------------------------------------------------

RdmCore::Peer& RdmCore::PeerFor(const transport::SockAddr& name) {
  // Peers are never removed, so the last one found stays valid.
  if (last_peer_ != nullptr && last_name_ == name) return *last_peer_;
  // Datagrams from a peer on this host bound to the wildcard address come
  // from the loopback address: one peer, one key.
  const transport::SockAddr addr = name.HostLocal();
  auto [it, made] = peers_.try_emplace(addr);
  if (made) {
    it->second = std::make_unique<Peer>(it->first);  // Peer::addr refers to the key
    Peer& p = *it->second;
    p.core = this;
    p.id = peer_by_id_.size();
    peer_by_id_.push_back(&p);
  }
  last_name_ = name;
  last_peer_ = it->second.get();
  return *last_peer_;
}

RdmCore::Peer* RdmCore::PeerById(PeerId id) {
  return id < peer_by_id_.size() ? peer_by_id_[id] : nullptr;
}

PeerId RdmCore::PeerIdOf(const transport::SockAddr& addr) {
  return PeerFor(addr).id;
}

std::optional<transport::SockAddr> RdmCore::AddressOf(PeerId id) const {
  if (id >= peer_by_id_.size()) return std::nullopt;
  return peer_by_id_[id]->addr;
}

qp::CompletionSink& RdmCore::PeerSink(const progress::RdPeerKey& key) {
  return PeerFor(key.addr);
}

void RdmCore::PeerCreated(const progress::RdPeerKey& key, rd::RdQp& qp) {
  Peer& p = PeerFor(key.addr);
  p.bounces_posted = 0;
  p.stats.AddRdSession();
  qp.qp().SetRecvSource(&p);  // bounces on demand (rdm_core_bounce.cc)
}

void RdmCore::PeerFailed(const progress::RdPeerKey& key, const rd::RdQp& qp) {
  ++counters_.peers_failed;
  Peer& p = PeerFor(key.addr);
  p.bounces_posted = 0;
  CountRdSession(p, qp);
  ++p.stats.events().rd_failed;
  // A QP that failed by a Terminate has a healthy stream: a protocol error.
  const int err = qp.stream().error() != 0 ? qp.stream().error() : EPROTO;
  sink_.OnPeerEvent(p.id, p.addr, PeerEvent::kRdFailed, err);
  // Its connection goes with it; both directions start over on datagrams.
  if (p.link) DropLink(p, ECONNRESET);
  DropReads(p, Via::kRd);
  DropWriteRendezvous(p, Via::kRd, ECONNRESET);
  DropFins(p, Via::kRd);
  p.rx_switched = false;
  p.tx_on_rc = false;
  for (const auto& [bounce, bytes] : p.rd_held) FreeBounce(bounce);
  p.rd_held.clear();
  p.rd_replaying = false;
  FbReset(p);
  // Rendezvous sends whose RTS went out wait for a FIN that will not come.
  for (uint32_t i = 0; i < tx_.size(); ++i) {
    TxOp& op = tx_[i];
    if (!op.used || op.peer != p.id || op.kind != Kind::kRts) continue;
    for (uint8_t k = 0; k < op.stag_count; ++k) (void)stags_.Deregister(op.stags[k]);
    const uint64_t context = op.context;
    op.used = false;
    tx_free_.push_back(i);
    sink_.SendFailed(context, ECONNRESET);
  }
  for (Unexp& u : unexp_) {
    if (u.used && u.src == p.id && u.header.op == wire::RdmOp::kRts) u.dead = true;
  }
}

qp::QueuePair* RdmCore::QpOf(Peer& p, Via via) {
  if (via == Via::kRc) {
    return p.link != nullptr && !p.link->dead ? p.link->qp : nullptr;
  }
  rd::RdQp* q = channel_->Find({p.addr, kRdmQpn});
  return q != nullptr ? &q->qp() : nullptr;
}

uint32_t* RdmCore::BouncesOf(Peer& p, Via via) {
  if (via == Via::kRd) return &p.bounces_posted;
  return p.link != nullptr && !p.link->dead ? &p.link->bounces_posted : nullptr;
}

void RdmCore::Kick(Peer& p, Via via) {
  if (via == Via::kRc && p.link != nullptr && !p.link->dead && p.link->ch != nullptr) {
    engine_.Update(*p.link->ch);
  }
}

bool RdmCore::PostBounce(Peer& p, Via via, uint32_t bounce) {
  qp::QueuePair* q = QpOf(p, via);
  uint32_t* posted = BouncesOf(p, via);
  qp::RecvWr r;
  r.context = Ctx(Kind::kBounce, bounce);
  r.sgl.Add(bounces_.Buf(bounce), config_.bounce_size);
  if (q == nullptr || posted == nullptr) {
    FreeBounce(bounce);
    return false;
  }
  ++*posted;  // first: a blocked QP resumes inside PostRecv and may complete it at once
  if (q->PostRecv(r) != qp::QpStatus::kOk) {
    --*posted;
    FreeBounce(bounce);
    return false;
  }
  Kick(p, via);
  return true;
}

void RdmCore::PostBounces(Peer& p, Via via) {
  for (uint32_t* posted = BouncesOf(p, via); posted != nullptr && *posted < BounceTarget(via);
       posted = BouncesOf(p, via)) {
    if (!PostBounce(p, via, AllocBounce())) return;
  }
}

void RdmCore::Repost(Peer& p, Via via, uint32_t bounce) {
  const uint32_t* posted = BouncesOf(p, via);
  if (QpOf(p, via) != nullptr && posted != nullptr && *posted < BounceTarget(via)) {
    (void)PostBounce(p, via, bounce);
  } else {
    FreeBounce(bounce);
  }
}

void RdmCore::ProtocolError(Peer& p, const char* /*why*/) {
  ++counters_.protocol_errors;
  if (rd::RdQp* q = channel_->Find({p.addr, kRdmQpn}); q != nullptr) q->Fail(EPROTO);
}

// --- Sending -------------------------------------------------------------

RdmStatus RdmCore::Send(const transport::SockAddr& to, const iovec* iov, size_t count, bool tagged,
                        uint64_t tag, bool has_data, uint64_t data, uint64_t context) {
  if (count > kMaxIov || (count > 0 && iov == nullptr)) return RdmStatus::kInvalid;
  ReapLinks();
  Peer& p = PeerFor(to);
  rd::RdQp* q = channel_->Peer({p.addr, kRdmQpn});
  if (q == nullptr) return RdmStatus::kNoPeer;
  if (FbBlocksSends(p)) return RdmStatus::kAgain;  // resends after a break go first
  // The connected QP once it is established; after our SWITCH every message
  // to the peer takes it (the order rule), the chain then picks the protocol.
  qp::QueuePair* rc = QpOf(p, Via::kRc);
  if (rc != nullptr && (!p.link->up || p.link->back_sent || p.link->back_got)) rc = nullptr;
  const std::optional<uint32_t> index = Alloc(tx_, tx_free_, kMaxTxOps);
  if (!index) return RdmStatus::kAgain;
  TxOp& op = tx_[*index];
  op.context = context;
  op.peer = p.id;
  wire::RdmHeader h;
  h.tagged = tagged;
  h.tag = tagged ? tag : 0;
  h.has_data = has_data;
  h.data = has_data ? data : 0;
  h.size = IovBytes(iov, count);
  qp::SendWr wr;
  bool fell_back = false;  // registration refused: copy instead (counted once posted)
  auto undo = [&](RdmStatus s) {
    for (uint8_t k = 0; k < op.stag_count; ++k) (void)stags_.Deregister(op.stags[k]);
    op.used = false;
    tx_free_.push_back(*index);
    return s;
  };
  ChannelLimits limits = EagerLimits();
  ChannelSet available{Channel::kUdSr, Channel::kUdZcopy, Channel::kCopy};
  if (rc != nullptr) {
    available.Add(Channel::kRcSr);
    available.Add(Channel::kRcRdma);
    if (const uint64_t room = FpRoom(p); room > 0) {
      available.Add(Channel::kRcFp);
      limits.max_size[static_cast<int>(Channel::kRcFp)] = room;
    }
  }
  const Channel channel = config_.send_rules.Select(h.size, peers_.size(), available, limits);
  const bool fp = channel == Channel::kRcFp;
  const bool eager = fp || channel == Channel::kUdSr || channel == Channel::kRcSr;
  op.via = rc != nullptr &&
                   (p.tx_on_rc || fp || channel == Channel::kRcSr || channel == Channel::kRcRdma)
               ? Via::kRc
               : Via::kRd;
  if (op.via == Via::kRc && FbFull(p)) return undo(RdmStatus::kAgain);  // copies at their bound
  if (op.via == Via::kRc && !p.tx_on_rc) {
    if (const RdmStatus s = SendSwitch(p); s != RdmStatus::kOk) return undo(s);
  }
  if (fp) {
    op.kind = Kind::kEager;
    h.op = wire::RdmOp::kEager;
    if (!wire::EncodeRdmHeader(h, std::span(op.header).subspan(kFpSlotHeaderSize)).ok()) {
      return undo(RdmStatus::kInvalid);
    }
  } else if (eager) {
    op.kind = Kind::kEager;
    h.op = wire::RdmOp::kEager;
    auto n = wire::EncodeRdmHeader(h, op.header);
    if (!n.ok()) return undo(RdmStatus::kInvalid);
    wr.sgl.Add(op.header.data(), *n);
    for (size_t i = 0; i < count; ++i) wr.sgl.Add(iov[i].iov_base, iov[i].iov_len);
    wr.context = Ctx(Kind::kEager, *index);
  } else {
    op.kind = Kind::kRts;
    ArmAwaitCheck();
    h.op = wire::RdmOp::kRts;
    op.msg_id = (next_msg_gen_++ << 16) | *index;
    h.msg_id = op.msg_id;
    op.size = h.size;
    // The write handshake: no registration, the data goes by our Writes
    // once the CTS names the receiver's buffer (rdm_core_write.cc).
    // The copy rendezvous (rdm_core_copy.cc) registers nothing either.
    op.copy = channel == Channel::kCopy;
    op.write = config_.rndv_write && !op.copy;
    for (size_t i = 0; i < count; ++i) {
      if (iov[i].iov_len == 0) continue;
      op.iov[op.iov_count++] = iov[i];  // the Writes' or DATA's source, if it comes to that
      if (op.write || op.copy) continue;
      mem::RegionSpec spec;
      spec.host = static_cast<uint8_t*>(iov[i].iov_base);
      spec.length = iov[i].iov_len;
      spec.base_to = reinterpret_cast<uintptr_t>(iov[i].iov_base);
      spec.access = mem::kRemoteRead;
      spec.pd = config_.channel.pd;
      auto stag = stags_.Register(spec);
      if (!stag.ok()) {
        // No zero-copy from this buffer: the data goes by copy instead.
        for (uint8_t k = 0; k < op.stag_count; ++k) (void)stags_.Deregister(op.stags[k]);
        op.stag_count = 0;
        op.copy = true;
        fell_back = true;
        continue;
      }
      op.stags[op.stag_count] = *stag;
      h.segments[op.stag_count] = {*stag, spec.base_to, spec.length};
      ++op.stag_count;
    }
    h.write = op.write;
    h.copy = op.copy;
    h.segment_count = op.write || op.copy ? 0 : op.stag_count;
    auto n = wire::EncodeRdmHeader(h, op.header);
    if (!n.ok()) return undo(RdmStatus::kInvalid);
    wr.sgl.Add(op.header.data(), *n);
    wr.context = Ctx(Kind::kRts, *index);
  }
  // A post may find the connection broken and fall back at once (op.via
  // then says RD): what went on it is still kept (rdm_core_fallback.cc).
  const bool on_rc = op.via == Via::kRc;
  posting_tx_ = *index;
  const qp::QpStatus posted =
      fp ? SendFp(p, *index, iov, count) : (op.via == Via::kRc ? *rc : q->qp()).PostSend(wr);
  posting_tx_ = UINT32_MAX;
  switch (posted) {
    case qp::QpStatus::kOk: break;
    case qp::QpStatus::kQueueFull: return undo(RdmStatus::kAgain);
    case qp::QpStatus::kBadState: return undo(RdmStatus::kNoPeer);
    default: return undo(RdmStatus::kInvalid);
  }
  if (on_rc && !op.write && !op.copy) {  // numbered: kept until the peer took it
    const std::span<const uint8_t> hdr =
        fp ? std::span<const uint8_t>(op.header).subspan(kFpSlotHeaderSize, wire::kRdmHeaderSize)
           : std::span<const uint8_t>(op.header).first(wire::RdmHeaderLength(h));
    FbKeep(p, hdr, eager ? iov : nullptr, eager ? count : 0);
  }
  if (op.via == Via::kRc && p.link != nullptr && p.link->ch != nullptr) {
    p.link->ch->AfterPost();
    MarkActive(p);
  }
  ++(op.kind == Kind::kEager ? counters_.eager_sent : counters_.rts_sent);
  if (op.write) ++counters_.rndv_write_msgs;
  if (fell_back) ++counters_.copy_fallbacks;
  if (fp) {
    ++counters_.rc_fp_msgs;
  } else if (op.copy) {
    ++counters_.copy_msgs;
  } else if (op.via == Via::kRc) {
    ++(eager ? counters_.rc_sr_msgs : counters_.rc_rdma_msgs);
  } else {
    ++(eager ? counters_.ud_sr_msgs : counters_.ud_zcopy_msgs);
  }
  p.stats.CountSent(fp        ? Channel::kRcFp
                    : op.copy ? Channel::kCopy
                              : CarriedOn(op.via, op.kind == Kind::kEager),
                    h.size);
  CountAndPromote(p, h.size);
  if (on_rc && op.via == Via::kRd) {  // the connection broke during the post
    if (op.kind == Kind::kRts && !op.write && !op.copy) {
      op.sent = true;  // kept: resent if the peer did not take it; the FIN completes it
    } else {
      const uint64_t op_context = op.context;
      // The write handshake and the copy rendezvous fail with the connection.
      const bool failed = op.write || op.copy;
      op.used = false;
      tx_free_.push_back(*index);
      if (failed) {
        sink_.SendFailed(op_context, ECONNRESET);
      } else {
        sink_.SendDone(op_context);  // its kept copy carries it
      }
    }
  }
  return RdmStatus::kOk;
}

void RdmCore::OnSendComplete(Peer& p, Via via, uint64_t ctx) {
  ScheduleFlush(p, via);
  const uint64_t i = IndexOf(ctx);
  switch (KindOf(ctx)) {
    case Kind::kEager: {
      if (i >= tx_.size() || !tx_[i].used) return;
      const uint64_t context = tx_[i].context;
      tx_[i].used = false;
      tx_free_.push_back(static_cast<uint32_t>(i));
      sink_.SendDone(context);
      return;
    }
    case Kind::kRts: {
      if (i >= tx_.size() || !tx_[i].used) return;
      TxOp& op = tx_[i];
      op.sent = true;
      if (op.copy) {
        MaybeFinishCopySend(static_cast<uint32_t>(i));
        return;
      }
      if (op.write || !op.fin_seen) return;  // a write handshake completes with its FIN (W)
      const uint64_t context = op.context;
      op.used = false;
      tx_free_.push_back(static_cast<uint32_t>(i));
      sink_.SendDone(context);
      return;
    }
    case Kind::kFin:  // our FIN, or our CTS (write handshake: free once written too)
      if (i < rndv_.size() && rndv_[i].used) {
        rndv_[i].cts_done = true;
        if (!rndv_[i].write_waiting) FreeRndv(static_cast<uint32_t>(i));
      }
      return;
    case Kind::kFinW: {
      if (i >= tx_.size() || !tx_[i].used || !tx_[i].write) return;
      const uint64_t context = tx_[i].context;
      tx_[i].used = false;
      tx_free_.push_back(static_cast<uint32_t>(i));
      sink_.SendDone(context);
      return;
    }
    case Kind::kUser:
      RmaFinished(p, via, ctx);
      sink_.RmaDone(i);
      return;
    case Kind::kCopyData: OnCopySent(ctx); return;
    case Kind::kTaken:
    case Kind::kResend: FbSent(p, via, ctx, true); return;
    case Kind::kWrite:
    case Kind::kBounce:
    case Kind::kRead:
    case Kind::kSwitch:
    case Kind::kFp:
    case Kind::kCredit: return;
  }
}

void RdmCore::OnFin(Peer& p, const wire::RdmHeader& h) {
  const uint32_t i = h.msg_id & 0xFFFF;
  if (i >= tx_.size() || !tx_[i].used || tx_[i].kind != Kind::kRts || tx_[i].msg_id != h.msg_id ||
      tx_[i].peer != p.id || tx_[i].fin_seen || tx_[i].write || tx_[i].copy) {
    ProtocolError(p, "FIN for no rendezvous of this peer");
    return;
  }
  TxOp& op = tx_[i];
  for (uint8_t k = 0; k < op.stag_count; ++k) (void)stags_.Deregister(op.stags[k]);
  op.stag_count = 0;
  op.fin_seen = true;
  if (!op.sent) return;  // completes with its Send
  const uint64_t context = op.context;
  op.used = false;
  tx_free_.push_back(i);
  sink_.SendDone(context);
}

// --- Receiving -----------------------------------------------------------

void RdmCore::OnRecvComplete(Peer& p, Via via, uint64_t ctx, size_t bytes,
                             const qp::RecvInfo& info) {
  if (KindOf(ctx) != Kind::kBounce || IndexOf(ctx) >= bounces_.count()) return;
  const auto b = static_cast<uint32_t>(IndexOf(ctx));
  if (uint32_t* posted = BouncesOf(p, via); posted != nullptr && *posted > 0) --*posted;
  if (info.has_imm && !info.send_imm) {
    Repost(p, via, b);
    sink_.RemoteWriteData(info.imm, p.id);
    return;
  }
  auto m = wire::DecodeRdmMessage(ByteSpan(bounces_.Buf(b), bytes));
  if (info.has_imm || !m.ok()) {
    FreeBounce(b);
    ProtocolError(p, "undecodable RDM message");
    return;
  }
  Incoming(p, via, b, bytes, *m);
}

void RdmCore::Incoming(Peer& p, Via via, uint32_t b, size_t bytes, const wire::RdmMessage& m) {
  switch (m.header.op) {
    case wire::RdmOp::kFin:
      if (via == Via::kRc && !m.header.write && (p.replaying || !p.held.empty())) {
        p.held.emplace_back(b, bytes);  // counted in stream order (rdm_core_fallback.cc)
        return;
      }
      Repost(p, via, b);
      if (via == Via::kRc) FbTook(p, m.header);
      if (m.header.write) {
        OnWritten(p, via, m.header);
      } else {
        OnFin(p, m.header);
      }
      return;
    case wire::RdmOp::kCts:
      Repost(p, via, b);
      if (m.header.copy) {
        OnCopyCts(p, via, m.header);
      } else {
        OnCts(p, via, m.header);
      }
      return;
    case wire::RdmOp::kData:
      OnCopyData(p, via, m);  // copied out before the bounce goes back
      Repost(p, via, b);
      return;
    case wire::RdmOp::kTaken:
      Repost(p, via, b);
      OnTaken(p, via, m.header);
      return;
    case wire::RdmOp::kSwitch:
      if (via == Via::kRc) {
        MarkActive(p);
        // The SWITCH back: after the peer's link messages held so far.
        if (p.replaying || !p.held.empty()) {
          p.held.emplace_back(b, bytes);
          return;
        }
        Repost(p, via, b);
        OnSwitchBack(p);
        return;
      }
      Repost(p, via, b);
      if (FbSwitch(p)) return;  // for a connection that broke (rdm_core_fallback.cc)
      OnSwitch(p, via);
      return;
    case wire::RdmOp::kEager:
    case wire::RdmOp::kRts: break;
  }
  if (via == Via::kRc) MarkActive(p);
  if (via == Via::kRd && (p.rx_switched || p.rd_replaying || FbHolds(p))) {
    // Sent after the peer's SWITCH back, which has not arrived on the link
    // yet: matched after every link message before it.
    p.rd_held.emplace_back(b, bytes);
    return;
  }
  if (via == Via::kRc && (!p.rx_switched || p.replaying)) {
    // Sent after the peer's SWITCH, which has not arrived yet: matched after
    // every RD message before it (the order rule).
    p.held.emplace_back(b, bytes);
    return;
  }
  Arrived(p, via, b, m);
}

bool RdmCore::DeliverIfPosted(Peer& p, Via via, const wire::RdmMessage& m) {
  const wire::RdmHeader& h = m.header;
  if (!h.tagged && !multi_.empty()) {
    PlaceInMulti(p.id, via, h, m.payload);
    return true;
  }
  const std::optional<uint64_t> rx = MatcherFor(h.tagged).TakePosted(h.tagged ? h.tag : 0, p.id);
  if (!rx) return false;
  RxOp& op = rx_[*rx];
  const RecvRequest req = op.req;
  const std::array<iovec, kMaxIov> iov = op.iov;
  op.used = false;
  rx_free_.push_back(static_cast<uint32_t>(*rx));
  if (h.op == wire::RdmOp::kEager) {
    Deliver(req, iov.data(), p.id, h, m.payload);
  } else {
    StartRendezvous(req, iov.data(), p.id, via, h);
  }
  return true;
}

bool RdmCore::TakeEager(Peer& p, ByteSpan bytes) {
  if (bytes.size() < wire::kRdmHeaderSize ||
      bytes[1] != static_cast<uint8_t>(wire::RdmOp::kEager)) {
    return false;
  }
  if (p.rx_switched || p.rd_replaying || FbHolds(p)) return false;  // as Incoming holds it
  const auto m = wire::DecodeRdmMessage(bytes);
  if (!m.ok() || !DeliverIfPosted(p, Via::kRd, *m)) return false;
  p.stats.CountReceived(CarriedOn(Via::kRd, true), m->header.size);
  ++counters_.rd_direct;
  return true;
}

void RdmCore::Arrived(Peer& p, Via via, uint32_t bounce, const wire::RdmMessage& m) {
  const wire::RdmHeader& h = m.header;
  // A message taken from the RC-FP ring counts there (fp_arriving_, set by
  // the ring's reader; one held until a SWITCH counts as rc_sr).
  p.stats.CountReceived(fp_arriving_ ? Channel::kRcFp
                        : h.copy     ? Channel::kCopy
                                     : CarriedOn(via, h.op == wire::RdmOp::kEager),
                        h.size);
  if (via == Via::kRc) FbTook(p, h);  // taken into matching
  TagMatcher& matcher = MatcherFor(h.tagged);
  if (DeliverIfPosted(p, via, m)) {
    Repost(p, via, bounce);
    return;
  }
  // Unexpected: the message stays in its bounce; a fresh one takes its place
  // while unexpected messages hold less than the limit.
  const std::optional<uint32_t> u = Alloc(unexp_, unexp_free_, SIZE_MAX);
  if (!u) {
    FreeBounce(bounce);
    ProtocolError(p, "unexpected message table full");
    return;
  }
  ++counters_.unexpected;
  Unexp& e = unexp_[*u];
  e.bounce = bounce;
  e.src = p.id;
  e.via = via;
  e.header = h;
  e.payload_offset = static_cast<size_t>(m.payload.data() - bounces_.Buf(bounce));
  if (m.payload.empty()) e.payload_offset = 0;
  matcher.AddUnexpected({h.tagged ? h.tag : 0, p.id, *u});
  unexpected_bytes_ += config_.bounce_size;
  if (via == Via::kRd) ++p.rd_unexpected;
  const uint32_t* posted = BouncesOf(p, via);
  if (QpOf(p, via) != nullptr && posted != nullptr &&
      unexpected_bytes_ <= config_.unexpected_limit && *posted < BounceTarget(via)) {
    (void)PostBounce(p, via, AllocBounce());
  }
}

void RdmCore::Deliver(const RecvRequest& r, const iovec* iov, PeerId src, const wire::RdmHeader& h,
                      ByteSpan payload, const RecvResult* multi) {
  RecvResult res;
  if (multi != nullptr) res = *multi;
  res.tagged = h.tagged;
  res.tag = h.tag;
  res.has_data = h.has_data;
  res.data = h.data;
  res.src = src;
  size_t at = 0;
  for (size_t i = 0; i < r.count && at < payload.size(); ++i) {
    const size_t n = std::min(iov[i].iov_len, payload.size() - at);
    if (n > 0) std::memcpy(iov[i].iov_base, payload.data() + at, n);
    at += n;
  }
  res.len = at;
  res.truncated = payload.size() - at;
  sink_.RecvDone(r.context, res);
}

void RdmCore::StartRendezvous(const RecvRequest& r, const iovec* iov, PeerId src, Via via,
                              const wire::RdmHeader& h, const RecvResult* multi) {
  Peer* p = PeerById(src);
  qp::QueuePair* q = p != nullptr ? QpOf(*p, via) : nullptr;
  const std::optional<uint32_t> index = Alloc(rndv_, rndv_free_, kMaxRndv);
  if (q == nullptr || !index) {
    sink_.RecvFailed(r.context, q == nullptr ? ECONNRESET : EAGAIN);
    return;
  }
  RndvOp& op = rndv_[*index];
  ArmAwaitCheck();
  op.context = r.context;
  op.peer = src;
  op.via = via;
  if (multi != nullptr) op.result = *multi;
  op.result.tagged = h.tagged;
  op.result.tag = h.tag;
  op.result.has_data = h.has_data;
  op.result.data = h.data;
  op.result.src = src;
  const uint64_t capacity = IovBytes(iov, r.count);
  const uint64_t want = std::min<uint64_t>(h.size, capacity);
  op.result.len = want;
  op.result.truncated = h.size - want;
  op.msg_id = h.msg_id;
  if (h.copy) {
    StartCopyRendezvous(*p, *index, iov, r.count);
    return;
  }
  if (h.write) {
    StartWriteRendezvous(*p, *index, iov, r.count);
    return;
  }
  wire::RdmHeader fin;
  fin.op = wire::RdmOp::kFin;
  fin.msg_id = h.msg_id;
  fin.size = want;
  (void)wire::EncodeRdmHeader(fin, op.fin);
  RegisterSinks(op, iov, r.count, mem::kLocalWrite);  // for the Reads
  if (op.failed) {
    // No Reads into this buffer: the sender copies it over instead.
    FallBackToCopy(*p, *index, iov, r.count);
    return;
  }
  op.src = h.segments;
  op.src_count = h.segment_count;
  op.todo = op.failed ? 0 : want;
  if (!ContinueReads(*p, *index)) p->read_wait[static_cast<size_t>(via)].push_back(*index);
}

void RdmCore::RegisterSinks(RndvOp& op, const iovec* iov, size_t count, uint32_t access) {
  uint64_t left = op.result.len;
  for (size_t i = 0; i < count && left > 0; ++i) {
    const uint64_t n = std::min<uint64_t>(iov[i].iov_len, left);
    if (n == 0) continue;
    mem::RegionSpec spec;
    spec.host = static_cast<uint8_t*>(iov[i].iov_base);
    spec.length = n;
    spec.base_to = reinterpret_cast<uintptr_t>(iov[i].iov_base);
    spec.access = access;
    spec.pd = config_.channel.pd;
    auto stag = stags_.Register(spec);
    if (!stag.ok()) {
      op.failed = true;
      op.err = ENOMEM;
      return;
    }
    op.stags[op.stag_count++] = *stag;
    op.sinks[op.sink_count++] = {*stag, spec.base_to, n};
    left -= n;
  }
}

void RdmCore::FinishRendezvous(uint32_t index) {
  RndvOp& op = rndv_[index];
  for (uint8_t k = 0; k < op.stag_count; ++k) (void)stags_.Deregister(op.stags[k]);
  op.stag_count = 0;
  const uint64_t context = op.context;
  const RecvResult result = op.result;
  const bool failed = op.failed;
  const int err = op.err;
  Peer* p = PeerById(op.peer);
  qp::QueuePair* q = p != nullptr ? QpOf(*p, op.via) : nullptr;
  // The FIN frees the sender's buffers; it goes out whenever the QP still
  // works, also after a local failure, so the sender never waits forever.
  // The op lives until the FIN is out.
  // A full send queue holds work that will complete: the FIN waits for that.
  bool fin_posted = false;
  if (q != nullptr && q->state() == qp::QpState::kRts) {
    const qp::QpStatus st = p->fin_wait[static_cast<size_t>(op.via)].empty()
                                ? PostFin(*p, op.via, index)
                                : qp::QpStatus::kQueueFull;
    if (st == qp::QpStatus::kQueueFull) p->fin_wait[static_cast<size_t>(op.via)].push_back(index);
    fin_posted = st == qp::QpStatus::kOk || st == qp::QpStatus::kQueueFull;
    if (!fin_posted) ProtocolError(*p, "FIN refused");  // fails both sides, no hang
  }
  if (!fin_posted) {
    op.used = false;
    rndv_free_.push_back(index);
  }
  if (failed || !fin_posted) {
    sink_.RecvFailed(context, failed ? err : ECONNRESET);
    return;
  }
  sink_.RecvDone(context, result);
}

void RdmCore::OnRdmaComplete(Peer& p, Via via, uint64_t ctx, qp::WcOp /*op*/) {
  ScheduleFlush(p, via);
  const uint64_t i = IndexOf(ctx);
  if (KindOf(ctx) == Kind::kUser) {
    RmaFinished(p, via, ctx);
    sink_.RmaDone(i);
    return;
  }
  if (KindOf(ctx) == Kind::kFp) {  // an EAGER message by Write: done once written
    if (i >= tx_.size() || !tx_[i].used) return;
    const uint64_t context = tx_[i].context;
    tx_[i].used = false;
    tx_free_.push_back(static_cast<uint32_t>(i));
    sink_.SendDone(context);
    return;
  }
  if (KindOf(ctx) != Kind::kRead || i >= rndv_.size() || !rndv_[i].used) return;
  if (--rndv_[i].reads_left == 0 && rndv_[i].todo == 0) {
    FinishRendezvous(static_cast<uint32_t>(i));
  }
}

void RdmCore::OnError(Peer& p, Via via, uint64_t ctx, qp::WcOp /*op*/, const qp::WcError& error) {
  const uint64_t i = IndexOf(ctx);
  switch (KindOf(ctx)) {
    case Kind::kTaken:
    case Kind::kResend: FbSent(p, via, ctx, false); return;
    case Kind::kSwitch:          // the RD QP failed: PeerFailed resets the peer
    case Kind::kCredit: return;  // the link failed: RcDown drops it
    case Kind::kBounce:
      if (uint32_t* posted = BouncesOf(p, via); posted != nullptr && *posted > 0) --*posted;
      if (i < bounces_.count()) FreeBounce(static_cast<uint32_t>(i));
      return;
    case Kind::kEager:
    case Kind::kFp:
    case Kind::kRts: {
      if (i >= tx_.size() || !tx_[i].used) return;
      TxOp& op = tx_[i];
      for (uint8_t k = 0; k < op.stag_count; ++k) (void)stags_.Deregister(op.stags[k]);
      const uint64_t context = op.context;
      op.used = false;
      tx_free_.push_back(static_cast<uint32_t>(i));
      sink_.SendFailed(context, ErrnoOf(error));
      return;
    }
    case Kind::kFin:
      // A CTS that failed: the receive waiting for the FIN (W) fails with the QP
      // (DropWriteRendezvous); a FIN's rendezvous was reported already.
      if (i < rndv_.size() && rndv_[i].used) {
        rndv_[i].cts_done = true;
        if (!rndv_[i].write_waiting) FreeRndv(static_cast<uint32_t>(i));
      }
      return;
    case Kind::kWrite:
      return;  // the FIN (W) behind it fails too, or the QP's failure fails the send
    case Kind::kFinW: {
      if (i >= tx_.size() || !tx_[i].used || !tx_[i].write) return;
      const uint64_t context = tx_[i].context;
      tx_[i].used = false;
      tx_free_.push_back(static_cast<uint32_t>(i));
      sink_.SendFailed(context, ErrnoOf(error));
      return;
    }
    case Kind::kRead:
      if (i >= rndv_.size() || !rndv_[i].used) return;
      rndv_[i].failed = true;
      rndv_[i].err = ErrnoOf(error);
      rndv_[i].todo = 0;  // a waiting rest is not read
      if (--rndv_[i].reads_left == 0) FinishRendezvous(static_cast<uint32_t>(i));
      return;
    case Kind::kUser:
      RmaFinished(p, via, ctx);
      sink_.RmaFailed(i, error);
      return;
    case Kind::kCopyData: OnCopyFailed(ctx, ErrnoOf(error)); return;
  }
}

// --- Receives posted by the application -----------------------------------

std::optional<uint32_t> RdmCore::TakeUnexpected(const RecvRequest& r) {
  auto u =
      MatcherFor(r.tagged).TakeUnexpected(r.tagged ? r.tag : 0, r.tagged ? r.ignore : 0, r.src);
  if (!u) return std::nullopt;
  return static_cast<uint32_t>(u->handle);
}

void RdmCore::ReleaseUnexpected(uint32_t u) {
  Unexp& e = unexp_[u];
  unexpected_bytes_ -= config_.bounce_size;
  if (Peer* p = PeerById(e.src); p != nullptr) {
    if (e.via == Via::kRd && p->rd_unexpected > 0) --p->rd_unexpected;
    Repost(*p, e.via, e.bounce);
  } else {
    FreeBounce(e.bounce);
  }
  e.used = false;
  unexp_free_.push_back(u);
  if (!starved_.empty()) FeedStarved();
  if (fp_withheld_ && unexpected_bytes_ <= config_.unexpected_limit) ReleaseFpCredits();
}

void RdmCore::DeliverUnexpected(const RecvRequest& r, const iovec* iov, uint32_t u) {
  const Unexp e = unexp_[u];
  if (e.dead) {
    ReleaseUnexpected(u);
    sink_.RecvFailed(r.context, ECONNRESET);
    return;
  }
  if (e.header.op == wire::RdmOp::kEager) {
    // Copied out before the bounce goes back to the peer's QP.
    Deliver(r, iov, e.src, e.header,
            ByteSpan(bounces_.Buf(e.bounce) + e.payload_offset, e.header.size));
    ReleaseUnexpected(u);
    return;
  }
  ReleaseUnexpected(u);
  StartRendezvous(r, iov, e.src, e.via, e.header);
}

void RdmCore::PlaceInMulti(PeerId src, Via via, const wire::RdmHeader& h, ByteSpan payload) {
  const uint32_t i = multi_.front();
  RxOp& op = rx_[i];
  const RecvRequest req = op.req;
  auto* base = static_cast<uint8_t*>(op.iov[0].iov_base);
  const size_t left = op.iov[0].iov_len - op.offset;
  const size_t take = std::min<uint64_t>(h.size, left);
  RecvResult where;
  where.buf = base + op.offset;
  const iovec piece{base + op.offset, take};
  op.offset += take;
  const size_t rest = op.iov[0].iov_len - op.offset;
  where.released = rest == 0 || rest < req.multi_min;
  if (where.released) {
    multi_.pop_front();
    op.used = false;
    rx_free_.push_back(i);
  }
  if (h.op == wire::RdmOp::kEager) {
    Deliver(req, &piece, src, h, payload, &where);
  } else {
    StartRendezvous(req, &piece, src, via, h, &where);
  }
}

void RdmCore::DrainIntoMulti() {
  while (!multi_.empty()) {
    const RecvRequest& front = rx_[multi_.front()].req;
    const std::optional<Unexpected> u = untagged_.TakeUnexpected(0, 0, front.src);
    if (!u) return;
    const auto index = static_cast<uint32_t>(u->handle);
    const Unexp e = unexp_[index];
    if (e.dead) {
      ReleaseUnexpected(index);
      continue;  // its data is gone; nothing to place
    }
    // Placed (eager: copied) before the bounce goes back to the peer.
    PlaceInMulti(e.src, e.via, e.header,
                 e.header.op == wire::RdmOp::kEager
                     ? ByteSpan(bounces_.Buf(e.bounce) + e.payload_offset, e.header.size)
                     : ByteSpan{});
    ReleaseUnexpected(index);
  }
}

RdmStatus RdmCore::PostRecv(const RecvRequest& r, bool* queued) {
  if (r.multi) {
    if (r.tagged || r.count != 1 || r.iov == nullptr) return RdmStatus::kInvalid;
    const std::optional<uint32_t> index = Alloc(rx_, rx_free_, kMaxRxOps);
    if (!index) return RdmStatus::kAgain;
    RxOp& op = rx_[*index];
    op.req = r;
    op.iov[0] = r.iov[0];
    op.req.iov = nullptr;
    multi_.push_back(*index);
    DrainIntoMulti();
    return RdmStatus::kOk;
  }
  if (r.count > kMaxIov || (r.count > 0 && r.iov == nullptr)) return RdmStatus::kInvalid;
  if (const std::optional<uint32_t> u = TakeUnexpected(r)) {
    DeliverUnexpected(r, r.iov, *u);
    return RdmStatus::kOk;
  }
  const std::optional<uint32_t> index = Alloc(rx_, rx_free_, kMaxRxOps);
  if (!index) return RdmStatus::kAgain;
  RxOp& op = rx_[*index];
  op.req = r;
  std::copy_n(r.iov, r.count, op.iov.begin());
  op.req.iov = nullptr;
  MatcherFor(r.tagged).AddPosted(
      {r.tagged ? r.tag : 0, r.tagged ? r.ignore : 0, r.src, static_cast<uint64_t>(*index)});
  if (queued != nullptr) *queued = true;
  return RdmStatus::kOk;
}

bool RdmCore::CancelRecv(bool tagged, uint64_t context) {
  for (auto it = multi_.begin(); !tagged && it != multi_.end(); ++it) {
    if (rx_[*it].req.context != context) continue;
    rx_[*it].used = false;
    rx_free_.push_back(*it);
    multi_.erase(it);
    return true;
  }
  for (uint32_t i = 0; i < rx_.size(); ++i) {
    RxOp& op = rx_[i];
    if (!op.used || op.req.multi || op.req.tagged != tagged || op.req.context != context) continue;
    if (!MatcherFor(tagged).CancelPosted(i)) continue;
    op.used = false;
    rx_free_.push_back(i);
    return true;
  }
  return false;
}

RdmStatus RdmCore::Peek(const RecvRequest& r, uint64_t claim, RecvResult* out) {
  TagMatcher& m = MatcherFor(r.tagged);
  const uint64_t tag = r.tagged ? r.tag : 0;
  const uint64_t ignore = r.tagged ? r.ignore : 0;
  const std::optional<Unexpected> u = claim != 0 ? m.ClaimUnexpected(tag, ignore, r.src, claim)
                                                 : m.PeekUnexpected(tag, ignore, r.src);
  if (!u) return RdmStatus::kNoMessage;
  const Unexp& e = unexp_[u->handle];
  *out = {};
  out->len = e.header.size;
  out->tagged = e.header.tagged;
  out->tag = e.header.tag;
  out->has_data = e.header.has_data;
  out->data = e.header.data;
  out->src = e.src;
  return RdmStatus::kOk;
}

RdmStatus RdmCore::ReceiveClaimed(const RecvRequest& r, uint64_t claim, bool discard) {
  // A discarded rendezvous is answered (rdm_core_discard.cc): the slot for
  // the answer first, so a refusal leaves the message claimed.
  // A plain slot number, not an optional (GCC 12 reads the optional's
  // engaged value as maybe-uninitialized and -Werror builds stop there).
  uint32_t answer = 0;
  if (discard) {
    const std::optional<uint32_t> slot = Alloc(rndv_, rndv_free_, kMaxRndv);
    if (!slot) return RdmStatus::kAgain;
    answer = *slot;
  }
  const std::optional<Unexpected> u = MatcherFor(r.tagged).TakeClaimed(claim);
  if (!u) {
    if (discard) FreeRndv(answer);
    return RdmStatus::kNoMessage;
  }
  const auto index = static_cast<uint32_t>(u->handle);
  if (discard) {
    RecvResult res;
    res.tagged = unexp_[index].header.tagged;
    res.tag = unexp_[index].header.tag;
    res.src = unexp_[index].src;
    AnswerDiscarded(answer, unexp_[index]);
    ReleaseUnexpected(index);
    sink_.RecvDone(r.context, res);
    return RdmStatus::kOk;
  }
  DeliverUnexpected(r, r.iov, index);
  return RdmStatus::kOk;
}

RdmStatus RdmCore::DiscardUnexpected(const RecvRequest& r, RecvResult* out) {
  const std::optional<uint32_t> answer = Alloc(rndv_, rndv_free_, kMaxRndv);
  if (!answer) return RdmStatus::kAgain;  // before the message is taken
  const std::optional<uint32_t> u = TakeUnexpected(r);
  if (!u) {
    FreeRndv(*answer);
    return RdmStatus::kNoMessage;
  }
  // What FI_PEEK reports about the message it found (fi_tagged(3)).
  const Unexp& e = unexp_[*u];
  *out = {};
  out->len = e.header.size;
  out->tagged = e.header.tagged;
  out->tag = e.header.tag;
  out->has_data = e.header.has_data;
  out->data = e.header.data;
  out->src = e.src;
  AnswerDiscarded(*answer, e);
  ReleaseUnexpected(*u);
  return RdmStatus::kOk;
}

}  // namespace iwarpx::rdm
