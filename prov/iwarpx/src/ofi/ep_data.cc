// Endpoint data transfer: libfabric send/recv, RMA and atomic calls turned
// into queue-pair work requests (qp/work_request.h). Every call validates its
// arguments first (-FI_EINVAL / -FI_EMSGSIZE / -FI_EBADFLAGS with a log
// line), then takes the engine lock, a preallocated slot and posts.
#include <cstring>
#include <mutex>

#include <rdma/fi_atomic.h>
#include <rdma/fi_errno.h>

#include "ofi/cntr.h"
#include "ofi/cq.h"
#include "ofi/domain.h"
#include "ofi/ep.h"
#include "ofi/fabric.h"
#include "ofi/log.h"
#include "ofi/mr.h"
#include "ofi/qp_post.h"

namespace iwarpx::ofi {
namespace {

constexpr uint64_t kRxContextBit = uint64_t{1} << 32;
constexpr uint64_t kRxFlags = FI_COMPLETION | FI_MORE | FI_MSG | FI_RECV;

}  // namespace

qp::QueuePair* Endpoint::ReadyQp(const char* call, ssize_t* err) {
  if (qp_ != nullptr && qp_->state() == qp::QpState::kRts && qp_->established()) return qp_;
  if (qp_ != nullptr && qp_->state() == qp::QpState::kRts) {
    *err = -FI_EAGAIN;  // accepted, waiting for the initiator's RTR
    return nullptr;
  }
  IWX_WARN(ep_data, "%s: the endpoint is not connected\n", call);
  *err = -FI_EOPBADSTATE;
  return nullptr;
}

void Endpoint::AfterPost() {
  if (channel_) channel_->AfterPost();
}

ssize_t Endpoint::PostRecv(const struct iovec* iov, size_t count, fi_addr_t /*src*/, void* context,
                           uint64_t flags) {
  if ((flags & ~kRxFlags) != 0) {
    IWX_WARN(ep_data, "fi_recv: flags %#lx are not supported\n",
             static_cast<unsigned long>(flags & ~kRxFlags));
    return -FI_EBADFLAGS;
  }
  qp::RecvWr wr;
  if (!EpReporter::FillSgl(iov, count, kMaxMsgSize, &wr.sgl, "fi_recv")) return -FI_EINVAL;
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  if (!enabled_) {
    IWX_WARN(ep_data, "fi_recv: the endpoint is not enabled\n");
    return -FI_EOPBADSTATE;
  }
  // Taken before posting: the QP may complete the receive inside PostRecv
  // (staged input), which hands the slot back.
  uint32_t index = 0;
  Slot* s = reporter_.AllocRx(&index);
  if (s == nullptr) return -FI_EAGAIN;
  s->context = context;
  s->buf = count != 0 ? iov[0].iov_base : nullptr;
  s->flags = FI_RECV | FI_MSG;
  s->report = !reporter_.rx_selective() || (flags & FI_COMPLETION) != 0;
  wr.context = index | kRxContextBit;
  if (qp_ == nullptr) {
    if (cm_state_ == CmState::kFailed || cm_state_ == CmState::kShutdown) {
      reporter_.FreeRx(index);
      IWX_WARN(ep_data, "fi_recv: the connection has ended\n");
      return -FI_EOPBADSTATE;
    }
    early_recvs_.push_back(wr);
    return 0;
  }
  const ssize_t ret = QpStatusToFi(qp_->PostRecv(wr), "fi_recv");
  if (ret != 0) {
    reporter_.FreeRx(index);
    return ret;
  }
  AfterPost();
  return 0;
}

int Endpoint::TxStreams(uint16_t* count) {
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  ssize_t err = 0;
  qp::QueuePair* qp = ReadyQp("fi_iwarpx_sctp_ops.tx_streams", &err);
  if (qp == nullptr) return -FI_EOPBADSTATE;
  *count = qp->tx_streams();
  return 0;
}

ssize_t Endpoint::PostSend(const struct iovec* iov, size_t count, fi_addr_t /*dest*/, void* context,
                           uint64_t flags, uint64_t data, uint16_t stream) {
  const bool with_data = (flags & FI_REMOTE_CQ_DATA) != 0;
  const char* call = with_data ? "fi_senddata" : "fi_send";
  if (const ssize_t r = CheckTxFlags(flags, call); r != 0) return r;
  qp::SendWr wr;
  if (!EpReporter::FillSgl(iov, count, kMaxMsgSize, &wr.sgl, call)) return -FI_EINVAL;
  if (const ssize_t r =
          CheckInject(flags, wr.sgl.Length(), with_data ? "fi_injectdata" : "fi_inject");
      r != 0) {
    return r;
  }
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  ssize_t err = 0;
  qp::QueuePair* qp = ReadyQp(call, &err);
  if (qp == nullptr) return err;
  if (stream >= qp->tx_streams()) {
    IWX_WARN(ep_data, "%s: SCTP stream %u, but the endpoint has %u\n", call,
             static_cast<unsigned>(stream), static_cast<unsigned>(qp->tx_streams()));
    return -FI_EINVAL;
  }
  uint32_t index = 0;
  Slot* s = reporter_.AllocTx(&index);
  if (s == nullptr) return -FI_EAGAIN;
  reporter_.FillTxSlot(*s, context, FI_SEND | FI_MSG, reporter_.send_cntr(), flags);
  if ((flags & FI_INJECT) != 0) EpReporter::CopyInject(*s, iov, count, &wr.sgl);
  wr.context = index;
  wr.flags = WrFlagsFor(flags);
  wr.with_imm = with_data;
  wr.imm = data;
  wr.stream = stream;
  const ssize_t ret = QpStatusToFi(qp->PostSend(wr), call);
  if (ret != 0) {
    reporter_.FreeTx(index);
    return ret;
  }
  AfterPost();
  return 0;
}

ssize_t Endpoint::PostWrite(const struct iovec* iov, size_t count, fi_addr_t /*dest*/,
                            uint64_t addr, uint64_t key, void* context, uint64_t flags,
                            uint64_t data) {
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  ssize_t err = 0;
  qp::QueuePair* qp = ReadyQp("fi_write", &err);
  if (qp == nullptr) return err;
  const ssize_t ret =
      PostRmaWrite({reporter_, domain_, *qp}, iov, count, addr, key, context, flags, data);
  if (ret == 0) AfterPost();
  return ret;
}

ssize_t Endpoint::PostRead(const struct iovec* iov, void** desc, size_t count, fi_addr_t /*src*/,
                           uint64_t addr, uint64_t key, void* context, uint64_t flags) {
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  ssize_t err = 0;
  qp::QueuePair* qp = ReadyQp("fi_read", &err);
  if (qp == nullptr) return err;
  const ssize_t ret =
      PostRmaRead({reporter_, domain_, *qp}, iov, desc, count, addr, key, context, flags);
  if (ret == 0) AfterPost();
  return ret;
}

ssize_t Endpoint::PostAtomic(const void* buf, size_t count, enum fi_datatype datatype,
                             enum fi_op op, fi_addr_t /*dest*/, uint64_t addr, uint64_t key,
                             const void* compare, void* result, void* context, uint64_t flags,
                             bool fetch, bool cmp) {
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  ssize_t err = 0;
  qp::QueuePair* qp = ReadyQp("fi_atomic", &err);
  if (qp == nullptr) return err;
  const ssize_t ret = PostRmaAtomic({reporter_, domain_, *qp}, buf, count, datatype, op, addr, key,
                                    compare, result, context, flags, fetch, cmp);
  if (ret == 0) AfterPost();
  return ret;
}

}  // namespace iwarpx::ofi
