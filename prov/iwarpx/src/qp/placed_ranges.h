// PlacedRanges: which bytes of each outstanding Read have been placed, when
// Read Responses arrive unordered on SCTP (qp_orq_sctp.cc; docs/design.md
// "Unordered Read Responses").
//
// The requester keeps, per ORQ slot, the byte ranges (offsets inside the
// Read's sink range) that responses already placed, merged with their
// neighbours: segments that arrive in order leave one range per Read. A new
// segment is accepted only if it overlaps nothing placed for its Read, so a
// forged or duplicated segment can never complete a Read early (byte
// counting alone could: two copies of one half would add up to the whole).
//
// Contract:
// * Free(slot, b, e): true when [b, e) overlaps no range of `slot`.
// * Add(slot, b, e): records [b, e) (the caller checked Free and b < e).
//   False, nothing recorded, when it would need a new range while kMaxRanges
//   are held (a peer fragmenting its responses pathologically: the QP
//   Terminates rather than grow without bound).
// * Clear(slot): forgets `slot` (its Read completed or the slot is reused).
// * Storage: one vector for all slots of the QP, empty (no allocation) until
//   a Read Response arrives unordered-capable; linear scans (a handful of
//   ranges in practice). Not thread-safe (the QP's caller serialises).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace iwarpx::qp {

class PlacedRanges {
 public:
  static constexpr size_t kMaxRanges = 1024;

  [[nodiscard]] bool Free(size_t slot, uint64_t begin, uint64_t end) const;
  [[nodiscard]] bool Add(size_t slot, uint64_t begin, uint64_t end);
  void Clear(size_t slot);
  // Ranges held for all slots (tests).
  [[nodiscard]] size_t size() const { return ranges_.size(); }

 private:
  struct Range {
    size_t slot;
    uint64_t begin;
    uint64_t end;
  };
  std::vector<Range> ranges_;
};

}  // namespace iwarpx::qp
