#include "mem/stag_table.h"

#include <array>
#include <set>

#include <gtest/gtest.h>

namespace iwarpx::mem {
namespace {

constexpr uint32_t kPd = 7;

class StagTableTest : public ::testing::Test {
 protected:
  StagTable table_{Random(1234), 64};
  std::array<uint8_t, 4096> buf_{};

  uint32_t Reg(uint32_t access, uint64_t base_to = 0x10000) {
    auto r = table_.Register({buf_.data(), buf_.size(), base_to, access, kPd});
    EXPECT_TRUE(r.ok());
    return r.ok() ? *r : 0;
  }
};

TEST_F(StagTableTest, ResolvesInsideTheRegion) {
  const uint32_t s = Reg(kRemoteWrite | kRemoteRead);
  auto p = table_.Resolve(s, 0x10000 + 100, 50, kRemoteWrite, kPd);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, buf_.data() + 100);
  auto whole = table_.Resolve(s, 0x10000, buf_.size(), kRemoteRead, kPd);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(*whole, buf_.data());
}

TEST_F(StagTableTest, OneByteOutOfBoundsIsRefused) {
  const uint32_t s = Reg(kRemoteWrite);
  EXPECT_EQ(table_.Resolve(s, 0x10000 + 1, buf_.size(), kRemoteWrite, kPd).error(),
            AccessError::kBaseBounds);
  EXPECT_EQ(table_.Resolve(s, 0x10000 - 1, 1, kRemoteWrite, kPd).error(), AccessError::kBaseBounds);
  EXPECT_EQ(table_.Resolve(s, 0x10000 + buf_.size(), 1, kRemoteWrite, kPd).error(),
            AccessError::kBaseBounds);
  EXPECT_TRUE(table_.Resolve(s, 0x10000 + buf_.size() - 1, 1, kRemoteWrite, kPd).ok());
}

TEST_F(StagTableTest, WrapIsDetectedWithoutOverflow) {
  const uint32_t s = Reg(kRemoteWrite);
  EXPECT_EQ(table_.Resolve(s, UINT64_MAX - 10, 100, kRemoteWrite, kPd).error(),
            AccessError::kToWrap);
  EXPECT_EQ(table_.Resolve(s, 0x10000, UINT64_MAX, kRemoteWrite, kPd).error(),
            AccessError::kToWrap);
  // Huge but not wrapping: a bounds error, found without computing to+len.
  EXPECT_EQ(table_.Resolve(s, 0x10000, UINT64_MAX - 0x10000, kRemoteWrite, kPd).error(),
            AccessError::kBaseBounds);
  // Ending exactly at 2^64 does not wrap, but is out of this region.
  EXPECT_EQ(table_.Resolve(s, UINT64_MAX, 1, kRemoteWrite, kPd).error(), AccessError::kBaseBounds);
}

TEST_F(StagTableTest, RegionAtTopOfAddressSpace) {
  auto r = table_.Register({buf_.data(), 16, UINT64_MAX - 15, kRemoteRead, kPd});
  ASSERT_TRUE(r.ok());
  auto p = table_.Resolve(*r, UINT64_MAX - 15, 16, kRemoteRead, kPd);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, buf_.data());
  auto wraps = table_.Register({buf_.data(), 17, UINT64_MAX - 15, kRemoteRead, kPd});
  EXPECT_EQ(wraps.error(), RegisterError::kInvalidArgument);
}

TEST_F(StagTableTest, ZeroLengthAccess) {
  const uint32_t s = Reg(kRemoteWrite);
  EXPECT_TRUE(table_.Resolve(s, 0x10000 + buf_.size(), 0, kRemoteWrite, kPd).ok());
  EXPECT_EQ(table_.Resolve(s, 0x10000 + buf_.size() + 1, 0, kRemoteWrite, kPd).error(),
            AccessError::kBaseBounds);
}

TEST_F(StagTableTest, AccessRightsAreEnforced) {
  const uint32_t ro = Reg(kRemoteRead);
  EXPECT_EQ(table_.Resolve(ro, 0x10000, 8, kRemoteWrite, kPd).error(), AccessError::kAccessRights);
  EXPECT_EQ(table_.Resolve(ro, 0x10000, 8, kRemoteRead | kRemoteAtomic, kPd).error(),
            AccessError::kAccessRights);
  EXPECT_TRUE(table_.Resolve(ro, 0x10000, 8, kRemoteRead, kPd).ok());
}

