// Memory regions (fi_mr_reg / fi_mr_regv / fi_mr_regattr): one STag in the
// domain's memory table per region.
//
// Contract
// - Keys: with FI_MR_PROV_KEY in the domain's mr_mode the key is a random
//   32-bit STag chosen by the table (requested_key ignored); without it the
//   application's requested_key is the STag (-FI_EKEYREJECTED when it does not
//   fit in 32 bits or is 0, -FI_ENOKEY when it is live).
// - Addressing: with FI_MR_VIRT_ADDR remote peers address the region by its
//   virtual address, else by the offset from its first byte.
// - Access: FI_SEND/FI_WRITE -> local read, FI_RECV/FI_READ -> local write,
//   FI_REMOTE_READ -> remote read, FI_REMOTE_WRITE -> remote write; a region
//   is an RFC 7306 atomic target only with both remote rights (an RFC 7306
//   atomic always reads and writes the target). The table enforces them on
//   every tagged access.
// - fi_mr_desc is the Mr object; the engine resolves local buffers through
//   it. One iovec per region (mr_iov_limit 1).
// Any thread may register or close (the domain's table mutex serialises).
#pragma once

#include <cstdint>

#include <rdma/fi_domain.h>

#include "ofi/common.h"

namespace iwarpx::ofi {

class Domain;

class Mr {
 public:
  // Access bits of mem::Access for libfabric access flags.
  static uint32_t ToMemAccess(uint64_t fi_access);

  [[nodiscard]] uint32_t stag() const { return stag_; }
  [[nodiscard]] uint32_t access() const { return access_; }
  // The tagged offset of host byte `addr` inside this region (its virtual
  // address with FI_MR_VIRT_ADDR, else the offset from the first byte).
  [[nodiscard]] uint64_t TaggedOffsetOf(const void* addr) const {
    return base_to_ + static_cast<uint64_t>(static_cast<const uint8_t*>(addr) - host_);
  }
  // The Mr behind an fi_mr_desc() value, or nullptr when `desc` is not one.
  static Mr* FromDesc(void* desc);
  Domain* domain() { return domain_; }

  // Implementations of the fi_ops_mr entries (mr.cc).
  static int Register(struct fid* fid, const struct fi_mr_attr& attr, uint64_t flags,
                      struct fid_mr** mr);
  int Close();

 private:
  Mr(Domain* domain, uint32_t stag, uint32_t access)
      : domain_(domain), stag_(stag), access_(access) {}

  FidHandle<struct fid_mr, Mr> handle_;
  Domain* domain_;
  uint32_t stag_;
  uint32_t access_;
  const uint8_t* host_ = nullptr;
  uint64_t base_to_ = 0;
};

// The domain's fi_ops_mr table.
const struct fi_ops_mr& MrOps();

}  // namespace iwarpx::ofi
