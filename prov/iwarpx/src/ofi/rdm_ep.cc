#include "ofi/rdm_ep.h"

#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <new>

#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "ofi/av.h"
#include "ofi/cntr.h"
#include "ofi/cq.h"
#include "ofi/domain.h"
#include "ofi/fabric.h"
#include "ofi/getinfo.h"
#include "ofi/log.h"
#include "ofi/msg_ops.h"
#include "ofi/prov.h"
#include "ofi/qp_post.h"
#include "ofi/rma_ops.h"
#include "ofi/tagged_ops.h"

namespace iwarpx::ofi {
namespace {

constexpr uint64_t kRxFlags = FI_COMPLETION | FI_MORE | FI_MSG | FI_TAGGED | FI_RECV | FI_PEEK |
                              FI_CLAIM | FI_DISCARD | FI_MULTI_RECV;
constexpr uint64_t kPerPeerSq = 256;
constexpr uint32_t kBouncesPerPeer = 2;
// Receive ring of a peer's RD QP: bounces come on demand, one at a time, when
// a message finds the ring empty (rdm_core_bounce.cc), so it never holds more
// than one; two leave a margin (a ring entry is 96 bytes, per peer).
constexpr uint32_t kRdRecvSlots = 2;

uint64_t RecvFlags(bool tagged, bool has_data) {
  return FI_RECV | (tagged ? FI_TAGGED : FI_MSG) | (has_data ? FI_REMOTE_CQ_DATA : 0);
}

}  // namespace

int RdmEndpoint::Open(struct fid_domain* domain, struct fi_info* info, struct fid_ep** ep,
                      void* context) {
  OpenArgs args;
  if (const int r = ParseOpen(domain, info, ep, &args); r != 0) return r;
  auto* e = new (std::nothrow) RdmEndpoint(args, info->caps);
  if (e == nullptr) return -FI_ENOMEM;
  const Params& p = GetParams();
  rdm::RdmConfig c;
  c.channel.pd = args.domain->pd();
  c.channel.port.crc = p.dgram_crc;
  c.channel.qp.stream.send.dead_after_ns = uint64_t(p.rd_timeout_ms) * 1'000'000;
  c.channel.qp.stream.lend_reads = p.rd_lend;
  c.channel.place_reads = p.rd_place;
  c.channel.hot_socket = p.rd_hot_socket;
  c.channel.idle_release_ns = uint64_t(p.rd_idle_release_ms) * 1'000'000;
  c.channel.qp.stream.max_segment = static_cast<size_t>(p.rd_segment);  // 0: by path
  c.channel.qp.sq_size = kPerPeerSq;
  c.channel.qp.rq_size = kRdRecvSlots;
  c.bounce_size = static_cast<size_t>(p.rdm_eager);
  c.rndv_write = p.rndv_write;
  c.bounces_per_peer = kBouncesPerPeer;
  c.rc.threshold_msgs = static_cast<uint64_t>(p.rc_threshold_msgs);
  c.rc.threshold_bytes = static_cast<uint64_t>(p.rc_threshold_bytes);
  c.rc.max_links = static_cast<uint32_t>(p.max_rc);
  c.rc.max_fastpath = static_cast<uint32_t>(p.max_fastpath);
  c.rc.fp_slots = static_cast<uint32_t>(p.fastpath_slots);
  c.rc.fp_max_payload = static_cast<uint32_t>(p.fastpath_slot_size);
  c.rc.idle_ms = static_cast<uint32_t>(p.rc_idle_ms);
  c.rc.mpa.policy = MpaPolicyFromParams();
  c.rc.qp.sq_size = kPerPeerSq;
  c.rc.qp.rq_size = 2 * kBouncesPerPeer;
  c.rc.qp.max_fpdu_payload = static_cast<size_t>(p.mulpdu);
  if (!p.send_rules.empty()) {
    auto rules = rdm::SendRuleChain::Parse(p.send_rules);
    if (!rules.ok()) {
      IWX_WARN(ep_ctrl, "fi_endpoint: FI_IWARPX_SEND_RULES=\"%s\" refused: %s\n",
               p.send_rules.c_str(), rules.error().c_str());
      delete e;
      return -FI_EINVAL;
    }
    c.send_rules = std::move(rules).value();
  }
  {
    std::lock_guard<std::mutex> lock(e->fabric_->engine().mu());
    auto core =
        rdm::RdmCore::Open(e->fabric_->engine(), args.local, c, args.domain->table(), *e, p.fault);
    if (!core.ok()) {
      IWX_WARN(ep_ctrl, "fi_endpoint: cannot bind a UDP socket to %s: %s\n",
               args.local.ToString().c_str(), strerror(core.error().err));
      delete e;
      return core.error().err == EADDRINUSE ? -FI_EADDRINUSE : -FI_EINVAL;
    }
    e->core_ = std::move(core).value();
  }
  e->Install(context, &MsgOps<RdmEndpoint>::kTable, &TaggedOps<RdmEndpoint>::kTable,
             &RmaOps<RdmEndpoint>::kTable, &AtomicOps<RdmEndpoint>::kTable, ep);
  IWX_INFO(ep_ctrl,
           "rdm ep %p opened on %s (tx %zu, rx %zu, eager %zu, RD timeout %d ms, send rules "
           "%s)\n",
           static_cast<void*>(e), e->core_->local_address().ToString().c_str(), args.tx_size,
           args.rx_size, e->core_->eager_limit(), p.rd_timeout_ms, c.send_rules.ToString().c_str());
  if (e->core_->rc_listen_error() != 0) {
    IWX_WARN(ep_ctrl,
             "rdm ep %p: the send rules name connected channels but TCP port %u is busy (%s): "
             "every peer stays on datagrams\n",
             static_cast<void*>(e), e->core_->local_address().port(),
             strerror(e->core_->rc_listen_error()));
  } else if (e->core_->rc_available()) {
    IWX_INFO(ep_ctrl,
             "rdm ep %p: on-demand connections on TCP %s after %d messages or %d bytes to a "
             "peer, at most %d (%d with an RC-FP ring of %d x %d bytes)\n",
             static_cast<void*>(e), e->core_->local_address().ToString().c_str(),
             p.rc_threshold_msgs, p.rc_threshold_bytes, p.max_rc, p.max_fastpath, p.fastpath_slots,
             p.fastpath_slot_size);
  }
  const int rcvbuf = e->core_->channel().rcvbuf_bytes();
  if (rcvbuf > 0 && rcvbuf < c.channel.socket_buffer_bytes) {
    IWX_INFO(ep_ctrl,
             "rdm ep %p: the UDP receive buffer is %d KiB, not the %d KiB asked for "
             "(net.core.rmem_max caps it); raise net.core.rmem_max for bandwidth, or "
             "datagrams overflow it and wait for retransmission\n",
             static_cast<void*>(e), rcvbuf / 1024, c.channel.socket_buffer_bytes / 1024);
  }
  return 0;
}

void RdmEndpoint::LingerAtClose() {
  const int linger_ms = GetParams().rd_linger_ms;
  std::mutex& mu = fabric_->engine().mu();
  const auto settled = [&] {
    std::lock_guard<std::mutex> lock(mu);
    // Connections are left cleanly (the peer counts a close, not a failure).
    return core_ == nullptr || core_->CloseStep();
  };
  {
    std::lock_guard<std::mutex> lock(mu);
    if (core_ != nullptr) core_->FlushAcks();
  }
  if (linger_ms == 0 || settled()) return;
  const auto start = std::chrono::steady_clock::now();
  const bool done = fabric_->ProgressUntil(linger_ms, -1, settled);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  if (done) {
    IWX_INFO(ep_ctrl, "rdm ep %p: close waited %lld ms for the peers to acknowledge its sends\n",
             static_cast<void*>(this), static_cast<long long>(ms));
  } else {
    IWX_WARN(ep_ctrl,
             "rdm ep %p: closing with sends still unacknowledged after FI_IWARPX_RD_LINGER=%d "
             "ms (a peer is gone or the path loses everything); those messages may be lost\n",
             static_cast<void*>(this), linger_ms);
  }
}

int RdmEndpoint::Close() {
  LingerAtClose();
  {
    std::lock_guard<std::mutex> lock(fabric_->engine().mu());
    ReportStatsAtClose();
    ReportPeersAtClose();
    core_.reset();  // closes every peer QP and the socket; nothing reports after this
  }
  IWX_INFO(ep_ctrl, "rdm ep %p closed\n", static_cast<void*>(this));
  Destroy();
  return 0;
}

ssize_t RdmEndpoint::StatusToFi(rdm::RdmStatus s, const char* call) {
  switch (s) {
    case rdm::RdmStatus::kOk: return 0;
    case rdm::RdmStatus::kAgain: return -FI_EAGAIN;
    case rdm::RdmStatus::kNoPeer:
      IWX_WARN(ep_data, "%s: no queue pair to the peer could be made\n", call);
      return -FI_EAGAIN;
    case rdm::RdmStatus::kInvalid:
      IWX_WARN(ep_data,
               "%s: refused: more than %zu iovecs, a NULL iov with a count, a multi-receive "
               "buffer that is not exactly one untagged iovec, or a request the peer's queue "
               "pair refused\n",
               call, rdm::RdmCore::kMaxIov);
      return -FI_EINVAL;
    case rdm::RdmStatus::kNoMessage: return -FI_ENOMSG;
  }
  return -FI_EINVAL;
}

std::optional<transport::SockAddr> RdmEndpoint::PeerAddress(fi_addr_t addr, const char* call) {
  std::optional<transport::SockAddr> a = av_ != nullptr ? av_->Get(addr) : std::nullopt;
  if (!a) {
    IWX_WARN(ep_data, "%s: fi_addr %lu is not in the bound address vector\n", call,
             static_cast<unsigned long>(addr));
  }
  return a;
}

fi_addr_t RdmEndpoint::SourceOf(rdm::PeerId id) {
  const std::optional<transport::SockAddr> a = core_->AddressOf(id);
  return a && av_ != nullptr ? av_->Find(*a) : FI_ADDR_NOTAVAIL;
}

// --- Sends -------------------------------------------------------------------

ssize_t RdmEndpoint::Send(bool tagged, const struct iovec* iov, size_t count, fi_addr_t dest,
                          uint64_t tag, void* context, uint64_t flags, uint64_t data) {
  const bool with_data = (flags & FI_REMOTE_CQ_DATA) != 0;
  const char* call =
      tagged ? (with_data ? "fi_tsenddata" : "fi_tsend") : (with_data ? "fi_senddata" : "fi_send");
  if (const ssize_t r = CheckTxFlags(flags & ~uint64_t{FI_TAGGED}, call); r != 0) return r;
  if (count > rdm::RdmCore::kMaxIov || (count > 0 && iov == nullptr)) {
    IWX_WARN(ep_data, "%s: %zu iovecs (iov_limit %zu)\n", call, count, rdm::RdmCore::kMaxIov);
    return -FI_EINVAL;
  }
  size_t len = 0;
  for (size_t i = 0; i < count; ++i) {
    if (iov[i].iov_base == nullptr && iov[i].iov_len != 0) {
      IWX_WARN(ep_data, "%s: iovec %zu has a NULL base and %zu bytes\n", call, i, iov[i].iov_len);
      return -FI_EINVAL;
    }
    len += iov[i].iov_len;
  }
  if (len > kMaxMsgSize) {
    IWX_WARN(ep_data, "%s: %zu bytes exceed max_msg_size %zu\n", call, len, kMaxMsgSize);
    return -FI_EMSGSIZE;
  }
  if (const ssize_t r = CheckInject(flags, len, call); r != 0) return r;
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  if (!enabled_) {
    IWX_WARN(ep_data, "%s: the endpoint is not enabled\n", call);
    return -FI_EOPBADSTATE;
  }
  const std::optional<transport::SockAddr> to = PeerAddress(dest, call);
  if (!to) return -FI_EINVAL;
  uint32_t index = 0;
  EpReporter::Slot* s = reporter_.AllocTx(&index);
  if (s == nullptr) return -FI_EAGAIN;
  reporter_.FillTxSlot(*s, context, FI_SEND | (tagged ? FI_TAGGED : FI_MSG), reporter_.send_cntr(),
                       flags);
  struct iovec copy = {};
  if ((flags & FI_INJECT) != 0) {
    // Copied now: the caller may reuse its buffer when the call returns.
    size_t at = 0;
    for (size_t i = 0; i < count; ++i) {
      if (iov[i].iov_len != 0) std::memcpy(s->inject.data() + at, iov[i].iov_base, iov[i].iov_len);
      at += iov[i].iov_len;
    }
    copy = {s->inject.data(), len};
    iov = &copy;
    count = 1;
  }
  const rdm::RdmStatus st = core_->Send(*to, iov, count, tagged, tag, with_data, data, index);
  if (st != rdm::RdmStatus::kOk) {
    reporter_.FreeTx(index);
    return StatusToFi(st, call);
  }
  core_->AfterPost();
  return 0;
}

ssize_t RdmEndpoint::PostSend(const struct iovec* iov, size_t count, fi_addr_t dest, void* context,
                              uint64_t flags, uint64_t data) {
  return Send(false, iov, count, dest, 0, context, flags, data);
}

ssize_t RdmEndpoint::PostTSend(const struct iovec* iov, size_t count, fi_addr_t dest, uint64_t tag,
                               void* context, uint64_t flags, uint64_t data) {
  return Send(true, iov, count, dest, tag, context, flags, data);
}

void RdmEndpoint::SendDone(uint64_t context) {
  reporter_.CompleteTx(static_cast<uint32_t>(context));
}

void RdmEndpoint::SendFailed(uint64_t context, int err) {
  struct fi_cq_err_entry e = {};
  e.err = err;
  reporter_.FailTx(static_cast<uint32_t>(context), e);
}

// --- Receives ----------------------------------------------------------------

ssize_t RdmEndpoint::Recv(bool tagged, const struct iovec* iov, size_t count, fi_addr_t src,
                          uint64_t tag, uint64_t ignore, void* context, uint64_t flags) {
  const char* call = tagged ? "fi_trecv" : "fi_recv";
  if ((flags & ~kRxFlags) != 0 || (!tagged && (flags & (FI_PEEK | FI_CLAIM | FI_DISCARD)) != 0) ||
      (tagged && (flags & FI_MULTI_RECV) != 0)) {
    IWX_WARN(ep_data, "%s: flags %#lx are not supported\n", call,
             static_cast<unsigned long>(flags));
    return -FI_EBADFLAGS;
  }
  const bool peek = (flags & FI_PEEK) != 0;
  const bool claim = (flags & FI_CLAIM) != 0;
  const bool discard = (flags & FI_DISCARD) != 0;
  if (count > rdm::RdmCore::kMaxIov || (count > 0 && iov == nullptr)) {
    IWX_WARN(ep_data, "%s: %zu iovecs (iov_limit %zu)\n", call, count, rdm::RdmCore::kMaxIov);
    return -FI_EINVAL;
  }
  if ((claim || (peek && discard)) && context == nullptr) {
    IWX_WARN(ep_data, "%s: FI_CLAIM needs the context of the claiming FI_PEEK\n", call);
    return -FI_EINVAL;
  }
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  if (!enabled_) {
    IWX_WARN(ep_data, "%s: the endpoint is not enabled\n", call);
    return -FI_EOPBADSTATE;
  }
  rdm::RecvRequest r;
  r.tagged = tagged;
  r.tag = tag;
  r.ignore = ignore;
  r.iov = iov;
  r.count = count;
  r.multi = (flags & FI_MULTI_RECV) != 0;
  r.multi_min = min_multi_recv_;
  if (r.multi && count != 1) {
    IWX_WARN(ep_data, "%s: FI_MULTI_RECV takes exactly one iovec (%zu given)\n", call, count);
    return -FI_EINVAL;
  }
  if ((caps_ & FI_DIRECTED_RECV) != 0 && src != FI_ADDR_UNSPEC) {
    const std::optional<transport::SockAddr> from = PeerAddress(src, call);
    if (!from) return -FI_EINVAL;
    r.src = core_->PeerIdOf(*from);
  }
  uint32_t index = 0;
  EpReporter::Slot* s = reporter_.AllocRx(&index);
  if (s == nullptr) return -FI_EAGAIN;
  s->context = context;
  s->buf = count > 0 ? iov[0].iov_base : nullptr;
  s->flags = FI_RECV | (tagged ? FI_TAGGED : FI_MSG);
  s->report = !reporter_.rx_selective() || (flags & FI_COMPLETION) != 0;
  s->multi = r.multi;
  r.context = index;
  const auto claim_key = reinterpret_cast<uint64_t>(context);
  rdm::RdmStatus st = rdm::RdmStatus::kOk;
  if (peek) {
    // A completion for the peek itself: what was found (or FI_ENOMSG).
    rdm::RecvResult found;
    if (discard) {
      st = core_->DiscardUnexpected(r, &found);
      if (st == rdm::RdmStatus::kAgain) {  // no room to answer a rendezvous yet
        reporter_.FreeRx(index);
        return -FI_EAGAIN;
      }
    } else {
      st = core_->Peek(r, claim ? claim_key : 0, &found);
    }
    if (st == rdm::RdmStatus::kOk) {
      struct fi_cq_tagged_entry c = {};
      c.flags = RecvFlags(true, found.has_data);
      c.len = found.len;
      c.tag = found.tag;
      c.data = found.data;
      reporter_.CompleteRx(index, c, SourceOf(found.src));
    } else {
      struct fi_cq_err_entry e = {};
      e.err = FI_ENOMSG;
      e.flags = FI_RECV | FI_TAGGED;
      reporter_.FailRx(index, e);
    }
    return 0;
  }
  bool queued = false;
  if (claim) {
    st = core_->ReceiveClaimed(r, claim_key, discard);
    if (st == rdm::RdmStatus::kNoMessage) {
      reporter_.FreeRx(index);
      IWX_WARN(ep_data, "%s: FI_CLAIM: no message was claimed with context %p\n", call, context);
      return -FI_EINVAL;
    }
  } else {
    st = core_->PostRecv(r, &queued);
  }
  if (st != rdm::RdmStatus::kOk) {
    reporter_.FreeRx(index);
    return StatusToFi(st, call);
  }
  // A receive that only joined the posted list changed no QP: the channel's
  // deadlines and the engine's view stay as they were (a repost per message
  // is on every small message's path). RMA held by FI_MORE still goes now.
  if (!queued || core_->corked()) core_->AfterPost();
  return 0;
}

ssize_t RdmEndpoint::PostRecv(const struct iovec* iov, size_t count, fi_addr_t src, void* context,
                              uint64_t flags) {
  return Recv(false, iov, count, src, 0, 0, context, flags);
}

ssize_t RdmEndpoint::PostTRecv(const struct iovec* iov, size_t count, fi_addr_t src, uint64_t tag,
                               uint64_t ignore, void* context, uint64_t flags) {
  return Recv(true, iov, count, src, tag, ignore, context, flags);
}

void RdmEndpoint::RecvDone(uint64_t context, const rdm::RecvResult& r) {
  const auto index = static_cast<uint32_t>(context);
  const bool multi = reporter_.rx(index).multi;
  // A multi-receive buffer stays posted until this message used it up.
  const bool keep = multi && !r.released;
  const uint64_t flags = RecvFlags(r.tagged, r.has_data) | (r.released ? FI_MULTI_RECV : 0);
  void* buf = multi ? r.buf : reporter_.rx(index).buf;
  if (r.truncated != 0) {
    struct fi_cq_err_entry e = {};
    e.err = FI_ETRUNC;
    e.flags = flags;
    e.len = r.len;
    e.olen = r.truncated;
    e.tag = r.tag;
    e.data = r.data;
    e.buf = buf;
    reporter_.FailRx(index, e, keep);
    return;
  }
  struct fi_cq_tagged_entry c = {};
  c.flags = flags;
  c.len = r.len;
  c.buf = buf;
  c.tag = r.tag;
  c.data = r.data;
  reporter_.CompleteRx(index, c, SourceOf(r.src), keep);
}

int RdmEndpoint::GetOpt(int level, int optname, void* optval, size_t* optlen) {
  if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV) {
    return ClEndpoint::GetOpt(level, optname, optval, optlen);
  }
  if (optval == nullptr || optlen == nullptr || *optlen < sizeof(size_t)) return -FI_EINVAL;
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  std::memcpy(optval, &min_multi_recv_, sizeof(size_t));
  *optlen = sizeof(size_t);
  return 0;
}

