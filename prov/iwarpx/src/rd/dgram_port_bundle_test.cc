// DgramPort and bundles (docs/wire.md §3.6.1): SendBundle sends one datagram
// whose records the receiving port hands on as the data datagrams they stand
// for — in order, record i with seq + i, the ack fields with the first only,
// R with the last only — and a bundle with any bad record (its CRC right) is
// dropped whole and counted, nothing of it delivered.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "base/bytes.h"
#include "base/crc32c.h"
#include "rd/dgram_port.h"
#include "testing/sim_datagram.h"
#include "wire/dgram.h"
#include "wire/dgram_bundle.h"

namespace iwarpx::rd {
namespace {

using transport::SockAddr;

constexpr uint32_t kOurQpn = 9;
constexpr uint32_t kPeerQpn = 4;

struct Seen {
  wire::DgramHeader header;
  std::vector<uint8_t> ulpdu;
  bool more_records = false;
};

class Recorder final : public DgramReceiver {
 public:
  void OnDatagram(const wire::DecodedDgram& d, const SockAddr& /*from*/) override {
    seen.push_back(
        {d.header, std::vector<uint8_t>(d.ulpdu.begin(), d.ulpdu.end()), d.more_records});
  }
  std::vector<Seen> seen;
};

wire::DgramHeader DataHeader(uint32_t seq, bool request) {
  wire::DgramHeader h;
  h.type = wire::DgramType::kRdData;
  h.dst_qpn = kOurQpn;
  h.src_qpn = kPeerQpn;
  h.session = 0x77;
  h.syn = true;
  h.has_ack = true;
  h.has_sack = true;
  h.echo_session = 0x88;
  h.ack = 40;
  h.sack = 0x5;
  h.credits = 64;
  h.seq = seq;
  h.ack_request = request;
  return h;
}

// Segment i: `size` bytes of i + 1 (the framing does not look inside).
std::vector<uint8_t> Segment(size_t i, size_t size) {
  return std::vector<uint8_t>(size, static_cast<uint8_t>(i + 1));
}

class DgramPortBundleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tx_sock_ = net_.Open(100);
    rx_sock_ = net_.Open(200);
    tx_ = std::make_unique<DgramPort>(*tx_sock_, PortConfig{});
    rx_ = std::make_unique<DgramPort>(*rx_sock_, PortConfig{});
    ASSERT_TRUE(rx_->Attach(kOurQpn, &recorder_));
  }

  // Sends `bytes` as they are, from the sender's socket.
  void SendRaw(const std::vector<uint8_t>& bytes) {
    const iovec v{const_cast<uint8_t*>(bytes.data()), bytes.size()};
    ASSERT_TRUE(tx_sock_->SendTo(SockAddr::Loopback4(200), std::span(&v, 1)).ok());
  }

  testing::SimDatagramNet net_;
  std::unique_ptr<testing::SimDatagramSocket> tx_sock_;
  std::unique_ptr<testing::SimDatagramSocket> rx_sock_;
  std::unique_ptr<DgramPort> tx_;
  std::unique_ptr<DgramPort> rx_;
  Recorder recorder_;
};

TEST_F(DgramPortBundleTest, RecordsArriveAsTheirDatagramsInOrder) {
  const std::vector<std::vector<uint8_t>> segs{Segment(0, 22), Segment(1, 14), Segment(2, 64),
                                               Segment(3, 23)};
  std::vector<ByteSpan> spans(segs.begin(), segs.end());
  ASSERT_EQ(tx_->SendBundle(SockAddr::Loopback4(200), DataHeader(1000, true), spans),
            transport::IoStatus::kOk);
  EXPECT_EQ(tx_sock_->sent(), 1u);  // one datagram
  EXPECT_EQ(tx_->counters().bundles_sent, 1u);
  EXPECT_EQ(rx_->OnReadable(16), 1u);
  ASSERT_EQ(recorder_.seen.size(), segs.size());
  for (size_t i = 0; i < segs.size(); ++i) {
    const wire::DgramHeader& h = recorder_.seen[i].header;
    EXPECT_EQ(recorder_.seen[i].ulpdu, segs[i]) << i;
    EXPECT_EQ(h.seq, 1000 + i) << i;
    EXPECT_FALSE(h.bundle);
    EXPECT_EQ(h.type, wire::DgramType::kRdData);
    EXPECT_EQ(h.session, 0x77u);
    EXPECT_TRUE(h.syn);
    EXPECT_EQ(h.ack_request, i + 1 == segs.size()) << i;
    EXPECT_EQ(recorder_.seen[i].more_records, i + 1 < segs.size()) << i;
    EXPECT_EQ(h.has_ack, i == 0) << i;
    EXPECT_EQ(h.has_sack, i == 0) << i;
    if (i == 0) {
      EXPECT_EQ(h.ack, 40u);
      EXPECT_EQ(h.sack, 0x5u);
      EXPECT_EQ(h.credits, 64u);
      EXPECT_EQ(h.echo_session, 0x88u);
    } else {
      EXPECT_EQ(h.ack, 0u);
      EXPECT_EQ(h.credits, 0u);
    }
  }
  EXPECT_EQ(rx_->counters().delivered, 1u);
  EXPECT_EQ(rx_->counters().bundles, 1u);
  EXPECT_EQ(rx_->counters().malformed, 0u);
}

