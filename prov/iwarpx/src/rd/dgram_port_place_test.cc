// DgramPort's in-place receive (dgram_port.h) on real loopback UDP sockets:
// a right guess lands the payload in its dest and hands it up as
// ulpdu_placed; a wrong one, or an ack, reaches the receiver exactly as sent;
// every guess of a read is settled before the first datagram is dispatched
// (a receiver that places data on another guess's dest cannot damage that
// datagram); a damaged datagram received in place is counted, not delivered;
// a guess the port cannot take is received as usual.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "base/bytes.h"
#include "base/crc32c.h"
#include "rd/dgram_port.h"
#include "transport/udp.h"
#include "wire/dgram.h"

namespace iwarpx::rd {
namespace {

using transport::SockAddr;

constexpr uint32_t kOurQpn = 9;
constexpr uint32_t kPeerQpn = 4;
constexpr uint32_t kSession = 0x51;
constexpr uint32_t kStag = 0xABCD01;

// What the receiver saw of one datagram: header and the whole ULPDU (both
// pieces joined), and whether part of it came in place and where.
struct Seen {
  wire::DgramHeader header;
  std::vector<uint8_t> ulpdu;
  const uint8_t* placed = nullptr;
  size_t placed_size = 0;
};

class Recorder final : public DgramReceiver {
 public:
  void OnDatagram(const wire::DecodedDgram& d, const SockAddr& /*from*/) override {
    Seen s{d.header, std::vector<uint8_t>(d.ulpdu.begin(), d.ulpdu.end()), d.ulpdu_placed.data(),
           d.ulpdu_placed.size()};
    s.ulpdu.insert(s.ulpdu.end(), d.ulpdu_placed.begin(), d.ulpdu_placed.end());
    seen.push_back(std::move(s));
    if (on_datagram) on_datagram();
  }
  std::vector<Seen> seen;
  std::function<void()> on_datagram;
};

class Guesser final : public PlacementPredictor {
 public:
  size_t PredictPlacement(std::span<PlacementGuess> out) override {
    const size_t n = std::min(out.size(), guesses.size());
    std::copy_n(guesses.begin(), n, out.begin());
    ++calls;
    return n;
  }
  std::vector<PlacementGuess> guesses;
  int calls = 0;
};

class DgramPortPlaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto a = transport::UdpSocket::Bind(SockAddr::Loopback4(0));
    auto b = transport::UdpSocket::Bind(SockAddr::Loopback4(0));
    ASSERT_TRUE(a.ok() && b.ok());
    tx_sock_ = std::move(a).value();
    rx_sock_ = std::move(b).value();
    tx_ = std::make_unique<DgramPort>(*tx_sock_, PortConfig{});
    rx_ = std::make_unique<DgramPort>(*rx_sock_, PortConfig{});
    ASSERT_TRUE(rx_->Attach(kOurQpn, &recorder_));
    rx_->SetPredictor(&guesser_);
  }

  // A Read Response segment: tagged DDP header (STag, TO) and `payload`
  // bytes of a pattern seeded by `seq`.
  static std::vector<uint8_t> Response(uint64_t to, size_t payload, uint32_t seq) {
    std::vector<uint8_t> u(wire::kDgramMinDdpSegment + payload);
    u[0] = 0x80;  // T
    u[1] = 0x42;  // RDMAP version 1, Read Response
    StoreBe32(&u[2], kStag);
    StoreBe64(&u[6], to);
    for (size_t i = wire::kDgramMinDdpSegment; i < u.size(); ++i) {
      u[i] = static_cast<uint8_t>(i * 7 + size_t{seq} * 13);
    }
    return u;
  }
  static wire::DgramHeader Data(uint32_t seq) {
    wire::DgramHeader h;
    h.type = wire::DgramType::kRdData;
    h.dst_qpn = kOurQpn;
    h.src_qpn = kPeerQpn;
    h.session = kSession;
    h.seq = seq;
    return h;
  }
  // A standalone RD ack from the peer (44 bytes, no ULPDU).
  static wire::DgramHeader Ack(uint32_t seq) {
    wire::DgramHeader h;
    h.type = wire::DgramType::kRdAck;
    h.dst_qpn = kOurQpn;
    h.src_qpn = kPeerQpn;
    h.session = kSession;
    h.has_ack = true;
    h.echo_session = 77;
    h.credits = 8;
    h.seq = seq;
    return h;
  }
  void Send(const wire::DgramHeader& h, const std::vector<uint8_t>& ulpdu) {
    const ByteSpan parts[1] = {ByteSpan(ulpdu)};
    ASSERT_EQ(tx_->Send(rx_sock_->local_address(), h, parts), transport::IoStatus::kOk);
  }
  PlacementGuess Guess(uint32_t seq, uint64_t to, MutableByteSpan dest) const {
    return PlacementGuess{.from = tx_sock_->local_address(),
                          .dst_qpn = kOurQpn,
                          .src_qpn = kPeerQpn,
                          .session = kSession,
                          .seq = seq,
                          .stag = kStag,
                          .to = to,
                          .dest = dest};
  }

