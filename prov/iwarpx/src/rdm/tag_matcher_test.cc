#include "rdm/tag_matcher.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <optional>
#include <vector>

#include <gtest/gtest.h>

#include "base/random.h"

// Counts heap allocations so the steady-state test can check that matching
// does not allocate. Replacing the global operator new/delete is allowed by
// [replacement.functions]; this file is the only one in rdm_test doing it.
namespace {
std::atomic<uint64_t> g_allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  std::abort();  // no exceptions in this project
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t /*size*/) noexcept {
  std::free(p);
}
// The nothrow forms too: the rest of rdm_test (e.g. new (std::nothrow)
// QueuePair) must pair with the replaced delete.
void* operator new(std::size_t size, const std::nothrow_t& /*tag*/) noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
void operator delete(void* p, const std::nothrow_t& /*tag*/) noexcept {
  std::free(p);
}

namespace iwarpx::rdm {
namespace {

PostedRecv Recv(uint64_t tag, uint64_t ignore, uint64_t src, uint64_t handle) {
  return PostedRecv{.tag = tag, .ignore = ignore, .src = src, .handle = handle};
}
Unexpected Msg(uint64_t tag, uint64_t src, uint64_t handle) {
  return Unexpected{.tag = tag, .src = src, .handle = handle};
}
// Handle of an optional message, 0 when there is none (tests never use 0).
uint64_t H(const std::optional<Unexpected>& m) {
  return m ? m->handle : 0;
}

// --- posted receives -------------------------------------------------------

TEST(TagMatcherPosted, EmptyMatchesNothing) {
  TagMatcher t;
  EXPECT_EQ(t.TakePosted(1, 1), std::nullopt);
  EXPECT_EQ(t.posted_count(), 0u);
}

TEST(TagMatcherPosted, ExactTag) {
  TagMatcher t;
  t.AddPosted(Recv(5, 0, kAnySource, 11));
  EXPECT_EQ(t.TakePosted(6, 1), std::nullopt);
  EXPECT_EQ(t.TakePosted(4, 1), std::nullopt);
  EXPECT_EQ(t.posted_count(), 1u);
  EXPECT_EQ(t.TakePosted(5, 1), 11u);
  EXPECT_EQ(t.posted_count(), 0u);
  EXPECT_EQ(t.TakePosted(5, 1), std::nullopt);
}

TEST(TagMatcherPosted, IgnoreBits) {
  TagMatcher t;
  t.AddPosted(Recv(0x10, 0x0f, kAnySource, 1));
  EXPECT_EQ(t.TakePosted(0x20, 0), std::nullopt);  // a bit outside ignore differs
  EXPECT_EQ(t.TakePosted(0x11f, 0), std::nullopt);
  EXPECT_EQ(t.TakePosted(0x1f, 0), 1u);
  // The receive's own tag bits under ignore do not matter either.
  t.AddPosted(Recv(0xab, 0xff, kAnySource, 2));
  EXPECT_EQ(t.TakePosted(0x100, 0), std::nullopt);
  EXPECT_EQ(t.TakePosted(0x00, 0), 2u);
  // ignore = all ones matches every tag.
  t.AddPosted(Recv(0x1234, ~uint64_t{0}, kAnySource, 3));
  EXPECT_EQ(t.TakePosted(~uint64_t{0}, 7), 3u);
}

TEST(TagMatcherPosted, PostOrderAmongMatches) {
  TagMatcher t;
  t.AddPosted(Recv(7, 0, kAnySource, 1));
  t.AddPosted(Recv(8, 0, kAnySource, 2));
  t.AddPosted(Recv(0, ~uint64_t{0}, kAnySource, 3));  // matches all
  t.AddPosted(Recv(7, 0, kAnySource, 4));
  EXPECT_EQ(t.TakePosted(7, 0), 1u);
  EXPECT_EQ(t.TakePosted(7, 0), 3u);  // the wildcard was posted before 4
  EXPECT_EQ(t.TakePosted(7, 0), 4u);
  EXPECT_EQ(t.TakePosted(7, 0), std::nullopt);
  EXPECT_EQ(t.TakePosted(8, 0), 2u);
}

TEST(TagMatcherPosted, DirectedReceiveIgnoresOtherSources) {
  TagMatcher t;
  t.AddPosted(Recv(1, 0, 4, 1));
  EXPECT_EQ(t.TakePosted(1, 5), std::nullopt);
  EXPECT_EQ(t.posted_count(), 1u);
  EXPECT_EQ(t.TakePosted(1, 4), 1u);
}

TEST(TagMatcherPosted, DirectedAndAnySourceInterleavedInPostOrder) {
  TagMatcher t;
  t.AddPosted(Recv(1, 0, 1, 10));           // directed to 1
  t.AddPosted(Recv(1, 0, kAnySource, 20));  // any
  t.AddPosted(Recv(1, 0, 2, 30));           // directed to 2
  t.AddPosted(Recv(1, 0, 1, 40));           // directed to 1
  t.AddPosted(Recv(1, 0, kAnySource, 50));  // any
  EXPECT_EQ(t.TakePosted(1, 2), 20u);       // the any receive is older than 30
  EXPECT_EQ(t.TakePosted(1, 2), 30u);
  EXPECT_EQ(t.TakePosted(1, 1), 10u);
  EXPECT_EQ(t.TakePosted(1, 1), 40u);  // older than 50
  EXPECT_EQ(t.TakePosted(1, 1), 50u);
  EXPECT_EQ(t.TakePosted(1, 1), std::nullopt);
}

TEST(TagMatcherPosted, OlderNonMatchingWildcardIsSkipped) {
  TagMatcher t;
  t.AddPosted(Recv(9, 0, kAnySource, 1));  // wrong tag
  t.AddPosted(Recv(5, 0, 3, 2));
  t.AddPosted(Recv(5, 0, kAnySource, 3));
  t.AddPosted(Recv(5, 0xf0, kAnySource, 4));
  EXPECT_EQ(t.TakePosted(5, 3), 2u);
  EXPECT_EQ(t.TakePosted(5, 3), 3u);
  EXPECT_EQ(t.TakePosted(0x35, 3), 4u);
  EXPECT_EQ(t.posted_count(), 1u);
}

TEST(TagMatcherPosted, DirectedOlderThanWildcardWins) {
  TagMatcher t;
  t.AddPosted(Recv(0, ~uint64_t{0}, kAnySource, 1));
  EXPECT_EQ(t.TakePosted(3, 6), 1u);
  t.AddPosted(Recv(3, 0, 6, 2));
  t.AddPosted(Recv(0, ~uint64_t{0}, kAnySource, 3));
  EXPECT_EQ(t.TakePosted(3, 6), 2u);
  EXPECT_EQ(t.TakePosted(3, 6), 3u);
}

TEST(TagMatcherPosted, Cancel) {
  TagMatcher t;
  t.AddPosted(Recv(1, 0, kAnySource, 1));
  t.AddPosted(Recv(1, 0, 2, 2));
  t.AddPosted(Recv(1, 0, kAnySource, 3));
  t.AddPosted(Recv(1, 0, 2, 4));
  EXPECT_TRUE(t.CancelPosted(2));
  EXPECT_FALSE(t.CancelPosted(2));
  EXPECT_FALSE(t.CancelPosted(99));
  EXPECT_TRUE(t.CancelPosted(3));
  EXPECT_EQ(t.posted_count(), 2u);
  EXPECT_EQ(t.TakePosted(1, 2), 1u);
  EXPECT_EQ(t.TakePosted(1, 2), 4u);
  EXPECT_EQ(t.TakePosted(1, 2), std::nullopt);
  EXPECT_FALSE(t.CancelPosted(1));  // already matched
}

TEST(TagMatcherPosted, CancelWithDuplicateHandlesTakesTheOldest) {
  TagMatcher t;
  t.AddPosted(Recv(1, 0, kAnySource, 7));
  t.AddPosted(Recv(2, 0, kAnySource, 7));
  EXPECT_TRUE(t.CancelPosted(7));
  EXPECT_EQ(t.TakePosted(1, 0), std::nullopt);
  EXPECT_EQ(t.TakePosted(2, 0), 7u);
}

TEST(TagMatcherPosted, PopPostedDrainsInPostOrder) {
  TagMatcher t;
  t.AddPosted(Recv(1, 2, 3, 4));
  t.AddPosted(Recv(5, 6, kAnySource, 8));
  t.AddPosted(Recv(9, 0, 3, 10));
  auto a = t.PopPosted();
  ASSERT_TRUE(a);
  EXPECT_EQ(a->tag, 1u);
  EXPECT_EQ(a->ignore, 2u);
  EXPECT_EQ(a->src, 3u);
  EXPECT_EQ(a->handle, 4u);
  EXPECT_EQ(t.PopPosted()->handle, 8u);
  EXPECT_EQ(t.PopPosted()->handle, 10u);
  EXPECT_EQ(t.PopPosted(), std::nullopt);
  EXPECT_EQ(t.TakePosted(9, 3), std::nullopt);  // lists are consistent after the drain
}

// --- unexpected messages ---------------------------------------------------

TEST(TagMatcherUnexpected, ArrivalOrder) {
  TagMatcher t;
  t.AddUnexpected(Msg(1, 1, 100));
  t.AddUnexpected(Msg(1, 2, 200));
  t.AddUnexpected(Msg(1, 1, 300));
  t.AddUnexpected(Msg(2, 1, 400));
  EXPECT_EQ(t.unexpected_count(), 4u);
  EXPECT_EQ(H(t.TakeUnexpected(1, 0, 2)), 200u);  // directed skips the older one from 1
  EXPECT_EQ(H(t.TakeUnexpected(1, 0, kAnySource)), 100u);
  EXPECT_EQ(H(t.TakeUnexpected(1, 0, kAnySource)), 300u);
  EXPECT_EQ(t.TakeUnexpected(1, 0, kAnySource), std::nullopt);
  EXPECT_EQ(t.TakeUnexpected(2, 0, 2), std::nullopt);  // wrong source
  EXPECT_EQ(t.TakeUnexpected(2, 0, 7), std::nullopt);  // never-seen source
  const auto m = t.TakeUnexpected(2, 0, 1);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->tag, 2u);
  EXPECT_EQ(m->src, 1u);
  EXPECT_EQ(m->handle, 400u);
  EXPECT_EQ(t.unexpected_count(), 0u);
}

TEST(TagMatcherUnexpected, IgnoreBitsOfTheReceive) {
  TagMatcher t;
  t.AddUnexpected(Msg(0x21, 0, 1));
  t.AddUnexpected(Msg(0x13, 0, 2));
  EXPECT_EQ(t.TakeUnexpected(0x10, 0x0, kAnySource), std::nullopt);
  EXPECT_EQ(H(t.TakeUnexpected(0x10, 0x0f, kAnySource)), 2u);
  EXPECT_EQ(H(t.TakeUnexpected(0xff, ~uint64_t{0}, 0)), 1u);
}

TEST(TagMatcherUnexpected, PeekDoesNotRemove) {
  TagMatcher t;
  t.AddUnexpected(Msg(3, 1, 1));
  t.AddUnexpected(Msg(3, 2, 2));
  EXPECT_EQ(H(t.PeekUnexpected(3, 0, kAnySource)), 1u);
  EXPECT_EQ(H(t.PeekUnexpected(3, 0, kAnySource)), 1u);
  EXPECT_EQ(H(t.PeekUnexpected(3, 0, 2)), 2u);
  EXPECT_EQ(t.PeekUnexpected(4, 0, kAnySource), std::nullopt);
  EXPECT_EQ(t.unexpected_count(), 2u);
  EXPECT_EQ(H(t.TakeUnexpected(3, 0, kAnySource)), 1u);
  EXPECT_EQ(H(t.PeekUnexpected(3, 0, kAnySource)), 2u);
}

TEST(TagMatcherUnexpected, ClaimHidesTheMessage) {
  TagMatcher t;
  t.AddUnexpected(Msg(5, 1, 1));
  t.AddUnexpected(Msg(5, 1, 2));
  EXPECT_EQ(H(t.ClaimUnexpected(5, 0, 1, 0xc1)), 1u);
  EXPECT_EQ(t.unexpected_count(), 2u);  // still stored
  EXPECT_EQ(t.claimed_count(), 1u);
  EXPECT_EQ(H(t.PeekUnexpected(5, 0, 1)), 2u);
  EXPECT_EQ(H(t.PeekUnexpected(5, 0, kAnySource)), 2u);
  EXPECT_EQ(H(t.ClaimUnexpected(5, 0, kAnySource, 0xc2)), 2u);
  EXPECT_EQ(t.PeekUnexpected(5, 0, kAnySource), std::nullopt);
  EXPECT_EQ(t.TakeUnexpected(5, 0, 1), std::nullopt);
  EXPECT_EQ(t.ClaimUnexpected(5, 0, 1, 0xc3), std::nullopt);
  EXPECT_EQ(H(t.TakeClaimed(0xc1)), 1u);
  EXPECT_EQ(t.TakeClaimed(0xc1), std::nullopt);  // exactly once
  EXPECT_EQ(t.unexpected_count(), 1u);
  const auto m = t.TakeClaimed(0xc2);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->tag, 5u);
  EXPECT_EQ(m->src, 1u);
  EXPECT_EQ(m->handle, 2u);
  EXPECT_EQ(t.unexpected_count(), 0u);
  EXPECT_EQ(t.claimed_count(), 0u);
}

