#include "transport/fault.h"

#include <cmath>
#include <cstring>
#include <deque>
#include <map>
#include <vector>

#include <gtest/gtest.h>

#include "testing/fake_datagram.h"

namespace iwarpx::transport {
namespace {

using testing::RecordingDatagramSocket;

FaultSpec MustParse(std::string_view text) {
  auto r = FaultSpec::Parse(text);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : FaultSpec{};
}

TEST(FaultSpecTest, ParsesAllKeysInAnyOrder) {
  const FaultSpec s = MustParse("seed=42,corrupt=5,reorder=20,dup=10,drop=50,gap=7");
  EXPECT_EQ(s.drop, 50u);
  EXPECT_EQ(s.dup, 10u);
  EXPECT_EQ(s.reorder, 20u);
  EXPECT_EQ(s.corrupt, 5u);
  EXPECT_EQ(s.gap, 7u);
  EXPECT_EQ(s.seed, 42u);
  EXPECT_TRUE(s.any());
  const FaultSpec none = MustParse("");
  EXPECT_FALSE(none.any());
  EXPECT_EQ(none.gap, 3u);
  EXPECT_EQ(MustParse("drop=1000").drop, 1000u);
  EXPECT_EQ(MustParse("seed=18446744073709551615").seed, ~uint64_t{0});
}

TEST(FaultSpecTest, ReportsClearErrors) {
  struct Case {
    const char* spec;
    FaultSpecError::Code code;
    size_t position;
    const char* needle;
  };
  const Case cases[] = {
      {"drop", FaultSpecError::Code::kMissingEquals, 0, "key=value"},
      {"drop=5,bogus=1", FaultSpecError::Code::kUnknownKey, 7, "bogus"},
      {"drop=5,drop=6", FaultSpecError::Code::kDuplicateKey, 7, "twice"},
      {"drop=", FaultSpecError::Code::kBadNumber, 0, "not a decimal"},
      {"drop=-1", FaultSpecError::Code::kBadNumber, 0, "not a decimal"},
      {"drop=5x", FaultSpecError::Code::kBadNumber, 0, "5x"},
      {"seed=99999999999999999999", FaultSpecError::Code::kBadNumber, 0, "seed"},
      {"drop=1001", FaultSpecError::Code::kOutOfRange, 0, "above 1000"},
      {"gap=0", FaultSpecError::Code::kOutOfRange, 0, "1..64"},
      {"gap=65", FaultSpecError::Code::kOutOfRange, 0, "1..64"},
      {"drop=1,,dup=2", FaultSpecError::Code::kEmptyItem, 7, "empty"},
      {"drop=1,", FaultSpecError::Code::kEmptyItem, 7, "empty"},
      {"drop = 1", FaultSpecError::Code::kUnknownKey, 0, "unknown"},
  };
  for (const Case& c : cases) {
    auto r = FaultSpec::Parse(c.spec);
    ASSERT_FALSE(r.ok()) << c.spec;
    EXPECT_EQ(r.error().code, c.code) << c.spec;
    EXPECT_EQ(r.error().position, c.position) << c.spec;
    EXPECT_NE(r.error().message.find(c.needle), std::string::npos)
        << c.spec << " -> " << r.error().message;
  }
}

// An 8-byte datagram: sequence number and its complement (so damage shows).
struct Probe {
  uint8_t bytes[8] = {};
  explicit Probe(uint32_t seq) {
    const uint32_t inv = ~seq;
    std::memcpy(bytes, &seq, 4);
    std::memcpy(bytes + 4, &inv, 4);
  }
};

IoResult SendProbe(FaultInjector& f, uint32_t seq) {
  Probe p(seq);
  const iovec v{p.bytes, sizeof(p.bytes)};
  return f.SendTo(SockAddr::Loopback4(9), {&v, 1});
}

// Replays the injector's documented decision order with its own Random and
// returns the datagrams that must reach the inner socket.
std::vector<std::vector<uint8_t>> Model(const FaultSpec& spec, uint32_t n) {
  Random rng(spec.seed);
  std::vector<std::vector<uint8_t>> out;
  struct H {
    std::vector<uint8_t> bytes;
    uint32_t countdown;
  };
  std::deque<H> held;
  for (uint32_t seq = 0; seq < n; ++seq) {
    Probe p(seq);
    std::vector<uint8_t> d(p.bytes, p.bytes + 8);
    const bool drop = rng.Below(1000) < spec.drop;
    const bool corrupt = rng.Below(1000) < spec.corrupt;
    const bool dup = rng.Below(1000) < spec.dup;
    const bool reorder = rng.Below(1000) < spec.reorder;
    if (drop) continue;
    if (corrupt) {
      const uint64_t i = rng.Below(d.size());
      d[i] ^= static_cast<uint8_t>(1 + rng.Below(255));
    }
    if (reorder) {
      held.push_back({d, spec.gap});
      continue;
    }
    out.push_back(d);
    if (dup) out.push_back(d);
    for (H& h : held) --h.countdown;
    while (!held.empty() && held.front().countdown == 0) {
      out.push_back(held.front().bytes);
      held.pop_front();
    }
  }
  for (H& h : held) out.push_back(h.bytes);
  return out;
}

TEST(FaultInjectorTest, RatesMatchWithinTolerance) {
  const FaultSpec spec = MustParse("drop=50,dup=10,reorder=20,corrupt=5,seed=42");
  auto inner = std::make_unique<RecordingDatagramSocket>();
  RecordingDatagramSocket& rec = *inner;
  FaultInjector f(std::move(inner), spec);
  constexpr uint32_t kN = 100000;
  for (uint32_t seq = 0; seq < kN; ++seq) {
    const IoResult r = SendProbe(f, seq);
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r.bytes, 8u);
  }
  f.Flush();
  const FaultCounters& c = f.counters();
  // Expected counts and 5-sigma bounds of the binomial counts.
  auto near = [](uint64_t got, double n, double p) {
    const double mean = n * p;
    const double sigma = std::sqrt(n * p * (1 - p));
    return std::fabs(static_cast<double>(got) - mean) <= 5 * sigma;
  };
  EXPECT_EQ(c.offered, kN);
  EXPECT_TRUE(near(c.dropped, kN, 0.050)) << c.dropped;
  EXPECT_TRUE(near(c.corrupted, kN * 0.95, 0.005)) << c.corrupted;
  EXPECT_TRUE(near(c.reordered, kN * 0.95, 0.020)) << c.reordered;
  EXPECT_TRUE(near(c.duplicated, kN * 0.95 * 0.98, 0.010)) << c.duplicated;
  EXPECT_EQ(c.release_failed, 0u);
  EXPECT_EQ(f.held(), 0u);
  EXPECT_EQ(c.delivered, kN - c.dropped + c.duplicated);
  ASSERT_EQ(rec.sent().size(), c.delivered);