TEST_F(StagTableTest, OtherProtectionDomainIsRefused) {
  const uint32_t s = Reg(kRemoteWrite);
  EXPECT_EQ(table_.Resolve(s, 0x10000, 8, kRemoteWrite, kPd + 1).error(),
            AccessError::kNotAssociated);
  EXPECT_FALSE(table_.Invalidate(s, kPd + 1));
}

TEST_F(StagTableTest, InvalidatedAndDeregisteredStagsAreRefused) {
  const uint32_t s = Reg(kRemoteWrite);
  ASSERT_TRUE(table_.Invalidate(s, kPd));
  EXPECT_FALSE(table_.Invalidate(s, kPd)) << "already invalid";
  EXPECT_EQ(table_.Resolve(s, 0x10000, 8, kRemoteWrite, kPd).error(), AccessError::kInvalidStag);
  EXPECT_TRUE(table_.Deregister(s));
  EXPECT_FALSE(table_.Deregister(s));
  EXPECT_EQ(table_.Resolve(s, 0x10000, 8, kRemoteWrite, kPd).error(), AccessError::kInvalidStag);
  EXPECT_EQ(table_.Resolve(0, 0, 0, 0, kPd).error(), AccessError::kInvalidStag);
}

TEST_F(StagTableTest, KeysAreRandomNotSequential) {
  std::set<uint32_t> keys;
  std::set<uint32_t> low_bytes;
  uint32_t prev = 0;
  int consecutive = 0;
  for (int i = 0; i < 32; ++i) {
    const uint32_t s = Reg(kRemoteRead);
    ASSERT_NE(s, 0u);
    keys.insert(s);
    low_bytes.insert(s & 0xFF);
    if (i > 0 && (s == prev + 1 || s == prev + 0x100)) ++consecutive;
    prev = s;
  }
  EXPECT_EQ(keys.size(), 32u);
  EXPECT_EQ(consecutive, 0);
  EXPECT_GT(low_bytes.size(), 16u) << "the key byte must vary";
}

TEST_F(StagTableTest, TwoTablesWithOsSeedsDisagree) {
  StagTable a(Random::FromOs(), 4), b(Random::FromOs(), 4);
  auto ka = a.Register({buf_.data(), 8, 0, kRemoteRead, kPd});
  auto kb = b.Register({buf_.data(), 8, 0, kRemoteRead, kPd});
  ASSERT_TRUE(ka.ok() && kb.ok());
  EXPECT_NE(*ka, *kb);
}

TEST_F(StagTableTest, RequestedStagAndLimits) {
  ASSERT_TRUE(table_.RegisterWithStag(0x1234, {buf_.data(), 8, 0, kRemoteRead, kPd}).ok());
  EXPECT_EQ(table_.RegisterWithStag(0x1234, {buf_.data(), 8, 0, kRemoteRead, kPd}).error(),
            RegisterError::kStagInUse);
  EXPECT_EQ(table_.RegisterWithStag(0, {buf_.data(), 8, 0, kRemoteRead, kPd}).error(),
            RegisterError::kStagInUse);
  EXPECT_EQ(table_.Register({nullptr, 8, 0, kRemoteRead, kPd}).error(),
            RegisterError::kInvalidArgument);
  EXPECT_EQ(table_.Register({buf_.data(), 8, 0, 1u << 20, kPd}).error(),
            RegisterError::kInvalidArgument);
  StagTable small(Random(1), 2);
  ASSERT_TRUE(small.Register({buf_.data(), 8, 0, kRemoteRead, kPd}).ok());
  ASSERT_TRUE(small.Register({buf_.data(), 8, 0, kRemoteRead, kPd}).ok());
  EXPECT_EQ(small.Register({buf_.data(), 8, 0, kRemoteRead, kPd}).error(),
            RegisterError::kTableFull);
}

// Resolve() against a reference written with 128-bit arithmetic, on random
// regions and accesses concentrated around the edges.
// Lending: Deregister asks only while lends are out, and every registered
// borrower until the region's lends are all returned.
class CountingBorrower final : public Borrower {
 public:
  explicit CountingBorrower(StagTable& t) : t_(t) {}
  void Reclaim(uint32_t stag) override {
    ++asked;
    for (; held > 0; --held) t_.Return(stag);
  }
  StagTable& t_;
  int asked = 0;
  uint32_t held = 0;
};