TEST(TagMatcherUnexpected, UnknownClaim) {
  TagMatcher t;
  EXPECT_EQ(t.TakeClaimed(1), std::nullopt);
  t.AddUnexpected(Msg(5, 1, 1));
  EXPECT_EQ(t.TakeClaimed(1), std::nullopt);  // stored but not claimed
  ASSERT_TRUE(t.ClaimUnexpected(5, 0, 1, 2));
  EXPECT_EQ(t.TakeClaimed(1), std::nullopt);
  EXPECT_EQ(t.TakeClaimed(3), std::nullopt);
  EXPECT_EQ(H(t.TakeClaimed(2)), 1u);
}

TEST(TagMatcherUnexpected, ManyClaimsOutstanding) {
  TagMatcher t;
  for (uint64_t i = 1; i <= 10; ++i) t.AddUnexpected(Msg(i, i % 3, i));
  for (uint64_t i = 1; i <= 10; ++i) ASSERT_EQ(H(t.ClaimUnexpected(i, 0, kAnySource, 100 + i)), i);
  EXPECT_EQ(t.claimed_count(), 10u);
  EXPECT_EQ(t.PeekUnexpected(0, ~uint64_t{0}, kAnySource), std::nullopt);
  for (uint64_t i = 10; i >= 1; --i) EXPECT_EQ(H(t.TakeClaimed(100 + i)), i);
  EXPECT_EQ(t.unexpected_count(), 0u);
}

