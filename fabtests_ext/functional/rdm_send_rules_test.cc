// FI_IWARPX_SEND_RULES through the public API: ctest runs this program once
// per chain (the provider reads its parameters when libfabric loads it) with
// IWARPX_RULES_EXPECT saying what the chain must do:
//   refused      fi_endpoint fails with -FI_EINVAL (the chain does not parse,
//                or its last rule is not any:ud_zcopy)
//   SMALL/LARGE  a message of SMALL bytes goes eagerly and one of LARGE
//                bytes by rendezvous, told apart by what libfabric shows: an
//                eager send completes while the receiver has posted nothing
//                (the RD stream holds the copy), a rendezvous send only once
//                the receiver matched it and pulled the data (FIN).
//                "-" as SMALL means no size goes eagerly.
// Without both variables the test fails: it is not meant to run bare.
#include <chrono>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "rdm_fixture.h"

namespace {

using rdmtest::Bytes;
using rdmtest::Ctx;
using rdmtest::Net;
using rdmtest::Pattern;
using rdmtest::Side;

// Sends `size` bytes A -> B with no receive posted at B for 200 ms, then
// posts it. Returns whether the send had completed before the receive was
// posted (eager); the data is checked either way.
bool SentBeforeReceive(Net& net, Side* a, Side* b, size_t size, uint64_t seed) {
  const Bytes m = Pattern(size, seed);
  Bytes dst(size, 0);
  void* sctx = Ctx(0x100 + seed);
  void* rctx = Ctx(0x200 + seed);
  EXPECT_EQ(net.Post([&] { return fi_tsend(a->ep, m.data(), size, nullptr, a->To(*b), 7, sctx); }),
            0);
  net.Drive(std::chrono::milliseconds(200));
  const bool early = a->tx.Take(sctx).has_value();
  EXPECT_EQ(fi_trecv(b->ep, dst.data(), size, nullptr, FI_ADDR_UNSPEC, 7, 0, rctx), 0);
  auto r = net.WaitComp(b->rx, rctx);
  EXPECT_TRUE(r.has_value()) << "no receive completion for " << size << " bytes";
  if (r) {
    EXPECT_EQ(r->e.len, size);
  }
  EXPECT_TRUE(dst == m) << size << " bytes differ";
  if (!early) {
    EXPECT_TRUE(net.WaitComp(a->tx, sctx).has_value()) << "no send completion";
  }
  return early;
}

TEST(RdmSendRules, ChainFromTheEnvironmentDoesWhatItSays) {
  const char* rules = std::getenv("FI_IWARPX_SEND_RULES");
  const char* expect_env = std::getenv("IWARPX_RULES_EXPECT");
  ASSERT_TRUE(rules != nullptr && expect_env != nullptr)
      << "run through ctest, which sets FI_IWARPX_SEND_RULES and IWARPX_RULES_EXPECT";
  const std::string expect = expect_env;
  Net net;
  ASSERT_TRUE(net.Open()) << net.error;
  if (expect == "refused") {
    EXPECT_EQ(net.AddSide(), nullptr) << "the chain \"" << rules << "\" was accepted";
    EXPECT_NE(net.error.find("fi_endpoint"), std::string::npos) << net.error;
    EXPECT_NE(net.error.find(fi_strerror(FI_EINVAL)), std::string::npos) << net.error;
    return;
  }
  const size_t slash = expect.find('/');
  ASSERT_NE(slash, std::string::npos) << expect;
  Side* a = net.AddSide();
  ASSERT_NE(a, nullptr) << net.error;
  Side* b = net.AddSide();
  ASSERT_NE(b, nullptr) << net.error;
  ASSERT_TRUE(net.Connect(*a, *b)) << net.error;
  const std::string small = expect.substr(0, slash);
  const size_t large = std::stoul(expect.substr(slash + 1));
  if (small != "-") {
    EXPECT_TRUE(SentBeforeReceive(net, a, b, std::stoul(small), 1))
        << small << " bytes should go eagerly under \"" << rules << "\"";
  }
  EXPECT_FALSE(SentBeforeReceive(net, a, b, large, 2))
      << large << " bytes should go by rendezvous under \"" << rules << "\"";
}

}  // namespace
