#include "ofi/ud_ep.h"

#include <cerrno>
#include <cstring>
#include <mutex>
#include <utility>

#include <rdma/fi_errno.h>

#include "ofi/av.h"
#include "ofi/fabric.h"
#include "ofi/log.h"
#include "ofi/prov.h"

namespace iwarpx::ofi {
namespace {

constexpr uint64_t kTxFlags = FI_COMPLETION | FI_INJECT | FI_TRANSMIT_COMPLETE |
                              FI_INJECT_COMPLETE | FI_MORE | FI_MSG | FI_SEND;
constexpr uint64_t kRxFlags = FI_COMPLETION | FI_MORE | FI_MSG | FI_RECV;

}  // namespace

int OpenDgramChannel(progress::Engine& engine, const transport::SockAddr& local, const char* call,
                     std::unique_ptr<progress::DgramChannel>* out) {
  rd::PortConfig port;
  port.crc = GetParams().dgram_crc;
  auto ch = progress::DgramChannel::OpenShared(engine, local, port, GetParams().fault);
  if (!ch.ok()) {
    IWX_WARN(ep_ctrl, "%s: cannot bind a UDP socket to %s: %s\n", call, local.ToString().c_str(),
             strerror(ch.error().err));
    return ch.error().err == EADDRINUSE ? -FI_EADDRINUSE : -FI_EINVAL;
  }
  *out = std::move(ch).value();
  return 0;
}

ssize_t UdEndpoint::Cancel(void* context) {
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  for (uint32_t i = 0; i < reporter_.rx_size(); ++i) {
    EpReporter::Slot& s = reporter_.rx(i);
    if (!s.in_use || s.context != context) continue;
    if (!qp_->CancelRecv(i)) continue;
    struct fi_cq_err_entry e = {};
    e.err = FI_ECANCELED;
    e.flags = FI_RECV | FI_MSG;
    reporter_.FailRx(i, e);
    return 0;
  }
  return -FI_ENOENT;
}

ssize_t UdEndpoint::PostRecv(const struct iovec* iov, size_t count, fi_addr_t /*src*/,
                             void* context, uint64_t flags) {
  if ((dirs_ & kReceives) == 0) {
    IWX_WARN(ep_data, "fi_recv: %s does not receive (post on a receive context)\n", kind_);
    return -FI_EINVAL;
  }
  if ((flags & ~kRxFlags) != 0) {
    IWX_WARN(ep_data, "fi_recv: flags %#lx are not supported\n",
             static_cast<unsigned long>(flags & ~kRxFlags));
    return -FI_EBADFLAGS;
  }
  qp::Sgl sgl;
  if (!EpReporter::FillSgl(iov, count, SIZE_MAX, &sgl, "fi_recv")) return -FI_EINVAL;
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  if (!enabled_) {
    IWX_WARN(ep_data, "fi_recv: %s is not enabled\n", kind_);
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
  if (qp_->PostRecv(wr) != qp::QpStatus::kOk) {
    reporter_.FreeRx(index);
    return -FI_EAGAIN;
  }
  return 0;
}

ssize_t UdEndpoint::PostSend(const struct iovec* iov, size_t count, fi_addr_t dest, void* context,
                             uint64_t flags, uint64_t /*data*/) {
  if ((dirs_ & kSends) == 0) {
    IWX_WARN(ep_data, "fi_send: %s does not send (post on a transmit context)\n", kind_);
    return -FI_EINVAL;
  }
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
    IWX_WARN(ep_data, "fi_send: %s is not enabled\n", kind_);
    return -FI_EOPBADSTATE;
  }
  const std::optional<Av::Target> to = av_memo_.Resolve(av_, dest);
  if (!to) {
    IWX_WARN(ep_data, "fi_send: fi_addr %#lx is not in the bound address vector\n",
             static_cast<unsigned long>(dest));
    return -FI_EINVAL;
  }
  rd::UdSendWr wr;
  wr.sgl = sgl;
  wr.dest = to->addr;
  wr.dest_qpn = kBaseQpn + to->rx_index;
  wr.more = (flags & FI_MORE) != 0;  // batched into one sendmmsg with what follows
  // A send the socket takes (or refuses) at once is built from the caller's
  // buffer and reported here: no slot, no fi_inject copy.
  const transport::IoStatus now = qp_->SendNow(wr);
  if (now == transport::IoStatus::kOk) {
    reporter_.ReportTxNow(context, FI_SEND | FI_MSG, reporter_.send_cntr(), flags, nullptr);
    return 0;
  }
  if (now == transport::IoStatus::kError) {
    struct fi_cq_err_entry e = {};
    e.err = FI_EIO;  // as OnError reports a failed send
    reporter_.ReportTxNow(context, FI_SEND | FI_MSG, reporter_.send_cntr(), flags, &e);
    return 0;
  }
  // It waits in the QP: a slot, and fi_inject's payload copied into it.
  uint32_t index = 0;
  EpReporter::Slot* s = reporter_.AllocTx(&index);
  if (s == nullptr) return -FI_EAGAIN;
  reporter_.FillTxSlot(*s, context, FI_SEND | FI_MSG, reporter_.send_cntr(), flags);
  wr.context = index;
  if ((flags & FI_INJECT) != 0) {
    EpReporter::CopyInject(*s, iov, count, &sgl);
    wr.sgl = sgl;
  }
  const bool was_queueing = qp_->wants_write();
  if (qp_->PostSend(wr) != qp::QpStatus::kOk) {
    reporter_.FreeTx(index);
    return -FI_EAGAIN;
  }
  // The channel's interest changes only when this QP's backlog appeared or
  // went (a send taken by the socket at once, the common case, changes nothing).
  if (was_queueing || qp_->wants_write()) channel_->AfterPost();
  return 0;
}

void UdEndpoint::OnSendComplete(uint64_t context) {
  reporter_.CompleteTx(static_cast<uint32_t>(context));
}

void UdEndpoint::OnRecvComplete(uint64_t context, size_t bytes, const rd::UdRecvInfo& info) {
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
  struct fi_cq_tagged_entry c = {};
  c.flags = FI_RECV | FI_MSG;
  c.len = bytes;
  c.buf = reporter_.rx(index).buf;
  reporter_.CompleteRx(index, c, av_memo_.Find(av_, info.src));
}

void UdEndpoint::OnError(uint64_t context, qp::WcOp op, rd::UdError error, int err) {
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