TEST(TagMatcherUnexpected, SameClaimTwiceComesBackInClaimOrder) {
  TagMatcher t;
  t.AddUnexpected(Msg(1, 0, 1));
  t.AddUnexpected(Msg(2, 0, 2));
  ASSERT_TRUE(t.ClaimUnexpected(2, 0, kAnySource, 9));
  ASSERT_TRUE(t.ClaimUnexpected(1, 0, kAnySource, 9));
  EXPECT_EQ(H(t.TakeClaimed(9)), 2u);
  EXPECT_EQ(H(t.TakeClaimed(9)), 1u);
  EXPECT_EQ(t.TakeClaimed(9), std::nullopt);
}

TEST(TagMatcherUnexpected, PopUnexpectedDrainsUnclaimedThenClaimed) {
  TagMatcher t;
  t.AddUnexpected(Msg(1, 0, 1));
  t.AddUnexpected(Msg(2, 1, 2));
  t.AddUnexpected(Msg(3, 0, 3));
  ASSERT_TRUE(t.ClaimUnexpected(1, 0, 0, 5));
  EXPECT_EQ(H(t.PopUnexpected()), 2u);
  EXPECT_EQ(H(t.PopUnexpected()), 3u);
  EXPECT_EQ(H(t.PopUnexpected()), 1u);
  EXPECT_EQ(t.PopUnexpected(), std::nullopt);
  EXPECT_EQ(t.unexpected_count(), 0u);
  EXPECT_EQ(t.TakeClaimed(5), std::nullopt);
  EXPECT_EQ(t.TakeUnexpected(2, 0, 1), std::nullopt);
}

