// The domain object (fi_domain): one software "RNIC". It owns the memory
// table (STags of every MR opened from it); its endpoints run on the
// fabric's progress engine.
//
// Contract: any thread may call its ops (FI_THREAD_SAFE); the STag table is
// guarded by table_mu() (the fabric's engine lock). fi_close fails with
// -FI_EBUSY while a CQ, counter, MR or endpoint opened from it is still open.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
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
  // The memory table is used by the engine while it places data, so the
  // engine lock guards it.
  std::mutex& table_mu();
  mem::StagTable& table() { return table_; }  // table_mu() held
  Fabric* fabric() { return fabric_; }

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
  mem::StagTable table_;
};

// fi_query_atomic: which (datatype, op, flags) the endpoints execute.
int QueryAtomic(struct fid_domain* domain, enum fi_datatype datatype, enum fi_op op,
                struct fi_atomic_attr* attr, uint64_t flags);

int DomainOpen(struct fid_fabric* fabric, struct fi_info* info, struct fid_domain** domain,
               void* context);

}  // namespace iwarpx::ofi
