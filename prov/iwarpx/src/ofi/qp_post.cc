#include "ofi/qp_post.h"

#include <cstring>

#include <rdma/fi_errno.h>

#include "ofi/cntr.h"
#include "ofi/cq.h"
#include "ofi/domain.h"
#include "ofi/getinfo.h"
#include "ofi/log.h"
#include "ofi/mr.h"

namespace iwarpx::ofi {
namespace {

constexpr uint64_t kTxFlags = FI_COMPLETION | FI_INJECT | FI_FENCE | FI_TRANSMIT_COMPLETE |
                              FI_DELIVERY_COMPLETE | FI_INJECT_COMPLETE | FI_REMOTE_CQ_DATA |
                              FI_MORE | FI_MSG | FI_RMA | FI_ATOMIC | FI_SEND | FI_WRITE | FI_READ;

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

// `post(wr)` with the target's tracker told before and, on a refusal, after.
template <class Wr, class Post>
qp::QpStatus Tracked(const QpTarget& t, const Wr& wr, Post post) {
  if (t.tracker != nullptr) t.tracker->Posting(wr.context);
  const qp::QpStatus st = post(wr);
  if (st != qp::QpStatus::kOk && t.tracker != nullptr) t.tracker->Refused(wr.context);
  return st;
}

int ErrFor(const qp::WcError& e) {
  switch (e.origin) {
    case qp::TermOrigin::kLocalClose: return FI_ECANCELED;
    case qp::TermOrigin::kConnectionLost: return FI_ECONNABORTED;
    default: break;
  }
  // RDMAP remote protection (layer 0, etype 1) and DDP tagged buffer errors
  // (layer 1, etype 1) are access violations.
  if ((e.cause.layer == 0 || e.cause.layer == 1) && e.cause.etype == 1) return FI_EACCES;
  return FI_EIO;
}

// FI_DELIVERY_COMPLETE: the zero-length Read in `fence_index` that reports
// for the (silent) write slot `write_index`. False (fence slot freed) when
// the QP refuses it — not for a full send queue (PostRmaWrite makes room
// for both first), only when the connection ended meanwhile.
bool PostDeliveryFence(const QpTarget& t, uint32_t write_index, uint32_t fence_index, uint64_t addr,
                       uint32_t key) {
  EpReporter::Slot& w = t.reporter.tx(write_index);
  EpReporter::Slot& fence = t.reporter.tx(fence_index);
  fence.context = w.context;
  fence.flags = w.flags;
  fence.report = w.report;
  fence.cntr = w.cntr;
  qp::ReadWr rd;
  rd.context = fence_index | t.ctx_bits;
  rd.length = 0;  // places nothing; RDMAP orders its response after the write
  rd.remote_stag = key;
  rd.remote_to = addr;
  rd.flags = qp::kWrSignaled;
  if (Tracked(t, rd, [&](const qp::ReadWr& r) { return t.qp.PostRead(r); }) == qp::QpStatus::kOk) {
    return true;
  }
  t.reporter.FreeTx(fence_index);
  IWX_WARN(ep_data,
           "fi_write: the queue pair refused the FI_DELIVERY_COMPLETE fence (connection "
           "ending); the write reports for itself\n");
  return false;
}

}  // namespace

ssize_t QpStatusToFi(qp::QpStatus s, const char* call) {
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

ssize_t CheckTxFlags(uint64_t flags, const char* call) {
  if ((flags & ~kTxFlags) == 0) return 0;
  IWX_WARN(ep_data, "%s: flags %#lx are not supported\n", call,
           static_cast<unsigned long>(flags & ~kTxFlags));
  return -FI_EBADFLAGS;
}

ssize_t CheckInject(uint64_t flags, size_t len, const char* call) {
  if ((flags & FI_INJECT) == 0 || len <= kInjectSize) return 0;
  IWX_WARN(ep_data, "%s: %zu bytes exceed inject_size %zu\n", call, len, kInjectSize);
  return -FI_EINVAL;
}

uint32_t WrFlagsFor(uint64_t flags) {
  return qp::kWrSignaled | ((flags & FI_FENCE) != 0 ? qp::kWrFence : 0U);
}

ssize_t PostRmaWrite(const QpTarget& t, const struct iovec* iov, size_t count, uint64_t addr,
                     uint64_t key, void* context, uint64_t flags, uint64_t data) {
  if (const ssize_t r = CheckTxFlags(flags, "fi_write"); r != 0) return r;
  if (key > UINT32_MAX) {
    IWX_WARN(ep_data, "fi_write: key %#lx is not a 32-bit STag\n", static_cast<unsigned long>(key));
    return -FI_EINVAL;
  }
  qp::WriteWr wr;
  if (!EpReporter::FillSgl(iov, count, kMaxMsgSize, &wr.sgl, "fi_write")) return -FI_EINVAL;
  if (const ssize_t r = CheckInject(flags, wr.sgl.Length(), "fi_inject_write"); r != 0) return r;
  EpReporter& rep = t.reporter;
  uint32_t index = 0;
  EpReporter::Slot* s = rep.AllocTx(&index);
  if (s == nullptr) return -FI_EAGAIN;
  rep.FillTxSlot(*s, context, FI_RMA | FI_WRITE, rep.write_cntr(), flags);
  // FI_DELIVERY_COMPLETE: a zero-length Read behind the write reports for it;
  // the write itself is silent from the start, since it may complete inside
  // PostWrite already.
  const bool delivery = (flags & FI_DELIVERY_COMPLETE) != 0;
  uint32_t fence_index = 0;
  // The write and its fence go in together or not at all: a write whose
  // fence found no room would complete before it is delivered.
  if (delivery && t.qp.sq_free() < 2) {
    rep.FreeTx(index);
    return -FI_EAGAIN;
  }
  if (delivery && rep.AllocTx(&fence_index) == nullptr) {
    rep.FreeTx(index);
    return -FI_EAGAIN;
  }
  s->silent = delivery;
  const EpReporter::Slot saved = *s;
  if ((flags & FI_INJECT) != 0) EpReporter::CopyInject(*s, iov, count, &wr.sgl);
  wr.context = index | t.ctx_bits;
  wr.remote_stag = static_cast<uint32_t>(key);
  wr.remote_to = addr;
  wr.flags = WrFlagsFor(flags);
  wr.with_imm = (flags & FI_REMOTE_CQ_DATA) != 0;
  wr.imm = data;
  const ssize_t ret = QpStatusToFi(
      Tracked(t, wr, [&](const qp::WriteWr& w) { return t.qp.PostWrite(w); }), "fi_write");
  if (ret != 0) {
    rep.FreeTx(index);
    if (delivery) rep.FreeTx(fence_index);
    return ret;
  }
  if (delivery && !PostDeliveryFence(t, index, fence_index, addr, static_cast<uint32_t>(key))) {
    // No fence: the write reports for itself, as a transmit completion.
    if (s->in_use) {
      s->silent = false;
    } else if (saved.report && rep.tx_cq() != nullptr) {
      struct fi_cq_data_entry done = {};
      done.op_context = saved.context;
      done.flags = saved.flags;
      (void)rep.tx_cq()->Post(done);
      if (saved.cntr != nullptr) saved.cntr->Inc();
    }
  }
  return 0;
}

ssize_t PostRmaRead(const QpTarget& t, const struct iovec* iov, void** desc, size_t count,
                    uint64_t addr, uint64_t key, void* context, uint64_t flags) {
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
  EpReporter& rep = t.reporter;
  uint32_t index = 0;
  EpReporter::Slot* s = rep.AllocTx(&index);
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
    spec.pd = t.domain->pd();
    auto r = t.domain->table().Register(spec);
    if (!r.ok()) {
      rep.FreeTx(index);
      IWX_WARN(ep_data, "fi_read: cannot register the sink buffer: %s\n",
               fi_strerror(-ToFiErr(r.error())));
      return ToFiErr(r.error());
    }
    s->temp_stag = r.value();
    wr.local_stag = r.value();
    wr.local_to = spec.base_to;
  }
  rep.FillTxSlot(*s, context, FI_RMA | FI_READ, rep.read_cntr(), flags);
  wr.context = index | t.ctx_bits;
  wr.length = static_cast<uint32_t>(iov[0].iov_len);
  wr.remote_stag = static_cast<uint32_t>(key);
  wr.remote_to = addr;
  wr.flags = WrFlagsFor(flags);
  const ssize_t ret = QpStatusToFi(
      Tracked(t, wr, [&](const qp::ReadWr& w) { return t.qp.PostRead(w); }), "fi_read");
  if (ret != 0) {
    ReleaseTempStag(t.domain, *s);
    rep.FreeTx(index);
    return ret;
  }
  return 0;
}

ssize_t PostRmaAtomic(const QpTarget& t, const void* buf, size_t count, enum fi_datatype datatype,
                      enum fi_op op, uint64_t addr, uint64_t key, const void* compare, void* result,
                      void* context, uint64_t flags, bool fetch, bool cmp) {
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
  } else if (op == FI_BOR) {  // masked swap: ones into the operand's bits
    wr.op = wire::AtomicOp::kSwap;
    wr.swap_mask = wr.operand;
    wr.operand = UINT64_MAX;
  } else if (op == FI_BAND) {  // masked swap: zeros into the bits the operand clears
    wr.op = wire::AtomicOp::kSwap;
    wr.swap_mask = ~wr.operand;
    wr.operand = 0;
  } else if (op == FI_BXOR) {  // a compare-and-swap loop in the engine
    wr.xor_loop = true;
  } else {
    IWX_WARN(ep_data,
             "fi_atomic: op %d is not supported (FI_SUM, FI_BOR, FI_BAND, FI_BXOR, "
             "FI_ATOMIC_READ, FI_ATOMIC_WRITE, FI_CSWAP)\n",
             static_cast<int>(op));
    return -FI_EOPNOTSUPP;
  }
  EpReporter& rep = t.reporter;
  uint32_t index = 0;
  EpReporter::Slot* s = rep.AllocTx(&index);
  if (s == nullptr) return -FI_EAGAIN;
  rep.FillTxSlot(*s, context, FI_ATOMIC | (fetch ? FI_READ : FI_WRITE),
                 fetch ? rep.read_cntr() : rep.write_cntr(), flags);
  wr.context = index | t.ctx_bits;
  wr.remote_stag = static_cast<uint32_t>(key);
  wr.remote_to = addr;
  wr.result = fetch ? result : nullptr;
  wr.flags = WrFlagsFor(flags);
  const ssize_t ret = QpStatusToFi(
      Tracked(t, wr, [&](const qp::AtomicWr& w) { return t.qp.PostAtomic(w); }), "fi_atomic");
  if (ret != 0) {
    rep.FreeTx(index);
    return ret;
  }
  return 0;
}

struct fi_cq_err_entry QpErrEntry(const qp::WcError& error) {
  struct fi_cq_err_entry e = {};
  e.err = ErrFor(error);
  e.prov_errno = qp::ProvErrno(error.cause);
  return e;
}

void ReleaseTempStag(Domain* domain, EpReporter::Slot& s) {
  if (s.temp_stag == 0) return;
  (void)domain->table().Deregister(s.temp_stag);
  s.temp_stag = 0;
}

void ReportQpTx(EpReporter& reporter, Domain* domain, uint32_t index, const qp::WcError* error) {
  ReleaseTempStag(domain, reporter.tx(index));
  if (error == nullptr) {
    reporter.CompleteTx(index);
  } else {
    reporter.FailTx(index, QpErrEntry(*error));
  }
}

}  // namespace iwarpx::ofi
