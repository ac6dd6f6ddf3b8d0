#include "ofi/dgram_ep.h"

#include <cstring>
#include <mutex>
#include <new>

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>

#include "ofi/av.h"
#include "ofi/domain.h"
#include "ofi/fabric.h"
#include "ofi/log.h"
#include "ofi/msg_ops.h"
#include "ofi/prov.h"

namespace iwarpx::ofi {
namespace {

constexpr uint64_t kTxFlags = FI_COMPLETION | FI_INJECT | FI_TRANSMIT_COMPLETE |
                              FI_INJECT_COMPLETE | FI_MORE | FI_MSG | FI_SEND;
constexpr uint64_t kRxFlags = FI_COMPLETION | FI_MORE | FI_MSG | FI_RECV;

}  // namespace

int DgramEndpoint::Open(struct fid_domain* domain, struct fi_info* info, struct fid_ep** ep,
                        void* context) {
  OpenArgs args;
  if (const int r = ParseOpen(domain, info, ep, &args); r != 0) return r;
  auto* e = new (std::nothrow) DgramEndpoint(args);
  if (e == nullptr) return -FI_ENOMEM;
  {
    std::lock_guard<std::mutex> lock(e->fabric_->engine().mu());
    rd::PortConfig port;
    port.crc = GetParams().dgram_crc;
    rd::UdConfig qp;
    qp.sq_depth = static_cast<uint32_t>(args.tx_size);
    qp.rq_depth = static_cast<uint32_t>(args.rx_size);
    auto ch = progress::DgramChannel::Open(e->fabric_->engine(), args.local, port, qp, *e,
                                           GetParams().fault);
    if (!ch.ok()) {
      IWX_WARN(ep_ctrl, "fi_endpoint: cannot bind a UDP socket to %s: %s\n",
               args.local.ToString().c_str(), strerror(ch.error().err));
      delete e;
      return ch.error().err == EADDRINUSE ? -FI_EADDRINUSE : -FI_EINVAL;
    }
    e->channel_ = std::move(ch).value();
  }
  e->Install(context, &MsgOps<DgramEndpoint>::kTable, nullptr, nullptr, nullptr, ep);
  IWX_INFO(ep_ctrl, "dgram ep %p opened on %s (tx %zu, rx %zu)\n", static_cast<void*>(e),
           e->channel_->local_address().ToString().c_str(), args.tx_size, args.rx_size);
  return 0;
}

int DgramEndpoint::Close() {
  {
    std::lock_guard<std::mutex> lock(fabric_->engine().mu());
    ReportStatsAtClose();
    channel_.reset();  // unregisters; posted operations are dropped with it
  }
  IWX_INFO(ep_ctrl, "dgram ep %p closed\n", static_cast<void*>(this));
  Destroy();
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
  wr.more = (flags & FI_MORE) != 0;  // batched into one sendmmsg with what follows
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
