// The domain object (fi_domain): one software "RNIC". It owns the memory
// table (STags of every MR opened from it) and will own the progress engine.
//
// Contract: any thread may call its ops (FI_THREAD_SAFE); the STag table is
// guarded by table_mu(). fi_close fails with -FI_EBUSY while a CQ, counter or
// MR opened from it is still open. Endpoints are not available yet:
// fi_endpoint returns -FI_ENOSYS until the queue-pair engine lands.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include "mem/stag_table.h"
#include "ofi/common.h"

namespace iwarpx::ofi {

class Fabric;

class Domain {
 public:
  static int Open(struct fid_fabric* fabric, struct fi_info* info, struct fid_domain** domain,
                  void* context);
  // The Domain behind a fid (any fid whose class is FI_CLASS_DOMAIN), or
  // nullptr if it is not one of ours.
  static Domain* From(struct fid* fid);

  void Ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Unref() { refs_.fetch_sub(1, std::memory_order_acq_rel); }

  // Effective FI_MR_* bits (FI_MR_BASIC expanded, FI_MR_SCALABLE = none).
  [[nodiscard]] uint64_t mr_mode() const { return mr_mode_; }
  // Protection domain id stamped on every region of this domain.
  [[nodiscard]] uint32_t pd() const { return pd_; }
  std::mutex& table_mu() { return table_mu_; }
  mem::StagTable& table() { return table_; }  // table_mu() held

  struct fid_domain* fid() {
    return &handle_.fid;
  }
  int Close();

 private:
  Domain(Fabric* fabric, uint64_t mr_mode, uint32_t pd, size_t max_mr);

  FidHandle<struct fid_domain, Domain> handle_;
  Fabric* fabric_;
  std::atomic<int> refs_{0};
  uint64_t mr_mode_;
  uint32_t pd_;
  std::mutex table_mu_;
  mem::StagTable table_;
};

int DomainOpen(struct fid_fabric* fabric, struct fi_info* info, struct fid_domain** domain,
               void* context);

}  // namespace iwarpx::ofi
