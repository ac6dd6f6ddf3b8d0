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

namespace iwarpx::ofi {
namespace {

constexpr uint64_t kRxContextBit = uint64_t{1} << 32;

constexpr uint64_t kTxFlags = FI_COMPLETION | FI_INJECT | FI_FENCE | FI_TRANSMIT_COMPLETE |
                              FI_DELIVERY_COMPLETE | FI_INJECT_COMPLETE | FI_REMOTE_CQ_DATA |
                              FI_MORE | FI_MSG | FI_RMA | FI_ATOMIC | FI_SEND | FI_WRITE | FI_READ;
constexpr uint64_t kRxFlags = FI_COMPLETION | FI_MORE | FI_MSG | FI_RECV;

ssize_t ToFi(qp::QpStatus s, const char* call) {
  switch (s) {
    case qp::QpStatus::kOk: return 0;
    case qp::QpStatus::kQueueFull: return -FI_EAGAIN;
    case qp::QpStatus::kInvalid:
      IWX_WARN(ep_data, "%s: the work request was refused as invalid\n", call);
      return -FI_EINVAL;
    case qp::QpStatus::kBadState:
      IWX_WARN(ep_data, "%s: the connection has ended\n", call);
      return -FI_EOPBADSTATE;
    case qp::QpStatus::kNotNegotiated:
      IWX_WARN(ep_data,
               "%s: peer did not negotiate send with immediate data; it is not iwarpx or did "
               "not ask for cq_data_size\n",
               call);
      return -FI_EOPNOTSUPP;
  }
  return -FI_EINVAL;
}

// The integer of `size` bytes (4 or 8) at p, zero-extended.
uint64_t LoadOperand(const void* p, size_t size) {
  if (size == sizeof(uint32_t)) {
    uint32_t v = 0;
    std::memcpy(&v, p, sizeof(v));
    return v;
  }
  uint64_t v = 0;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// -FI_EBADFLAGS (logged) for transmit flags the provider does not know.
ssize_t CheckTxFlags(uint64_t flags, const char* call) {
  if ((flags & ~kTxFlags) == 0) return 0;
  IWX_WARN(ep_data, "%s: flags %#lx are not supported\n", call,
           static_cast<unsigned long>(flags & ~kTxFlags));
  return -FI_EBADFLAGS;
}

// -FI_EINVAL (logged) when FI_INJECT asks for more than inject_size.
ssize_t CheckInject(uint64_t flags, size_t len, const char* call) {
  if ((flags & FI_INJECT) == 0 || len <= kInjectSize) return 0;
  IWX_WARN(ep_data, "%s: %zu bytes exceed inject_size %zu\n", call, len, kInjectSize);
  return -FI_EINVAL;
}

uint32_t WrFlags(uint64_t flags) {
  return qp::kWrSignaled | ((flags & FI_FENCE) != 0 ? qp::kWrFence : 0U);
}

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

bool Endpoint::PostDeliveryFence(qp::QueuePair* qp, uint32_t write_index, uint32_t fence_index,
                                 uint64_t addr, uint32_t key) {
  Slot& w = reporter_.tx(write_index);
  Slot& fence = reporter_.tx(fence_index);
  fence.context = w.context;
  fence.flags = w.flags;
  fence.report = w.report;
  fence.cntr = w.cntr;
  qp::ReadWr rd;
  rd.context = fence_index;
  rd.length = 0;  // places nothing; RDMAP orders its response after the write
  rd.remote_stag = key;
  rd.remote_to = addr;
  rd.flags = qp::kWrSignaled;
  if (qp->PostRead(rd) == qp::QpStatus::kOk) return true;
  reporter_.FreeTx(fence_index);
  IWX_WARN(ep_data,
           "fi_write: the send queue is full; FI_DELIVERY_COMPLETE degrades to "
           "transmit completion for this write\n");
  return false;
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
  const ssize_t ret = ToFi(qp_->PostRecv(wr), "fi_recv");
  if (ret != 0) {
    reporter_.FreeRx(index);
    return ret;
  }
  AfterPost();
  return 0;
}

ssize_t Endpoint::PostSend(const struct iovec* iov, size_t count, fi_addr_t /*dest*/, void* context,
                           uint64_t flags, uint64_t data) {
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
  uint32_t index = 0;
  Slot* s = reporter_.AllocTx(&index);
  if (s == nullptr) return -FI_EAGAIN;
  reporter_.FillTxSlot(*s, context, FI_SEND | FI_MSG, reporter_.send_cntr(), flags);
  if ((flags & FI_INJECT) != 0) EpReporter::CopyInject(*s, iov, count, &wr.sgl);
  wr.context = index;
  wr.flags = WrFlags(flags);
  wr.with_imm = with_data;
  wr.imm = data;
  const ssize_t ret = ToFi(qp->PostSend(wr), call);
  if (ret != 0) {
    reporter_.FreeTx(index);
    return ret;
  }
  AfterPost();
  return 0;
}

ssize_t Endpoint::PostWrite(const struct iovec* iov, size_t count, uint64_t addr, uint64_t key,
                            void* context, uint64_t flags, uint64_t data) {
  if (const ssize_t r = CheckTxFlags(flags, "fi_write"); r != 0) return r;
  if (key > UINT32_MAX) {
    IWX_WARN(ep_data, "fi_write: key %#lx is not a 32-bit STag\n", static_cast<unsigned long>(key));
    return -FI_EINVAL;
  }
  qp::WriteWr wr;
  if (!EpReporter::FillSgl(iov, count, kMaxMsgSize, &wr.sgl, "fi_write")) return -FI_EINVAL;
  if (const ssize_t r = CheckInject(flags, wr.sgl.Length(), "fi_inject_write"); r != 0) return r;
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  ssize_t err = 0;
  qp::QueuePair* qp = ReadyQp("fi_write", &err);
  if (qp == nullptr) return err;
  uint32_t index = 0;
  Slot* s = reporter_.AllocTx(&index);
  if (s == nullptr) return -FI_EAGAIN;
  reporter_.FillTxSlot(*s, context, FI_RMA | FI_WRITE, reporter_.write_cntr(), flags);
  // FI_DELIVERY_COMPLETE: a zero-length Read behind the write reports for it
  // (ep.h); the write itself is silent from the start, since it may complete
  // inside PostWrite already.
  const bool delivery = (flags & FI_DELIVERY_COMPLETE) != 0;
  uint32_t fence_index = 0;
  if (delivery && reporter_.AllocTx(&fence_index) == nullptr) {
    reporter_.FreeTx(index);
    return -FI_EAGAIN;
  }
  s->silent = delivery;
  const Slot saved = *s;
  if ((flags & FI_INJECT) != 0) EpReporter::CopyInject(*s, iov, count, &wr.sgl);
  wr.context = index;
  wr.remote_stag = static_cast<uint32_t>(key);
  wr.remote_to = addr;
  wr.flags = WrFlags(flags);
  wr.with_imm = (flags & FI_REMOTE_CQ_DATA) != 0;
  wr.imm = data;
  const ssize_t ret = ToFi(qp->PostWrite(wr), "fi_write");
  if (ret != 0) {
    reporter_.FreeTx(index);
    if (delivery) reporter_.FreeTx(fence_index);
    return ret;
  }
  if (delivery && !PostDeliveryFence(qp, index, fence_index, addr, static_cast<uint32_t>(key))) {
    // No fence: the write reports for itself, as a transmit completion.
    if (s->in_use) {
      s->silent = false;
    } else if (saved.report && reporter_.tx_cq() != nullptr) {
      struct fi_cq_data_entry done = {};
      done.op_context = saved.context;
      done.flags = saved.flags;
      (void)reporter_.tx_cq()->Post(done);
      if (saved.cntr != nullptr) saved.cntr->Inc();
    }
  }
  AfterPost();
  return 0;
}

ssize_t Endpoint::PostRead(const struct iovec* iov, void** desc, size_t count, uint64_t addr,
                           uint64_t key, void* context, uint64_t flags) {
  if ((flags & ~kTxFlags) != 0 || (flags & (FI_INJECT | FI_REMOTE_CQ_DATA)) != 0) {
    IWX_WARN(ep_data, "fi_read: flags %#lx are not supported\n", static_cast<unsigned long>(flags));
    return -FI_EBADFLAGS;
  }
  if (iov == nullptr || count != 1) {
    IWX_WARN(ep_data, "fi_read: %zu local iovecs (iwarpx reads into exactly one)\n", count);
    return -FI_EINVAL;
  }
  if (key > UINT32_MAX || iov[0].iov_len > UINT32_MAX ||
      (iov[0].iov_base == nullptr && iov[0].iov_len != 0)) {
    IWX_WARN(ep_data, "fi_read: bad key %#lx or buffer (%p, %zu bytes)\n",
             static_cast<unsigned long>(key), iov[0].iov_base, iov[0].iov_len);
    return -FI_EINVAL;
  }
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  ssize_t err = 0;
  qp::QueuePair* qp = ReadyQp("fi_read", &err);
  if (qp == nullptr) return err;
  uint32_t index = 0;
  Slot* s = reporter_.AllocTx(&index);
  if (s == nullptr) return -FI_EAGAIN;
  qp::ReadWr wr;
  Mr* mr = desc != nullptr ? Mr::FromDesc(desc[0]) : nullptr;
  if (mr != nullptr && (mr->access() & mem::kLocalWrite) != 0) {
    wr.local_stag = mr->stag();
    wr.local_to = mr->TaggedOffsetOf(iov[0].iov_base);
  } else {
    // No usable descriptor: register the sink for local write for this Read.
    mem::RegionSpec spec;
    spec.host = static_cast<uint8_t*>(iov[0].iov_base);
    spec.length = iov[0].iov_len;
    spec.base_to = reinterpret_cast<uintptr_t>(iov[0].iov_base);
    spec.access = mem::kLocalWrite;
    spec.pd = domain_->pd();
    auto r = domain_->table().Register(spec);
    if (!r.ok()) {
      reporter_.FreeTx(index);
      IWX_WARN(ep_data, "fi_read: cannot register the sink buffer: %s\n",
               fi_strerror(-ToFiErr(r.error())));
      return ToFiErr(r.error());
    }
    s->temp_stag = r.value();
    wr.local_stag = r.value();
    wr.local_to = spec.base_to;
  }
  reporter_.FillTxSlot(*s, context, FI_RMA | FI_READ, reporter_.read_cntr(), flags);
  wr.context = index;
  wr.length = static_cast<uint32_t>(iov[0].iov_len);
  wr.remote_stag = static_cast<uint32_t>(key);
  wr.remote_to = addr;
  wr.flags = WrFlags(flags);
  const ssize_t ret = ToFi(qp->PostRead(wr), "fi_read");
  if (ret != 0) {
    ReleaseTempStag(*s);
    reporter_.FreeTx(index);
    return ret;
  }
  AfterPost();
  return 0;
}

ssize_t Endpoint::PostAtomic(const void* buf, size_t count, enum fi_datatype datatype,
                             enum fi_op op, uint64_t addr, uint64_t key, const void* compare,
                             void* result, void* context, uint64_t flags, bool fetch, bool cmp) {
  if (const ssize_t r = CheckTxFlags(flags, "fi_atomic"); r != 0) return r;
  const size_t size = AtomicOperandSize(datatype);
  if (size == 0 || count != 1 || buf == nullptr || key > UINT32_MAX ||
      (fetch && result == nullptr) || (cmp && compare == nullptr)) {
    IWX_WARN(ep_data,
             "fi_atomic: one 64- or 32-bit integer (FI_UINT64/FI_INT64/FI_UINT32/FI_INT32) "
             "with its buffers and a 32-bit key is required (datatype %d, count %zu)\n",
             static_cast<int>(datatype), count);
    return -FI_EINVAL;
  }
  if (addr % size != 0) {
    IWX_WARN(ep_data, "fi_atomic: remote address %#lx is not %zu-byte aligned\n",
             static_cast<unsigned long>(addr), size);
    return -FI_EINVAL;
  }
  qp::AtomicWr wr;
  wr.size = static_cast<uint8_t>(size);
  wr.operand = LoadOperand(buf, size);
  if (cmp) {
    if (op != FI_CSWAP) return -FI_EOPNOTSUPP;
    wr.op = wire::AtomicOp::kCmpSwap;
    wr.compare = LoadOperand(compare, size);
  } else if (op == FI_SUM) {
    wr.op = wire::AtomicOp::kFetchAdd;
  } else if (op == FI_ATOMIC_READ && fetch) {
    wr.op = wire::AtomicOp::kFetchAdd;
    wr.operand = 0;
  } else if (op == FI_ATOMIC_WRITE) {
    wr.op = wire::AtomicOp::kSwap;
  } else {
    IWX_WARN(ep_data,
             "fi_atomic: op %d is not supported (FI_SUM, FI_ATOMIC_READ, "
             "FI_ATOMIC_WRITE, FI_CSWAP)\n",
             static_cast<int>(op));
    return -FI_EOPNOTSUPP;
  }
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  ssize_t err = 0;
  qp::QueuePair* qp = ReadyQp("fi_atomic", &err);
  if (qp == nullptr) return err;
  uint32_t index = 0;
  Slot* s = reporter_.AllocTx(&index);
  if (s == nullptr) return -FI_EAGAIN;
  reporter_.FillTxSlot(*s, context, FI_ATOMIC | (fetch ? FI_READ : FI_WRITE),
                       fetch ? reporter_.read_cntr() : reporter_.write_cntr(), flags);
  wr.context = index;
  wr.remote_stag = static_cast<uint32_t>(key);
  wr.remote_to = addr;
  wr.result = fetch ? result : nullptr;
  wr.flags = WrFlags(flags);
  const ssize_t ret = ToFi(qp->PostAtomic(wr), "fi_atomic");
  if (ret != 0) {
    reporter_.FreeTx(index);
    return ret;
  }
  AfterPost();
  return 0;
}

}  // namespace iwarpx::ofi
