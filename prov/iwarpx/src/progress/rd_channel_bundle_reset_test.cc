// One forged bundle (RD data, flag B) of a session B never saw, without Y,
// draws exactly one RESET, as one datagram of such a session does
// (rd_channel_test.cc UnknownSessionsDrawAResetAndMakeNoQp).
// RdChannel::OnDatagram is called once per record (DgramPort::DeliverBundle);
// before the rule that only a bundle's first record may draw a RESET, each
// call refused the session again: n records, n RESETs toward a source address
// nobody checked (found by review25).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "progress/rd_channel_fixture.h"
#include "wire/dgram.h"
#include "wire/dgram_bundle.h"

namespace iwarpx::progress {
namespace {

TEST_F(RdChannelTest, AForgedBundleOfAnUnknownSessionDrawsOneReset) {
  Open();
  const transport::UniqueFd raw_fd = RawLoopbackSocket();
  ASSERT_TRUE(raw_fd.valid());
  const int raw = raw_fd.get();
  const transport::SockAddr to = b_->local_address();
  constexpr size_t kRecords = 100;
  std::vector<std::vector<uint8_t>> segs(kRecords, std::vector<uint8_t>(14, 0));
  std::vector<ByteSpan> spans;
  for (auto& s : segs) spans.emplace_back(s.data(), s.size());
  wire::DgramHeader data;
  data.type = wire::DgramType::kRdData;
  data.dst_qpn = 9;
  data.src_qpn = 77;
  data.session = 0x5e55;
  data.seq = 12345;
  std::vector<uint8_t> out(wire::kDgramMaxSize);
  auto n = wire::EncodeDgramBundle(data, spans, true, MutableByteSpan(out.data(), out.size()));
  ASSERT_TRUE(n.ok());
  ASSERT_EQ(sendto(raw, out.data(), *n, 0, to.sa(), to.length()), static_cast<ssize_t>(*n));
  size_t resets = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  while (std::chrono::steady_clock::now() < end) {
    {
      std::lock_guard<std::mutex> lock(engine_->mu());
      engine_->RunOnce(1);
    }
    uint8_t buf[2048];
    while (true) {
      const ssize_t got = recv(raw, buf, sizeof(buf), MSG_DONTWAIT);
      if (got <= 0) break;
      auto d = wire::DecodeDgram(ByteSpan(buf, static_cast<size_t>(got)), true);
      if (d.ok() && d->header.ctrl_op == wire::DgramControlOp::kReset) ++resets;
    }
  }
  std::lock_guard<std::mutex> lock(engine_->mu());
  EndpointStats st;
  b_->CollectStats(&st);
  EXPECT_EQ(st.rx_datagrams, 1u);
  EXPECT_EQ(st.rd_resets_sent, 1u) << "one forged datagram of " << *n << " bytes";
  EXPECT_EQ(resets, 1u) << "RESET datagrams received for one forged datagram";
}

}  // namespace
}  // namespace iwarpx::progress
