// PlacedRanges (see the header for the contract).
#include "qp/placed_ranges.h"

#include <algorithm>

namespace iwarpx::qp {

bool PlacedRanges::Free(size_t slot, uint64_t begin, uint64_t end) const {
  return std::none_of(ranges_.begin(), ranges_.end(), [&](const Range& r) {
    return r.slot == slot && begin < r.end && r.begin < end;
  });
}

bool PlacedRanges::Add(size_t slot, uint64_t begin, uint64_t end) {
  Range* left = nullptr;   // ends where the new one begins
  Range* right = nullptr;  // begins where the new one ends
  for (Range& r : ranges_) {
    if (r.slot != slot) continue;
    if (r.end == begin) left = &r;
    if (r.begin == end) right = &r;
  }
  if (left != nullptr && right != nullptr) {
    left->end = right->end;
    *right = ranges_.back();  // swap-remove right (left, if last, moves into it)
    ranges_.pop_back();
    return true;
  }
  if (left != nullptr) {
    left->end = end;
    return true;
  }
  if (right != nullptr) {
    right->begin = begin;
    return true;
  }
  if (ranges_.size() >= kMaxRanges) return false;
  ranges_.push_back(Range{slot, begin, end});
  return true;
}

void PlacedRanges::Clear(size_t slot) {
  std::erase_if(ranges_, [slot](const Range& r) { return r.slot == slot; });
}

}  // namespace iwarpx::qp
