// libfabric RMA and atomic calls posted as qp::QueuePair work requests,
// shared by every endpoint type whose peer is a QueuePair: FI_EP_MSG (its
// connection's QP) and FI_EP_RDM (the peer's RD QP). Each function checks its
// arguments (-FI_EINVAL / -FI_EBADFLAGS / -FI_EOPNOTSUPP with a log line
// naming the call), takes a transmit slot of the endpoint's EpReporter, posts,
// and undoes everything on failure. The engine lock is held by the caller.
//
// WR contexts are the slot index OR-ed with QpTarget::ctx_bits (RDM marks
// its user operations); completions come back through ReportQpTx.
//
// FI_DELIVERY_COMPLETE on a write: a zero-length RDMA Read follows the write
// and reports for it (RDMAP orders the Read Response after the write's
// placement, so its completion means the data is at the target); the write's
// own slot stays silent.
#pragma once

#include <sys/uio.h>

#include <cstdint>

#include <rdma/fi_atomic.h>
#include <rdma/fi_eq.h>

#include "ofi/ep_reporter.h"
#include "qp/completion_sink.h"
#include "qp/queue_pair.h"

namespace iwarpx::ofi {

class Domain;

// Told of each work request's context right before it is posted (a
// completion may be reported from inside the post) and again if the QP
// refused it: the RDM endpoint tracks the RMA it puts on a connection
// (rdm::RdmCore::RmaPosting).
class PostTracker {
 public:
  virtual ~PostTracker() = default;
  virtual void Posting(uint64_t context) = 0;
  virtual void Refused(uint64_t context) = 0;
};

struct QpTarget {
  EpReporter& reporter;
  Domain* domain = nullptr;
  qp::QueuePair& qp;
  uint64_t ctx_bits = 0;
  PostTracker* tracker = nullptr;  // optional
};

// -FI_E* (logged) for a QueuePair status; 0 for kOk.
ssize_t QpStatusToFi(qp::QpStatus s, const char* call);
// -FI_EBADFLAGS (logged) for transmit flags the provider does not know.
ssize_t CheckTxFlags(uint64_t flags, const char* call);
// -FI_EINVAL (logged) when FI_INJECT asks for more than inject_size.
ssize_t CheckInject(uint64_t flags, size_t len, const char* call);
// kWrSignaled, plus kWrFence for FI_FENCE.
uint32_t WrFlagsFor(uint64_t flags);

ssize_t PostRmaWrite(const QpTarget& t, const struct iovec* iov, size_t count, uint64_t addr,
                     uint64_t key, void* context, uint64_t flags, uint64_t data);
ssize_t PostRmaRead(const QpTarget& t, const struct iovec* iov, void** desc, size_t count,
                    uint64_t addr, uint64_t key, void* context, uint64_t flags);
ssize_t PostRmaAtomic(const QpTarget& t, const void* buf, size_t count, enum fi_datatype datatype,
                      enum fi_op op, uint64_t addr, uint64_t key, const void* compare, void* result,
                      void* context, uint64_t flags, bool fetch, bool cmp);

// The CQ error entry for an engine error: err (FI_EACCES for protection
// errors, FI_ECONNABORTED for a lost connection, ...) and the Terminate cause
// as prov_errno.
struct fi_cq_err_entry QpErrEntry(const qp::WcError& error);
// A transmit slot's QP work request finished: releases the Read sink that was
// registered for it alone, then the success entry (error == nullptr) or the
// error entry.
void ReportQpTx(EpReporter& reporter, Domain* domain, uint32_t index, const qp::WcError* error);
// Deregisters a slot's temporary Read sink (also at endpoint close).
void ReleaseTempStag(Domain* domain, EpReporter::Slot& s);

}  // namespace iwarpx::ofi
