#include "rdm/rdm_core.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace iwarpx::rdm {

namespace {

constexpr size_t kMaxTxOps = 1u << 16;  // msg_id carries the index in 16 bits
constexpr size_t kMaxRxOps = 1u << 20;
constexpr size_t kMaxRndv = 1u << 16;
constexpr uint64_t kMaxReadChunk = uint64_t{1} << 30;  // ReadWr lengths are 32-bit

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
    : engine_(engine), config_(config), stags_(stags), sink_(sink) {}

Result<std::unique_ptr<RdmCore>, transport::IoError> RdmCore::Open(
    progress::Engine& engine, const transport::SockAddr& local, const RdmConfig& config,
    mem::StagTable& stags, RdmSink& sink, const transport::FaultSpec& faults) {
  std::unique_ptr<RdmCore> core(new RdmCore(engine, config, stags, sink));
  core->config_.channel.qpn = kRdmQpn;
  core->config_.bounce_size = std::max(config.bounce_size, wire::kRdmRtsMaxSize);
  auto ch = progress::RdChannel::Open(engine, local, core->config_.channel, stags, *core, faults);
  if (!ch.ok()) return Err{ch.error()};
  core->channel_ = std::move(ch).value();
  return core;
}

RdmCore::~RdmCore() {
  channel_.reset();  // QPs first: they report to the peers below
  for (TxOp& op : tx_) {
    for (uint8_t i = 0; i < op.stag_count; ++i) (void)stags_.Deregister(op.stags[i]);
  }
  for (RndvOp& op : rndv_) {
    for (uint8_t i = 0; i < op.stag_count; ++i) (void)stags_.Deregister(op.stags[i]);
  }
}

// --- Peers ---------------------------------------------------------------

RdmCore::Peer& RdmCore::PeerFor(const transport::SockAddr& name) {
  // Datagrams from a peer on this host bound to the wildcard address come
  // from the loopback address: one peer, one key.
  const transport::SockAddr addr = name.HostLocal();
  auto it = peers_.find(addr);
  if (it != peers_.end()) return *it->second;
  auto p = std::make_unique<Peer>();
  p->core = this;
  p->id = peer_by_id_.size();
  p->addr = addr;
  peer_by_id_.push_back(p.get());
  Peer& ref = *p;
  peers_.emplace(addr, std::move(p));
  return ref;
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
  PostBounces(p, qp);
}

void RdmCore::PeerFailed(const progress::RdPeerKey& key) {
  ++counters_.peers_failed;
  Peer& p = PeerFor(key.addr);
  p.bounces_posted = 0;
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

rd::RdQp* RdmCore::Qp(const transport::SockAddr& to) {
  return channel_->Peer({PeerFor(to).addr, kRdmQpn});
}

uint32_t RdmCore::AllocBounce() {
  if (!free_bounces_.empty()) {
    const uint32_t b = free_bounces_.back();
    free_bounces_.pop_back();
    return b;
  }
  bounces_.push_back({std::make_unique_for_overwrite<uint8_t[]>(config_.bounce_size)});
  return static_cast<uint32_t>(bounces_.size() - 1);
}

bool RdmCore::PostBounce(Peer& p, rd::RdQp& qp, uint32_t bounce) {
  qp::RecvWr r;
  r.context = Ctx(Kind::kBounce, bounce);
  r.sgl.Add(bounces_[bounce].buf.get(), config_.bounce_size);
  if (qp.qp().PostRecv(r) != qp::QpStatus::kOk) {
    FreeBounce(bounce);
    return false;
  }
  ++p.bounces_posted;
  return true;
}

void RdmCore::PostBounces(Peer& p, rd::RdQp& qp) {
  while (p.bounces_posted < config_.bounces_per_peer) {
    if (!PostBounce(p, qp, AllocBounce())) return;
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
  Peer& p = PeerFor(to);
  rd::RdQp* q = channel_->Peer({p.addr, kRdmQpn});
  if (q == nullptr) return RdmStatus::kNoPeer;
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
  auto undo = [&](RdmStatus s) {
    for (uint8_t k = 0; k < op.stag_count; ++k) (void)stags_.Deregister(op.stags[k]);
    op.used = false;
    tx_free_.push_back(*index);
    return s;
  };
  ChannelLimits limits;
  limits.max_size[static_cast<int>(Channel::kUdSr)] = eager_limit();
  const Channel channel = config_.send_rules.Select(
      h.size, peers_.size(), ChannelSet{Channel::kUdSr, Channel::kUdZcopy}, limits);
  if (channel == Channel::kUdSr) {
    op.kind = Kind::kEager;
    h.op = wire::RdmOp::kEager;
    auto n = wire::EncodeRdmHeader(h, op.header);
    if (!n.ok()) return undo(RdmStatus::kInvalid);
    wr.sgl.Add(op.header.data(), *n);
    for (size_t i = 0; i < count; ++i) wr.sgl.Add(iov[i].iov_base, iov[i].iov_len);
    wr.context = Ctx(Kind::kEager, *index);
  } else {
    op.kind = Kind::kRts;
    h.op = wire::RdmOp::kRts;
    op.msg_id = (next_msg_gen_++ << 16) | *index;
    h.msg_id = op.msg_id;
    for (size_t i = 0; i < count; ++i) {
      if (iov[i].iov_len == 0) continue;
      mem::RegionSpec spec;
      spec.host = static_cast<uint8_t*>(iov[i].iov_base);
      spec.length = iov[i].iov_len;
      spec.base_to = reinterpret_cast<uintptr_t>(iov[i].iov_base);
      spec.access = mem::kRemoteRead;
      spec.pd = config_.channel.pd;
      auto stag = stags_.Register(spec);
      if (!stag.ok()) return undo(RdmStatus::kInvalid);
      op.stags[op.stag_count] = *stag;
      h.segments[op.stag_count] = {*stag, spec.base_to, spec.length};
      ++op.stag_count;
    }
    h.segment_count = op.stag_count;
    auto n = wire::EncodeRdmHeader(h, op.header);
    if (!n.ok()) return undo(RdmStatus::kInvalid);
    wr.sgl.Add(op.header.data(), *n);
    wr.context = Ctx(Kind::kRts, *index);
  }
  switch (q->qp().PostSend(wr)) {
    case qp::QpStatus::kOk: break;
    case qp::QpStatus::kQueueFull: return undo(RdmStatus::kAgain);
    case qp::QpStatus::kBadState: return undo(RdmStatus::kNoPeer);
    default: return undo(RdmStatus::kInvalid);
  }
  ++(op.kind == Kind::kEager ? counters_.eager_sent : counters_.rts_sent);
  return RdmStatus::kOk;
}

void RdmCore::OnSendComplete(Peer& /*p*/, uint64_t ctx) {
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
      if (!op.fin_seen) return;
      const uint64_t context = op.context;
      op.used = false;
      tx_free_.push_back(static_cast<uint32_t>(i));
      sink_.SendDone(context);
      return;
    }
    case Kind::kFin:
      if (i < rndv_.size() && rndv_[i].used) {
        rndv_[i].used = false;
        rndv_free_.push_back(static_cast<uint32_t>(i));
      }
      return;
    case Kind::kUser: sink_.RmaDone(i); return;
    case Kind::kBounce:
    case Kind::kRead: return;
  }
}

void RdmCore::OnFin(Peer& p, const wire::RdmHeader& h) {
  const uint32_t i = h.msg_id & 0xFFFF;
  if (i >= tx_.size() || !tx_[i].used || tx_[i].kind != Kind::kRts || tx_[i].msg_id != h.msg_id ||
      tx_[i].peer != p.id || tx_[i].fin_seen) {
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

void RdmCore::OnRecvComplete(Peer& p, uint64_t ctx, size_t bytes, const qp::RecvInfo& info) {
  if (KindOf(ctx) != Kind::kBounce || IndexOf(ctx) >= bounces_.size()) return;
  const auto b = static_cast<uint32_t>(IndexOf(ctx));
  if (p.bounces_posted > 0) --p.bounces_posted;
  rd::RdQp* q = channel_->Find({p.addr, kRdmQpn});
  auto repost = [&] {
    if (q != nullptr && p.bounces_posted < config_.bounces_per_peer) {
      (void)PostBounce(p, *q, b);
    } else {
      FreeBounce(b);
    }
  };
  if (info.has_imm && !info.send_imm) {
    repost();
    sink_.RemoteWriteData(info.imm, p.id);
    return;
  }
  auto m = wire::DecodeRdmMessage(ByteSpan(bounces_[b].buf.get(), bytes));
  if (info.has_imm || !m.ok()) {
    FreeBounce(b);
    ProtocolError(p, "undecodable RDM message");
    return;
  }
  if (m->header.op == wire::RdmOp::kFin) {
    repost();
    OnFin(p, m->header);
    return;
  }
  Arrived(p, b, *m);
}

void RdmCore::Arrived(Peer& p, uint32_t bounce, const wire::RdmMessage& m) {
  const wire::RdmHeader& h = m.header;
  TagMatcher& matcher = MatcherFor(h.tagged);
  rd::RdQp* q = channel_->Find({p.addr, kRdmQpn});
  if (!h.tagged && !multi_.empty()) {
    PlaceInMulti(p.id, h, m.payload);
    if (q != nullptr && p.bounces_posted < config_.bounces_per_peer) {
      (void)PostBounce(p, *q, bounce);
    } else {
      FreeBounce(bounce);
    }
    return;
  }
  if (const std::optional<uint64_t> rx = matcher.TakePosted(h.tagged ? h.tag : 0, p.id)) {
    RxOp& op = rx_[*rx];
    const RecvRequest req = op.req;
    const std::array<iovec, kMaxIov> iov = op.iov;
    op.used = false;
    rx_free_.push_back(static_cast<uint32_t>(*rx));
    if (h.op == wire::RdmOp::kEager) {
      Deliver(req, iov.data(), p.id, h, m.payload);
    } else {
      StartRendezvous(req, iov.data(), p.id, h);
    }
    if (q != nullptr && p.bounces_posted < config_.bounces_per_peer) {
      (void)PostBounce(p, *q, bounce);
    } else {
      FreeBounce(bounce);
    }
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
  e.header = h;
  e.payload_offset = static_cast<size_t>(m.payload.data() - bounces_[bounce].buf.get());
  if (m.payload.empty()) e.payload_offset = 0;
  matcher.AddUnexpected({h.tagged ? h.tag : 0, p.id, *u});
  unexpected_bytes_ += config_.bounce_size;
  if (q != nullptr && unexpected_bytes_ <= config_.unexpected_limit &&
      p.bounces_posted < config_.bounces_per_peer) {
    (void)PostBounce(p, *q, AllocBounce());
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

void RdmCore::StartRendezvous(const RecvRequest& r, const iovec* iov, PeerId src,
                              const wire::RdmHeader& h, const RecvResult* multi) {
  Peer* p = PeerById(src);
  rd::RdQp* q = p != nullptr ? channel_->Find({p->addr, kRdmQpn}) : nullptr;
  const std::optional<uint32_t> index = Alloc(rndv_, rndv_free_, kMaxRndv);
  if (q == nullptr || !index) {
    sink_.RecvFailed(r.context, q == nullptr ? ECONNRESET : EAGAIN);
    return;
  }
  RndvOp& op = rndv_[*index];
  op.context = r.context;
  op.peer = src;
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
  wire::RdmHeader fin;
  fin.op = wire::RdmOp::kFin;
  fin.msg_id = h.msg_id;
  fin.size = want;
  (void)wire::EncodeRdmHeader(fin, op.fin);
  // The sink pieces, registered for local write for the reads.
  struct Piece {
    uint32_t stag;
    uint64_t to;
    uint64_t len;
  };
  std::array<Piece, kMaxIov> sinks{};
  size_t sink_count = 0;
  uint64_t left = want;
  for (size_t i = 0; i < r.count && left > 0; ++i) {
    const uint64_t n = std::min<uint64_t>(iov[i].iov_len, left);
    if (n == 0) continue;
    mem::RegionSpec spec;
    spec.host = static_cast<uint8_t*>(iov[i].iov_base);
    spec.length = n;
    spec.base_to = reinterpret_cast<uintptr_t>(iov[i].iov_base);
    spec.access = mem::kLocalWrite;
    spec.pd = config_.channel.pd;
    auto stag = stags_.Register(spec);
    if (!stag.ok()) {
      op.failed = true;
      op.err = ENOMEM;
      break;
    }
    op.stags[op.stag_count++] = *stag;
    sinks[sink_count++] = {*stag, spec.base_to, n};
    left -= n;
  }
  // One Read per overlap of a source segment and a sink piece.
  size_t si = 0;
  uint64_t s_off = 0;
  size_t di = 0;
  uint64_t d_off = 0;
  uint64_t todo = op.failed ? 0 : want;
  while (todo > 0 && si < h.segment_count && di < sink_count) {
    const wire::RdmSegment& seg = h.segments[si];
    const uint64_t n = std::min({seg.len - s_off, sinks[di].len - d_off, todo, kMaxReadChunk});
    if (n > 0) {
      qp::ReadWr rd;
      rd.context = Ctx(Kind::kRead, *index);
      rd.local_stag = sinks[di].stag;
      rd.local_to = sinks[di].to + d_off;
      rd.length = static_cast<uint32_t>(n);
      rd.remote_stag = seg.stag;
      rd.remote_to = seg.to + s_off;
      if (q->qp().PostRead(rd) != qp::QpStatus::kOk) {
        op.failed = true;
        op.err = EAGAIN;
        break;
      }
      ++op.reads_left;
      todo -= n;
      s_off += n;
      d_off += n;
    }
    if (s_off == seg.len) {
      ++si;
      s_off = 0;
    }
    if (d_off == sinks[di].len) {
      ++di;
      d_off = 0;
    }
  }
  if (op.reads_left == 0) FinishRendezvous(*index);
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
  rd::RdQp* q = p != nullptr ? channel_->Find({p->addr, kRdmQpn}) : nullptr;
  // The FIN frees the sender's buffers; it goes out whenever the QP still
  // works, also after a local failure, so the sender never waits forever.
  // The op lives until the FIN is out.
  bool fin_posted = false;
  if (q != nullptr && q->qp().state() == qp::QpState::kRts) {
    qp::SendWr wr;
    wr.sgl.Add(op.fin.data(), wire::kRdmHeaderSize);
    wr.context = Ctx(Kind::kFin, index);
    fin_posted = q->qp().PostSend(wr) == qp::QpStatus::kOk;
    if (!fin_posted) ProtocolError(*p, "no room for a FIN");  // fails both sides, no hang
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

void RdmCore::OnRdmaComplete(Peer& /*p*/, uint64_t ctx, qp::WcOp /*op*/) {
  const uint64_t i = IndexOf(ctx);
  if (KindOf(ctx) == Kind::kUser) {
    sink_.RmaDone(i);
    return;
  }
  if (KindOf(ctx) != Kind::kRead || i >= rndv_.size() || !rndv_[i].used) return;
  if (--rndv_[i].reads_left == 0) FinishRendezvous(static_cast<uint32_t>(i));
}

void RdmCore::OnError(Peer& p, uint64_t ctx, qp::WcOp /*op*/, const qp::WcError& error) {
  const uint64_t i = IndexOf(ctx);
  switch (KindOf(ctx)) {
    case Kind::kBounce:
      if (p.bounces_posted > 0) --p.bounces_posted;
      if (i < bounces_.size()) FreeBounce(static_cast<uint32_t>(i));
      return;
    case Kind::kEager:
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
      if (i < rndv_.size() && rndv_[i].used) {
        rndv_[i].used = false;
        rndv_free_.push_back(static_cast<uint32_t>(i));
      }
      return;
    case Kind::kRead:
      if (i >= rndv_.size() || !rndv_[i].used) return;
      rndv_[i].failed = true;
      rndv_[i].err = ErrnoOf(error);
      if (--rndv_[i].reads_left == 0) FinishRendezvous(static_cast<uint32_t>(i));
      return;
    case Kind::kUser: sink_.RmaFailed(i, error); return;
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
  Peer* p = PeerById(e.src);
  rd::RdQp* q = p != nullptr ? channel_->Find({p->addr, kRdmQpn}) : nullptr;
  if (q != nullptr && p->bounces_posted < config_.bounces_per_peer) {
    (void)PostBounce(*p, *q, e.bounce);
  } else {
    FreeBounce(e.bounce);
  }
  e.used = false;
  unexp_free_.push_back(u);
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
            ByteSpan(bounces_[e.bounce].buf.get() + e.payload_offset, e.header.size));
    ReleaseUnexpected(u);
    return;
  }
  ReleaseUnexpected(u);
  StartRendezvous(r, iov, e.src, e.header);
}

void RdmCore::PlaceInMulti(PeerId src, const wire::RdmHeader& h, ByteSpan payload) {
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
    StartRendezvous(req, &piece, src, h, &where);
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
    PlaceInMulti(e.src, e.header,
                 e.header.op == wire::RdmOp::kEager
                     ? ByteSpan(bounces_[e.bounce].buf.get() + e.payload_offset, e.header.size)
                     : ByteSpan{});
    ReleaseUnexpected(index);
  }
}

RdmStatus RdmCore::PostRecv(const RecvRequest& r) {
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
  const std::optional<Unexpected> u = MatcherFor(r.tagged).TakeClaimed(claim);
  if (!u) return RdmStatus::kNoMessage;
  const auto index = static_cast<uint32_t>(u->handle);
  if (discard) {
    RecvResult res;
    res.tagged = unexp_[index].header.tagged;
    res.tag = unexp_[index].header.tag;
    res.src = unexp_[index].src;
    ReleaseUnexpected(index);
    sink_.RecvDone(r.context, res);
    return RdmStatus::kOk;
  }
  DeliverUnexpected(r, r.iov, index);
  return RdmStatus::kOk;
}

RdmStatus RdmCore::DiscardUnexpected(const RecvRequest& r, RecvResult* out) {
  const std::optional<uint32_t> u = TakeUnexpected(r);
  if (!u) return RdmStatus::kNoMessage;
  // What FI_PEEK reports about the message it found (fi_tagged(3)).
  const Unexp& e = unexp_[*u];
  *out = {};
  out->len = e.header.size;
  out->tagged = e.header.tagged;
  out->tag = e.header.tag;
  out->has_data = e.header.has_data;
  out->data = e.header.data;
  out->src = e.src;
  ReleaseUnexpected(*u);
  return RdmStatus::kOk;
}

}  // namespace iwarpx::rdm
