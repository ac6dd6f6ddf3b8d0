// Endpoint: object life, binding, enabling, connection management and the
// engine's reports. The data-transfer calls are in ep_data.cc, the ops tables
// in ep_ops.cc.
#include "ofi/ep.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <mutex>
#include <new>
#include <string>

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>

#include "cm/cep.h"
#include "ofi/cntr.h"
#include "ofi/cq.h"
#include "ofi/domain.h"
#include "ofi/ep_ops.h"
#include "ofi/eq.h"
#include "ofi/ext_stats.h"
#include "ofi/fabric.h"
#include "ofi/log.h"
#include "ofi/mr.h"
#include "ofi/pep.h"
#include "ofi/prov.h"
#include "ofi/qp_post.h"

namespace iwarpx::ofi {
namespace {

// The receive slots' QP contexts carry this bit (send-queue ones do not).
constexpr uint64_t kRxContextBit = uint64_t{1} << 32;

std::optional<transport::SockAddr> AddrFrom(const void* addr, size_t len) {
  if (addr == nullptr) return std::nullopt;
  return transport::SockAddr::FromRaw(static_cast<const sockaddr*>(addr),
                                      static_cast<socklen_t>(len));
}

size_t AddrLenOf(const void* addr) {
  return static_cast<const sockaddr*>(addr)->sa_family == AF_INET6 ? sizeof(sockaddr_in6)
                                                                   : sizeof(sockaddr_in);
}

// Writes `a` to the caller's buffer (fi_getname conventions).
int CopyName(const transport::SockAddr& a, void* addr, size_t* addrlen) {
  if (addrlen == nullptr) return -FI_EINVAL;
  if (!a.valid()) return -FI_EADDRNOTAVAIL;
  const size_t need = a.length();
  const size_t have = *addrlen;
  *addrlen = need;
  if (addr == nullptr || have < need) return -FI_ETOOSMALL;
  std::memcpy(addr, a.sa(), need);
  return 0;
}

}  // namespace

Endpoint::Endpoint(Domain* domain, struct fi_info* info, size_t tx_size, size_t rx_size)
    : domain_(domain),
      fabric_(domain->fabric()),
      info_(info),
      reporter_(domain, tx_size, rx_size) {}

Endpoint::~Endpoint() {
  fi_freeinfo(info_);
}

int Endpoint::Open(struct fid_domain* domain, struct fi_info* info, struct fid_ep** ep,
                   void* context) {
  Domain* d = Domain::From(domain != nullptr ? &domain->fid : nullptr);
  if (d == nullptr || info == nullptr || ep == nullptr) {
    IWX_WARN(ep_ctrl, "fi_endpoint: domain must be iwarpx's, info and ep not NULL\n");
    return -FI_EINVAL;
  }
  if (info->ep_attr != nullptr && info->ep_attr->type != FI_EP_MSG &&
      info->ep_attr->type != FI_EP_UNSPEC) {
    IWX_WARN(ep_ctrl, "fi_endpoint: endpoint type %d is not supported (FI_EP_MSG only)\n",
             static_cast<int>(info->ep_attr->type));
    return -FI_ENOPROTOOPT;
  }
  if (info->tx_attr != nullptr && info->tx_attr->size > kTxSize) {
    IWX_WARN(ep_ctrl, "fi_endpoint: tx_attr->size %zu exceeds %zu\n", info->tx_attr->size, kTxSize);
    return -FI_EINVAL;
  }
  if (info->rx_attr != nullptr && info->rx_attr->size > kRxSize) {
    IWX_WARN(ep_ctrl, "fi_endpoint: rx_attr->size %zu exceeds %zu\n", info->rx_attr->size, kRxSize);
    return -FI_EINVAL;
  }
  struct fi_info* copy = fi_dupinfo(info);
  if (copy == nullptr) return -FI_ENOMEM;
  const size_t tx_size =
      info->tx_attr != nullptr && info->tx_attr->size != 0 ? info->tx_attr->size : kDefaultTxSize;
  const size_t rx_size =
      info->rx_attr != nullptr && info->rx_attr->size != 0 ? info->rx_attr->size : kDefaultRxSize;
  auto* e = new (std::nothrow) Endpoint(d, copy, tx_size, rx_size);
  if (e == nullptr) {
    fi_freeinfo(copy);
    return -FI_ENOMEM;
  }
  copy->handle = nullptr;
  if (copy->tx_attr != nullptr) {
    copy->tx_attr->size = tx_size;
    e->tx_op_flags_ = copy->tx_attr->op_flags;
  }
  if (copy->rx_attr != nullptr) {
    copy->rx_attr->size = rx_size;
    e->rx_op_flags_ = copy->rx_attr->op_flags;
  }
  e->early_recvs_.reserve(rx_size);
  if (auto a = AddrFrom(info->src_addr, info->src_addrlen)) e->name_ = *a;

  if (info->handle != nullptr) {
    if (const int r = e->AdoptHandle(info->handle); r != 0) {
      delete e;
      return r;
    }
  }
  e->handle_.owner = e;
  e->handle_.fid.fid.fclass = FI_CLASS_EP;
  e->handle_.fid.fid.context = context;
  InstallEndpointOps(&e->handle_.fid);
  d->Ref();
  *ep = e->fid();
  IWX_INFO(ep_ctrl, "ep %p opened (tx %zu, rx %zu%s)\n", static_cast<void*>(e), tx_size, rx_size,
           e->channel_ ? ", from a connection request" : "");
  return 0;
}

int Endpoint::AdoptHandle(struct fid* handle) {
  if (handle->fclass == FI_CLASS_CONNREQ) {
    // The endpoint takes over the pending connection.
    std::lock_guard<std::mutex> lock(fabric_->engine().mu());
    channel_ = PassiveEndpoint::TakeConnection(handle);
    if (!channel_) {
      IWX_WARN(ep_ctrl,
               "fi_endpoint: info->handle is not a pending iwarpx connection request (already "
               "accepted, rejected, or the initiator went away)\n");
      return -FI_ECONNABORTED;
    }
    cm_state_ = CmState::kAccepting;
    return 0;
  }
  if (handle->fclass == FI_CLASS_PEP) {
    PassiveEndpoint* pep = PassiveEndpoint::From(handle);
    if (pep == nullptr) {
      IWX_WARN(ep_ctrl, "fi_endpoint: info->handle is a passive endpoint of another provider\n");
      return -FI_EINVAL;
    }
    // Takes the pep's lock (possibly another fabric's than ours).
    if (const int r = pep->LendAddress(&source_); r != 0) return r;
    if (source_.valid()) name_ = source_.local_address();
    return 0;
  }
  IWX_WARN(ep_ctrl,
           "fi_endpoint: info->handle of class %zu is neither an FI_CONNREQ handle nor a passive "
           "endpoint\n",
           handle->fclass);
  return -FI_EINVAL;
}

Endpoint* Endpoint::From(struct fid* fid) {
  if (fid == nullptr || fid->fclass != FI_CLASS_EP || !IsEndpointFid(fid)) return nullptr;
  return OwnerOf<Endpoint>(reinterpret_cast<struct fid_ep*>(fid));
}

void Endpoint::Stats(progress::EndpointStats* out) {
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  if (channel_ != nullptr) channel_->CollectStats(out);
}

int Endpoint::Close() {
  {
    std::lock_guard<std::mutex> lock(fabric_->engine().mu());
    if (GetParams().stats) {
      progress::EndpointStats s;
      // The connection's own addresses once there is one (as fi_getname/fi_getpeer report
      // them); before, the name the endpoint was given (often port 0).
      std::string where = name_.valid() ? name_.ToString() : "(unbound)";
      if (channel_ != nullptr) {
        channel_->CollectStats(&s);
        where = channel_->local_address().ToString() + " (peer " +
                channel_->peer_address().ToString() + ")";
      }
      ReportAtClose("a MSG endpoint", where.c_str(), s);
    }
    qp_ = nullptr;
    channel_.reset();  // unregisters from the engine and closes the socket
    // The engine lock is also the memory table's (Domain::table_mu).
    for (uint32_t i = 0; i < reporter_.tx_size(); ++i) ReleaseTempStag(domain_, reporter_.tx(i));
  }
  if (eq_ != nullptr) eq_->Unref();
  Domain* d = domain_;
  IWX_INFO(ep_ctrl, "ep %p closed\n", static_cast<void*>(this));
  delete this;
  d->Unref();
  return 0;
}

int Endpoint::Bind(struct fid* bfid, uint64_t flags) {
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  if (enabled_) {
    IWX_WARN(ep_ctrl, "fi_ep_bind: the endpoint is already enabled\n");
    return -FI_EOPBADSTATE;
  }
  if (Eq* eq = Eq::From(bfid)) {
    if (eq_ != nullptr) eq_->Unref();
    eq_ = eq;
    eq_->Ref();
    return 0;
  }
  const int r = reporter_.Bind(bfid, flags, "an MSG endpoint");
  if (r != EpReporter::kNotMine) return r;
  IWX_WARN(ep_ctrl,
           "fi_ep_bind: fid of class %zu cannot be bound to an MSG endpoint (EQ, CQ or "
           "counter of this provider)\n",
           bfid != nullptr ? bfid->fclass : size_t{0});
  return -FI_EINVAL;
}

int Endpoint::Control(int command, void* arg) {
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  switch (command) {
    case FI_ENABLE:
      if (eq_ == nullptr) {
        IWX_WARN(ep_ctrl, "fi_enable: an MSG endpoint needs an EQ bound (fi_ep_bind)\n");
        return -FI_ENOEQ;
      }
      enabled_ = true;
      return 0;
    case FI_GETOPSFLAG:
    case FI_SETOPSFLAG: {
      if (arg == nullptr) return -FI_EINVAL;
      auto* flags = static_cast<uint64_t*>(arg);
      const bool tx = (*flags & FI_TRANSMIT) != 0;
      const bool rx = (*flags & FI_RECV) != 0;
      if (tx == rx) {
        IWX_WARN(ep_ctrl, "fi_control(OPSFLAG): exactly one of FI_TRANSMIT and FI_RECV\n");
        return -FI_EINVAL;
      }
      uint64_t& ops = tx ? tx_op_flags_ : rx_op_flags_;
      if (command == FI_GETOPSFLAG) {
        *flags = ops;
      } else {
        ops = *flags & ~(FI_TRANSMIT | FI_RECV);
      }
      return 0;
    }
    default:
      IWX_WARN(ep_ctrl, "fi_control: command %d is not supported on an endpoint\n", command);
      return -FI_ENOSYS;
  }
}

progress::ChannelConfig Endpoint::MakeChannelConfig() const {
  progress::ChannelConfig c = ChannelConfigFor(info_);
  c.policy.offer_send_imm = WantsCqData();
  c.pd = domain_->pd();
  return c;
}

bool Endpoint::WantsCqData() const {
  return info_ != nullptr && info_->domain_attr != nullptr && info_->domain_attr->cq_data_size > 0;
}

qp::QpConfig Endpoint::MakeQpConfig() const {
  qp::QpConfig c;
  c.sq_size = static_cast<uint32_t>(reporter_.tx_size());
  c.rq_size = static_cast<uint32_t>(reporter_.rx_size());
  c.max_fpdu_payload = static_cast<size_t>(GetParams().mulpdu);
  return c;
}

int Endpoint::GetName(void* addr, size_t* addrlen) {
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  if (channel_) return CopyName(channel_->local_address(), addr, addrlen);
  return CopyName(name_, addr, addrlen);
}

int Endpoint::SetName(const void* addr, size_t addrlen) {
  auto a = AddrFrom(addr, addrlen);
  if (!a) {
    IWX_WARN(ep_ctrl, "fi_setname: not an IPv4/IPv6 socket address (%zu bytes)\n", addrlen);
    return -FI_EINVAL;
  }
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  if (channel_) {
    IWX_WARN(ep_ctrl, "fi_setname: the endpoint is already connecting or connected\n");
    return -FI_EOPBADSTATE;
  }
  source_ = {};  // a lent address is given up for the new one
  name_ = *a;
  return 0;
}

int Endpoint::GetPeer(void* addr, size_t* addrlen) {
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  if (!channel_) return -FI_ENOTCONN;
  return CopyName(channel_->peer_address(), addr, addrlen);
}

int Endpoint::Connect(const void* addr, const void* param, size_t paramlen) {
  const void* dest = addr != nullptr ? addr : info_->dest_addr;
  auto peer = dest != nullptr ? AddrFrom(dest, AddrLenOf(dest)) : std::nullopt;
  if (!peer) {
    IWX_WARN(ep_ctrl, "fi_connect: no IPv4/IPv6 destination address (addr or info->dest_addr)\n");
    return -FI_EINVAL;
  }
  if (paramlen > kMaxCmData || (param == nullptr && paramlen != 0)) {
    IWX_WARN(ep_ctrl, "fi_connect: %zu bytes of private data (at most %zu)\n", paramlen,
             kMaxCmData);
    return -FI_EINVAL;
  }
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  if (!enabled_) {
    IWX_WARN(ep_ctrl, "fi_connect: the endpoint is not enabled (fi_enable)\n");
    return -FI_EOPBADSTATE;
  }
  if (cm_state_ != CmState::kIdle) {
    IWX_WARN(ep_ctrl, "fi_connect: the endpoint is already connecting or connected\n");
    return -FI_EISCONN;
  }
  if (source_.valid() && source_.local_address().family() != peer->family()) {
    IWX_WARN(ep_ctrl,
             "fi_connect: the endpoint holds a passive endpoint's address %s, of another "
             "family than %s\n",
             source_.local_address().ToString().c_str(), peer->ToString().c_str());
    return -FI_EINVAL;
  }
  const ByteSpan pd(static_cast<const uint8_t*>(param), paramlen);
  transport::SockAddr local;
  if (name_.valid() && name_.family() == peer->family()) local = name_;
  // A lent socket is connected as it is (it holds the address); otherwise
  // the address, if any, is bound to a new socket.
  auto ch = source_.valid() ? progress::MsgChannel::ConnectFrom(
                                  fabric_->engine(), domain_->table(), MakeChannelConfig(),
                                  MakeQpConfig(), std::move(source_), *peer, pd, *this)
                            : progress::MsgChannel::Connect(fabric_->engine(), domain_->table(),
                                                            MakeChannelConfig(), MakeQpConfig(),
                                                            *peer, local, pd, *this);
  if (!ch.ok()) {
    IWX_WARN(ep_ctrl, "fi_connect to %s failed: %s\n", peer->ToString().c_str(),
             strerror(ch.error()));
    return -ch.error();
  }
  channel_ = std::move(ch).value();
  cm_state_ = CmState::kConnecting;
  IWX_INFO(ep_ctrl, "ep %p connecting to %s over %s\n", static_cast<void*>(this),
           peer->ToString().c_str(), progress::ToString(LlpOf(info_)));
  return 0;
}

int Endpoint::Accept(const void* param, size_t paramlen) {
  if (paramlen > kMaxCmData || (param == nullptr && paramlen != 0)) {
    IWX_WARN(ep_ctrl, "fi_accept: %zu bytes of private data (at most %zu)\n", paramlen, kMaxCmData);
    return -FI_EINVAL;
  }
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  if (!enabled_) {
    IWX_WARN(ep_ctrl, "fi_accept: the endpoint is not enabled (fi_enable)\n");
    return -FI_EOPBADSTATE;
  }
  if (cm_state_ != CmState::kAccepting || !channel_) {
    IWX_WARN(ep_ctrl,
             "fi_accept: the endpoint was not opened from an FI_CONNREQ's info, or "
             "fi_accept was already called\n");
    return -FI_EOPBADSTATE;
  }
  // Set before the call: the initiator's RTR may already be waiting, and then
  // the connection is reported established (kConnected) inside Accept.
  cm_state_ = CmState::kConnecting;
  const int r =
      channel_->Accept(ByteSpan(static_cast<const uint8_t*>(param), paramlen), domain_->table(),
                       domain_->pd(), MakeQpConfig(), *this, WantsCqData());
  if (r != 0) {
    IWX_WARN(ep_ctrl,
             "fi_accept: the connection request is no longer pending (the initiator "
             "left or timed out)\n");
    cm_state_ = CmState::kFailed;
    return -FI_ECONNABORTED;
  }
  return 0;
}

int Endpoint::Shutdown(uint64_t flags) {
  if (flags != 0) {
    IWX_WARN(ep_ctrl, "fi_shutdown: flags must be 0\n");
    return -FI_EBADFLAGS;
  }
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  if (!channel_ || cm_state_ != CmState::kConnected) {
    IWX_WARN(ep_ctrl, "fi_shutdown: the endpoint is not connected\n");
    return -FI_ENOTCONN;
  }
  channel_->Disconnect();  // reports OnTerminated (FI_SHUTDOWN) from inside
  cm_state_ = CmState::kShutdown;
  return 0;
}

ssize_t Endpoint::Cancel(void* context) {
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  // Receives still waiting for the connection can be taken back; once the QP
  // holds a work request it runs to completion or to the connection's end.
  for (auto it = early_recvs_.begin(); it != early_recvs_.end(); ++it) {
    const auto index = static_cast<uint32_t>(it->context & ~kRxContextBit);
    if (reporter_.rx(index).context != context) continue;
    early_recvs_.erase(it);
    struct fi_cq_err_entry e = {};
    e.err = FI_ECANCELED;
    reporter_.FailRx(index, e);
    return 0;
  }
  return -FI_ENOENT;
}

int Endpoint::GetOpt(int level, int optname, void* optval, size_t* optlen) {
  if (level != FI_OPT_ENDPOINT || optval == nullptr || optlen == nullptr) return -FI_ENOPROTOOPT;
  if (optname == FI_OPT_CM_DATA_SIZE) {
    if (*optlen < sizeof(size_t)) {
      *optlen = sizeof(size_t);
      return -FI_ETOOSMALL;
    }
    *static_cast<size_t*>(optval) = kMaxCmData;
    *optlen = sizeof(size_t);
    return 0;
  }
  return -FI_ENOPROTOOPT;
}

int Endpoint::SetOpt(int level, int optname, const void* /*optval*/, size_t /*optlen*/) {
  IWX_INFO(ep_ctrl, "fi_setopt: option %d at level %d is not supported\n", optname, level);
  return -FI_ENOPROTOOPT;
}

// --- Engine reports ------------------------------------------------------

void Endpoint::OnQpReady(qp::QueuePair& qp) {
  qp_ = &qp;
  for (const qp::RecvWr& wr : early_recvs_) {
    if (qp.PostRecv(wr) != qp::QpStatus::kOk) {
      IWX_WARN(ep_ctrl, "ep %p: a receive posted before the connection was refused by the QP\n",
               static_cast<void*>(this));
    }
  }
  early_recvs_.clear();
}

void Endpoint::OnEstablished() {
  cm_state_ = CmState::kConnected;
  if (eq_ == nullptr) return;
  ByteSpan pd;
  if (channel_ && channel_->outcome() && channel_->outcome()->role == wire::MpaRole::kInitiator) {
    pd = channel_->peer_private_data();
  }
  if (!eq_->PostCm(FI_CONNECTED, &handle_.fid.fid, nullptr, pd.data(), pd.size())) {
    IWX_WARN(eq, "ep %p: the EQ is full; FI_CONNECTED lost\n", static_cast<void*>(this));
  }
}

void Endpoint::OnConnectFailed(const cm::CepError& error, ByteSpan reject_data) {
  cm_state_ = CmState::kFailed;
  if (eq_ == nullptr) return;
  struct fi_eq_err_entry e = {};
  e.fid = &handle_.fid.fid;
  e.context = handle_.fid.fid.context;
  e.err = cm::CepErrno(error);
  e.prov_errno = error.kind == cm::CepErrorKind::kProtocol
                     ? qp::ProvErrno(wire::TerminateCauseFor(error.wire_error))
                     : 0;
  IWX_INFO(ep_ctrl, "ep %p: connection setup with %s failed: %s%s%s\n", static_cast<void*>(this),
           channel_ != nullptr ? channel_->peer_address().ToString().c_str() : "?",
           fi_strerror(e.err), error.kind == cm::CepErrorKind::kProtocol ? ": " : "",
           error.kind == cm::CepErrorKind::kProtocol ? wire::ToString(error.wire_error) : "");
  if (!eq_->PostError(e, reject_data.data(), reject_data.size())) {
    IWX_WARN(eq, "ep %p: the EQ is full; connection error lost\n", static_cast<void*>(this));
  }
}

void Endpoint::OnTerminated(wire::TermCause cause, qp::TermOrigin origin) {
  const bool was_connected = cm_state_ == CmState::kConnected;
  if (cm_state_ != CmState::kShutdown) cm_state_ = CmState::kShutdown;
  static constexpr const char* kOrigin[] = {"we sent a Terminate", "the peer sent a Terminate",
                                            "the TCP connection was lost", "closed here"};
  const auto o = static_cast<size_t>(origin);
  IWX_INFO(ep_ctrl, "ep %p: connection to %s ended: %s (cause %#x: %s)\n", static_cast<void*>(this),
           channel_ != nullptr ? channel_->peer_address().ToString().c_str() : "?",
           o < std::size(kOrigin) ? kOrigin[o] : "?", qp::ProvErrno(cause), wire::ToString(cause));
  if (eq_ == nullptr) return;
  if (!was_connected) {
    // Ended before FI_CONNECTED (e.g. the responder's QP failed on the
    // first FPDU): report it as a failed connection.
    cm::CepError e;
    e.kind = cm::CepErrorKind::kPeerClosed;
    OnConnectFailed(e, {});
    return;
  }
  if (!eq_->PostCm(FI_SHUTDOWN, &handle_.fid.fid, nullptr, nullptr, 0)) {
    IWX_WARN(eq, "ep %p: the EQ is full; FI_SHUTDOWN lost\n", static_cast<void*>(this));
  }
}

void Endpoint::OnSendComplete(uint64_t context) {
  ReportQpTx(reporter_, domain_, static_cast<uint32_t>(context), nullptr);
}

void Endpoint::OnRdmaComplete(uint64_t context, qp::WcOp /*op*/) {
  ReportQpTx(reporter_, domain_, static_cast<uint32_t>(context), nullptr);
}

void Endpoint::OnRecvComplete(uint64_t context, size_t bytes, const qp::RecvInfo& info) {
  const auto index = static_cast<uint32_t>(context & ~kRxContextBit);
  struct fi_cq_data_entry c = {};
  c.buf = reporter_.rx(index).buf;
  if (info.has_imm && info.send_imm) {
    // fi_senddata: a message with remote CQ data (iwarpx extension).
    c.flags = FI_REMOTE_CQ_DATA | FI_RECV | FI_MSG;
    c.len = bytes;
    c.data = info.imm;
  } else if (info.has_imm) {
    c.flags = FI_REMOTE_CQ_DATA | FI_RMA | FI_REMOTE_WRITE;
    c.buf = nullptr;
    c.data = info.imm;
  } else {
    c.flags = FI_RECV | FI_MSG;
    c.len = bytes;
  }
  reporter_.CompleteRx(index, c, FI_ADDR_NOTAVAIL);
}

void Endpoint::OnError(uint64_t context, qp::WcOp op, const qp::WcError& error) {
  if (op == qp::WcOp::kRecv) {
    reporter_.FailRx(static_cast<uint32_t>(context & ~kRxContextBit), QpErrEntry(error));
    return;
  }
  ReportQpTx(reporter_, domain_, static_cast<uint32_t>(context), &error);
}

int EndpointOpen(struct fid_domain* domain, struct fi_info* info, struct fid_ep** ep,
                 void* context) {
  return Endpoint::Open(domain, info, ep, context);
}

}  // namespace iwarpx::ofi
