// Completion queues (fi_cq_open): a bounded ring of completions that the
// engine fills and the application drains, in the format chosen at open
// (FI_CQ_FORMAT_CONTEXT, _MSG, _DATA or _TAGGED; UNSPEC means CONTEXT).
//
// Contract
// - Completions and error completions share one ring, so they are read in the
//   order they were posted: fi_cq_read returns the successful completions in
//   front of the first error, then -FI_EAVAIL until fi_cq_readerr takes it.
// - Manual progress: fi_cq_read/readfrom and fi_trywait run one engine pass
//   first; fi_cq_sread/sreadfrom drive the engine while they wait.
// - fi_cq_sread/sreadfrom block (FI_WAIT_FD or FI_WAIT_UNSPEC) until a
//   completion, an error, fi_cq_signal or the timeout (-FI_EAGAIN); with
//   FI_WAIT_NONE they are misuse (-FI_EINVAL). fi_control(FI_GETWAIT) gives the
//   eventfd; fi_trywait drains it when the CQ is empty.
// - Post/PostError are the engine's side: any thread, never blocking. A
//   full CQ grows (doubles) rather than drop a completion: libfabric's CQ
//   size is a hint, and an application that lets more accumulate (Open MPI's
//   mtl ofi opens 100 entries and posts hundreds of operations) must not lose
//   any. They return false only when that allocation fails.
// - fi_cq_readfrom reports the source the endpoint gave with the entry: the
//   sender's address-vector entry for datagram receives (FI_SOURCE), else
//   FI_ADDR_NOTAVAIL (MSG endpoints have no address vector). Error entries
//   carry none (libfabric 1.17's fi_cq_err_entry has no source field).
// All ops are thread-safe (one mutex per CQ).
#pragma once

#include <atomic>

#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

#include "ofi/common.h"
#include "ofi/waitq.h"

namespace iwarpx::ofi {

class Domain;

class Cq {
 public:
  static int Open(struct fid_domain* domain, struct fi_cq_attr* attr, struct fid_cq** cq,
                  void* context);
  // The Cq behind a fid, or nullptr if it is not an iwarpx CQ.
  static Cq* From(struct fid* fid);

  // Endpoints bound to the CQ and poll sets holding it hold a reference
  // (fi_close: -FI_EBUSY).
  void Ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Unref() { refs_.fetch_sub(1, std::memory_order_acq_rel); }
  Domain* domain() { return domain_; }

  // Engine side.
  // `src`: the sender's fi_addr for fi_cq_readfrom (FI_ADDR_NOTAVAIL: none).
  bool Post(const struct fi_cq_tagged_entry& c, fi_addr_t src = FI_ADDR_NOTAVAIL);
  bool Post(const struct fi_cq_data_entry& c, fi_addr_t src = FI_ADDR_NOTAVAIL);
  bool PostError(const struct fi_cq_err_entry& e);

  // Application side (the fi_ops_cq entries map one to one).
  ssize_t Read(void* buf, size_t count, fi_addr_t* src_addr);
  ssize_t ReadErr(struct fi_cq_err_entry* buf, uint64_t flags);
  ssize_t SRead(void* buf, size_t count, fi_addr_t* src_addr, const void* cond, int timeout);
  int Signal();
  int Control(int command, void* arg);
  int TryWait();
  int Close();
  // fi_poll: true when a completion or an error completion is queued; takes
  // nothing off the queue.
  bool HasEntries();

 private:
  struct Slot {
    struct fi_cq_err_entry entry;
    fi_addr_t src;
    bool error;
  };

  Cq(Domain* domain, enum fi_cq_format format, enum fi_cq_wait_cond cond)
      : domain_(domain), format_(format), wait_cond_(cond) {}
  // mu held.
  ssize_t ReadLocked(void* buf, size_t count, fi_addr_t* src_addr);
  size_t EntrySize() const;

  FidHandle<struct fid_cq, Cq> handle_;
  Domain* domain_;
  enum fi_cq_format format_;
  enum fi_cq_wait_cond wait_cond_;
  Waiter waiter_;
  Ring<Slot> ring_;  // waiter_.mu
  // ring_.size(), stored under waiter_.mu after every push and pop, so that
  // fi_cq_read of an empty CQ (a busy poll) returns without the lock. A
  // reader that sees a stale 0 returns -FI_EAGAIN, as if it had polled just
  // before the entry came.
  std::atomic<size_t> queued_{0};
  std::atomic<int> refs_{0};
};

int CqOpen(struct fid_domain* domain, struct fi_cq_attr* attr, struct fid_cq** cq, void* context);

}  // namespace iwarpx::ofi