// --- untagged FI_MSG: tag = ignore = 0 ---------------------------------------

TEST(TagMatcherUntagged, EveryMessageMatchesDirectedBySourceOnly) {
  TagMatcher t;
  t.AddPosted(Recv(0, 0, 2, 1));
  t.AddPosted(Recv(0, 0, kAnySource, 2));
  t.AddPosted(Recv(0, 0, 2, 3));
  EXPECT_EQ(t.TakePosted(0, 1), 2u);
  EXPECT_EQ(t.TakePosted(0, 1), std::nullopt);
  EXPECT_EQ(t.TakePosted(0, 2), 1u);
  EXPECT_EQ(t.TakePosted(0, 2), 3u);

  t.AddUnexpected(Msg(0, 1, 10));
  t.AddUnexpected(Msg(0, 2, 20));
  t.AddUnexpected(Msg(0, 1, 30));
  EXPECT_EQ(H(t.PeekUnexpected(0, 0, 2)), 20u);
  EXPECT_EQ(H(t.TakeUnexpected(0, 0, 2)), 20u);
  EXPECT_EQ(t.TakeUnexpected(0, 0, 2), std::nullopt);
  EXPECT_EQ(H(t.TakeUnexpected(0, 0, kAnySource)), 10u);
  EXPECT_EQ(H(t.ClaimUnexpected(0, 0, kAnySource, 4)), 30u);
  EXPECT_EQ(t.TakeUnexpected(0, 0, kAnySource), std::nullopt);
  EXPECT_EQ(H(t.TakeClaimed(4)), 30u);
}

