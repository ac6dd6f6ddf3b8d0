#include "ofi/cl_ep.h"

#include <cstring>
#include <mutex>

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>

#include "ofi/av.h"
#include "ofi/domain.h"
#include "ofi/ep_noops.h"
#include "ofi/ext_stats.h"
#include "ofi/fabric.h"
#include "ofi/getinfo.h"
#include "ofi/log.h"
#include "ofi/prov.h"

namespace iwarpx::ofi {
namespace {

ClEndpoint* Self(struct fid* fid) {
  return ClEndpoint::FromEp(reinterpret_cast<struct fid_ep*>(fid));
}

// --- fi_ops ---
int EpClose(struct fid* fid) {
  return Self(fid)->Close();
}
int EpBind(struct fid* fid, struct fid* bfid, uint64_t flags) {
  return Self(fid)->Bind(bfid, flags);
}
int EpControl(struct fid* fid, int command, void* arg) {
  return Self(fid)->Control(command, arg);
}

// --- fi_ops_ep ---
ssize_t EpCancel(struct fid* fid, void* context) {
  return Self(fid)->Cancel(context);
}
int EpGetOpt(struct fid* fid, int level, int optname, void* optval, size_t* optlen) {
  return Self(fid)->GetOpt(level, optname, optval, optlen);
}
int EpSetOpt(struct fid* fid, int level, int optname, const void* optval, size_t optlen) {
  return Self(fid)->SetOpt(level, optname, optval, optlen);
}

// --- fi_ops_cm: only the name ---
int CmNo(const char* call) {
  IWX_WARN(ep_ctrl, "%s: not a call of a connectionless endpoint\n", call);
  return -FI_ENOSYS;
}
int CmSetName(fid_t /*fid*/, void* /*addr*/, size_t /*addrlen*/) {
  return CmNo("fi_setname");
}
int CmGetName(fid_t fid, void* addr, size_t* addrlen) {
  return Self(fid)->GetName(addr, addrlen);
}
int CmGetPeer(struct fid_ep* /*ep*/, void* /*addr*/, size_t* /*addrlen*/) {
  return CmNo("fi_getpeer");
}
int CmConnect(struct fid_ep* /*ep*/, const void* /*addr*/, const void* /*param*/,
              size_t /*paramlen*/) {
  return CmNo("fi_connect");
}
int CmListen(struct fid_pep* /*pep*/) {
  return CmNo("fi_listen");
}
int CmAccept(struct fid_ep* /*ep*/, const void* /*param*/, size_t /*paramlen*/) {
  return CmNo("fi_accept");
}
int CmReject(struct fid_pep* /*pep*/, fid_t /*handle*/, const void* /*param*/,
             size_t /*paramlen*/) {
  return CmNo("fi_reject");
}
int CmShutdown(struct fid_ep* /*ep*/, uint64_t /*flags*/) {
  return CmNo("fi_shutdown");
}
int CmJoin(struct fid_ep* /*ep*/, const void* /*addr*/, uint64_t /*flags*/, struct fid_mc** /*mc*/,
           void* /*context*/) {
  return CmNo("fi_join");
}

const struct fi_ops kClFiOps = {
    .size = sizeof(struct fi_ops),
    .close = EpClose,
    .bind = EpBind,
    .control = EpControl,
    .ops_open = fi_no_ops_open,
    .tostr = fi_no_tostr,
    .ops_set = fi_no_ops_set,
};

const struct fi_ops_ep kClEpOps = {
    .size = sizeof(struct fi_ops_ep),
    .cancel = EpCancel,
    .getopt = EpGetOpt,
    .setopt = EpSetOpt,
    .tx_ctx = NoTxContext,
    .rx_ctx = NoRxContext,
    .rx_size_left = NoSizeLeft,
    .tx_size_left = NoSizeLeft,
};

}  // namespace

const struct fi_ops_cm kClCmOps = {
    .size = sizeof(struct fi_ops_cm),
    .setname = CmSetName,
    .getname = CmGetName,
    .getpeer = CmGetPeer,
    .connect = CmConnect,
    .listen = CmListen,
    .accept = CmAccept,
    .reject = CmReject,
    .shutdown = CmShutdown,
    .join = CmJoin,
};

namespace {

size_t SizeOr(size_t v, size_t dflt) {
  return v != 0 ? v : dflt;
}

}  // namespace

ClEndpoint::ClEndpoint(const OpenArgs& args, const char* kind)
    : domain_(args.domain),
      fabric_(args.domain->fabric()),
      kind_(kind),
      reporter_(args.domain, args.tx_size, args.rx_size),
      tx_op_flags_(args.tx_op_flags),
      rx_op_flags_(args.rx_op_flags) {}

ClEndpoint::~ClEndpoint() {
  if (av_ != nullptr) av_->Unref();
}

void ClEndpoint::Stats(progress::EndpointStats* out) {
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  CollectStats(out);
}

void ClEndpoint::ReportStatsAtClose() const {
  if (!GetParams().stats) return;
  progress::EndpointStats s;
  CollectStats(&s);
  ReportAtClose(kind_, LocalAddress().ToString().c_str(), s);
}

ClEndpoint* ClEndpoint::From(struct fid* fid) {
  if (!IsOurs(fid, FI_CLASS_EP, &kClFiOps) && !IsOurs(fid, FI_CLASS_TX_CTX, &kClFiOps) &&
      !IsOurs(fid, FI_CLASS_RX_CTX, &kClFiOps)) {
    return nullptr;
  }
  return FromEp(reinterpret_cast<struct fid_ep*>(fid));
}

int ClEndpoint::ParseOpen(struct fid_domain* domain, struct fi_info* info, struct fid_ep** ep,
                          OpenArgs* out) {
  Domain* d = Domain::From(domain != nullptr ? &domain->fid : nullptr);
  if (d == nullptr || info == nullptr || ep == nullptr) {
    IWX_WARN(ep_ctrl, "fi_endpoint: domain must be iwarpx's, info and ep not NULL\n");
    return -FI_EINVAL;
  }
  out->domain = d;
  out->tx_size = SizeOr(info->tx_attr != nullptr ? info->tx_attr->size : 0, kDefaultTxSize);
  out->rx_size = SizeOr(info->rx_attr != nullptr ? info->rx_attr->size : 0, kDefaultRxSize);
  if (out->tx_size > kTxSize || out->rx_size > kRxSize) {
    IWX_WARN(ep_ctrl, "fi_endpoint: tx/rx sizes %zu/%zu exceed %zu/%zu\n", out->tx_size,
             out->rx_size, kTxSize, kRxSize);
    return -FI_EINVAL;
  }
  out->local = transport::SockAddr::Any4();
  if (info->src_addr != nullptr) {
    auto a = transport::SockAddr::FromRaw(static_cast<const sockaddr*>(info->src_addr),
                                          static_cast<socklen_t>(info->src_addrlen));
    if (!a) {
      IWX_WARN(ep_ctrl, "fi_endpoint: src_addr is not a sockaddr_in/sockaddr_in6\n");
      return -FI_EINVAL;
    }
    out->local = *a;
  } else if (info->addr_format == FI_SOCKADDR_IN6) {
    out->local = transport::SockAddr::Any6();
  }
  if (GetParams().fault_invalid) {
    IWX_WARN(ep_ctrl, "fi_endpoint: FI_IWARPX_FAULT does not parse (see the log above)\n");
    return -FI_EINVAL;
  }
  if (info->tx_attr != nullptr) out->tx_op_flags = info->tx_attr->op_flags;
  if (info->rx_attr != nullptr) out->rx_op_flags = info->rx_attr->op_flags;
  return 0;
}

void ClEndpoint::Install(void* context, const struct fi_ops_msg* msg,
                         const struct fi_ops_tagged* tagged, const struct fi_ops_rma* rma,
                         const struct fi_ops_atomic* atomic, struct fid_ep** ep, size_t fclass) {
  handle_.owner = this;
  handle_.fid.fid.fclass = fclass;
  handle_.fid.fid.context = context;
  handle_.fid.fid.ops = const_cast<struct fi_ops*>(&kClFiOps);
  handle_.fid.ops = const_cast<struct fi_ops_ep*>(&kClEpOps);
  handle_.fid.cm = const_cast<struct fi_ops_cm*>(&kClCmOps);
  handle_.fid.msg = const_cast<struct fi_ops_msg*>(msg);
  handle_.fid.tagged =
      const_cast<struct fi_ops_tagged*>(tagged != nullptr ? tagged : &kNoTaggedOps);
  handle_.fid.rma = const_cast<struct fi_ops_rma*>(rma != nullptr ? rma : &kNoRmaOps);
  handle_.fid.atomic =
      const_cast<struct fi_ops_atomic*>(atomic != nullptr ? atomic : &kNoAtomicOps);
  handle_.fid.collective = const_cast<struct fi_ops_collective*>(&kNoCollectiveOps);
  domain_->Ref();
  *ep = fid();
}

void ClEndpoint::Destroy() {
  Domain* d = domain_;
  delete this;
  d->Unref();
}

int ClEndpoint::Bind(struct fid* bfid, uint64_t flags) {
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  if (enabled_) {
    IWX_WARN(ep_ctrl, "fi_ep_bind: the endpoint is already enabled\n");
    return -FI_EOPBADSTATE;
  }
  if (const int r = CheckBind(bfid, flags); r != 0) return r;
  if (Av* av = Av::From(bfid)) {
    if (av->domain() != domain_) {
      IWX_WARN(ep_ctrl, "fi_ep_bind(av): the AV belongs to another domain\n");
      return -FI_EINVAL;
    }
    if (av_ != nullptr) av_->Unref();
    av_ = av;
    av_->Ref();
    return 0;
  }
  const int r = reporter_.Bind(bfid, flags, kind_);
  if (r != EpReporter::kNotMine) return r;
  IWX_WARN(ep_ctrl,
           "fi_ep_bind: fid of class %zu cannot be bound to %s (AV, CQ or "
           "counter of this provider)\n",
           bfid != nullptr ? bfid->fclass : size_t{0}, kind_);
  return -FI_EINVAL;
}

int ClEndpoint::Control(int command, void* arg) {
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  switch (command) {
    case FI_ENABLE:
      if (const int r = CheckEnable(); r != 0) return r;
      enabled_ = true;
      return 0;
    case FI_GETOPSFLAG: {
      auto* flags = static_cast<uint64_t*>(arg);
      if (flags == nullptr) return -FI_EINVAL;
      *flags = (*flags & FI_RECV) != 0 ? rx_op_flags_ : tx_op_flags_;
      return 0;
    }
    case FI_SETOPSFLAG: {
      auto* flags = static_cast<uint64_t*>(arg);
      if (flags == nullptr) return -FI_EINVAL;
      if ((*flags & FI_RECV) != 0) {
        rx_op_flags_ = *flags & ~FI_RECV;
      } else {
        tx_op_flags_ = *flags & ~FI_TRANSMIT;
      }
      return 0;
    }
    default:
      IWX_WARN(ep_ctrl, "fi_control: command %d is not supported on %s\n", command, kind_);
      return -FI_ENOSYS;
  }
}

int ClEndpoint::CheckEnable() {
  if (av_ == nullptr) {
    IWX_WARN(ep_ctrl, "fi_enable: %s needs an address vector (fi_ep_bind)\n", kind_);
    return -FI_ENOAV;
  }
  if (reporter_.tx_cq() == nullptr || reporter_.rx_cq() == nullptr) {
    IWX_WARN(ep_ctrl, "fi_enable: bind a transmit and a receive CQ first\n");
    return -FI_ENOCQ;
  }
  return 0;
}

int ClEndpoint::GetOpt(int /*level*/, int optname, void* /*optval*/, size_t* /*optlen*/) {
  IWX_WARN(ep_ctrl, "fi_getopt: option %d is not supported on %s\n", optname, kind_);
  return -FI_ENOPROTOOPT;
}

int ClEndpoint::SetOpt(int /*level*/, int optname, const void* /*optval*/, size_t /*optlen*/) {
  IWX_WARN(ep_ctrl, "fi_setopt: option %d is not supported on %s\n", optname, kind_);
  return -FI_ENOPROTOOPT;
}

int ClEndpoint::GetName(void* addr, size_t* addrlen) {
  if (addrlen == nullptr) return -FI_EINVAL;
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  return CopyName(LocalAddress(), addr, addrlen);
}

int CopyName(const transport::SockAddr& a, void* addr, size_t* addrlen) {
  const size_t n = a.length();
  const size_t have = *addrlen;
  *addrlen = n;
  if (addr == nullptr || have < n) return -FI_ETOOSMALL;
  std::memcpy(addr, a.sa(), n);
  return 0;
}

}  // namespace iwarpx::ofi
