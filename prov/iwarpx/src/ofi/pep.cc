#include "ofi/pep.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>

#include "ofi/eq.h"
#include "ofi/fabric.h"
#include "ofi/getinfo.h"
#include "ofi/log.h"
#include "ofi/prov.h"
#include "transport/tcp.h"

namespace iwarpx::ofi {
namespace {

PassiveEndpoint* Self(struct fid* fid) {
  return OwnerOf<PassiveEndpoint>(reinterpret_cast<struct fid_pep*>(fid));
}

int PepClose(struct fid* fid) {
  return Self(fid)->Close();
}
int PepBind(struct fid* fid, struct fid* bfid, uint64_t flags) {
  return Self(fid)->Bind(bfid, flags);
}
int PepControl(struct fid* /*fid*/, int command, void* /*arg*/) {
  IWX_WARN(ep_ctrl, "fi_control: command %d is not supported on a passive endpoint\n", command);
  return -FI_ENOSYS;
}
int PepSetName(fid_t fid, void* addr, size_t addrlen) {
  return Self(fid)->SetName(addr, addrlen);
}
int PepGetName(fid_t fid, void* addr, size_t* addrlen) {
  return Self(fid)->GetName(addr, addrlen);
}
int PepGetPeer(struct fid_ep* /*ep*/, void* /*addr*/, size_t* /*addrlen*/) {
  return -FI_ENOSYS;
}
int PepConnect(struct fid_ep* /*ep*/, const void* /*addr*/, const void* /*param*/,
               size_t /*paramlen*/) {
  IWX_WARN(ep_ctrl, "fi_connect: called on a passive endpoint\n");
  return -FI_ENOSYS;
}
int PepListen(struct fid_pep* pep) {
  return Self(&pep->fid)->Listen();
}
int PepAccept(struct fid_ep* /*ep*/, const void* /*param*/, size_t /*paramlen*/) {
  IWX_WARN(ep_ctrl, "fi_accept: open an endpoint from the FI_CONNREQ's info and accept on it\n");
  return -FI_ENOSYS;
}
int PepReject(struct fid_pep* pep, fid_t handle, const void* param, size_t paramlen) {
  return Self(&pep->fid)->Reject(handle, param, paramlen);
}
int PepShutdown(struct fid_ep* /*ep*/, uint64_t /*flags*/) {
  return -FI_ENOSYS;
}
int PepJoin(struct fid_ep* /*ep*/, const void* /*addr*/, uint64_t /*flags*/, struct fid_mc** /*mc*/,
            void* /*context*/) {
  return -FI_ENOSYS;
}
int PepGetOpt(struct fid* /*fid*/, int level, int optname, void* optval, size_t* optlen) {
  if (level != FI_OPT_ENDPOINT || optname != FI_OPT_CM_DATA_SIZE || optval == nullptr ||
      optlen == nullptr) {
    return -FI_ENOPROTOOPT;
  }
  if (*optlen < sizeof(size_t)) {
    *optlen = sizeof(size_t);
    return -FI_ETOOSMALL;
  }
  *static_cast<size_t*>(optval) = kMaxCmData;
  *optlen = sizeof(size_t);
  return 0;
}
int PepSetOpt(struct fid* /*fid*/, int /*level*/, int /*optname*/, const void* /*optval*/,
              size_t /*optlen*/) {
  return -FI_ENOPROTOOPT;
}

int ConnReqClose(struct fid* /*fid*/) {
  return 0;  // owned by the passive endpoint
}

const struct fi_ops kPepFiOps = {
    .size = sizeof(struct fi_ops),
    .close = PepClose,
    .bind = PepBind,
    .control = PepControl,
    .ops_open = fi_no_ops_open,
    .tostr = fi_no_tostr,
    .ops_set = fi_no_ops_set,
};

const struct fi_ops_ep kPepEpOps = {
    .size = sizeof(struct fi_ops_ep),
    .cancel = [](struct fid*, void*) -> ssize_t { return -FI_ENOSYS; },
    .getopt = PepGetOpt,
    .setopt = PepSetOpt,
    .tx_ctx = [](struct fid_ep*, int, struct fi_tx_attr*, struct fid_ep**, void*) -> int {
      return -FI_ENOSYS;
    },
    .rx_ctx = [](struct fid_ep*, int, struct fi_rx_attr*, struct fid_ep**, void*) -> int {
      return -FI_ENOSYS;
    },
    .rx_size_left = [](struct fid_ep*) -> ssize_t { return -FI_ENOSYS; },
    .tx_size_left = [](struct fid_ep*) -> ssize_t { return -FI_ENOSYS; },
};

const struct fi_ops_cm kPepCmOps = {
    .size = sizeof(struct fi_ops_cm),
    .setname = PepSetName,
    .getname = PepGetName,
    .getpeer = PepGetPeer,
    .connect = PepConnect,
    .listen = PepListen,
    .accept = PepAccept,
    .reject = PepReject,
    .shutdown = PepShutdown,
    .join = PepJoin,
};

const struct fi_ops kConnReqOps = {
    .size = sizeof(struct fi_ops),
    .close = ConnReqClose,
    .bind = fi_no_bind,
    .control = fi_no_control,
    .ops_open = fi_no_ops_open,
    .tostr = fi_no_tostr,
    .ops_set = fi_no_ops_set,
};

// A malloc'd copy of `a` for an fi_info address field (fi_freeinfo frees it).
void* DupAddr(const transport::SockAddr& a, size_t* len) {
  *len = 0;
  if (!a.valid()) return nullptr;
  void* p = std::malloc(a.length());
  if (p == nullptr) return nullptr;
  std::memcpy(p, a.sa(), a.length());
  *len = a.length();
  return p;
}

uint32_t FormatOf(const transport::SockAddr& a) {
  return a.is_ipv6() ? FI_SOCKADDR_IN6 : FI_SOCKADDR_IN;
}

}  // namespace

int PassiveEndpoint::Open(struct fid_fabric* fabric, struct fi_info* info, struct fid_pep** pep,
                          void* context) {
  Fabric* f = Fabric::From(fabric);
  if (f == nullptr || info == nullptr || pep == nullptr) {
    IWX_WARN(ep_ctrl, "fi_passive_ep: fabric must be iwarpx's, info and pep not NULL\n");
    return -FI_EINVAL;
  }
  if (info->ep_attr != nullptr && info->ep_attr->type != FI_EP_MSG &&
      info->ep_attr->type != FI_EP_UNSPEC) {
    IWX_WARN(ep_ctrl, "fi_passive_ep: only FI_EP_MSG has passive endpoints\n");
    return -FI_EINVAL;
  }
  struct fi_info* copy = fi_dupinfo(info);
  if (copy == nullptr) return -FI_ENOMEM;
  auto* p = new (std::nothrow) PassiveEndpoint(f, copy);
  if (p == nullptr) {
    fi_freeinfo(copy);
    return -FI_ENOMEM;
  }
  if (info->src_addr != nullptr) {
    if (auto a = transport::SockAddr::FromRaw(static_cast<const sockaddr*>(info->src_addr),
                                              static_cast<socklen_t>(info->src_addrlen))) {
      p->name_ = *a;
    }
  }
  p->handle_.owner = p;
  p->handle_.fid.fid.fclass = FI_CLASS_PEP;
  p->handle_.fid.fid.context = context;
  p->handle_.fid.fid.ops = const_cast<struct fi_ops*>(&kPepFiOps);
  p->handle_.fid.ops = const_cast<struct fi_ops_ep*>(&kPepEpOps);
  p->handle_.fid.cm = const_cast<struct fi_ops_cm*>(&kPepCmOps);
  f->Ref();
  *pep = &p->handle_.fid;
  IWX_INFO(ep_ctrl, "pep %p opened\n", static_cast<void*>(p));
  return 0;
}

PassiveEndpoint::~PassiveEndpoint() {
  fi_freeinfo(info_);
}

int PassiveEndpoint::Close() {
  {
    std::lock_guard<std::mutex> lock(fabric_->engine().mu());
    listener_.reset();  // pending connections are closed with it
    requests_.clear();
  }
  if (eq_ != nullptr) eq_->Unref();
  Fabric* f = fabric_;
  IWX_INFO(ep_ctrl, "pep %p closed\n", static_cast<void*>(this));
  delete this;
  f->Unref();
  return 0;
}

int PassiveEndpoint::Bind(struct fid* bfid, uint64_t flags) {
  Eq* eq = Eq::From(bfid);
  if (eq == nullptr) {
    IWX_WARN(ep_ctrl, "fi_pep_bind: only an iwarpx EQ can be bound to a passive endpoint\n");
    return -FI_EINVAL;
  }
  if (flags != 0) return -FI_EBADFLAGS;
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  if (eq_ != nullptr) eq_->Unref();
  eq_ = eq;
  eq_->Ref();
  return 0;
}

int PassiveEndpoint::SetName(const void* addr, size_t addrlen) {
  auto a = addr != nullptr ? transport::SockAddr::FromRaw(static_cast<const sockaddr*>(addr),
                                                          static_cast<socklen_t>(addrlen))
                           : std::nullopt;
  if (!a) {
    IWX_WARN(ep_ctrl, "fi_setname: not an IPv4/IPv6 socket address (%zu bytes)\n", addrlen);
    return -FI_EINVAL;
  }
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  if (listener_) {
    IWX_WARN(ep_ctrl, "fi_setname: the passive endpoint is already listening\n");
    return -FI_EOPBADSTATE;
  }
  if (lent_) {
    IWX_WARN(ep_ctrl, "fi_setname: the passive endpoint's address was taken by an endpoint\n");
    return -FI_EOPBADSTATE;
  }
  if (LlpOf(info_) == progress::Llp::kSctp) {
    // Nothing to reserve on SCTP (no TCP socket): the address is used by
    // fi_listen, where port 0 becomes the port fi_getname reports.
    name_ = *a;
    return 0;
  }
  // Bound now, so that port 0 turns into the port fi_getname reports and the
  // address stays reserved until fi_listen or an active endpoint uses it.
  auto b = transport::TcpBoundSocket::Bind(*a);
  if (!b.ok()) {
    IWX_WARN(ep_ctrl, "fi_setname: cannot bind %s: %s\n", a->ToString().c_str(),
             strerror(b.error().err));
    return b.error().err == EADDRINUSE ? -FI_EADDRINUSE : -b.error().err;
  }
  bound_ = std::move(b).value();
  name_ = bound_.local_address();
  IWX_INFO(ep_ctrl, "pep %p bound to %s\n", static_cast<void*>(this), name_.ToString().c_str());
  return 0;
}

PassiveEndpoint* PassiveEndpoint::From(struct fid* fid) {
  if (fid == nullptr || fid->fclass != FI_CLASS_PEP || fid->ops != &kPepFiOps) return nullptr;
  return Self(fid);
}

transport::SockAddr PassiveEndpoint::Name() {
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  return listener_ ? listener_->local_address() : name_;
}

int PassiveEndpoint::LendAddress(transport::TcpBoundSocket* out) {
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  if (listener_) {
    IWX_WARN(ep_ctrl,
             "fi_endpoint: info->handle is pep %p, which is listening; only a bound, "
             "not listening passive endpoint lends its address\n",
             static_cast<void*>(this));
    return -FI_EINVAL;
  }
  if (lent_) {
    IWX_WARN(ep_ctrl, "fi_endpoint: pep %p already lent its address to another endpoint\n",
             static_cast<void*>(this));
    return -FI_EINVAL;
  }
  if (LlpOf(info_) == progress::Llp::kSctp) {
    IWX_WARN(ep_ctrl,
             "fi_endpoint: pep %p runs iWARP over SCTP (FI_PROTO_IWARPX_SCTP), whose "
             "associations cannot connect from a passive endpoint's address; open the "
             "endpoint without info->handle\n",
             static_cast<void*>(this));
    return -FI_EOPNOTSUPP;
  }
  if (!bound_.valid() && name_.valid()) {
    auto b = transport::TcpBoundSocket::Bind(name_);
    if (!b.ok()) {
      IWX_WARN(ep_ctrl, "fi_endpoint: cannot bind pep %p's address %s: %s\n",
               static_cast<void*>(this), name_.ToString().c_str(), strerror(b.error().err));
      return b.error().err == EADDRINUSE ? -FI_EADDRINUSE : -b.error().err;
    }
    bound_ = std::move(b).value();
    name_ = bound_.local_address();
  }
  *out = std::move(bound_);
  lent_ = true;
  IWX_INFO(ep_ctrl, "pep %p lent its address %s to an active endpoint\n", static_cast<void*>(this),
           name_.valid() ? name_.ToString().c_str() : "(none)");
  return 0;
}

int PassiveEndpoint::GetName(void* addr, size_t* addrlen) {
  if (addrlen == nullptr) return -FI_EINVAL;
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  const transport::SockAddr a = listener_ ? listener_->local_address() : name_;
  if (!a.valid()) return -FI_EADDRNOTAVAIL;
  const size_t have = *addrlen;
  *addrlen = a.length();
  if (addr == nullptr || have < a.length()) return -FI_ETOOSMALL;
  std::memcpy(addr, a.sa(), a.length());
  return 0;
}

int PassiveEndpoint::Listen() {
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  if (eq_ == nullptr) {
    IWX_WARN(ep_ctrl, "fi_listen: bind an EQ first (fi_pep_bind)\n");
    return -FI_ENOEQ;
  }
  if (listener_) return 0;
  if (lent_) {
    IWX_WARN(ep_ctrl, "fi_listen: pep %p's address was taken by an active endpoint\n",
             static_cast<void*>(this));
    return -FI_EOPBADSTATE;
  }
  const progress::ChannelConfig config = ChannelConfigFor(info_);
  const transport::SockAddr addr = name_.valid() ? name_ : transport::SockAddr::Any4();
  constexpr int kBacklog = transport::TcpListener::kDefaultBacklog;
  auto l = bound_.valid()
               ? progress::MsgListener::ListenOn(fabric_->engine(), std::move(bound_), config,
                                                 kBacklog, *this)
               : progress::MsgListener::Listen(fabric_->engine(), addr, config, kBacklog, *this);
  if (!l.ok()) {
    IWX_WARN(ep_ctrl, "fi_listen on %s: %s\n", addr.ToString().c_str(), strerror(l.error()));
    return l.error() == EADDRINUSE ? -FI_EADDRINUSE : -l.error();
  }
  listener_ = std::move(l).value();
  IWX_INFO(ep_ctrl, "pep %p listening on %s over %s\n", static_cast<void*>(this),
           listener_->local_address().ToString().c_str(), progress::ToString(config.llp));
  return 0;
}

void PassiveEndpoint::OnRequest(progress::MsgChannel& channel) {
  auto cr = std::make_unique<ConnReq>();
  cr->fid = {};
  cr->fid.fclass = FI_CLASS_CONNREQ;
  cr->fid.ops = const_cast<struct fi_ops*>(&kConnReqOps);
  cr->pep = this;
  cr->channel = &channel;
  struct fi_info* info = fi_dupinfo(info_);
  if (info == nullptr) {
    (void)channel.Reject({});
    return;
  }
  std::free(info->src_addr);
  std::free(info->dest_addr);
  info->src_addr = DupAddr(channel.local_address(), &info->src_addrlen);
  info->dest_addr = DupAddr(channel.peer_address(), &info->dest_addrlen);
  info->addr_format = FormatOf(channel.peer_address());
  info->handle = &cr->fid;
  const ByteSpan pd = channel.peer_private_data();
  if (eq_ == nullptr || !eq_->PostCm(FI_CONNREQ, &handle_.fid.fid, info, pd.data(), pd.size())) {
    IWX_WARN(ep_ctrl, "pep %p: the EQ is full; connection request from %s refused\n",
             static_cast<void*>(this), channel.peer_address().ToString().c_str());
    fi_freeinfo(info);
    (void)channel.Reject({});
    return;
  }
  requests_.push_back(std::move(cr));
}

void PassiveEndpoint::OnRequestGone(progress::MsgChannel& channel) {
  // A setup the peer got wrong (a refused Request or Initiate, an SCTP peer
  // that is not an RFC 5043 one) never reaches the application: say why here.
  if (const cm::CepError& e = channel.setup_error(); e.kind == cm::CepErrorKind::kProtocol) {
    IWX_INFO(ep_ctrl, "pep %p: connection setup from %s refused: %s\n", static_cast<void*>(this),
             channel.peer_address().ToString().c_str(), wire::ToString(e.wire_error));
  }
  for (auto& cr : requests_) {
    if (cr->channel == &channel) cr->channel = nullptr;
  }
}

PassiveEndpoint::ConnReq* PassiveEndpoint::ConnReqFrom(struct fid* handle) {
  if (handle == nullptr || handle->fclass != FI_CLASS_CONNREQ || handle->ops != &kConnReqOps) {
    return nullptr;
  }
  return reinterpret_cast<ConnReq*>(handle);
}

std::unique_ptr<progress::MsgChannel> PassiveEndpoint::TakeConnection(struct fid* handle) {
  ConnReq* cr = ConnReqFrom(handle);
  if (cr == nullptr || cr->channel == nullptr || !cr->pep->listener_) return nullptr;
  std::unique_ptr<progress::MsgChannel> ch = cr->pep->listener_->Take(cr->channel);
  cr->channel = nullptr;
  return ch;
}

int PassiveEndpoint::Reject(struct fid* handle, const void* param, size_t paramlen) {
  if (paramlen > kMaxCmData || (param == nullptr && paramlen != 0)) {
    IWX_WARN(ep_ctrl, "fi_reject: %zu bytes of private data (at most %zu)\n", paramlen, kMaxCmData);
    return -FI_EINVAL;
  }
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  ConnReq* cr = ConnReqFrom(handle);
  if (cr == nullptr || cr->pep != this) {
    IWX_WARN(ep_ctrl, "fi_reject: handle is not a connection request of this endpoint\n");
    return -FI_EINVAL;
  }
  if (cr->channel == nullptr) {
    IWX_WARN(ep_ctrl, "fi_reject: the request was already answered or its initiator left\n");
    return -FI_ECONNABORTED;
  }
  progress::MsgChannel* ch = cr->channel;
  cr->channel = nullptr;
  if (ch->Reject(ByteSpan(static_cast<const uint8_t*>(param), paramlen)) != 0) {
    return -FI_ECONNABORTED;
  }
  return 0;
}

int PassiveEpOpen(struct fid_fabric* fabric, struct fi_info* info, struct fid_pep** pep,
                  void* context) {
  return PassiveEndpoint::Open(fabric, info, pep, context);
}

}  // namespace iwarpx::ofi
