// In-place receive of Read Responses (rd/dgram_port.h, rd::RdQp::
// GuessReadResponses, FI_IWARPX_RD_PLACE) on a real engine and real UDP
// sockets: Reads land in their sinks with the port counting datagrams
// received in place, exactly the right bytes, nothing written outside the
// Read's range, also through drops, duplicates, reordering and corruption
// (wrong guesses and damaged datagrams that landed in a sink are overwritten
// before the Read completes); with placement off nothing is received in place.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "progress/rd_channel_fixture.h"

namespace iwarpx::progress {
namespace {

using qp::test::Completion;

constexpr uint8_t kCanary = 0xC5;

class RdPlaceTest : public RdChannelTest {
 protected:
  // A's source region (remote read) and B's sink (local write), both `size`
  // bytes; the sink is filled with the canary.
  void Regions(size_t size) {
    src_.resize(size);
    for (size_t i = 0; i < size; ++i) src_[i] = static_cast<uint8_t>((i * 131) ^ (i >> 9));
    sink_.assign(size, kCanary);
    std::lock_guard<std::mutex> lock(engine_->mu());
    auto s = stags_a_.Register(mem::RegionSpec{src_.data(), size, 0, mem::kRemoteRead, kPd});
    auto d = stags_b_.Register(mem::RegionSpec{sink_.data(), size, 0, mem::kLocalWrite, kPd});
    ASSERT_TRUE(s.ok() && d.ok());
    src_stag_ = *s;
    sink_stag_ = *d;
  }

  // B reads [off, off + len) of A's source into the same range of its sink
  // (context `index`).
  qp::QpStatus PostRead(rd::RdQp& qb, size_t index, std::pair<size_t, size_t> range) {
    qp::ReadWr r;
    r.context = index;
    r.local_stag = sink_stag_;
    r.local_to = range.first;
    r.length = static_cast<uint32_t>(range.second);
    r.remote_stag = src_stag_;
    r.remote_to = range.first;
    return qb.qp().PostRead(r);
  }

  // B reads `reads` times, each [off, off + len) of A's source into the same
  // range of its sink, one Read after the other; true if every one completed
  // with exactly the source's bytes there and the canary everywhere else it
  // had not been read into yet.
  bool ReadAll(const std::vector<std::pair<size_t, size_t>>& reads) {
    size_t posted = 0;
    size_t done = 0;
    bool bad = false;
    const bool finished = RunUntil(
        [&] {
          rd::RdQp* qb = b_->Peer(KeyOf(*a_));
          if (qb == nullptr) return bad = true;
          const auto& cs = cb_.sink.completions;
          while (done < cs.size()) {
            const Completion& c = cs[done];
            const auto [off, len] = reads[done];
            if (c.kind != Completion::Kind::kRdma || c.context != done ||
                std::memcmp(sink_.data() + off, src_.data() + off, len) != 0) {
              ADD_FAILURE() << "read " << done << ": kind " << int(c.kind) << " context "
                            << c.context;
              return bad = true;
            }
            ++done;
          }
          if (posted == done && posted < reads.size()) {
            if (PostRead(*qb, posted, reads[posted]) != qp::QpStatus::kOk) return bad = true;
            ++posted;
            b_->AfterPost();
          }
          return done == reads.size();
        },
        120);
    if (!finished || bad) return false;
    // Bytes never read into still hold the canary: nothing landed outside a Read.
    std::vector<uint8_t> covered(sink_.size(), 0);
    for (const auto& [off, len] : reads) std::fill_n(covered.data() + off, len, uint8_t{1});
    for (size_t i = 0; i < sink_.size(); ++i) {
      if (covered[i] == 0 && sink_[i] != kCanary) {
        ADD_FAILURE() << "byte " << i << " outside every Read was written";
        return false;
      }
    }
    return true;
  }