int RdmEndpoint::SetOpt(int level, int optname, const void* optval, size_t optlen) {
  if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV) {
    return ClEndpoint::SetOpt(level, optname, optval, optlen);
  }
  if (optval == nullptr || optlen != sizeof(size_t)) {
    IWX_WARN(ep_ctrl, "fi_setopt(FI_OPT_MIN_MULTI_RECV): the value is one size_t\n");
    return -FI_EINVAL;
  }
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  std::memcpy(&min_multi_recv_, optval, sizeof(size_t));
  return 0;
}

void RdmEndpoint::RecvFailed(uint64_t context, int err) {
  const auto index = static_cast<uint32_t>(context);
  struct fi_cq_err_entry e = {};
  e.err = err;
  e.flags = reporter_.rx(index).flags;
  reporter_.FailRx(index, e);
}

void RdmEndpoint::RemoteWriteData(uint64_t data, rdm::PeerId src) {
  if (reporter_.rx_cq() == nullptr) return;
  struct fi_cq_data_entry c = {};
  c.flags = FI_REMOTE_CQ_DATA | FI_RMA | FI_REMOTE_WRITE;
  c.data = data;
  if (!reporter_.rx_cq()->Post(c, SourceOf(src))) {
    IWX_WARN(cq, "the CQ is full; a remote write's CQ data was lost\n");
  }
}