// --- scale and allocation ----------------------------------------------------

// MPI-like: many peers, each posting in order, messages arriving interleaved
// across peers; every receive is matched at the head of its source's list.
TEST(TagMatcherScale, ManySourcesInOrder) {
  constexpr uint64_t kSources = 500;
  constexpr uint64_t kPerSource = 100;
  TagMatcher t;
  for (uint64_t k = 0; k < kPerSource; ++k) {
    for (uint64_t s = 0; s < kSources; ++s) t.AddPosted(Recv(k, 0, s, s * kPerSource + k + 1));
  }
  for (uint64_t s = kSources; s-- > 0;) {
    for (uint64_t k = 0; k < kPerSource; ++k) {
      ASSERT_EQ(t.TakePosted(k, s), s * kPerSource + k + 1);
    }
  }
  EXPECT_EQ(t.posted_count(), 0u);
}

TEST(TagMatcherScale, NoAllocationInSteadyState) {
  TagMatcher t;
  auto round = [&t](uint64_t r) {
    for (uint64_t s = 0; s < 8; ++s) t.AddPosted(Recv(r, 0, s % 2 ? s : kAnySource, s + 1));
    for (uint64_t s = 0; s < 8; ++s) t.AddUnexpected(Msg(r, s, s + 1));
    ASSERT_TRUE(t.ClaimUnexpected(r, 0, 3, 77));
    for (uint64_t s = 0; s < 8; ++s) ASSERT_TRUE(t.TakePosted(r, s));
    ASSERT_TRUE(t.PeekUnexpected(r, 0, kAnySource));
    for (uint64_t s = 0; s < 8; ++s) {
      if (s != 3) {  // 3's message is claimed
        ASSERT_TRUE(t.TakeUnexpected(r, 0, s % 3 ? s : kAnySource));
      }
    }
    ASSERT_TRUE(t.TakeClaimed(77));
    ASSERT_FALSE(t.CancelPosted(0));
  };
  round(0);  // warm-up: pool and per-source tables reach their size
  const uint64_t before = g_allocations.load();
  for (uint64_t r = 1; r < 1000; ++r) round(r);
  EXPECT_EQ(g_allocations.load(), before);
  EXPECT_EQ(t.posted_count(), 0u);
  EXPECT_EQ(t.unexpected_count(), 0u);
}

// --- randomized against a reference model ------------------------------------