TEST_F(StagTableTest, DeregisterReclaimsLentRegionsFromTheirBorrowers) {
  CountingBorrower idle(table_), holder(table_);
  table_.AddBorrower(idle);
  table_.AddBorrower(holder);
  const uint32_t s = Reg(kRemoteRead);
  const uint32_t quiet = Reg(kRemoteRead);
  ASSERT_TRUE(table_.Lend(s));
  ASSERT_TRUE(table_.Lend(s));
  holder.held = 2;
  EXPECT_EQ(table_.lent(s), 2u);
  EXPECT_FALSE(table_.Lend(0x1234));      // unknown: nothing lent
  EXPECT_TRUE(table_.Deregister(quiet));  // nothing lent: nobody asked
  EXPECT_EQ(idle.asked + holder.asked, 0);
  EXPECT_TRUE(table_.Deregister(s));
  EXPECT_EQ(holder.asked, 1);
  EXPECT_EQ(holder.held, 0u);
  EXPECT_EQ(table_.lent(s), 0u);
  table_.RemoveBorrower(idle);
  table_.RemoveBorrower(holder);
}

TEST_F(StagTableTest, ReturnedLendsNeedNoReclaim) {
  CountingBorrower b(table_);
  table_.AddBorrower(b);
  const uint32_t s = Reg(kRemoteRead);
  ASSERT_TRUE(table_.Lend(s));
  table_.Return(s);
  EXPECT_TRUE(table_.Deregister(s));
  EXPECT_EQ(b.asked, 0);
  table_.RemoveBorrower(b);
}

TEST(StagTableProperty, MatchesWideArithmeticReference) {
  Random rng(99);
  std::array<uint8_t, 64> mem{};
  for (int i = 0; i < 20000; ++i) {
    StagTable t(Random(rng.Next64()), 1);
    const uint64_t len = rng.Below(4) == 0 ? 0 : rng.Below(64) + 1;
    const uint64_t base = rng.Below(2) ? UINT64_MAX - len - rng.Below(4) : rng.Below(1000);
    auto s = t.Register({mem.data(), len, base, kRemoteWrite, 1});
    ASSERT_TRUE(s.ok());
    const uint64_t to = base + rng.Below(80) - 8;  // may be below base or wrap
    const uint64_t alen = rng.Below(8) == 0 ? UINT64_MAX - rng.Below(3) : rng.Below(80);
    const unsigned __int128 end = static_cast<unsigned __int128>(to) + alen;
    const bool wraps = alen != 0 && end > (static_cast<unsigned __int128>(1) << 64);
    const bool inside = to >= base && end <= static_cast<unsigned __int128>(base) + len;
    auto r = t.Resolve(*s, to, alen, kRemoteWrite, 1);
    if (wraps) {
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.error(), AccessError::kToWrap);
    } else if (inside) {
      ASSERT_TRUE(r.ok()) << "to=" << to << " len=" << alen << " base=" << base;
      EXPECT_EQ(*r, mem.data() + (to - base));
    } else {
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.error(), AccessError::kBaseBounds);
    }
  }
}

TEST(StagTableCauses, MapToRfcTerminateCodes) {
  EXPECT_EQ(TaggedSinkCause(AccessError::kBaseBounds), wire::term::kDdpTaggedBaseBounds);
  EXPECT_EQ(TaggedSinkCause(AccessError::kAccessRights), wire::term::kDdpTaggedInvalidStag);
  EXPECT_EQ(TaggedSinkCause(AccessError::kToWrap), wire::term::kDdpTaggedToWrap);
  EXPECT_EQ(RdmapSourceCause(AccessError::kAccessRights), wire::term::kRdmapAccessRights);
  EXPECT_EQ(RdmapSourceCause(AccessError::kNotAssociated), wire::term::kRdmapStagNotAssociated);
  EXPECT_EQ(RdmapSourceCause(AccessError::kInvalidStag), wire::term::kRdmapInvalidStag);
}

}  // namespace
}  // namespace iwarpx::mem
