#include "ofi/ep_reporter.h"

#include <cstring>

#include <rdma/fi_errno.h>

#include "ofi/cntr.h"
#include "ofi/cq.h"
#include "ofi/log.h"

namespace iwarpx::ofi {

EpReporter::EpReporter(Domain* domain, size_t tx_size, size_t rx_size)
    : domain_(domain), tx_slots_(tx_size), rx_slots_(rx_size) {
  tx_free_.reserve(tx_size);
  rx_free_.reserve(rx_size);
  for (size_t i = tx_size; i-- > 0;) tx_free_.push_back(static_cast<uint32_t>(i));
  for (size_t i = rx_size; i-- > 0;) rx_free_.push_back(static_cast<uint32_t>(i));
}

EpReporter::~EpReporter() {
  for (Cq* cq : {tx_cq_, rx_cq_}) {
    if (cq != nullptr) cq->Unref();
  }
  for (Cntr* c : {send_cntr_, recv_cntr_, read_cntr_, write_cntr_}) {
    if (c != nullptr) c->Unref();
  }
}

int EpReporter::Bind(struct fid* bfid, uint64_t flags, const char* ep_kind) {
  if (Cq* cq = Cq::From(bfid)) {
    constexpr uint64_t kCqFlags = FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION;
    if ((flags & ~kCqFlags) != 0 || (flags & (FI_TRANSMIT | FI_RECV)) == 0) {
      IWX_WARN(ep_ctrl,
               "fi_ep_bind(cq) on %s: flags %#lx (FI_TRANSMIT and/or FI_RECV, optionally "
               "FI_SELECTIVE_COMPLETION)\n",
               ep_kind, static_cast<unsigned long>(flags));
      return -FI_EBADFLAGS;
    }
    if (cq->domain() != domain_) {
      IWX_WARN(ep_ctrl, "fi_ep_bind(cq) on %s: the CQ belongs to another domain\n", ep_kind);
      return -FI_EINVAL;
    }
    const bool selective = (flags & FI_SELECTIVE_COMPLETION) != 0;
    auto bind = [cq](Cq*& slot) {
      if (slot != nullptr) slot->Unref();
      slot = cq;
      cq->Ref();
    };
    if ((flags & FI_TRANSMIT) != 0) {
      bind(tx_cq_);
      tx_selective_ = selective;
    }
    if ((flags & FI_RECV) != 0) {
      bind(rx_cq_);
      rx_selective_ = selective;
    }
    return 0;
  }
  if (Cntr* c = Cntr::From(bfid)) {
    constexpr uint64_t kCntrFlags = FI_SEND | FI_RECV | FI_READ | FI_WRITE;
    if ((flags & (FI_REMOTE_READ | FI_REMOTE_WRITE)) != 0) {
      IWX_WARN(ep_ctrl,
               "fi_ep_bind(cntr) on %s: FI_REMOTE_READ/FI_REMOTE_WRITE counters are not "
               "supported (no target-side RMA events)\n",
               ep_kind);
      return -FI_ENOSYS;
    }
    if ((flags & ~kCntrFlags) != 0 || flags == 0) {
      IWX_WARN(ep_ctrl,
               "fi_ep_bind(cntr) on %s: flags %#lx (FI_SEND, FI_RECV, FI_READ, FI_WRITE)\n",
               ep_kind, static_cast<unsigned long>(flags));
      return -FI_EBADFLAGS;
    }
    if (c->domain() != domain_) {
      IWX_WARN(ep_ctrl, "fi_ep_bind(cntr) on %s: the counter belongs to another domain\n", ep_kind);
      return -FI_EINVAL;
    }
    auto bind = [c](Cntr*& slot) {
      if (slot != nullptr) slot->Unref();
      slot = c;
      c->Ref();
    };
    if ((flags & FI_SEND) != 0) bind(send_cntr_);
    if ((flags & FI_RECV) != 0) bind(recv_cntr_);
    if ((flags & FI_READ) != 0) bind(read_cntr_);
    if ((flags & FI_WRITE) != 0) bind(write_cntr_);
    return 0;
  }
  return kNotMine;
}

EpReporter::Slot* EpReporter::AllocTx(uint32_t* index) {
  if (tx_free_.empty()) return nullptr;
  *index = tx_free_.back();
  tx_free_.pop_back();
  Slot* s = &tx_slots_[*index];
  s->temp_stag = 0;
  s->silent = false;
  s->in_use = true;
  return s;
}

void EpReporter::FreeTx(uint32_t index) {
  tx_slots_[index].in_use = false;
  tx_free_.push_back(index);
}

EpReporter::Slot* EpReporter::AllocRx(uint32_t* index) {
  if (rx_free_.empty()) return nullptr;
  *index = rx_free_.back();
  rx_free_.pop_back();
  Slot* s = &rx_slots_[*index];
  s->in_use = true;
  s->multi = false;
  return s;
}

void EpReporter::FreeRx(uint32_t index) {
  rx_slots_[index].in_use = false;
  rx_free_.push_back(index);
}

bool EpReporter::ReportsSuccess(const void* context, uint64_t flags) const {
  const bool inject = (flags & FI_INJECT) != 0;
  // fi_inject* never writes a completion; with FI_SELECTIVE_COMPLETION only
  // operations with FI_COMPLETION do.
  return !(inject && context == nullptr && (flags & FI_COMPLETION) == 0) &&
         (!tx_selective_ || (flags & FI_COMPLETION) != 0);
}

void EpReporter::FillTxSlot(Slot& s, void* context, uint64_t cq_flags, Cntr* cntr,
                            uint64_t flags) const {
  s.context = context;
  s.flags = cq_flags;
  s.report = ReportsSuccess(context, flags);
  s.cntr = cntr;
}

void EpReporter::ReportTxNow(void* context, uint64_t cq_flags, Cntr* cntr, uint64_t flags,
                             const struct fi_cq_err_entry* err) {
  if (err != nullptr) {
    if (tx_cq_ != nullptr) {
      struct fi_cq_err_entry e = *err;
      e.op_context = context;
      if (e.flags == 0) e.flags = cq_flags;
      if (!tx_cq_->PostError(e)) IWX_WARN(cq, "the CQ is full; an error completion was lost\n");
    }
    if (cntr != nullptr) cntr->IncErr();
    return;
  }
  if (tx_cq_ != nullptr && ReportsSuccess(context, flags)) {
    struct fi_cq_data_entry c = {};
    c.op_context = context;
    c.flags = cq_flags;
    if (!tx_cq_->Post(c)) IWX_WARN(cq, "the CQ is full; a completion was lost\n");
  }
  if (cntr != nullptr) cntr->Inc();
}

void EpReporter::CopyInject(Slot& s, const struct iovec* iov, size_t count, qp::Sgl* sgl) {
  const size_t len = sgl->Length();
  size_t off = 0;
  for (size_t i = 0; i < count; ++i) {
    if (iov[i].iov_len != 0) std::memcpy(s.inject.data() + off, iov[i].iov_base, iov[i].iov_len);
    off += iov[i].iov_len;
  }
  *sgl = {};
  (void)sgl->Add(s.inject.data(), len);
}

bool EpReporter::FillSgl(const struct iovec* iov, size_t count, size_t max_bytes, qp::Sgl* sgl,
                         const char* call) {
  if (count > kIovLimit || (iov == nullptr && count != 0)) {
    IWX_WARN(ep_data, "%s: %zu iovecs (at most %zu)\n", call, count, kIovLimit);
    return false;
  }
  size_t total = 0;
  for (size_t i = 0; i < count; ++i) {
    if (iov[i].iov_base == nullptr && iov[i].iov_len != 0) {
      IWX_WARN(ep_data, "%s: iovec %zu has a NULL base and %zu bytes\n", call, i, iov[i].iov_len);
      return false;
    }
    total += iov[i].iov_len;
    (void)sgl->Add(iov[i].iov_base, iov[i].iov_len);
  }
  if (total > max_bytes) {
    IWX_WARN(ep_data, "%s: %zu bytes exceed max_msg_size %zu\n", call, total, max_bytes);
    return false;
  }
  return true;
}

void EpReporter::PostError(Cq* cq, const Slot& s, struct fi_cq_err_entry err) {
  if (cq == nullptr) return;
  err.op_context = s.context;
  if (err.flags == 0) err.flags = s.flags;
  if (!cq->PostError(err)) {
    IWX_WARN(cq, "the CQ is full; an error completion was lost\n");
  }
}

void EpReporter::CompleteTx(uint32_t index) {
  Slot& s = tx_slots_[index];
  if (!s.silent) {
    if (s.report && tx_cq_ != nullptr) {
      struct fi_cq_data_entry c = {};
      c.op_context = s.context;
      c.flags = s.flags;
      if (!tx_cq_->Post(c)) IWX_WARN(cq, "the CQ is full; a completion was lost\n");
    }
    if (s.cntr != nullptr) s.cntr->Inc();
  }
  FreeTx(index);
}

void EpReporter::FailTx(uint32_t index, struct fi_cq_err_entry err) {
  Slot& s = tx_slots_[index];
  if (!s.silent) {
    PostError(tx_cq_, s, err);
    if (s.cntr != nullptr) s.cntr->IncErr();
  }
  FreeTx(index);
}

void EpReporter::CompleteRx(uint32_t index, const struct fi_cq_data_entry& c, fi_addr_t src) {
  struct fi_cq_tagged_entry t = {};
  t.flags = c.flags;
  t.len = c.len;
  t.buf = c.buf;
  t.data = c.data;
  CompleteRx(index, t, src);
}

void EpReporter::CompleteRx(uint32_t index, struct fi_cq_tagged_entry c, fi_addr_t src, bool keep) {
  Slot& s = rx_slots_[index];
  if (rx_cq_ != nullptr && s.report) {
    c.op_context = s.context;
    if (!rx_cq_->Post(c, src)) IWX_WARN(cq, "out of memory; a receive completion was lost\n");
  }
  if (recv_cntr_ != nullptr) recv_cntr_->Inc();
  if (!keep) FreeRx(index);
}

void EpReporter::FailRx(uint32_t index, struct fi_cq_err_entry err, bool keep) {
  const Slot& s = rx_slots_[index];
  PostError(rx_cq_, s, err);
  if (recv_cntr_ != nullptr) recv_cntr_->IncErr();
  if (!keep) FreeRx(index);
}

}  // namespace iwarpx::ofi