  std::vector<uint8_t> src_;
  std::vector<uint8_t> sink_;
  uint32_t src_stag_ = 0;
  uint32_t sink_stag_ = 0;
};

TEST_F(RdPlaceTest, ReadResponsesLandInTheirSinkWithoutACopy) {
  send_buffer_bytes_ = 64 << 10;  // the responder's window holds back most of each Read
  Open();
  Regions(size_t{4} << 20);
  // 1 MiB Reads of 8192-byte segments (the fixture's max_segment): the first
  // response of the first Read teaches the segment size, the rest are guessed.
  std::vector<std::pair<size_t, size_t>> reads;
  for (size_t i = 0; i < 4; ++i) reads.emplace_back(i << 20, size_t{1} << 20);
  ASSERT_TRUE(ReadAll(reads));
  const rd::PortCounters& c = b_->port().counters();
  const uint64_t responses = (size_t{4} << 20) / (8192 - wire::kDgramMinDdpSegment);
  EXPECT_GT(c.placed, responses * 9 / 10) << "misses " << c.place_misses;
  EXPECT_EQ(c.bad_crc, 0u);
  EndpointStats st;
  {
    std::lock_guard<std::mutex> lock(engine_->mu());
    b_->CollectStats(&st);
  }
  EXPECT_EQ(st.rd_placed, c.placed);  // what fi_iwarpx_ep_stats reports
  EXPECT_EQ(st.rd_place_misses, c.place_misses);
  // The responder sent every response from the region (lent), none copied:
  // one its window held back is built again later, not stashed
  // (QueuePair::UnbuildReadResponse).
  std::lock_guard<std::mutex> lock(engine_->mu());
  rd::RdQp* qa = a_->Find(KeyOf(*b_));
  ASSERT_NE(qa, nullptr);
  EXPECT_GE(qa->stream().stats().lent, responses);
  EXPECT_EQ(qa->qp().tx_stats().fpdus, qa->stream().stats().data_sent);
}

TEST_F(RdPlaceTest, OffReceivesEverythingIntoThePortsBuffers) {
  Open({}, {}, 2'000'000'000, /*place_reads=*/false);
  Regions(size_t{1} << 20);
  ASSERT_TRUE(ReadAll({{0, size_t{1} << 20}}));
  EXPECT_EQ(b_->port().counters().placed, 0u);
  EXPECT_EQ(b_->port().counters().place_misses, 0u);
}

// Random Reads (sizes, offsets, some smaller than a placed payload) through
// 5 % loss, duplicates, reordering and corruption in both directions: every
// Read exact, nothing written outside the Reads, and the faults did meet
// guessed datagrams (misses) and damaged ones (bad CRC).
TEST_F(RdPlaceTest, RandomReadsThroughFaultsStayExact) {
  auto fa = transport::FaultSpec::Parse("drop=50,dup=30,reorder=50,corrupt=20,seed=11");
  auto fb = transport::FaultSpec::Parse("drop=50,dup=30,reorder=50,corrupt=20,seed=12");
  ASSERT_TRUE(fa.ok() && fb.ok());
  Open(*fa, *fb);
  const size_t size = size_t{8} << 20;
  Regions(size);
  Random rng(7);
  std::vector<std::pair<size_t, size_t>> reads;
  size_t off = 0;
  while (off < size - 1) {
    const size_t len = std::min<size_t>(size - off, 1 + rng.Below(size_t{300} << 10));
    reads.emplace_back(off, len);
    off += len + rng.Below(64);  // small gaps stay canary
  }
  ASSERT_TRUE(ReadAll(reads));
  const rd::PortCounters& c = b_->port().counters();
  EXPECT_GT(c.placed, 0u);
  EXPECT_GT(c.place_misses, 0u);
  EXPECT_GT(c.bad_crc, 0u);
}

// Eight Reads outstanding at once (ORD > 1: the guesses follow the ORQ head
// only), while A sends B messages of up to 20 000 bytes on the same stream
// (datagrams the guesses do not expect, some large enough to cost a copy
// out), through light faults in both directions (0.5 % each: between them the
// guesses have room to be right): every Read and every message
// exact, checked again over all ranges at the end (a late overwrite of an
// earlier Read's range would show), and the canary outside the Reads.
TEST_F(RdPlaceTest, ConcurrentReadsAndMessagesThroughFaultsStayExact) {
  auto fa = transport::FaultSpec::Parse("drop=5,dup=5,reorder=5,corrupt=5,seed=21");
  auto fb = transport::FaultSpec::Parse("drop=5,dup=5,reorder=5,corrupt=5,seed=22");
  ASSERT_TRUE(fa.ok() && fb.ok());
  Open(*fa, *fb);
  const size_t size = size_t{6} << 20;
  Regions(size);
  std::vector<std::pair<size_t, size_t>> reads;
  Random rng(9);
  for (size_t off = 0; off + 1 < size;) {
    const size_t len = std::min<size_t>(size - off, 1 + rng.Below(size_t{400} << 10));
    reads.emplace_back(off, len);
    off += len + rng.Below(32);
  }
  constexpr size_t kMessages = 300;
  constexpr size_t kSlots = 64;
  std::vector<std::vector<uint8_t>> tx(kMessages);
  std::vector<std::vector<uint8_t>> rx(kSlots, std::vector<uint8_t>(20000));
  auto msg_size = [](size_t i) { return 1 + (i * 7919) % (i % 3 == 0 ? 20000 : 700); };
  size_t posted_reads = 0, done_reads = 0, sent = 0, received = 0;
  bool receives_posted = false;
  bool bad = false;
  const bool finished = RunUntil(
      [&] {
        rd::RdQp* qa = a_->Peer(KeyOf(*b_));
        rd::RdQp* qb = b_->Peer(KeyOf(*a_));
        if (qa == nullptr || qb == nullptr) return bad = true;
        if (!receives_posted) {
          for (size_t k = 0; k < kSlots; ++k) {
            qp::RecvWr r;
            r.context = 1000 + k;
            r.sgl.Add(rx[k].data(), rx[k].size());
            if (qb->qp().PostRecv(r) != qp::QpStatus::kOk) return bad = true;
          }
          receives_posted = true;
        }
        while (posted_reads < reads.size() && posted_reads - done_reads < 8) {
          if (PostRead(*qb, posted_reads, reads[posted_reads]) != qp::QpStatus::kOk) break;
          ++posted_reads;
        }
        b_->AfterPost();
        while (sent < kMessages && sent < received + kSlots / 2) {
          tx[sent].resize(msg_size(sent));
          for (size_t k = 0; k < tx[sent].size(); ++k) tx[sent][k] = static_cast<uint8_t>(sent + k);
          qp::SendWr w;
          w.context = sent;
          w.sgl.Add(tx[sent].data(), tx[sent].size());
          if (qa->qp().PostSend(w) != qp::QpStatus::kOk) break;
          ++sent;
        }
        a_->AfterPost();
        for (const Completion& c : cb_.sink.completions) {
          if (c.kind == Completion::Kind::kError) return bad = true;
        }
        const auto& cs = cb_.sink.completions;
        size_t reads_seen = 0;
        size_t recvs_seen = 0;
        for (const Completion& c : cs) {
          if (c.kind == Completion::Kind::kRdma) {
            const auto [off, len] = reads[c.context];
            if (std::memcmp(sink_.data() + off, src_.data() + off, len) != 0) {
              ADD_FAILURE() << "read " << c.context << " differs";
              return bad = true;
            }
            ++reads_seen;
          } else if (c.kind == Completion::Kind::kRecv) {
            if (recvs_seen >= received) {
              const size_t slot = c.context - 1000;
              if (c.bytes != tx[recvs_seen].size() ||
                  std::memcmp(rx[slot].data(), tx[recvs_seen].data(), c.bytes) != 0) {
                ADD_FAILURE() << "message " << recvs_seen << " differs";
                return bad = true;
              }
              qp::RecvWr r;
              r.context = c.context;
              r.sgl.Add(rx[slot].data(), rx[slot].size());
              if (qb->qp().PostRecv(r) != qp::QpStatus::kOk) return bad = true;
              b_->AfterPost();
            }
            ++recvs_seen;
          }
        }
        done_reads = reads_seen;
        received = recvs_seen;
        return done_reads == reads.size() && received == kMessages;
      },
      120);
  ASSERT_TRUE(finished && !bad) << done_reads << "/" << reads.size() << " reads, " << received
                                << " messages";
  std::vector<uint8_t> covered(size, 0);
  for (const auto& [off, len] : reads) {
    EXPECT_EQ(std::memcmp(sink_.data() + off, src_.data() + off, len), 0) << off;
    std::fill_n(covered.data() + off, len, uint8_t{1});
  }
  for (size_t i = 0; i < size; ++i) {
    if (covered[i] == 0) {
      ASSERT_EQ(sink_[i], kCanary) << i;
    }
  }
  EXPECT_GT(b_->port().counters().placed, 0u) << b_->port().counters().place_misses;
  EXPECT_GT(b_->port().counters().place_misses, 0u);
}

}  // namespace
}  // namespace iwarpx::progress
