#include "rdm/tag_matcher.h"

namespace iwarpx::rdm {
namespace {

bool TagMatches(uint64_t a, uint64_t b, uint64_t ignore) {
  return ((a ^ b) & ~ignore) == 0;
}

}  // namespace

uint32_t TagMatcher::Alloc() {
  if (free_ != kNil) {
    const uint32_t i = free_;
    free_ = nodes_[i].next[kAll];
    nodes_[i] = Node{};
    return i;
  }
  nodes_.emplace_back();
  return static_cast<uint32_t>(nodes_.size() - 1);
}

void TagMatcher::Free(uint32_t i) {
  nodes_[i].next[kAll] = free_;
  free_ = i;
}

void TagMatcher::PushBack(List& l, int link, uint32_t i) {
  Node& n = nodes_[i];
  n.prev[link] = l.tail;
  n.next[link] = kNil;
  if (l.tail == kNil) {
    l.head = i;
  } else {
    nodes_[l.tail].next[link] = i;
  }
  l.tail = i;
}

void TagMatcher::Unlink(List& l, int link, uint32_t i) {
  Node& n = nodes_[i];
  if (n.prev[link] == kNil) {
    l.head = n.next[link];
  } else {
    nodes_[n.prev[link]].next[link] = n.next[link];
  }
  if (n.next[link] == kNil) {
    l.tail = n.prev[link];
  } else {
    nodes_[n.next[link]].prev[link] = n.prev[link];
  }
  n.prev[link] = n.next[link] = kNil;
}

void TagMatcher::AddPosted(const PostedRecv& r) {
  const uint32_t i = Alloc();
  Node& n = nodes_[i];
  n.tag = r.tag;
  n.ignore = r.ignore;
  n.src = r.src;
  n.handle = r.handle;
  n.key = next_seq_++;
  PushBack(posted_, kAll, i);
  PushBack(r.src == kAnySource ? posted_any_ : posted_by_src_[r.src], kBin, i);
  ++posted_count_;
}

void TagMatcher::RemovePosted(uint32_t i) {
  const uint64_t src = nodes_[i].src;
  Unlink(posted_, kAll, i);
  // A directed receive's bin exists: AddPosted created it. Empty bins are
  // kept so a busy peer does not allocate on every post.
  Unlink(src == kAnySource ? posted_any_ : posted_by_src_.find(src)->second, kBin, i);
  Free(i);
  --posted_count_;
}

std::optional<uint64_t> TagMatcher::TakePosted(uint64_t tag, uint64_t src) {
  // The oldest match among the receives directed to src ...
  uint32_t best = kNil;
  if (src != kAnySource) {
    if (auto it = posted_by_src_.find(src); it != posted_by_src_.end()) {
      for (uint32_t i = it->second.head; i != kNil; i = nodes_[i].next[kBin]) {
        if (TagMatches(tag, nodes_[i].tag, nodes_[i].ignore)) {
          best = i;
          break;
        }
      }
    }
  }
  // ... unless a kAnySource receive posted before it matches too.
  for (uint32_t i = posted_any_.head; i != kNil; i = nodes_[i].next[kBin]) {
    if (best != kNil && nodes_[i].key > nodes_[best].key) break;
    if (TagMatches(tag, nodes_[i].tag, nodes_[i].ignore)) {
      best = i;
      break;
    }
  }
  if (best == kNil) return std::nullopt;
  const uint64_t handle = nodes_[best].handle;
  RemovePosted(best);
  return handle;
}

bool TagMatcher::CancelPosted(uint64_t handle) {
  for (uint32_t i = posted_.head; i != kNil; i = nodes_[i].next[kAll]) {
    if (nodes_[i].handle == handle) {
      RemovePosted(i);
      return true;
    }
  }
  return false;
}

std::optional<PostedRecv> TagMatcher::PopPosted() {
  const uint32_t i = posted_.head;
  if (i == kNil) return std::nullopt;
  const Node& n = nodes_[i];
  const PostedRecv r{.tag = n.tag, .ignore = n.ignore, .src = n.src, .handle = n.handle};
  RemovePosted(i);
  return r;
}

void TagMatcher::AddUnexpected(const Unexpected& m) {
  const uint32_t i = Alloc();
  Node& n = nodes_[i];
  n.tag = m.tag;
  n.src = m.src;
  n.handle = m.handle;
  PushBack(unexpected_, kAll, i);
  PushBack(unexpected_by_src_[m.src], kBin, i);
  ++unexpected_count_;
}

void TagMatcher::DetachUnexpected(uint32_t i) {
  Unlink(unexpected_, kAll, i);
  Unlink(unexpected_by_src_.find(nodes_[i].src)->second, kBin, i);
  --unexpected_count_;
}

uint32_t TagMatcher::FindUnexpected(uint64_t tag, uint64_t ignore, uint64_t src) const {
  uint32_t head = unexpected_.head;
  int link = kAll;
  if (src != kAnySource) {
    const auto it = unexpected_by_src_.find(src);
    if (it == unexpected_by_src_.end()) return kNil;
    head = it->second.head;
    link = kBin;
  }
  for (uint32_t i = head; i != kNil; i = nodes_[i].next[link]) {
    if (TagMatches(tag, nodes_[i].tag, ignore)) return i;
  }
  return kNil;
}

Unexpected TagMatcher::ToUnexpected(uint32_t i) const {
  const Node& n = nodes_[i];
  return Unexpected{.tag = n.tag, .src = n.src, .handle = n.handle};
}

std::optional<Unexpected> TagMatcher::TakeUnexpected(uint64_t tag, uint64_t ignore, uint64_t src) {
  const uint32_t i = FindUnexpected(tag, ignore, src);
  if (i == kNil) return std::nullopt;
  const Unexpected m = ToUnexpected(i);
  DetachUnexpected(i);
  Free(i);
  return m;
}

std::optional<Unexpected> TagMatcher::PeekUnexpected(uint64_t tag, uint64_t ignore,
                                                     uint64_t src) const {
  const uint32_t i = FindUnexpected(tag, ignore, src);
  if (i == kNil) return std::nullopt;
  return ToUnexpected(i);
}

std::optional<Unexpected> TagMatcher::ClaimUnexpected(uint64_t tag, uint64_t ignore, uint64_t src,
                                                      uint64_t claim) {
  const uint32_t i = FindUnexpected(tag, ignore, src);
  if (i == kNil) return std::nullopt;
  DetachUnexpected(i);
  nodes_[i].key = claim;
  PushBack(claimed_, kAll, i);
  ++claimed_count_;
  return ToUnexpected(i);
}

std::optional<Unexpected> TagMatcher::TakeClaimed(uint64_t claim) {
  for (uint32_t i = claimed_.head; i != kNil; i = nodes_[i].next[kAll]) {
    if (nodes_[i].key == claim) {
      const Unexpected m = ToUnexpected(i);
      Unlink(claimed_, kAll, i);
      --claimed_count_;
      Free(i);
      return m;
    }
  }
  return std::nullopt;
}

std::optional<Unexpected> TagMatcher::PopUnexpected() {
  if (unexpected_.head != kNil) {
    const uint32_t i = unexpected_.head;
    const Unexpected m = ToUnexpected(i);
    DetachUnexpected(i);
    Free(i);
    return m;
  }
  if (claimed_.head != kNil) return TakeClaimed(nodes_[claimed_.head].key);
  return std::nullopt;
}

}  // namespace iwarpx::rdm
