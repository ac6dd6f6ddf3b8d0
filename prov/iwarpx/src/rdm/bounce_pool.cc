#include "rdm/bounce_pool.h"

namespace iwarpx::rdm {

uint32_t BouncePool::Alloc() {
  if (!free_.empty()) {
    const uint32_t i = free_.back();
    free_.pop_back();
    return i;
  }
  if (count_ == slabs_.size() * kPerSlab) {
    slabs_.push_back(std::make_unique_for_overwrite<uint8_t[]>(kPerSlab * buffer_size_));
  }
  return count_++;
}

}  // namespace iwarpx::rdm
