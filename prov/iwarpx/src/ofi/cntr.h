// Counters (fi_cntr_open): a success count and an error count.
//
// Contract
// - Manual progress: fi_cntr_read/readerr and fi_trywait run one engine pass;
//   fi_cntr_wait drives the engine while it waits.
// - fi_cntr_add/set/adderr/seterr and the engine's Inc/IncErr wake every
//   fi_cntr_wait and make the FI_GETWAIT eventfd readable.
// - fi_cntr_wait(threshold, timeout) returns 0 once the count reaches the
//   threshold, -FI_EAVAIL if the error count changes while waiting,
//   -FI_ETIMEDOUT on timeout; it needs FI_WAIT_FD or FI_WAIT_UNSPEC
//   (FI_WAIT_NONE: -FI_EINVAL).
// - fi_poll reports a counter whose value or error count changed since the
//   last fi_poll, fi_cntr_add or fi_cntr_set (fi_poll(3)); the checkpoint is
//   the counter's own, shared by every poll set holding it. The engine's
//   Inc/IncErr do not move it.
// All ops are thread-safe (one mutex per counter).
#pragma once

#include <atomic>
#include <cstdint>

#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

#include "ofi/common.h"
#include "ofi/waitq.h"

namespace iwarpx::ofi {

class Domain;

class Cntr {
 public:
  static int Open(struct fid_domain* domain, struct fi_cntr_attr* attr, struct fid_cntr** cntr,
                  void* context);
  static Cntr* From(struct fid* fid);

  // Endpoints bound to the counter and poll sets holding it hold a reference
  // (fi_close: -FI_EBUSY).
  void Ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Unref() { refs_.fetch_sub(1, std::memory_order_acq_rel); }
  Domain* domain() { return domain_; }

  // Engine side.
  void Inc() { Count(1, 0); }
  void IncErr() { Count(0, 1); }

  uint64_t Read();
  uint64_t ReadErr();
  int Add(uint64_t value);
  int Set(uint64_t value);
  int AddErr(uint64_t value);
  int SetErr(uint64_t value);
  int Wait(uint64_t threshold, int timeout);
  int Control(int command, void* arg);
  int TryWait();
  int Close();
  // fi_poll: true when the value or error count differs from the checkpoint,
  // which then moves to the current values.
  bool TakeChange();

 private:
  explicit Cntr(Domain* domain) : domain_(domain) {}
  void Count(uint64_t value, uint64_t errors);

  FidHandle<struct fid_cntr, Cntr> handle_;
  Domain* domain_;
  Waiter waiter_;
  uint64_t value_ = 0;   // waiter_.mu
  uint64_t errors_ = 0;  // waiter_.mu
  // fi_poll checkpoint (see the contract); waiter_.mu.
  uint64_t polled_value_ = 0;
  uint64_t polled_errors_ = 0;
  std::atomic<int> refs_{0};
};

int CntrOpen(struct fid_domain* domain, struct fi_cntr_attr* attr, struct fid_cntr** cntr,
             void* context);

}  // namespace iwarpx::ofi
