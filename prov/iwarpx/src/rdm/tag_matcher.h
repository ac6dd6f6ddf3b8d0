// TagMatcher: the receive-side matching of an RDM endpoint, for FI_TAGGED and
// FI_MSG (fi_tagged(3), fi_msg(3)). It pairs arriving messages with posted
// receives, and receives with messages that arrived before them
// ("unexpected" messages), with libfabric's rules:
//
// * A receive r matches a message (tag, src) when
//     (tag & ~r.ignore) == (r.tag & ~r.ignore)  and
//     (r.src == kAnySource || r.src == src)      (FI_DIRECTED_RECV).
//   Untagged FI_MSG uses the same class with tag = ignore = 0: every message
//   matches every receive, directed by src only.
// * Receives are matched in post order, messages in arrival order, whatever
//   the mix of wildcard (kAnySource, ignore bits) and directed receives.
// * FI_PEEK looks without removing; FI_PEEK|FI_CLAIM marks the message found
//   as claimed by a non-zero application context: no later Take/Peek/Claim
//   finds it, only TakeClaimed(context) (FI_CLAIM on a receive or FI_DISCARD)
//   removes it. Several messages claimed with the same context come back from
//   TakeClaimed in the order they were claimed.
// * fi_cancel removes a posted receive by handle.
//
// It knows nothing of libfabric types: addresses and handles are uint64_t and
// the caller keeps the buffers, contexts and payloads behind the handles.
// Handles need not be unique; where several entries carry the same handle or
// claim the oldest one is taken.
//
// Complexity (n = entries stored):
// * AddPosted, AddUnexpected: O(1) amortised.
// * TakePosted(tag, src): posted receives are kept in one list per directed
//   source plus one list of kAnySource receives, each in post order with a
//   post sequence number. The search walks the list of `src` to its first
//   match, then the kAnySource list only while its entries are older than
//   that match. O(1) when the head of either list matches (MPI posting in
//   order); at worst O(receives posted for src + kAnySource receives).
// * Take/Peek/ClaimUnexpected with a directed src walk that source's list of
//   messages only; with kAnySource they walk all unclaimed messages in arrival
//   order. O(1) when the oldest candidate matches.
// * CancelPosted: O(posted receives). TakeClaimed: O(claimed messages).
// * Memory: entries live in one node pool with a free list; after the pool
//   and the per-source table have grown to their high-water mark no operation
//   allocates (a source seen for the first time adds one table entry). The
//   pool never shrinks: memory stays at the high-water mark (56 bytes per
//   entry) until the matcher is destroyed. At most 2^32 - 1 entries at once.
//
// Not thread-safe: the endpoint calls it under its own lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace iwarpx::rdm {

inline constexpr uint64_t kAnySource = ~uint64_t{0};  // FI_ADDR_UNSPEC

struct PostedRecv {
  uint64_t tag = 0;
  uint64_t ignore = 0;
  uint64_t src = kAnySource;
  uint64_t handle = 0;
};

struct Unexpected {
  uint64_t tag = 0;
  uint64_t src = 0;
  uint64_t handle = 0;
};

class TagMatcher {
 public:
  TagMatcher() = default;
  TagMatcher(const TagMatcher&) = delete;
  TagMatcher& operator=(const TagMatcher&) = delete;

  // A message (tag, src) arrived: the first posted receive (in post order)
  // that matches it is removed and its handle returned; nullopt if none does.
  std::optional<uint64_t> TakePosted(uint64_t tag, uint64_t src);
  // Appends r at the end of post order.
  void AddPosted(const PostedRecv& r);
  // fi_cancel: removes the oldest posted receive with this handle; true if
  // there was one.
  bool CancelPosted(uint64_t handle);

  // Appends an unexpected message at the end of arrival order.
  void AddUnexpected(const Unexpected& m);
  // The first unclaimed unexpected message (arrival order) matching the
  // receive (tag, ignore, src), removed.
  std::optional<Unexpected> TakeUnexpected(uint64_t tag, uint64_t ignore, uint64_t src);
  // FI_PEEK: the same search without removing.
  std::optional<Unexpected> PeekUnexpected(uint64_t tag, uint64_t ignore, uint64_t src) const;
  // FI_PEEK|FI_CLAIM: the same search; the message found stays stored but is
  // marked claimed by `claim` and hidden from every later Take/Peek/Claim.
  std::optional<Unexpected> ClaimUnexpected(uint64_t tag, uint64_t ignore, uint64_t src,
                                            uint64_t claim);
  // FI_CLAIM (receive or discard of a claimed message): removes and returns
  // the oldest-claimed message with this claim; nullopt if there is none.
  std::optional<Unexpected> TakeClaimed(uint64_t claim);

  // Endpoint teardown: remove and return the oldest posted receive / the
  // oldest unexpected message (unclaimed ones first, then claimed ones), so
  // the caller can complete or free what is behind their handles.
  std::optional<PostedRecv> PopPosted();
  std::optional<Unexpected> PopUnexpected();

  size_t posted_count() const { return posted_count_; }
  // Every stored unexpected message, claimed ones included.
  size_t unexpected_count() const { return unexpected_count_ + claimed_count_; }
  size_t claimed_count() const { return claimed_count_; }

 private:
  static constexpr uint32_t kNil = ~uint32_t{0};
  // Each node sits on two lists: link kAll (every posted receive in post
  // order, or every unclaimed message in arrival order, or the claimed list)
  // and link kBin (its source's list; kAnySource receives share one list).
  static constexpr int kAll = 0;
  static constexpr int kBin = 1;

  struct Node {
    uint64_t tag = 0;
    uint64_t ignore = 0;  // posted receives only
    uint64_t src = 0;
    uint64_t handle = 0;
    uint64_t key = 0;  // post sequence number, or the claim once claimed
    uint32_t prev[2] = {kNil, kNil};
    uint32_t next[2] = {kNil, kNil};
  };
  struct List {
    uint32_t head = kNil;
    uint32_t tail = kNil;
  };

  uint32_t Alloc();
  void Free(uint32_t i);
  void PushBack(List& l, int link, uint32_t i);
  void Unlink(List& l, int link, uint32_t i);
  // Removes a posted receive from both its lists and frees it.
  void RemovePosted(uint32_t i);
  // Removes an unclaimed message from both its lists (does not free it).
  void DetachUnexpected(uint32_t i);
  // The first unclaimed message matching the receive, or kNil.
  uint32_t FindUnexpected(uint64_t tag, uint64_t ignore, uint64_t src) const;
  Unexpected ToUnexpected(uint32_t i) const;

  std::vector<Node> nodes_;
  uint32_t free_ = kNil;  // free nodes, chained through next[kAll]

  List posted_;                                       // post order
  List posted_any_;                                   // kAnySource receives
  std::unordered_map<uint64_t, List> posted_by_src_;  // directed receives
  List unexpected_;                                   // arrival order, unclaimed
  std::unordered_map<uint64_t, List> unexpected_by_src_;
  List claimed_;  // claim order
  uint64_t next_seq_ = 0;
  size_t posted_count_ = 0;
  size_t unexpected_count_ = 0;  // unclaimed
  size_t claimed_count_ = 0;
};

}  // namespace iwarpx::rdm