  std::unique_ptr<transport::UdpSocket> tx_sock_;
  std::unique_ptr<transport::UdpSocket> rx_sock_;
  std::unique_ptr<DgramPort> tx_;
  std::unique_ptr<DgramPort> rx_;
  Recorder recorder_;
  Guesser guesser_;
};

TEST_F(DgramPortPlaceTest, ARightGuessLandsThePayloadInItsDest) {
  std::vector<uint8_t> sink(20000, 0);
  const std::vector<uint8_t> r = Response(0x2000, 8001, 3);  // pad 1
  Send(Data(3), r);
  guesser_.guesses = {Guess(3, 0x2000, MutableByteSpan(sink.data() + 100, 8001))};
  ASSERT_EQ(rx_->OnReadable(64), 1u);
  ASSERT_EQ(recorder_.seen.size(), 1u);
  const Seen& s = recorder_.seen[0];
  EXPECT_EQ(s.ulpdu, r);
  EXPECT_EQ(s.placed, sink.data() + 100);
  EXPECT_EQ(s.placed_size, 8001u);
  EXPECT_TRUE(std::equal(r.begin() + wire::kDgramMinDdpSegment, r.end(), sink.begin() + 100));
  EXPECT_TRUE(std::all_of(sink.begin(), sink.begin() + 100, [](uint8_t b) { return b == 0; }));
  EXPECT_TRUE(std::all_of(sink.begin() + 8101, sink.end(), [](uint8_t b) { return b == 0; }));
  EXPECT_EQ(rx_->counters().placed, 1u);
  EXPECT_EQ(rx_->counters().place_misses, 0u);
  EXPECT_EQ(rx_->counters().delivered, 1u);
}

TEST_F(DgramPortPlaceTest, WrongGuessesAndAcksReachTheReceiverAsSent) {
  std::vector<uint8_t> sink(32000, 0);  // guesses never share bytes (the predictor's promise)
  const std::vector<uint8_t> r = Response(0x2000, 8000, 4);
  Send(Data(4), r);                          // seq 4, guessed 3
  Send(Data(5), Response(0x4000, 8000, 5));  // TO differs from the guess
  Send(Data(6), Response(0x2000, 7999, 6));  // one byte shorter than guessed
  Send(Ack(7), {});
  guesser_.guesses = {Guess(3, 0x2000, MutableByteSpan(sink.data(), 8000)),
                      Guess(5, 0x2000, MutableByteSpan(sink.data() + 8000, 8000)),
                      Guess(6, 0x2000, MutableByteSpan(sink.data() + 16000, 8000)),
                      Guess(7, 0x2000, MutableByteSpan(sink.data() + 24000, 8000))};
  ASSERT_EQ(rx_->OnReadable(64), 4u);
  ASSERT_EQ(recorder_.seen.size(), 4u);
  EXPECT_EQ(recorder_.seen[0].ulpdu, r);
  EXPECT_EQ(recorder_.seen[1].ulpdu, Response(0x4000, 8000, 5));
  EXPECT_EQ(recorder_.seen[2].ulpdu, Response(0x2000, 7999, 6));
  EXPECT_TRUE(recorder_.seen[3].ulpdu.empty());
  EXPECT_EQ(recorder_.seen[3].header.seq, 7u);
  for (const Seen& s : recorder_.seen) EXPECT_EQ(s.placed, nullptr);
  EXPECT_EQ(rx_->counters().placed, 0u);
  EXPECT_EQ(rx_->counters().place_misses, 4u);
}

