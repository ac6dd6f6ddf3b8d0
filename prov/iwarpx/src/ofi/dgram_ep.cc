#include "ofi/dgram_ep.h"

#include <cstring>
#include <mutex>
#include <new>

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>

#include "ofi/av.h"
#include "ofi/domain.h"
#include "ofi/ep_noops.h"
#include "ofi/fabric.h"
#include "ofi/log.h"
#include "ofi/msg_ops.h"
#include "ofi/prov.h"

namespace iwarpx::ofi {
namespace {

constexpr uint64_t kTxFlags = FI_COMPLETION | FI_INJECT | FI_TRANSMIT_COMPLETE |
                              FI_INJECT_COMPLETE | FI_MORE | FI_MSG | FI_SEND;
constexpr uint64_t kRxFlags = FI_COMPLETION | FI_MORE | FI_MSG | FI_RECV;

// --- fi_ops ---
int EpClose(struct fid* fid) {
  return DgramEndpoint::From(fid)->Close();
}
int EpBind(struct fid* fid, struct fid* bfid, uint64_t flags) {
  return DgramEndpoint::From(fid)->Bind(bfid, flags);
}
int EpControl(struct fid* fid, int command, void* arg) {
  return DgramEndpoint::From(fid)->Control(command, arg);
}

// --- fi_ops_ep ---
ssize_t EpCancel(struct fid* fid, void* context) {
  return DgramEndpoint::From(fid)->Cancel(context);
}
int EpGetOpt(struct fid* /*fid*/, int /*level*/, int optname, void* /*optval*/,
             size_t* /*optlen*/) {
  IWX_WARN(ep_ctrl, "fi_getopt: option %d is not supported on a DGRAM endpoint\n", optname);
  return -FI_ENOPROTOOPT;
}
int EpSetOpt(struct fid* /*fid*/, int /*level*/, int optname, const void* /*optval*/,
             size_t /*optlen*/) {
  IWX_WARN(ep_ctrl, "fi_setopt: option %d is not supported on a DGRAM endpoint\n", optname);
  return -FI_ENOPROTOOPT;
}
int EpTxCtx(struct fid_ep* /*sep*/, int /*index*/, struct fi_tx_attr* /*attr*/,
            struct fid_ep** /*tx_ep*/, void* /*context*/) {
  return -FI_ENOSYS;
}
int EpRxCtx(struct fid_ep* /*sep*/, int /*index*/, struct fi_rx_attr* /*attr*/,
            struct fid_ep** /*rx_ep*/, void* /*context*/) {
  return -FI_ENOSYS;
}
ssize_t EpSizeLeft(struct fid_ep* /*ep*/) {
  return -FI_ENOSYS;
}

// --- fi_ops_cm: only the name ---
int CmNo(const char* call) {
  IWX_WARN(ep_ctrl, "%s: not a call of a connectionless (FI_EP_DGRAM) endpoint\n", call);
  return -FI_ENOSYS;
}
int CmSetName(fid_t /*fid*/, void* /*addr*/, size_t /*addrlen*/) {
  return CmNo("fi_setname");
}
int CmGetName(fid_t fid, void* addr, size_t* addrlen) {
  return DgramEndpoint::From(fid)->GetName(addr, addrlen);
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

const struct fi_ops kDgramFiOps = {
    .size = sizeof(struct fi_ops),
    .close = EpClose,
    .bind = EpBind,
    .control = EpControl,
    .ops_open = fi_no_ops_open,
    .tostr = fi_no_tostr,
    .ops_set = fi_no_ops_set,
};

const struct fi_ops_ep kDgramEpOps = {
    .size = sizeof(struct fi_ops_ep),
    .cancel = EpCancel,
    .getopt = EpGetOpt,
    .setopt = EpSetOpt,
    .tx_ctx = EpTxCtx,
    .rx_ctx = EpRxCtx,
    .rx_size_left = EpSizeLeft,
    .tx_size_left = EpSizeLeft,
};

const struct fi_ops_cm kDgramCmOps = {
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

size_t SizeOr(size_t v, size_t dflt) {
  return v != 0 ? v : dflt;
}

}  // namespace

DgramEndpoint::DgramEndpoint(Domain* domain, size_t tx_size, size_t rx_size)
    : domain_(domain), fabric_(domain->fabric()), reporter_(domain, tx_size, rx_size) {}

DgramEndpoint::~DgramEndpoint() {
  if (av_ != nullptr) av_->Unref();
}

int DgramEndpoint::Open(struct fid_domain* domain, struct fi_info* info, struct fid_ep** ep,
                        void* context) {
  Domain* d = Domain::From(domain != nullptr ? &domain->fid : nullptr);
  if (d == nullptr || info == nullptr || ep == nullptr) {
    IWX_WARN(ep_ctrl, "fi_endpoint: domain must be iwarpx's, info and ep not NULL\n");
    return -FI_EINVAL;
  }
  const size_t tx_size = SizeOr(info->tx_attr != nullptr ? info->tx_attr->size : 0, kDefaultTxSize);
  const size_t rx_size = SizeOr(info->rx_attr != nullptr ? info->rx_attr->size : 0, kDefaultRxSize);
  if (tx_size > kTxSize || rx_size > kRxSize) {
    IWX_WARN(ep_ctrl, "fi_endpoint: tx/rx sizes %zu/%zu exceed %zu/%zu\n", tx_size, rx_size,
             kTxSize, kRxSize);
    return -FI_EINVAL;
  }
  transport::SockAddr local = transport::SockAddr::Any4();
  if (info->src_addr != nullptr) {
    auto a = transport::SockAddr::FromRaw(static_cast<const sockaddr*>(info->src_addr),
                                          static_cast<socklen_t>(info->src_addrlen));
    if (!a) {
      IWX_WARN(ep_ctrl, "fi_endpoint: src_addr is not a sockaddr_in/sockaddr_in6\n");
      return -FI_EINVAL;
    }
    local = *a;
  } else if (info->addr_format == FI_SOCKADDR_IN6) {
    local = transport::SockAddr::Any6();
  }
  if (GetParams().fault_invalid) {
    IWX_WARN(ep_ctrl, "fi_endpoint: FI_IWARPX_FAULT does not parse (see the log above)\n");
    return -FI_EINVAL;
  }
  auto* e = new (std::nothrow) DgramEndpoint(d, tx_size, rx_size);
  if (e == nullptr) return -FI_ENOMEM;
  if (info->tx_attr != nullptr) e->tx_op_flags_ = info->tx_attr->op_flags;
  if (info->rx_attr != nullptr) e->rx_op_flags_ = info->rx_attr->op_flags;
  {
    std::lock_guard<std::mutex> lock(e->fabric_->engine().mu());
    rd::PortConfig port;
    port.crc = GetParams().dgram_crc;
    rd::UdConfig qp;
    qp.sq_depth = static_cast<uint32_t>(tx_size);
    qp.rq_depth = static_cast<uint32_t>(rx_size);
    auto ch =
        progress::DgramChannel::Open(e->fabric_->engine(), local, port, qp, *e, GetParams().fault);
    if (!ch.ok()) {
      IWX_WARN(ep_ctrl, "fi_endpoint: cannot bind a UDP socket to %s: %s\n",
               local.ToString().c_str(), strerror(ch.error().err));
      delete e;
      return ch.error().err == EADDRINUSE ? -FI_EADDRINUSE : -FI_EINVAL;
    }
    e->channel_ = std::move(ch).value();
  }
  e->handle_.owner = e;
  e->handle_.fid.fid.fclass = FI_CLASS_EP;
  e->handle_.fid.fid.context = context;
  e->handle_.fid.fid.ops = const_cast<struct fi_ops*>(&kDgramFiOps);
  e->handle_.fid.ops = const_cast<struct fi_ops_ep*>(&kDgramEpOps);
  e->handle_.fid.cm = const_cast<struct fi_ops_cm*>(&kDgramCmOps);
  e->handle_.fid.msg = const_cast<struct fi_ops_msg*>(&MsgOps<DgramEndpoint>::kTable);
  e->handle_.fid.rma = const_cast<struct fi_ops_rma*>(&kNoRmaOps);
  e->handle_.fid.tagged = const_cast<struct fi_ops_tagged*>(&kNoTaggedOps);
  e->handle_.fid.atomic = const_cast<struct fi_ops_atomic*>(&kNoAtomicOps);
  e->handle_.fid.collective = const_cast<struct fi_ops_collective*>(&kNoCollectiveOps);
  d->Ref();
  *ep = e->fid();
  IWX_INFO(ep_ctrl, "dgram ep %p opened on %s (tx %zu, rx %zu)\n", static_cast<void*>(e),
           e->channel_->local_address().ToString().c_str(), tx_size, rx_size);
  return 0;
}

DgramEndpoint* DgramEndpoint::From(struct fid* fid) {
  if (!IsOurs(fid, FI_CLASS_EP, &kDgramFiOps)) return nullptr;
  return OwnerOf<DgramEndpoint>(reinterpret_cast<struct fid_ep*>(fid));
}

int DgramEndpoint::Close() {
  Domain* d = domain_;
  {
    std::lock_guard<std::mutex> lock(fabric_->engine().mu());
    channel_.reset();  // unregisters; posted operations are dropped with it
  }
  IWX_INFO(ep_ctrl, "dgram ep %p closed\n", static_cast<void*>(this));
  delete this;
  d->Unref();
  return 0;
}

int DgramEndpoint::Bind(struct fid* bfid, uint64_t flags) {
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  if (enabled_) {
    IWX_WARN(ep_ctrl, "fi_ep_bind: the endpoint is already enabled\n");
    return -FI_EOPBADSTATE;
  }
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
  const int r = reporter_.Bind(bfid, flags, "a DGRAM endpoint");
  if (r != EpReporter::kNotMine) return r;
  IWX_WARN(ep_ctrl,
           "fi_ep_bind: fid of class %zu cannot be bound to a DGRAM endpoint (AV, CQ or "
           "counter of this provider)\n",
           bfid != nullptr ? bfid->fclass : size_t{0});
  return -FI_EINVAL;
}

int DgramEndpoint::Control(int command, void* arg) {
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  switch (command) {
    case FI_ENABLE:
      if (av_ == nullptr) {
        IWX_WARN(ep_ctrl, "fi_enable: a DGRAM endpoint needs an address vector (fi_ep_bind)\n");
        return -FI_ENOAV;
      }
      if (reporter_.tx_cq() == nullptr || reporter_.rx_cq() == nullptr) {
        IWX_WARN(ep_ctrl, "fi_enable: bind a transmit and a receive CQ first\n");
        return -FI_ENOCQ;
      }
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
      IWX_WARN(ep_ctrl, "fi_control: command %d is not supported on a DGRAM endpoint\n", command);
      return -FI_ENOSYS;
  }
}

int DgramEndpoint::GetName(void* addr, size_t* addrlen) {
  if (addrlen == nullptr) return -FI_EINVAL;
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  const transport::SockAddr a = channel_->local_address();
  const size_t n = a.length();
  const size_t have = *addrlen;
  *addrlen = n;
  if (addr == nullptr || have < n) return -FI_ETOOSMALL;
  std::memcpy(addr, a.sa(), n);
  return 0;
}

ssize_t DgramEndpoint::Cancel(void* context) {
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  for (uint32_t i = 0; i < reporter_.rx_size(); ++i) {
    EpReporter::Slot& s = reporter_.rx(i);
    if (!s.in_use || s.context != context) continue;
    if (!channel_->qp().CancelRecv(i)) continue;
    struct fi_cq_err_entry e = {};
    e.err = FI_ECANCELED;
    e.flags = FI_RECV | FI_MSG;
    reporter_.FailRx(i, e);
    return 0;
  }
  return -FI_ENOENT;
}

ssize_t DgramEndpoint::PostRecv(const struct iovec* iov, size_t count, fi_addr_t /*src*/,
                                void* context, uint64_t flags) {
  if ((flags & ~kRxFlags) != 0) {
    IWX_WARN(ep_data, "fi_recv: flags %#lx are not supported\n",
             static_cast<unsigned long>(flags & ~kRxFlags));
    return -FI_EBADFLAGS;
  }
  qp::Sgl sgl;
  if (!EpReporter::FillSgl(iov, count, SIZE_MAX, &sgl, "fi_recv")) return -FI_EINVAL;
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  if (!enabled_) {
    IWX_WARN(ep_data, "fi_recv: the endpoint is not enabled\n");
    return -FI_EOPBADSTATE;
  }
  uint32_t index = 0;
  EpReporter::Slot* s = reporter_.AllocRx(&index);
  if (s == nullptr) return -FI_EAGAIN;
  s->context = context;
  s->buf = count > 0 ? iov[0].iov_base : nullptr;
  s->flags = FI_RECV | FI_MSG;
  s->report = !reporter_.rx_selective() || (flags & FI_COMPLETION) != 0;
  qp::RecvWr wr;
  wr.context = index;
  wr.sgl = sgl;
  if (channel_->qp().PostRecv(wr) != qp::QpStatus::kOk) {
    reporter_.FreeRx(index);
    return -FI_EAGAIN;
  }
  return 0;
}

ssize_t DgramEndpoint::PostSend(const struct iovec* iov, size_t count, fi_addr_t dest,
                                void* context, uint64_t flags, uint64_t /*data*/) {
  if ((flags & FI_REMOTE_CQ_DATA) != 0) {
    IWX_WARN(ep_data, "fi_senddata: remote CQ data is not offered on FI_EP_DGRAM\n");
    return -FI_ENOSYS;
  }
  if ((flags & ~kTxFlags) != 0) {
    IWX_WARN(ep_data, "fi_send: flags %#lx are not supported\n",
             static_cast<unsigned long>(flags & ~kTxFlags));
    return -FI_EBADFLAGS;
  }
  qp::Sgl sgl;
  if (!EpReporter::FillSgl(iov, count, rd::kUdMaxMessage, &sgl, "fi_send")) return -FI_EINVAL;
  if ((flags & FI_INJECT) != 0 && sgl.Length() > kInjectSize) {
    IWX_WARN(ep_data, "fi_inject: %zu bytes exceed inject_size %zu\n", sgl.Length(), kInjectSize);
    return -FI_EINVAL;
  }
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  if (!enabled_) {
    IWX_WARN(ep_data, "fi_send: the endpoint is not enabled\n");
    return -FI_EOPBADSTATE;
  }
  const std::optional<transport::SockAddr> to = av_->Get(dest);
  if (!to) {
    IWX_WARN(ep_data, "fi_send: fi_addr %lu is not in the bound address vector\n",
             static_cast<unsigned long>(dest));
    return -FI_EINVAL;
  }
  uint32_t index = 0;
  EpReporter::Slot* s = reporter_.AllocTx(&index);
  if (s == nullptr) return -FI_EAGAIN;
  reporter_.FillTxSlot(*s, context, FI_SEND | FI_MSG, reporter_.send_cntr(), flags);
  if ((flags & FI_INJECT) != 0) EpReporter::CopyInject(*s, iov, count, &sgl);
  rd::UdSendWr wr;
  wr.context = index;
  wr.sgl = sgl;
  wr.dest = *to;
  wr.dest_qpn = 0;
  if (channel_->qp().PostSend(wr) != qp::QpStatus::kOk) {
    reporter_.FreeTx(index);
    return -FI_EAGAIN;
  }
  channel_->AfterPost();
  return 0;
}

void DgramEndpoint::OnSendComplete(uint64_t context) {
  reporter_.CompleteTx(static_cast<uint32_t>(context));
}

void DgramEndpoint::OnRecvComplete(uint64_t context, size_t bytes, const rd::UdRecvInfo& info) {
  const auto index = static_cast<uint32_t>(context);
  if (info.truncated_bytes != 0) {
    struct fi_cq_err_entry e = {};
    e.err = FI_ETRUNC;
    e.len = bytes;
    e.olen = info.truncated_bytes;
    e.buf = reporter_.rx(index).buf;
    reporter_.FailRx(index, e);
    return;
  }
  struct fi_cq_data_entry c = {};
  c.flags = FI_RECV | FI_MSG;
  c.len = bytes;
  c.buf = reporter_.rx(index).buf;
  reporter_.CompleteRx(index, c, av_ != nullptr ? av_->Find(info.src) : FI_ADDR_NOTAVAIL);
}

void DgramEndpoint::OnError(uint64_t context, qp::WcOp op, rd::UdError error, int err) {
  struct fi_cq_err_entry e = {};
  e.err = error == rd::UdError::kFlushed ? FI_ECANCELED : FI_EIO;
  e.prov_errno = err;
  if (op == qp::WcOp::kRecv) {
    reporter_.FailRx(static_cast<uint32_t>(context), e);
  } else {
    reporter_.FailTx(static_cast<uint32_t>(context), e);
  }
}

}  // namespace iwarpx::ofi