  // What arrived agrees with the counters.
  std::map<uint32_t, int> copies;
  uint64_t damaged = 0;
  uint64_t late = 0;
  int64_t max_seq = -1;
  for (const auto& d : rec.sent()) {
    ASSERT_EQ(d.bytes.size(), 8u);
    uint32_t seq = 0;
    uint32_t inv = 0;
    std::memcpy(&seq, d.bytes.data(), 4);
    std::memcpy(&inv, d.bytes.data() + 4, 4);
    if (seq != ~inv) {
      ++damaged;
      continue;
    }
    if (static_cast<int64_t>(seq) < max_seq && copies[seq] == 0) ++late;
    if (static_cast<int64_t>(seq) > max_seq) max_seq = seq;
    ++copies[seq];
  }
  uint64_t twice = 0;
  for (const auto& [seq, n] : copies) twice += n == 2 ? 1 : 0;
  // Corrupted datagrams that were also duplicated appear damaged twice.
  EXPECT_GE(damaged, c.corrupted);
  EXPECT_LE(damaged, 2 * c.corrupted);
  EXPECT_LE(twice, c.duplicated);
  EXPECT_GE(twice + (damaged - c.corrupted), c.duplicated - c.corrupted);
  EXPECT_LE(late, c.reordered);
  EXPECT_GE(late, c.reordered * 9 / 10);
}

TEST(FaultInjectorTest, OutputIsAPureFunctionOfTheSeed) {
  for (const char* text :
       {"drop=50,dup=10,reorder=20,corrupt=5,seed=42",
        "drop=300,dup=300,reorder=300,corrupt=300,gap=1,seed=7", "reorder=500,gap=5,seed=3", ""}) {
    const FaultSpec spec = MustParse(text);
    auto inner = std::make_unique<RecordingDatagramSocket>();
    RecordingDatagramSocket& rec = *inner;
    FaultInjector f(std::move(inner), spec);
    constexpr uint32_t kN = 5000;
    for (uint32_t seq = 0; seq < kN; ++seq) ASSERT_TRUE(SendProbe(f, seq).ok());
    f.Flush();
    const auto expected = Model(spec, kN);
    ASSERT_EQ(rec.sent().size(), expected.size()) << text;
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_EQ(rec.sent()[i].bytes, expected[i]) << text << " datagram " << i;
    }
  }
}

