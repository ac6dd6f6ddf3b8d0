#include "mem/stag_table.h"

#include <algorithm>
#include <cassert>

namespace iwarpx::mem {

StagTable::StagTable(Random rng, size_t max_regions) : rng_(rng), max_regions_(max_regions) {
  regions_.reserve(max_regions < 1024 ? max_regions : 1024);
}

Result<uint32_t, RegisterError> StagTable::Register(const RegionSpec& spec) {
  if (regions_.size() >= max_regions_) return Err{RegisterError::kTableFull};
  for (;;) {
    const uint32_t stag = rng_.Next32();
    if (stag == 0 || regions_.contains(stag)) continue;
    return RegisterWithStag(stag, spec);
  }
}

Result<uint32_t, RegisterError> StagTable::RegisterWithStag(uint32_t stag, const RegionSpec& spec) {
  if ((spec.access & ~kAllAccess) != 0 || (spec.host == nullptr && spec.length != 0) ||
      (spec.length != 0 && spec.length - 1 > UINT64_MAX - spec.base_to)) {
    return Err{RegisterError::kInvalidArgument};
  }
  if (stag == 0 || regions_.contains(stag)) return Err{RegisterError::kStagInUse};
  if (regions_.size() >= max_regions_) return Err{RegisterError::kTableFull};
  regions_.emplace(stag, Region{spec, true});
  return stag;
}

bool StagTable::Invalidate(uint32_t stag, uint32_t pd) {
  auto it = regions_.find(stag);
  if (it == regions_.end() || !it->second.valid || it->second.spec.pd != pd) return false;
  it->second.valid = false;
  return true;
}

bool StagTable::Deregister(uint32_t stag) {
  auto it = regions_.find(stag);
  if (it == regions_.end()) return false;
  if (it->second.lent > 0) {
    // Reclaim() may add or remove nothing but lends; a copy keeps the loop
    // safe against a borrower that unregisters while being asked anyway.
    const std::vector<Borrower*> holders = borrowers_;
    for (Borrower* b : holders) {
      if (it->second.lent == 0) break;
      b->Reclaim(stag);
    }
    assert(it->second.lent == 0 && "a borrower kept a pointer into a deregistered region");
  }
  regions_.erase(it);
  return true;
}

void StagTable::AddBorrower(Borrower& b) {
  borrowers_.push_back(&b);
}

void StagTable::RemoveBorrower(Borrower& b) {
  std::erase(borrowers_, &b);
}

bool StagTable::Lend(uint32_t stag) {
  auto it = regions_.find(stag);
  if (it == regions_.end()) return false;
  ++it->second.lent;
  return true;
}

void StagTable::Return(uint32_t stag) {
  auto it = regions_.find(stag);
  if (it != regions_.end() && it->second.lent > 0) --it->second.lent;
}

uint32_t StagTable::lent(uint32_t stag) const {
  auto it = regions_.find(stag);
  return it == regions_.end() ? 0 : it->second.lent;
}

Result<uint8_t*, AccessError> StagTable::Resolve(uint32_t stag, uint64_t to, uint64_t len,
                                                 uint32_t access, uint32_t pd) const {
  auto it = regions_.find(stag);
  if (it == regions_.end() || !it->second.valid) return Err{AccessError::kInvalidStag};
  const RegionSpec& r = it->second.spec;
  if (r.pd != pd) return Err{AccessError::kNotAssociated};
  if ((r.access & access) != access) return Err{AccessError::kAccessRights};
  if (len != 0 && to > UINT64_MAX - (len - 1)) return Err{AccessError::kToWrap};
  // Wrap-safe: to >= base, len <= length, to - base <= length - len.
  if (to < r.base_to || len > r.length || to - r.base_to > r.length - len) {
    return Err{AccessError::kBaseBounds};
  }
  return r.host + (to - r.base_to);
}

wire::TermCause TaggedSinkCause(AccessError e) {
  switch (e) {
    case AccessError::kInvalidStag: return wire::term::kDdpTaggedInvalidStag;
    case AccessError::kNotAssociated: return wire::term::kDdpTaggedStagNotAssociated;
    case AccessError::kAccessRights: return wire::term::kDdpTaggedInvalidStag;
    case AccessError::kToWrap: return wire::term::kDdpTaggedToWrap;
    case AccessError::kBaseBounds: return wire::term::kDdpTaggedBaseBounds;
  }
  return wire::term::kDdpTaggedInvalidStag;
}

wire::TermCause RdmapSourceCause(AccessError e) {
  switch (e) {
    case AccessError::kInvalidStag: return wire::term::kRdmapInvalidStag;
    case AccessError::kNotAssociated: return wire::term::kRdmapStagNotAssociated;
    case AccessError::kAccessRights: return wire::term::kRdmapAccessRights;
    case AccessError::kToWrap: return wire::term::kRdmapToWrap;
    case AccessError::kBaseBounds: return wire::term::kRdmapBaseBounds;
  }
  return wire::term::kRdmapInvalidStag;
}

const char* ToString(AccessError e) {
  switch (e) {
    case AccessError::kInvalidStag: return "invalid STag";
    case AccessError::kNotAssociated: return "STag not associated with this protection domain";
    case AccessError::kAccessRights: return "access rights violation";
    case AccessError::kToWrap: return "tagged offset wraps";
    case AccessError::kBaseBounds: return "base/bounds violation";
  }
  return "unknown access error";
}

}  // namespace iwarpx::mem