// Dispatching the first datagram places data (here: the receiver overwrites
// the second guess's dest, as a QP placing a held segment there would). The
// second datagram, a wrong guess whose bytes the kernel wrote into that
// dest, must have been taken out before: it arrives intact.
TEST_F(DgramPortPlaceTest, EveryGuessIsSettledBeforeTheFirstDispatch) {
  std::vector<uint8_t> sink(16000, 0);
  const std::vector<uint8_t> first = Response(0x0, 8000, 1);
  const std::vector<uint8_t> second = Response(0x9000, 8000, 9);  // not the guessed TO
  Send(Data(1), first);
  Send(Data(2), second);
  guesser_.guesses = {Guess(1, 0x0, MutableByteSpan(sink.data(), 8000)),
                      Guess(2, 8000, MutableByteSpan(sink.data() + 8000, 8000))};
  recorder_.on_datagram = [&] {
    if (recorder_.seen.size() == 1) std::fill(sink.begin() + 8000, sink.end(), uint8_t{0xFF});
  };
  ASSERT_EQ(rx_->OnReadable(64), 2u);
  ASSERT_EQ(recorder_.seen.size(), 2u);
  EXPECT_EQ(recorder_.seen[0].placed, sink.data());
  EXPECT_EQ(recorder_.seen[1].ulpdu, second);
  EXPECT_EQ(rx_->counters().placed, 1u);
  EXPECT_EQ(rx_->counters().place_misses, 1u);
}

TEST_F(DgramPortPlaceTest, ADamagedDatagramReceivedInPlaceIsCountedNotDelivered) {
  std::vector<uint8_t> sink(9000, 0);
  const wire::DgramHeader h = Data(1);
  const std::vector<uint8_t> r = Response(0x0, 8000, 1);
  std::vector<uint8_t> bytes(wire::kDgramMaxSize);
  const ByteSpan parts[1] = {ByteSpan(r)};
  auto n = wire::EncodeDgram(h, parts, /*crc_on=*/true, bytes);
  ASSERT_TRUE(n.ok());
  bytes.resize(*n);
  bytes[wire::kDgramHeaderSize + 5000] ^= 0x01;  // a payload byte
  const iovec v{bytes.data(), bytes.size()};
  ASSERT_EQ(tx_sock_->SendTo(rx_sock_->local_address(), std::span(&v, 1)).status,
            transport::IoStatus::kOk);
  guesser_.guesses = {Guess(1, 0x0, MutableByteSpan(sink.data(), 8000))};
  ASSERT_EQ(rx_->OnReadable(64), 1u);
  EXPECT_TRUE(recorder_.seen.empty());
  EXPECT_EQ(rx_->counters().bad_crc, 1u);
  EXPECT_EQ(rx_->counters().placed, 1u);  // it matched the guess; its CRC did not
  EXPECT_EQ(rx_->counters().delivered, 0u);
}

TEST_F(DgramPortPlaceTest, AGuessThePortCannotTakeIsReceivedAsUsual) {
  std::vector<uint8_t> sink(wire::kDgramMaxSize, 0);
  const std::vector<uint8_t> r = Response(0x0, 100, 1);
  Send(Data(1), r);
  // Larger than any datagram's payload: not guessed at all, nothing written.
  guesser_.guesses = {Guess(1, 0x0, MutableByteSpan(sink.data(), wire::kDgramMaxSize))};
  ASSERT_EQ(rx_->OnReadable(64), 1u);
  ASSERT_EQ(recorder_.seen.size(), 1u);
  EXPECT_EQ(recorder_.seen[0].ulpdu, r);
  EXPECT_TRUE(std::all_of(sink.begin(), sink.end(), [](uint8_t b) { return b == 0; }));
  EXPECT_EQ(rx_->counters().placed + rx_->counters().place_misses, 0u);
}