TEST(FaultInjectorTest, DifferentSeedsDiffer) {
  auto run = [](uint64_t seed) {
    FaultSpec spec = MustParse("drop=100,reorder=100");
    spec.seed = seed;
    auto inner = std::make_unique<RecordingDatagramSocket>();
    RecordingDatagramSocket& rec = *inner;
    FaultInjector f(std::move(inner), spec);
    for (uint32_t seq = 0; seq < 1000; ++seq) EXPECT_TRUE(SendProbe(f, seq).ok());
    f.Flush();
    std::vector<std::vector<uint8_t>> out;
    for (const auto& d : rec.sent()) out.push_back(d.bytes);
    return out;
  };
  EXPECT_EQ(run(5), run(5));
  EXPECT_NE(run(5), run(6));
}

TEST(FaultInjectorTest, InnerErrorsPassThroughAndReceivePassesThrough) {
  auto inner = std::make_unique<RecordingDatagramSocket>();
  RecordingDatagramSocket& rec = *inner;
  FaultInjector f(std::move(inner), FaultSpec{});
  rec.set_send_error(IoStatus::kWouldBlock);
  EXPECT_EQ(SendProbe(f, 1).status, IoStatus::kWouldBlock);
  rec.set_send_error(IoStatus::kError, EMSGSIZE);
  const IoResult e = SendProbe(f, 2);
  EXPECT_EQ(e.status, IoStatus::kError);
  EXPECT_EQ(e.err, EMSGSIZE);
  rec.set_send_error(IoStatus::kOk);

  Probe p(3);
  const iovec v{p.bytes, 8};
  DgramMessage msgs[3];
  for (DgramMessage& m : msgs) {
    m.iov = {&v, 1};
    m.addr = SockAddr::Loopback4(10);
  }
  const BatchResult b = f.SendBatch(msgs);
  EXPECT_TRUE(b.ok());
  EXPECT_EQ(b.count, 3u);
  EXPECT_EQ(rec.sent().size(), 3u);

  rec.Inject({SockAddr::Loopback4(77), {1, 2, 3}});
  uint8_t buf[8];
  const iovec in{buf, sizeof(buf)};
  DgramMessage m;
  m.iov = {&in, 1};
  const BatchResult r = f.RecvBatch({&m, 1});
  ASSERT_EQ(r.count, 1u);
  EXPECT_EQ(m.bytes, 3u);
  EXPECT_EQ(m.addr, SockAddr::Loopback4(77));
  EXPECT_EQ(f.fd(), -1);
  EXPECT_EQ(f.local_address(), rec.local_address());
}

TEST(FaultInjectorTest, CallerBuffersAreNeverModified) {
  auto inner = std::make_unique<RecordingDatagramSocket>();
  FaultInjector f(std::move(inner), MustParse("corrupt=1000,reorder=500,seed=9"));
  for (uint32_t seq = 0; seq < 200; ++seq) {
    Probe p(seq);
    const Probe before = p;
    const iovec v{p.bytes, 8};
    ASSERT_TRUE(f.SendTo(SockAddr::Loopback4(9), {&v, 1}).ok());
    ASSERT_EQ(0, std::memcmp(p.bytes, before.bytes, 8));
  }
  EXPECT_EQ(f.counters().corrupted, 200u);
}

}  // namespace
}  // namespace iwarpx::transport