// The rules written as plainly as possible: vectors in order, linear search.
class Reference {
 public:
  std::optional<uint64_t> TakePosted(uint64_t tag, uint64_t src) {
    for (auto it = posted_.begin(); it != posted_.end(); ++it) {
      if ((tag & ~it->ignore) == (it->tag & ~it->ignore) &&
          (it->src == kAnySource || it->src == src)) {
        const uint64_t h = it->handle;
        posted_.erase(it);
        return h;
      }
    }
    return std::nullopt;
  }
  void AddPosted(const PostedRecv& r) { posted_.push_back(r); }
  bool CancelPosted(uint64_t handle) {
    for (auto it = posted_.begin(); it != posted_.end(); ++it) {
      if (it->handle == handle) {
        posted_.erase(it);
        return true;
      }
    }
    return false;
  }
  void AddUnexpected(const Unexpected& m) { unexpected_.push_back(m); }
  std::optional<Unexpected> Find(uint64_t tag, uint64_t ignore, uint64_t src, bool remove) {
    for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
      if ((it->tag & ~ignore) == (tag & ~ignore) && (src == kAnySource || it->src == src)) {
        const Unexpected m = *it;
        if (remove) unexpected_.erase(it);
        return m;
      }
    }
    return std::nullopt;
  }
  std::optional<Unexpected> Claim(uint64_t tag, uint64_t ignore, uint64_t src, uint64_t claim) {
    auto m = Find(tag, ignore, src, true);
    if (m) claimed_.push_back({claim, *m});
    return m;
  }
  std::optional<Unexpected> TakeClaimed(uint64_t claim) {
    for (auto it = claimed_.begin(); it != claimed_.end(); ++it) {
      if (it->first == claim) {
        const Unexpected m = it->second;
        claimed_.erase(it);
        return m;
      }
    }
    return std::nullopt;
  }
  std::optional<PostedRecv> PopPosted() {
    if (posted_.empty()) return std::nullopt;
    const PostedRecv r = posted_.front();
    posted_.erase(posted_.begin());
    return r;
  }
  // Unclaimed messages in arrival order, then claimed ones in claim order.
  std::optional<Unexpected> PopUnexpected() {
    if (!unexpected_.empty()) return Find(0, ~uint64_t{0}, kAnySource, true);
    if (claimed_.empty()) return std::nullopt;
    return TakeClaimed(claimed_.front().first);
  }
  size_t posted_count() const { return posted_.size(); }
  size_t unexpected_count() const { return unexpected_.size() + claimed_.size(); }
  size_t claimed_count() const { return claimed_.size(); }

 private:
  std::vector<PostedRecv> posted_;
  std::vector<Unexpected> unexpected_;
  std::vector<std::pair<uint64_t, Unexpected>> claimed_;
};

void ExpectSame(const std::optional<Unexpected>& a, const std::optional<Unexpected>& b, int op) {
  ASSERT_EQ(a.has_value(), b.has_value()) << "op " << op;
  if (!a) return;
  ASSERT_EQ(a->tag, b->tag) << "op " << op;
  ASSERT_EQ(a->src, b->src) << "op " << op;
  ASSERT_EQ(a->handle, b->handle) << "op " << op;
}