TEST_F(DgramPortBundleTest, NoAckRequestOnTheBundleMeansNoneOnAnyRecord) {
  const std::vector<std::vector<uint8_t>> segs{Segment(0, 20), Segment(1, 20)};
  std::vector<ByteSpan> spans(segs.begin(), segs.end());
  ASSERT_EQ(tx_->SendBundle(SockAddr::Loopback4(200), DataHeader(0xFFFFFFFF, false), spans),
            transport::IoStatus::kOk);
  rx_->OnReadable(16);
  ASSERT_EQ(recorder_.seen.size(), 2u);
  EXPECT_FALSE(recorder_.seen[0].header.ack_request);
  EXPECT_FALSE(recorder_.seen[1].header.ack_request);
  EXPECT_EQ(recorder_.seen[1].header.seq, 0u);  // sequence numbers wrap
}

// Every kind of bad record list, each in a datagram with a right CRC: the
// whole datagram is dropped (malformed), not one record is delivered, and the
// next good datagram still is.
TEST_F(DgramPortBundleTest, ABadRecordDropsTheWholeDatagram) {
  const std::vector<uint8_t> good = [] {
    std::vector<uint8_t> v;
    for (size_t i = 0; i < 3; ++i) {
      v.push_back(0);
      v.push_back(18);
      v.insert(v.end(), 18, static_cast<uint8_t>(i + 1));
    }
    return v;  // three records of 20 bytes, no pad
  }();
  std::vector<std::vector<uint8_t>> bad_lists;
  bad_lists.push_back(good);
  bad_lists.back()[1] = 13;  // first record shorter than a DDP header
  bad_lists.push_back(good);
  bad_lists.back()[41] = 19;  // last record runs past the end
  bad_lists.push_back(good);
  bad_lists.back()[21] = 17;  // second record shorter: its pad byte is not zero
  bad_lists.push_back(good);
  bad_lists.back().resize(good.size() + 4, 0);                                 // trailing bytes
  bad_lists.push_back(std::vector<uint8_t>(good.begin(), good.begin() + 20));  // one record
  for (const std::vector<uint8_t>& records : bad_lists) {
    // Framed by hand (the encoders refuse bad records): an ordinary RD data
    // datagram of that ULPDU length, then B set, the records put in and the
    // CRC made right again.
    std::vector<uint8_t> dgram(wire::DgramSize(records.size()));
    const std::vector<uint8_t> opaque(records.size(), 0);
    const ByteSpan part(opaque);
    ASSERT_TRUE(wire::EncodeDgram(DataHeader(7, true), std::span(&part, 1), true, dgram).ok());
    dgram[4] |= wire::kDgramFlagBundle >> 8;
    std::copy(records.begin(), records.end(), dgram.begin() + wire::kDgramHeaderSize);
    const size_t body = dgram.size() - wire::kDgramCrcSize;
    StoreCrcWire(dgram.data() + body, Crc32c(ByteSpan(dgram.data(), body)));
    SendRaw(dgram);
  }
  rx_->OnReadable(64);
  EXPECT_TRUE(recorder_.seen.empty());
  EXPECT_EQ(rx_->counters().malformed, bad_lists.size());
  EXPECT_EQ(rx_->counters().bad_crc, 0u);
  EXPECT_EQ(rx_->counters().bundles, 0u);

  const std::vector<std::vector<uint8_t>> segs{Segment(0, 18), Segment(1, 18)};
  std::vector<ByteSpan> spans(segs.begin(), segs.end());
  ASSERT_EQ(tx_->SendBundle(SockAddr::Loopback4(200), DataHeader(7, true), spans),
            transport::IoStatus::kOk);
  rx_->OnReadable(16);
  EXPECT_EQ(recorder_.seen.size(), 2u);
}

TEST_F(DgramPortBundleTest, SendBundleRefusesWhatTheFormatCannotCarry) {
  const std::vector<uint8_t> s20 = Segment(0, 20), s13 = Segment(1, 13);
  const std::vector<ByteSpan> one{ByteSpan(s20)};
  const std::vector<ByteSpan> short_one{ByteSpan(s20), ByteSpan(s13)};
  EXPECT_EQ(tx_->SendBundle(SockAddr::Loopback4(200), DataHeader(1, false), one),
            transport::IoStatus::kError);
  EXPECT_EQ(tx_->SendBundle(SockAddr::Loopback4(200), DataHeader(1, false), short_one),
            transport::IoStatus::kError);
  EXPECT_EQ(tx_->counters().send_errors, 2u);
  EXPECT_EQ(tx_sock_->sent(), 0u);
}

}  // namespace
}  // namespace iwarpx::rd
