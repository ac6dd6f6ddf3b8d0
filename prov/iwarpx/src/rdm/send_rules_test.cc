#include "rdm/send_rules.h"

#include <string>

#include <gtest/gtest.h>

namespace iwarpx::rdm {
namespace {

SendRuleChain MustParse(std::string_view text) {
  auto c = SendRuleChain::Parse(text);
  EXPECT_TRUE(c.ok()) << text << ": " << (c.ok() ? "" : c.error());
  return c.ok() ? std::move(c).value() : SendRuleChain::Default();
}

std::string ErrorOf(std::string_view text) {
  auto c = SendRuleChain::Parse(text);
  EXPECT_FALSE(c.ok()) << text << " was accepted as " << (c.ok() ? c->ToString() : "");
  return c.ok() ? std::string() : c.error();
}

constexpr std::string_view kAptus =
    "size<=2048:rc_fp,size<=2008:ud_sr,size<=8192:rc_sr,size<=8192:ud_sr,any:rc_rdma,any:ud_zcopy";

const ChannelSet kAll{Channel::kUdSr, Channel::kUdZcopy, Channel::kRcSr, Channel::kRcFp,
                      Channel::kRcRdma};
const ChannelSet kUdOnly{Channel::kUdSr, Channel::kUdZcopy};

TEST(SendRules, TheIssueExampleParsesAndPicksTheFirstUsableRule) {
  const SendRuleChain c = MustParse(kAptus);
  ASSERT_EQ(c.rules().size(), 6u);
  const ChannelLimits lim;
  EXPECT_EQ(c.Select(8, 2, kAll, lim), Channel::kRcFp);
  EXPECT_EQ(c.Select(2048, 2, kAll, lim), Channel::kRcFp);
  EXPECT_EQ(c.Select(2049, 2, kAll, lim), Channel::kRcSr);
  EXPECT_EQ(c.Select(8193, 2, kAll, lim), Channel::kRcRdma);
  // A peer still on datagrams only.
  EXPECT_EQ(c.Select(8, 2, kUdOnly, lim), Channel::kUdSr);
  EXPECT_EQ(c.Select(2008, 2, kUdOnly, lim), Channel::kUdSr);
  EXPECT_EQ(c.Select(2009, 2, kUdOnly, lim), Channel::kUdSr);  // rule 4
  EXPECT_EQ(c.Select(8193, 2, kUdOnly, lim), Channel::kUdZcopy);
}

TEST(SendRules, ChannelLimitsSkipARuleWhoseChannelCannotCarryTheMessage) {
  const SendRuleChain c = MustParse("any:rc_fp,any:ud_sr,any:ud_zcopy");
  ChannelLimits lim;
  lim.max_size[static_cast<int>(Channel::kRcFp)] = 1024;
  lim.max_size[static_cast<int>(Channel::kUdSr)] = 16352;
  EXPECT_EQ(c.Select(1024, 1, kAll, lim), Channel::kRcFp);
  EXPECT_EQ(c.Select(1025, 1, kAll, lim), Channel::kUdSr);
  EXPECT_EQ(c.Select(16352, 1, kAll, lim), Channel::kUdSr);
  EXPECT_EQ(c.Select(16353, 1, kAll, lim), Channel::kUdZcopy);
}

TEST(SendRules, TheDefaultChainIsEagerWhereItFitsAndRendezvousAbove) {
  const SendRuleChain& c = SendRuleChain::Default();
  EXPECT_EQ(c.ToString(), SendRuleChain::kDefaultText);
  ChannelLimits lim;
  lim.max_size[static_cast<int>(Channel::kUdSr)] = 100;
  EXPECT_EQ(c.Select(0, 1, kUdOnly, lim), Channel::kUdSr);
  EXPECT_EQ(c.Select(100, 1, kUdOnly, lim), Channel::kUdSr);
  EXPECT_EQ(c.Select(101, 1, kUdOnly, lim), Channel::kUdZcopy);
  // UD-ZCopy is there even when the caller forgot it.
  EXPECT_EQ(c.Select(101, 1, ChannelSet{}, lim), Channel::kUdZcopy);
}

TEST(SendRules, ConditionsCombineSizeAndPeersWithAllOperators) {
  const SendRuleChain c = MustParse(
      " size > 1k & size < 4k & peers >= 8 : rc_sr ,\tpeers==3:rc_fp, size>=2m:rc_rdma,"
      "any:ud_zcopy");
  const ChannelLimits lim;
  EXPECT_EQ(c.Select(1024, 8, kAll, lim), Channel::kUdZcopy);
  EXPECT_EQ(c.Select(1025, 8, kAll, lim), Channel::kRcSr);
  EXPECT_EQ(c.Select(4095, 9, kAll, lim), Channel::kRcSr);
  EXPECT_EQ(c.Select(4096, 9, kAll, lim), Channel::kUdZcopy);
  EXPECT_EQ(c.Select(2000, 7, kAll, lim), Channel::kUdZcopy);
  EXPECT_EQ(c.Select(5, 3, kAll, lim), Channel::kRcFp);
  EXPECT_EQ(c.Select(2u << 20, 1, kAll, lim), Channel::kRcRdma);
  EXPECT_EQ(c.Select((2u << 20) - 1, 1, kAll, lim), Channel::kUdZcopy);
  EXPECT_TRUE(c.named().Has(Channel::kRcSr));
  EXPECT_FALSE(c.named().Has(Channel::kUdSr));
}

// The copy rendezvous: named like any channel, chosen where the caller has
// it (RdmCore always offers it), skipped where not; never the last rule.
TEST(SendRules, CopyChannelIsChosenWhereOfferedAndNeverLast) {
  const SendRuleChain c = MustParse("any:ud_sr,size<=1m:copy,any:ud_zcopy");
  ChannelLimits lim;
  lim.max_size[static_cast<int>(Channel::kUdSr)] = 4064;
  ChannelSet with_copy = kUdOnly;
  with_copy.Add(Channel::kCopy);
  EXPECT_EQ(c.Select(4064, 1, with_copy, lim), Channel::kUdSr);
  EXPECT_EQ(c.Select(4065, 1, with_copy, lim), Channel::kCopy);
  EXPECT_EQ(c.Select(1u << 20, 1, with_copy, lim), Channel::kCopy);
  EXPECT_EQ(c.Select((1u << 20) + 1, 1, with_copy, lim), Channel::kUdZcopy);
  EXPECT_EQ(c.Select(4065, 1, kUdOnly, lim), Channel::kUdZcopy);
  EXPECT_TRUE(c.named().Has(Channel::kCopy));
  EXPECT_EQ(ChannelName(Channel::kCopy), "copy");
  EXPECT_EQ(MustParse(c.ToString()), c);
  EXPECT_NE(ErrorOf("any:ud_sr,any:copy").find("last rule must be \"any:ud_zcopy\""),
            std::string::npos);
  EXPECT_NE(ErrorOf("any:copies,any:ud_zcopy").find("copy)"), std::string::npos);
}

TEST(SendRules, ToStringIsCanonicalAndParsesBackToTheSameChain) {
  for (const std::string_view text :
       {kAptus, std::string_view("size>1k&size<4k&peers>=8:rc_sr,peers==3:rc_fp,any:ud_zcopy"),
        std::string_view("size==0:ud_sr,any:ud_zcopy"), SendRuleChain::kDefaultText}) {
    const SendRuleChain c = MustParse(text);
    const SendRuleChain back = MustParse(c.ToString());
    EXPECT_EQ(c, back) << text << " -> " << c.ToString();
    EXPECT_EQ(back.ToString(), c.ToString());
  }
  EXPECT_EQ(MustParse("size<4k&size>1k:rc_sr,any:ud_zcopy").ToString(),
            "size>=1025&size<=4095:rc_sr,any:ud_zcopy");
}

TEST(SendRules, MalformedChainsAreRefusedWithTheRuleAndTheReason) {
  EXPECT_NE(ErrorOf("").find("rule 1"), std::string::npos);
  EXPECT_NE(ErrorOf("").find("empty rule"), std::string::npos);
  EXPECT_NE(ErrorOf("any:ud_sr,,any:ud_zcopy").find("rule 2"), std::string::npos);
  EXPECT_NE(ErrorOf("any:ud_zcopy,").find("rule 2"), std::string::npos);
  EXPECT_NE(ErrorOf("size<=8k:tcp,any:ud_zcopy").find("unknown channel \"tcp\""),
            std::string::npos);
  EXPECT_NE(ErrorOf("len<=8:ud_sr,any:ud_zcopy").find("before \"len\""), std::string::npos);
  EXPECT_NE(ErrorOf("size=8:ud_sr,any:ud_zcopy").find("<= < >= > =="), std::string::npos);
  EXPECT_NE(ErrorOf("size<=:ud_sr,any:ud_zcopy").find("expected a number"), std::string::npos);
  EXPECT_NE(ErrorOf("size<=8x:ud_sr,any:ud_zcopy").find("expected \":\""), std::string::npos);
  EXPECT_NE(ErrorOf("size<=8 ud_sr,any:ud_zcopy").find("expected \":\""), std::string::npos);
  EXPECT_NE(ErrorOf("size<=99999999999999999999:ud_sr,any:ud_zcopy").find("expected a number"),
            std::string::npos);
  EXPECT_NE(ErrorOf("size<=20000000000000g:ud_sr,any:ud_zcopy").find("expected a number"),
            std::string::npos);
  EXPECT_NE(ErrorOf("size<0:ud_sr,any:ud_zcopy").find("never hold"), std::string::npos);
  EXPECT_NE(ErrorOf("size>8&size<4:ud_sr,any:ud_zcopy").find("never hold"), std::string::npos);
  EXPECT_NE(ErrorOf("any:ud_sr extra,any:ud_zcopy").find("unexpected \"extra\""),
            std::string::npos);
  EXPECT_NE(ErrorOf("ANY:ud_zcopy").find("rule 1"), std::string::npos);
}

TEST(SendRules, TheLastRuleMustBeAnyUdZcopy) {
  for (const std::string_view text :
       {"any:ud_sr", "size<=8k:ud_sr", "any:ud_zcopy,any:rc_rdma", "size<=1g:ud_zcopy"}) {
    EXPECT_NE(ErrorOf(text).find("last rule must be \"any:ud_zcopy\""), std::string::npos) << text;
  }
}

TEST(SendRules, AtMostKMaxRules) {
  std::string text;
  for (size_t i = 0; i + 1 < SendRuleChain::kMaxRules; ++i) text += "size<=8:ud_sr,";
  text += "any:ud_zcopy";
  EXPECT_EQ(MustParse(text).rules().size(), SendRuleChain::kMaxRules);
  EXPECT_NE(ErrorOf("size<=8:ud_sr," + text).find("more than 32 rules"), std::string::npos);
}

}  // namespace
}  // namespace iwarpx::rdm
