// The memory table: registered regions by STag, and the protection check that
// every tagged access from the network goes through before a byte is placed.
//
// Contract
// - Register() hands out a fresh STag drawn at random (never 0, never reused
//   while live), so a peer cannot guess keys by counting. A caller-chosen STag
//   (libfabric requested_key without FI_MR_PROV_KEY) is also possible.
// - Resolve() is the single place where a remote access is authorised: it
//   checks, in this order, that the STag is live, that it belongs to the
//   caller's protection domain, that the region grants the requested rights,
//   that [to, to+len) does not wrap 2^64, and that it lies inside the region.
//   The bounds check is wrap-safe: it never computes to+len (WIRE.md §3).
//   Only on success does it return the host address of the first byte.
// - A zero-length access passes when to lies in [base, base+length]; the RTR
//   zero-length Write/Read of RFC 6581 is not validated at all (that is the
//   engine's decision, not this table's).
// - Invalidate() (Send with Invalidate, local invalidate) makes the STag
//   unusable at once; Deregister() removes it. Both are idempotent-safe:
//   they report whether the STag was live.
// - Lending (zero-copy): a transport that keeps pointing at a region's bytes
//   after the call that resolved them (the RD stream's unacknowledged Read
//   Responses, kept for resending) Lend()s the STag and Return()s it when it
//   no longer needs them. Deregister() of a lent STag first calls Reclaim()
//   on every borrower holding it, which must copy what it still needs and
//   Return() it: when Deregister() returns, nothing points into the region.
//   Invalidate() does not reclaim: the memory stays the application's until
//   the region is deregistered, and what was lent was read under a valid
//   STag. Borrowers are registered (AddBorrower) for their whole life.
// - Not thread-safe: the owning domain serialises calls (registration is not a
//   hot path; Resolve(), Lend() and Return() do no allocation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "base/random.h"
#include "base/result.h"
#include "wire/error.h"

namespace iwarpx::mem {

// Access rights of a region (the libfabric FI_READ/FI_WRITE/FI_REMOTE_* subset
// that iWARP distinguishes).
enum Access : uint32_t {
  kLocalRead = 1u << 0,     // source of a local send / RDMA Write
  kLocalWrite = 1u << 1,    // sink of a receive or Read Response
  kRemoteRead = 1u << 2,    // source of a peer's RDMA Read
  kRemoteWrite = 1u << 3,   // sink of a peer's RDMA Write
  kRemoteAtomic = 1u << 4,  // target of a peer's RFC 7306 atomic
};
inline constexpr uint32_t kAllAccess =
    kLocalRead | kLocalWrite | kRemoteRead | kRemoteWrite | kRemoteAtomic;

enum class AccessError : uint8_t {
  kInvalidStag = 1,  // unknown, invalidated or deregistered
  kNotAssociated,    // region belongs to another protection domain
  kAccessRights,     // region lacks a requested right
  kToWrap,           // to + len wraps 2^64
  kBaseBounds,       // [to, to+len) not inside the region
};

// Holds pointers into lent regions (see Lend()).
class Borrower {
 public:
  virtual ~Borrower() = default;
  // The region of `stag` is being deregistered: stop pointing into it (copy
  // what is still needed) and Return() every lend of it before returning.
  virtual void Reclaim(uint32_t stag) = 0;
};

enum class RegisterError : uint8_t {
  kInvalidArgument = 1,  // null host with a length, unknown access bits, region past 2^64-1
  kStagInUse,            // requested STag already live (or 0)
  kTableFull,
};

struct RegionSpec {
  uint8_t* host = nullptr;  // first byte of the region in this process
  uint64_t length = 0;
  uint64_t base_to = 0;  // tagged offset of the first byte (virtual address or 0)
  uint32_t access = 0;   // Access bits
  uint32_t pd = 0;       // protection domain id
};

class StagTable {
 public:
  StagTable(Random rng, size_t max_regions);

  Result<uint32_t, RegisterError> Register(const RegionSpec& spec);
  Result<uint32_t, RegisterError> RegisterWithStag(uint32_t stag, const RegionSpec& spec);

  // Marks the STag invalid (it stays allocated until Deregister). Returns false
  // if it was not live or belongs to another PD (RFC 5040: "STag cannot be
  // invalidated").
  bool Invalidate(uint32_t stag, uint32_t pd);
  // Removes the STag, reclaiming it from its borrowers first. Returns false
  // if it was unknown.
  bool Deregister(uint32_t stag);

  // Borrowers are asked to Reclaim() in Deregister while registered; remove
  // one only when it holds no lends.
  void AddBorrower(Borrower& b);
  void RemoveBorrower(Borrower& b);
  // A registered borrower keeps a pointer into the region of `stag` (a live
  // STag resolved in this same locked call); false if the STag is unknown
  // (nothing lent).
  bool Lend(uint32_t stag);
  // One Lend() of `stag` is over.
  void Return(uint32_t stag);
  // Lends of `stag` outstanding (tests).
  [[nodiscard]] uint32_t lent(uint32_t stag) const;

  // Authorises an access of `len` bytes at tagged offset `to`; see the header
  // comment for the order of checks. Returns the host address of byte `to`.
  Result<uint8_t*, AccessError> Resolve(uint32_t stag, uint64_t to, uint64_t len, uint32_t access,
                                        uint32_t pd) const;

  size_t size() const { return regions_.size(); }

 private:
  struct Region {
    RegionSpec spec;
    bool valid = true;
    uint32_t lent = 0;
  };

  std::unordered_map<uint32_t, Region> regions_;
  std::vector<Borrower*> borrowers_;  // asked to Reclaim in Deregister
  Random rng_;
  size_t max_regions_;
};

// The Terminate cause for a failed access, by where the access came from:
// the sink of an RDMA Write or Read Response (DDP tagged buffer errors; an
// access-rights failure is reported as an invalid STag, since DDP has no
// access code — as Linux siw does), or the source of a Read Request / target
// of an atomic (RDMAP remote protection errors).
wire::TermCause TaggedSinkCause(AccessError e);
wire::TermCause RdmapSourceCause(AccessError e);

const char* ToString(AccessError e);

}  // namespace iwarpx::mem