// A read whose guesses were all wrong and copied a payload back out of the
// guessed range makes the port stop asking for the next 1, then 3, 7 ...
// reads that receive datagrams; a wrong guess that cost no such copy (an ack)
// does not, and a right guess ends the backoff.
TEST_F(DgramPortPlaceTest, CostlyWrongGuessesBackOffAndARightOneEndsIt) {
  std::vector<uint8_t> sink(8000, 0);
  guesser_.guesses = {Guess(1, 0x0, MutableByteSpan(sink.data(), 8000))};
  auto read_one = [&](uint32_t seq) {
    Send(Data(seq), Response(0x7000, 8000, seq));  // never the guessed TO
    ASSERT_EQ(rx_->OnReadable(64), 1u);
  };
  Send(Ack(0), {});
  ASSERT_EQ(rx_->OnReadable(64), 1u);  // guessed, wrong, cheap: no backoff
  EXPECT_EQ(guesser_.calls, 1);
  read_one(1);  // guessed, wrong, copied 8000 bytes: skip the next read
  EXPECT_EQ(guesser_.calls, 2);
  read_one(2);
  EXPECT_EQ(guesser_.calls, 2);
  read_one(3);  // guessed again, wrong: skip 3
  EXPECT_EQ(guesser_.calls, 3);
  for (uint32_t s = 4; s < 7; ++s) read_one(s);
  EXPECT_EQ(guesser_.calls, 3);
  read_one(7);  // guessed, wrong: skip 7 reads that receive datagrams
  EXPECT_EQ(guesser_.calls, 4);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(rx_->OnReadable(64), 0u);  // empty: not counted
  for (uint32_t s = 8; s < 15; ++s) read_one(s);
  EXPECT_EQ(guesser_.calls, 4);
  EXPECT_EQ(rx_->counters().place_misses, 4u);
  // A right guess ends it: the next read is guessed again.
  Send(Data(15), Response(0x0, 8000, 15));
  guesser_.guesses[0].seq = 15;
  ASSERT_EQ(rx_->OnReadable(64), 1u);
  EXPECT_EQ(rx_->counters().placed, 1u);
  read_one(16);
  EXPECT_EQ(guesser_.calls, 6);
  EXPECT_EQ(recorder_.seen.size(), 17u);
}

// A dispatch may end a Read (its completion, or its QP failing), after
// which the application may free or reuse the sink: a right guess later in
// the same read is decoded, its CRC read from the sink, before the first
// dispatch. Here the receiver overwrites the second datagram's range while
// the first is dispatched; the second still passes its CRC check.
TEST_F(DgramPortPlaceTest, RightGuessesAreDecodedBeforeTheFirstDispatch) {
  std::vector<uint8_t> sink(16000, 0);
  Send(Data(1), Response(0x0, 8000, 1));
  Send(Data(2), Response(8000, 8000, 2));
  guesser_.guesses = {Guess(1, 0x0, MutableByteSpan(sink.data(), 8000)),
                      Guess(2, 8000, MutableByteSpan(sink.data() + 8000, 8000))};
  recorder_.on_datagram = [&] {
    if (recorder_.seen.size() == 1) std::fill(sink.begin() + 8000, sink.end(), uint8_t{0xEE});
  };
  ASSERT_EQ(rx_->OnReadable(64), 2u);
  EXPECT_EQ(rx_->counters().placed, 2u);
  EXPECT_EQ(rx_->counters().bad_crc, 0u);
  EXPECT_EQ(rx_->counters().delivered, 2u);
  EXPECT_EQ(recorder_.seen.size(), 2u);
}

}  // namespace
}  // namespace iwarpx::rd