TEST(TagMatcherRandom, MatchesReferenceModel) {
  constexpr int kOps = 100000;
  constexpr uint64_t kIgnores[] = {0, 0, 0, 1, 3, 0xf0, 1ULL << 63, ~uint64_t{0}};
  Random rng(20261125);
  TagMatcher t;
  Reference ref;
  uint64_t next_handle = 1;
  auto tag = [&rng] {
    return rng.Below(8) | (rng.Below(4) == 0 ? 0x30 : 0) | (rng.Below(8) == 0 ? 1ULL << 63 : 0);
  };
  auto ignore = [&rng, &kIgnores] { return kIgnores[rng.Below(std::size(kIgnores))]; };
  auto src = [&rng] { return rng.Below(5); };  // 5 sources
  auto recv_src = [&rng, &src] { return rng.Below(3) == 0 ? kAnySource : src(); };
  uint64_t matched = 0, claimed = 0, cancelled = 0;

  for (int op = 0; op < kOps; ++op) {
    // 1 in 8 phases is untagged only, as an FI_MSG endpoint would be.
    const bool untagged = (op / 1000) % 8 == 0;
    switch (rng.Below(10)) {
      case 0:
      case 1: {
        if (ref.posted_count() > 100) break;
        const PostedRecv r = untagged ? Recv(0, 0, recv_src(), next_handle++)
                                      : Recv(tag(), ignore(), recv_src(), next_handle++);
        t.AddPosted(r);
        ref.AddPosted(r);
        break;
      }
      case 2: {
        const uint64_t tg = untagged ? 0 : tag();
        const uint64_t s = src();
        const auto got = t.TakePosted(tg, s);
        ASSERT_EQ(got, ref.TakePosted(tg, s)) << "op " << op;
        matched += got.has_value();
        break;
      }
      case 3: {
        if (rng.Below(3) != 0) break;  // cancels are rarer
        // Mostly recent handles (likely still posted), sometimes any or unused.
        const uint64_t h = rng.Below(4) != 0
                               ? next_handle - 1 - rng.Below(std::min<uint64_t>(next_handle, 300))
                               : rng.Below(next_handle + 5);
        const bool got = t.CancelPosted(h);
        ASSERT_EQ(got, ref.CancelPosted(h)) << "op " << op;
        cancelled += got;
        break;
      }
      case 4:
      case 5: {
        if (ref.unexpected_count() > 100) break;
        const Unexpected m = Msg(untagged ? 0 : tag(), src(), next_handle++);
        t.AddUnexpected(m);
        ref.AddUnexpected(m);
        break;
      }
      case 6:
      case 7: {
        const uint64_t tg = untagged ? 0 : tag();
        const uint64_t ig = untagged ? 0 : ignore();
        const uint64_t s = recv_src();
        if (rng.Below(2) == 0) {
          ExpectSame(t.TakeUnexpected(tg, ig, s), ref.Find(tg, ig, s, true), op);
        } else {
          ExpectSame(t.PeekUnexpected(tg, ig, s), ref.Find(tg, ig, s, false), op);
        }
        break;
      }
      case 8: {
        const uint64_t tg = untagged ? 0 : tag();
        const uint64_t ig = untagged ? 0 : ignore();
        const uint64_t s = recv_src();
        const uint64_t c = 1 + rng.Below(64);  // repeats happen
        const auto got = t.ClaimUnexpected(tg, ig, s, c);
        ExpectSame(got, ref.Claim(tg, ig, s, c), op);
        claimed += got.has_value();
        break;
      }
      case 9: {
        const uint64_t c = 1 + rng.Below(80);  // some never claimed
        ExpectSame(t.TakeClaimed(c), ref.TakeClaimed(c), op);
        break;
      }
    }
    ASSERT_EQ(t.posted_count(), ref.posted_count()) << "op " << op;
    ASSERT_EQ(t.unexpected_count(), ref.unexpected_count()) << "op " << op;
    ASSERT_EQ(t.claimed_count(), ref.claimed_count()) << "op " << op;
    if (HasFailure()) return;  // the first divergence is the useful one
  }
  // The run exercised every path, not just empty lists.
  std::printf("matched %llu, claimed %llu, cancelled %llu\n",
              static_cast<unsigned long long>(matched), static_cast<unsigned long long>(claimed),
              static_cast<unsigned long long>(cancelled));
  EXPECT_GT(matched, 5000u);
  EXPECT_GT(claimed, 1000u);
  EXPECT_GT(cancelled, 100u);
  // Drain both and compare what is left, in order.
  while (const auto r = ref.PopPosted()) {
    const auto got = t.PopPosted();
    ASSERT_TRUE(got);
    EXPECT_EQ(got->handle, r->handle);
  }
  EXPECT_EQ(t.PopPosted(), std::nullopt);
  while (const auto m = ref.PopUnexpected()) ExpectSame(t.PopUnexpected(), m, kOps);
  EXPECT_EQ(t.PopUnexpected(), std::nullopt);
  EXPECT_EQ(t.unexpected_count(), 0u);
}

}  // namespace
}  // namespace iwarpx::rdm