ssize_t RdmEndpoint::Cancel(void* context) {
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  for (uint32_t i = 0; i < reporter_.rx_size(); ++i) {
    EpReporter::Slot& s = reporter_.rx(i);
    if (!s.in_use || s.context != context) continue;
    if (!core_->CancelRecv((s.flags & FI_TAGGED) != 0, i)) continue;
    struct fi_cq_err_entry e = {};
    e.err = FI_ECANCELED;
    e.flags = s.flags;
    reporter_.FailRx(i, e);
    return 0;
  }
  return -FI_ENOENT;
}

// --- RMA and atomics: on the QP that carries the peer's messages --------------
// (rdm::RdmCore::RouteRma: RD, or the connection once our messages moved
// there, so messages and RMA keep one order).

namespace {

// Tells the core of the work requests a qp_post call puts on a route.
struct RouteTracker final : PostTracker {
  rdm::RdmCore& core;
  const rdm::RdmCore::RmaRoute& route;
  RouteTracker(rdm::RdmCore& c, const rdm::RdmCore::RmaRoute& r) : core(c), route(r) {}
  void Posting(uint64_t context) override { core.RmaPosting(route, context); }
  void Refused(uint64_t context) override { core.RmaRefused(route, context); }
};

}  // namespace

ssize_t RdmEndpoint::PostRma(fi_addr_t peer, const char* call, uint64_t flags,
                             const std::function<ssize_t(const QpTarget&)>& post) {
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  if (!enabled_) {
    IWX_WARN(ep_data, "%s: the endpoint is not enabled\n", call);
    return -FI_EOPBADSTATE;
  }
  const std::optional<transport::SockAddr> to = PeerAddress(peer, call);
  if (!to) return -FI_EINVAL;
  rdm::RdmCore::RmaRoute route;
  if (const rdm::RdmStatus st = core_->RouteRma(*to, &route); st != rdm::RdmStatus::kOk) {
    return StatusToFi(st, call);
  }
  const bool more = (flags & FI_MORE) != 0;
  if (more) core_->CorkRma(route);
  RouteTracker tracker(*core_, route);
  const ssize_t r = post({reporter_, domain_, *route.qp, route.ctx_bits, &tracker});
  if (r == 0) core_->RmaPosted(route);
  // A refused post still ends a run of FI_MORE ones (unless it had FI_MORE).
  if (r == 0 || !more) core_->AfterPost(more);
  return r;
}

