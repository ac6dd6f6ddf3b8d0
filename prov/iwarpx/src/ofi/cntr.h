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

  // Endpoints bound to the counter hold a reference (fi_close: -FI_EBUSY).
  void Ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Unref() { refs_.fetch_sub(1, std::memory_order_acq_rel); }
  Domain* domain() { return domain_; }

  // Engine side.
  void Inc() { Add(1); }
  void IncErr() { AddErr(1); }

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

 private:
  explicit Cntr(Domain* domain) : domain_(domain) {}

  FidHandle<struct fid_cntr, Cntr> handle_;
  Domain* domain_;
  Waiter waiter_;
  uint64_t value_ = 0;   // waiter_.mu
  uint64_t errors_ = 0;  // waiter_.mu
  std::atomic<int> refs_{0};
};

int CntrOpen(struct fid_domain* domain, struct fi_cntr_attr* attr, struct fid_cntr** cntr,
             void* context);

}  // namespace iwarpx::ofi
