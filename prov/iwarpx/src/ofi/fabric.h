// The fabric object (fi_fabric): the root that domains, EQs and fi_trywait
// hang off. One per fi_fabric call; it holds no engine state.
//
// Contract: any thread may call its ops (FI_THREAD_SAFE). fi_close fails with
// -FI_EBUSY while a domain or EQ opened from it is still open.
#pragma once

#include <atomic>

#include <rdma/fabric.h>

#include "ofi/common.h"

namespace iwarpx::ofi {

inline constexpr const char* kFabricName = "iwarpx";

class Fabric {
 public:
  // The provider's fabric() entry point.
  static int Open(struct fi_fabric_attr* attr, struct fid_fabric** fabric, void* context);
  // The Fabric behind an application's fid_fabric, or nullptr if not ours.
  static Fabric* From(struct fid_fabric* fabric);

  // Children (domains, EQs) hold a reference while open.
  void Ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Unref() { refs_.fetch_sub(1, std::memory_order_acq_rel); }

  [[nodiscard]] uint32_t api_version() const { return handle_.fid.api_version; }
  struct fid_fabric* fid() {
    return &handle_.fid;
  }

  // fi_ops / fi_ops_fabric implementations (fabric.cc).
  int Close();
  static int TryWait(struct fid** fids, int count);

 private:
  Fabric() = default;

  FidHandle<struct fid_fabric, Fabric> handle_;
  std::atomic<int> refs_{0};
};

int FabricOpen(struct fi_fabric_attr* attr, struct fid_fabric** fabric, void* context);

}  // namespace iwarpx::ofi