ssize_t RdmEndpoint::PostWrite(const struct iovec* iov, size_t count, fi_addr_t dest, uint64_t addr,
                               uint64_t key, void* context, uint64_t flags, uint64_t data) {
  return PostRma(dest, "fi_write", flags, [&](const QpTarget& t) {
    return PostRmaWrite(t, iov, count, addr, key, context, flags, data);
  });
}

ssize_t RdmEndpoint::PostRead(const struct iovec* iov, void** desc, size_t count, fi_addr_t src,
                              uint64_t addr, uint64_t key, void* context, uint64_t flags) {
  return PostRma(src, "fi_read", flags, [&](const QpTarget& t) {
    return PostRmaRead(t, iov, desc, count, addr, key, context, flags);
  });
}

ssize_t RdmEndpoint::PostAtomic(const void* buf, size_t count, enum fi_datatype datatype,
                                enum fi_op op, fi_addr_t dest, uint64_t addr, uint64_t key,
                                const void* compare, void* result, void* context, uint64_t flags,
                                bool fetch, bool cmp) {
  return PostRma(dest, "fi_atomic", flags, [&](const QpTarget& t) {
    return PostRmaAtomic(t, buf, count, datatype, op, addr, key, compare, result, context, flags,
                         fetch, cmp);
  });
}

void RdmEndpoint::RmaDone(uint64_t context) {
  ReportQpTx(reporter_, domain_, static_cast<uint32_t>(context), nullptr);
}

void RdmEndpoint::RmaFailed(uint64_t context, const qp::WcError& error) {
  ReportQpTx(reporter_, domain_, static_cast<uint32_t>(context), &error);
}

}  // namespace iwarpx::ofi
