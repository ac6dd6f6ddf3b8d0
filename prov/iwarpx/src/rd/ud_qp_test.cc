// UdQp and DgramPort: the UD service over a recording fake socket (exact
// datagrams, every drop reason counted) and over real UDP on loopback (two
// QPs sharing one socket, messages up to the largest UD message).
#include "rd/ud_qp.h"

#include <cstring>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "testing/fake_datagram.h"
#include "transport/udp.h"
#include "wire/dgram_ud.h"
#include "wire/rdmap.h"

namespace iwarpx::rd {
namespace {

using qp::QpStatus;
using transport::SockAddr;
using Bytes = std::vector<uint8_t>;

struct Recorder final : UdSink {
  struct Recv {
    uint64_t context;
    size_t bytes;
    UdRecvInfo info;
  };
  std::vector<uint64_t> sends;
  std::vector<Recv> recvs;
  std::vector<std::pair<uint64_t, UdError>> errors;
  void OnSendComplete(uint64_t context) override { sends.push_back(context); }
  void OnRecvComplete(uint64_t context, size_t bytes, const UdRecvInfo& info) override {
    recvs.push_back({context, bytes, info});
  }
  void OnError(uint64_t context, qp::WcOp /*op*/, UdError error, int /*err*/) override {
    errors.emplace_back(context, error);
  }
};

Bytes Pattern(size_t n, uint8_t seed) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(seed + i * 7);
  return b;
}

// A whole UD datagram carrying a Send (or another opcode's header bytes).
Bytes UdDatagram(uint32_t dst_qpn, uint32_t src_qpn, ByteSpan payload, bool crc = true,
                 wire::DgramType type = wire::DgramType::kUdData) {
  std::array<uint8_t, wire::kDdpMaxHeaderSize> ddp{};
  wire::SendParams p;
  p.msn = 1;
  const size_t n = *wire::EncodeSendHeader(p, ddp);
  wire::DgramHeader h;
  h.type = type;
  h.dst_qpn = dst_qpn;
  h.src_qpn = src_qpn;
  if (type != wire::DgramType::kUdData) {
    h.session = 1;
  }
  const std::array<ByteSpan, 2> parts = {ByteSpan(ddp.data(), n), payload};
  Bytes out(wire::DgramSize(n + payload.size()));
  auto size = wire::EncodeDgram(h, parts, crc, out);
  EXPECT_TRUE(size.ok());
  return out;
}

qp::RecvWr Recv(uint64_t context, Bytes& buf) {
  qp::RecvWr wr;
  wr.context = context;
  wr.sgl.Add(buf.data(), buf.size());
  return wr;
}

class UdFakeTest : public ::testing::Test {
 protected:
  testing::RecordingDatagramSocket sock_;
  DgramPort port_{sock_, PortConfig{}};
  Recorder sink_;
  UdQp qp_{port_, UdConfig{.qpn = 7}, sink_};
  const SockAddr peer_ = SockAddr::Loopback4(5000);
};

TEST_F(UdFakeTest, SendIsOneStandardSegmentPerDatagramWithRisingMsn) {
  const Bytes a = Pattern(10, 1);
  const Bytes b = Pattern(5, 2);
  UdSendWr wr;
  wr.context = 11;
  wr.dest = peer_;
  wr.dest_qpn = 9;
  wr.sgl.Add(const_cast<uint8_t*>(a.data()), a.size());
  wr.sgl.Add(nullptr, 0);
  wr.sgl.Add(const_cast<uint8_t*>(b.data()), b.size());
  ASSERT_EQ(qp_.PostSend(wr), QpStatus::kOk);
  wr.context = 12;
  wr.sgl = {};
  ASSERT_EQ(qp_.PostSend(wr), QpStatus::kOk);  // a 0-byte message
  ASSERT_EQ(sock_.sent().size(), 2u);
  EXPECT_EQ(sink_.sends, (std::vector<uint64_t>{11, 12}));
  for (size_t i = 0; i < 2; ++i) {
    const auto& d = sock_.sent()[i];
    EXPECT_EQ(d.addr, peer_);
    auto dec = wire::DecodeDgram(d.bytes, true);
    ASSERT_TRUE(dec.ok());
    EXPECT_TRUE(dec->crc_checked);
    EXPECT_EQ(dec->header.type, wire::DgramType::kUdData);
    EXPECT_EQ(dec->header.dst_qpn, 9u);
    EXPECT_EQ(dec->header.src_qpn, 7u);
    auto seg = wire::ParseSegment(dec->ulpdu);
    ASSERT_TRUE(seg.ok());
    EXPECT_EQ(seg->opcode, wire::RdmapOpcode::kSend);
    EXPECT_EQ(seg->ddp.msn, i + 1);
    EXPECT_TRUE(seg->ddp.last);
    if (i == 0) {
      Bytes expect = a;
      expect.insert(expect.end(), b.begin(), b.end());
      EXPECT_EQ(Bytes(seg->payload.begin(), seg->payload.end()), expect);
    } else {
      EXPECT_TRUE(seg->payload.empty());
    }
  }
  // Unsignaled: no completion. Too long for one datagram: refused.
  wr.flags = 0;
  ASSERT_EQ(qp_.PostSend(wr), QpStatus::kOk);
  EXPECT_EQ(sink_.sends.size(), 2u);
  Bytes big(kUdMaxMessage + 1);
  wr.sgl = {};
  wr.sgl.Add(big.data(), big.size());
  EXPECT_EQ(qp_.PostSend(wr), QpStatus::kInvalid);
}

TEST_F(UdFakeTest, ReceivesFillPostedBuffersInArrivalOrderWithTheSource) {
  Bytes r1(100, 0);
  Bytes r2(4, 0xEE);
  ASSERT_EQ(qp_.PostRecv(Recv(1, r1)), QpStatus::kOk);
  ASSERT_EQ(qp_.PostRecv(Recv(2, r2)), QpStatus::kOk);
  const Bytes m1 = Pattern(60, 3);
  const Bytes m2 = Pattern(9, 4);  // 5 bytes too long for r2
  sock_.Inject({SockAddr::Loopback4(6001), UdDatagram(7, 33, m1)});
  sock_.Inject({SockAddr::Loopback4(6002), UdDatagram(7, 44, m2)});
  sock_.Inject({SockAddr::Loopback4(6003), UdDatagram(7, 55, m1)});  // no receive left
  EXPECT_EQ(port_.OnReadable(64), 3u);
  ASSERT_EQ(sink_.recvs.size(), 2u);
  EXPECT_EQ(sink_.recvs[0].context, 1u);
  EXPECT_EQ(sink_.recvs[0].bytes, 60u);
  EXPECT_EQ(sink_.recvs[0].info.src, SockAddr::Loopback4(6001));
  EXPECT_EQ(sink_.recvs[0].info.src_qpn, 33u);
  EXPECT_EQ(sink_.recvs[0].info.truncated_bytes, 0u);
  EXPECT_TRUE(std::equal(m1.begin(), m1.end(), r1.begin()));
  EXPECT_EQ(r1[60], 0);  // nothing past the message
  EXPECT_EQ(sink_.recvs[1].context, 2u);
  EXPECT_EQ(sink_.recvs[1].bytes, 4u);
  EXPECT_EQ(sink_.recvs[1].info.truncated_bytes, 5u);
  EXPECT_TRUE(std::equal(r2.begin(), r2.end(), m2.begin()));
  EXPECT_EQ(qp_.counters().no_receive, 1u);
  EXPECT_EQ(qp_.counters().received, 2u);
}

TEST_F(UdFakeTest, BadDatagramsAreCountedAndNeverDelivered) {
  Bytes r(64, 0);
  ASSERT_EQ(qp_.PostRecv(Recv(1, r)), QpStatus::kOk);
  const Bytes m = Pattern(16, 5);
  Bytes corrupt = UdDatagram(7, 1, m);
  corrupt[50] ^= 0x40;
  sock_.Inject({peer_, corrupt});
  sock_.Inject({peer_, UdDatagram(8, 1, m)});  // no QP 8 on this port
  sock_.Inject({peer_, Bytes{0x69, 0x77, 1, 1, 0, 0}});
  sock_.Inject({peer_, UdDatagram(7, 1, m, true, wire::DgramType::kRdData)});
  // A valid UD datagram whose segment is an RDMA Write, not a Send.
  {
    std::array<uint8_t, wire::kDdpMaxHeaderSize> ddp{};
    const size_t n = *wire::EncodeWriteHeader(0x1234, 0, true, ddp);
    wire::DgramHeader h;
    h.dst_qpn = 7;
    const std::array<ByteSpan, 2> parts = {ByteSpan(ddp.data(), n), ByteSpan(m)};
    Bytes out(wire::DgramSize(n + m.size()));
    ASSERT_TRUE(wire::EncodeDgram(h, parts, true, out).ok());
    sock_.Inject({peer_, out});
  }
  EXPECT_EQ(port_.OnReadable(64), 5u);
  EXPECT_TRUE(sink_.recvs.empty());
  EXPECT_EQ(port_.counters().bad_crc, 1u);
  EXPECT_EQ(port_.counters().unknown_qpn, 1u);
  EXPECT_EQ(port_.counters().malformed, 1u);
  EXPECT_EQ(qp_.counters().not_ud, 1u);
  EXPECT_EQ(qp_.counters().not_send, 1u);
  EXPECT_EQ(r, Bytes(64, 0));
  // The receive is still there for a good one.
  sock_.Inject({peer_, UdDatagram(7, 1, m)});
  EXPECT_EQ(port_.OnReadable(64), 1u);
  ASSERT_EQ(sink_.recvs.size(), 1u);
}

TEST(UdPortPolicyTest, RequireCrcDropsDatagramsWithoutOne) {
  testing::RecordingDatagramSocket sock;
  DgramPort port(sock, PortConfig{.crc = false, .require_crc = true});
  Recorder sink;
  UdQp qp(port, UdConfig{.qpn = 1}, sink);
  Bytes r(8);
  ASSERT_EQ(qp.PostRecv(Recv(1, r)), QpStatus::kOk);
  const Bytes m = Pattern(8, 1);
  sock.Inject({SockAddr::Loopback4(1), UdDatagram(1, 2, m, /*crc=*/false)});
  sock.Inject({SockAddr::Loopback4(1), UdDatagram(1, 2, m, /*crc=*/true)});
  EXPECT_EQ(port.OnReadable(8), 2u);
  EXPECT_EQ(port.counters().no_crc, 1u);
  EXPECT_EQ(sink.recvs.size(), 1u);
  // This port sends without CRC (FI_IWARPX_DGRAM_CRC=0): C clear, field zero.
  UdSendWr wr;
  wr.dest = SockAddr::Loopback4(2);
  ASSERT_EQ(qp.PostSend(wr), QpStatus::kOk);
  auto dec = wire::DecodeDgram(sock.sent().at(0).bytes, true);
  ASSERT_TRUE(dec.ok());
  EXPECT_FALSE(dec->crc_present);
}

TEST_F(UdFakeTest, BlockedSendsQueueInOrderAndFlushCompletesEverything) {
  sock_.set_send_error(transport::IoStatus::kWouldBlock);
  UdSendWr wr;
  wr.dest = peer_;
  for (uint64_t i = 1; i <= 3; ++i) {
    wr.context = i;
    ASSERT_EQ(qp_.PostSend(wr), QpStatus::kOk);
  }
  EXPECT_TRUE(qp_.wants_write());
  EXPECT_TRUE(sink_.sends.empty());
  qp_.OnWritable();  // still blocked
  EXPECT_TRUE(sock_.sent().empty());
  sock_.set_send_error(transport::IoStatus::kOk);
  qp_.OnWritable();
  EXPECT_FALSE(qp_.wants_write());
  EXPECT_EQ(sink_.sends, (std::vector<uint64_t>{1, 2, 3}));
  ASSERT_EQ(sock_.sent().size(), 3u);
  auto seg = wire::ParseSegment(wire::DecodeDgram(sock_.sent()[2].bytes, true)->ulpdu);
  EXPECT_EQ(seg->ddp.msn, 3u);
  // A hard socket error completes the WR with an error.
  sock_.set_send_error(transport::IoStatus::kError, EMSGSIZE);
  wr.context = 4;
  ASSERT_EQ(qp_.PostSend(wr), QpStatus::kOk);
  ASSERT_EQ(sink_.errors.size(), 1u);
  EXPECT_EQ(sink_.errors[0], std::make_pair(uint64_t{4}, UdError::kSendFailed));
  // Flush: the queued send and the posted receive.
  sock_.set_send_error(transport::IoStatus::kWouldBlock);
  wr.context = 5;
  ASSERT_EQ(qp_.PostSend(wr), QpStatus::kOk);
  Bytes r(8);
  ASSERT_EQ(qp_.PostRecv(Recv(6, r)), QpStatus::kOk);
  qp_.Flush();
  ASSERT_EQ(sink_.errors.size(), 3u);
  EXPECT_EQ(sink_.errors[1], std::make_pair(uint64_t{5}, UdError::kFlushed));
  EXPECT_EQ(sink_.errors[2], std::make_pair(uint64_t{6}, UdError::kFlushed));
  EXPECT_FALSE(qp_.wants_write());
}

// FI_MORE: sends marked `more` wait for the next one without it and then go
// out together through one SendBatch (sendmmsg), in order, with rising MSNs;
// a queue longer than one batch takes several; a socket that fills up
// mid-batch leaves the rest for OnWritable; a failed datagram in the middle
// fails alone.
TEST_F(UdFakeTest, SendsMarkedMoreGoOutTogetherInOneBatch) {
  std::vector<Bytes> payloads;
  for (uint8_t i = 0; i < 100; ++i) payloads.push_back(Pattern(1 + i, i));
  UdSendWr wr;
  wr.dest = peer_;
  wr.dest_qpn = 9;
  auto post = [&](uint64_t i, bool more) {
    wr.context = i;
    wr.more = more;
    wr.sgl = {};
    wr.sgl.Add(payloads[i].data(), payloads[i].size());
    return qp_.PostSend(wr);
  };
  for (uint64_t i = 0; i < 4; ++i) ASSERT_EQ(post(i, true), QpStatus::kOk);
  EXPECT_TRUE(sock_.sent().empty());  // deferred
  EXPECT_TRUE(sink_.sends.empty());
  EXPECT_TRUE(qp_.wants_write());  // the next progress pass would send them
  ASSERT_EQ(post(4, false), QpStatus::kOk);
  EXPECT_EQ(sock_.batch_calls(), 1u);
  EXPECT_EQ(sock_.sendto_calls(), 0u);
  EXPECT_FALSE(qp_.wants_write());
  EXPECT_EQ(sink_.sends, (std::vector<uint64_t>{0, 1, 2, 3, 4}));
  ASSERT_EQ(sock_.sent().size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    auto dec = wire::DecodeDgram(sock_.sent()[i].bytes, true);
    ASSERT_TRUE(dec.ok());
    auto seg = wire::ParseSegment(dec->ulpdu);
    ASSERT_TRUE(seg.ok());
    EXPECT_EQ(seg->ddp.msn, i + 1);
    EXPECT_EQ(Bytes(seg->payload.begin(), seg->payload.end()), payloads[i]) << i;
  }
  // A lone send without `more` still takes the one-datagram path.
  ASSERT_EQ(post(5, false), QpStatus::kOk);
  EXPECT_EQ(sock_.sendto_calls(), 1u);

  // 70 sends: two batches (64 + 6). The socket takes 30, then would block.
  sink_.sends.clear();
  sock_.clear_sent();
  sock_.set_send_budget(30);
  for (uint64_t i = 10; i < 79; ++i) ASSERT_EQ(post(i, true), QpStatus::kOk);
  ASSERT_EQ(post(79, false), QpStatus::kOk);
  EXPECT_EQ(sock_.sent().size(), 30u);
  EXPECT_EQ(sink_.sends.size(), 30u);
  EXPECT_TRUE(qp_.wants_write());
  sock_.set_send_budget(SIZE_MAX);
  const uint64_t batches = sock_.batch_calls();
  qp_.OnWritable();
  EXPECT_EQ(sock_.batch_calls(), batches + 1);  // the 40 left fit one batch
  EXPECT_FALSE(qp_.wants_write());
  ASSERT_EQ(sink_.sends.size(), 70u);
  for (uint64_t i = 0; i < 70; ++i) EXPECT_EQ(sink_.sends[i], 10 + i);
  for (size_t i = 0; i < 70; ++i) {
    auto seg = wire::ParseSegment(wire::DecodeDgram(sock_.sent()[i].bytes, true)->ulpdu);
    ASSERT_TRUE(seg.ok());
    EXPECT_EQ(seg->ddp.msn, 6 + 1 + i);  // six messages went before
    EXPECT_EQ(Bytes(seg->payload.begin(), seg->payload.end()), payloads[10 + i]) << i;
  }

  // A hard error on the first datagram of a batch fails that WR only.
  sink_.sends.clear();
  ASSERT_EQ(post(90, true), QpStatus::kOk);
  ASSERT_EQ(post(91, true), QpStatus::kOk);
  sock_.set_send_error(transport::IoStatus::kError, EMSGSIZE);
  sock_.set_send_budget(SIZE_MAX);
  qp_.OnWritable();  // both fail: the socket refuses everything
  sock_.set_send_error(transport::IoStatus::kOk);
  ASSERT_EQ(sink_.errors.size(), 2u);
  EXPECT_EQ(sink_.errors[0], std::make_pair(uint64_t{90}, UdError::kSendFailed));
  EXPECT_EQ(sink_.errors[1], std::make_pair(uint64_t{91}, UdError::kSendFailed));
  EXPECT_FALSE(qp_.wants_write());
}

// A second receiving QP cannot take a QPN that is in use (it stays
// detached, and its end does not detach the owner); a send-only QP shares the
// number as its src_qpn without receiving anything.
TEST_F(UdFakeTest, QpnIsOwnedByOneReceiverAndSendOnlyQpsNeverAttach) {
  EXPECT_TRUE(qp_.attached());
  Recorder other;
  {
    UdQp dup(port_, UdConfig{.qpn = 7}, other);
    EXPECT_FALSE(dup.attached());
  }
  UdQp tx(port_, UdConfig{.qpn = 7, .receives = false}, other);
  EXPECT_FALSE(tx.attached());
  Bytes buf(16, 0);
  ASSERT_EQ(qp_.PostRecv(Recv(1, buf)), QpStatus::kOk);
  const Bytes m = Pattern(8, 3);
  sock_.Inject({peer_, UdDatagram(7, 4, m)});
  port_.OnReadable(8);
  ASSERT_EQ(sink_.recvs.size(), 1u);  // QP 7 still attached after `dup` went
  EXPECT_TRUE(other.recvs.empty());
  UdSendWr wr;
  wr.context = 5;
  wr.dest = peer_;
  wr.dest_qpn = 2;
  wr.sgl.Add(const_cast<uint8_t*>(m.data()), m.size());
  ASSERT_EQ(tx.PostSend(wr), QpStatus::kOk);
  ASSERT_EQ(sock_.sent().size(), 1u);
  auto dec = wire::DecodeDgram(sock_.sent()[0].bytes, true);
  ASSERT_TRUE(dec.ok());
  EXPECT_EQ(dec->header.src_qpn, 7u);
  EXPECT_EQ(other.sends, (std::vector<uint64_t>{5}));
}

// Sends up to 238 payload bytes are built in one step (wire::EncodeUdSend),
// larger ones by the generic encoders: both give the datagram the generic
// encoders define, and the one-step SE flag and MSN come through.
TEST_F(UdFakeTest, OneStepAndGenericSendsGiveTheSameDatagrams) {
  uint32_t msn = 0;
  for (const size_t n :
       {size_t{0}, size_t{8}, size_t{237}, size_t{238}, size_t{239}, size_t{4000}}) {
    const Bytes a = Pattern(n, 9);
    for (const bool se : {false, true}) {
      UdSendWr wr;
      wr.dest = peer_;
      wr.dest_qpn = 3;
      wr.solicited = se;
      // Split in two pieces to exercise the gather.
      wr.sgl.Add(const_cast<uint8_t*>(a.data()), n / 2);
      wr.sgl.Add(const_cast<uint8_t*>(a.data()) + n / 2, n - n / 2);
      ASSERT_EQ(qp_.PostSend(wr), QpStatus::kOk);
      ++msn;
      const Bytes& sent = sock_.sent().back().bytes;
      const auto fast = wire::DecodeUdSend(sent, true);
      ASSERT_TRUE(fast.has_value()) << n;
      EXPECT_EQ(fast->fields, (wire::UdSendFields{3, 7, msn, se}));
      EXPECT_TRUE(fast->crc_checked);
      EXPECT_TRUE(std::equal(a.begin(), a.end(), fast->payload.begin(), fast->payload.end()));
      wire::SendParams p;
      p.solicited_event = se;
      p.msn = msn;
      std::array<uint8_t, wire::kDdpMaxHeaderSize> ddp{};
      const size_t hn = *wire::EncodeSendHeader(p, ddp);
      wire::DgramHeader h;
      h.dst_qpn = 3;
      h.src_qpn = 7;
      const std::array<ByteSpan, 2> parts = {ByteSpan(ddp.data(), hn), ByteSpan(a)};
      Bytes expect(wire::DgramSize(hn + n));
      ASSERT_TRUE(wire::EncodeDgram(h, parts, true, expect).ok());
      EXPECT_EQ(sent, expect) << n << " se " << se;
    }
  }
}

// A receiver that does not take the one-step form (the default OnUdSend,
// as RD receivers have) gets the same UD datagram through OnDatagram,
// delivered and counted once.
TEST(UdPortDispatchTest, ReceiversWithoutTheOneStepPathGetTheGenericDecode) {
  struct Generic final : DgramReceiver {
    std::vector<wire::DecodedDgram> got;
    Bytes payload;
    void OnDatagram(const wire::DecodedDgram& d, const SockAddr& /*from*/) override {
      got.push_back(d);
      auto seg = wire::ParseSegment(d.ulpdu);
      if (seg.ok()) payload.assign(seg->payload.begin(), seg->payload.end());
    }
  };
  testing::RecordingDatagramSocket sock;
  DgramPort port(sock, PortConfig{});
  Generic g;
  ASSERT_TRUE(port.Attach(4, &g));
  const Bytes m = Pattern(8, 6);
  sock.Inject({SockAddr::Loopback4(1), UdDatagram(4, 2, m)});
  EXPECT_EQ(port.OnReadable(8), 1u);
  ASSERT_EQ(g.got.size(), 1u);
  EXPECT_EQ(g.got[0].header.type, wire::DgramType::kUdData);
  EXPECT_EQ(g.got[0].header.src_qpn, 2u);
  EXPECT_EQ(g.payload, m);
  EXPECT_EQ(port.counters().delivered, 1u);
  EXPECT_EQ(port.counters().malformed + port.counters().unknown_qpn, 0u);
  // After Detach the QPN is unknown again (the port's last-receiver memory
  // is dropped with it).
  port.Detach(4);
  sock.Inject({SockAddr::Loopback4(1), UdDatagram(4, 2, m)});
  EXPECT_EQ(port.OnReadable(8), 1u);
  EXPECT_EQ(g.got.size(), 1u);
  EXPECT_EQ(port.counters().unknown_qpn, 1u);
  // Another receiver under the same number gets the next one.
  Generic h;
  ASSERT_TRUE(port.Attach(4, &h));
  sock.Inject({SockAddr::Loopback4(1), UdDatagram(4, 2, m)});
  EXPECT_EQ(port.OnReadable(8), 1u);
  EXPECT_EQ(h.got.size(), 1u);
  EXPECT_EQ(port.counters().delivered, 2u);
}

// Real UDP on loopback: QPs 1 and 2 share one socket, QP 3 has its own.
TEST(UdUdpTest, SharedSocketQpsExchangeMessagesUpToTheLargest) {
  auto s1 = transport::UdpSocket::Bind(SockAddr::Loopback4(0));
  auto s2 = transport::UdpSocket::Bind(SockAddr::Loopback4(0));
  ASSERT_TRUE(s1.ok() && s2.ok());
  DgramPort p1(**s1, PortConfig{});
  DgramPort p2(**s2, PortConfig{});
  Recorder k1;
  Recorder k2;
  Recorder k3;
  UdQp q1(p1, UdConfig{.qpn = 1}, k1);
  UdQp q2(p1, UdConfig{.qpn = 2}, k2);
  UdQp q3(p2, UdConfig{.qpn = 3}, k3);
  const std::vector<size_t> sizes = {0, 1, 4096, 65000, kUdMaxMessage};
  std::vector<Bytes> bufs;
  for (size_t i = 0; i < 2 * sizes.size(); ++i) bufs.emplace_back(kUdMaxMessage + 8, 0);
  for (size_t i = 0; i < sizes.size(); ++i) {
    ASSERT_EQ(q1.PostRecv(Recv(i, bufs[i])), QpStatus::kOk);
    ASSERT_EQ(q2.PostRecv(Recv(i, bufs[sizes.size() + i])), QpStatus::kOk);
  }
  std::vector<Bytes> msgs;
  for (size_t i = 0; i < sizes.size(); ++i) msgs.push_back(Pattern(sizes[i], uint8_t(i)));
  // QP 3 sends each size to QP 1 and, reversed, to QP 2.
  for (size_t i = 0; i < sizes.size(); ++i) {
    for (uint32_t to : {1u, 2u}) {
      const Bytes& m = to == 1 ? msgs[i] : msgs[sizes.size() - 1 - i];
      UdSendWr wr;
      wr.context = i;
      wr.dest = (*s1)->local_address();
      wr.dest_qpn = to;
      wr.sgl.Add(const_cast<uint8_t*>(m.data()), m.size());
      ASSERT_EQ(q3.PostSend(wr), QpStatus::kOk);
      // Drained after each send, so a small socket buffer (rmem_max) cannot
      // drop a 64 KiB datagram on loopback.
      const size_t want = k1.recvs.size() + k2.recvs.size() + 1;
      for (int spin = 0; spin < 100000 && k1.recvs.size() + k2.recvs.size() < want; ++spin) {
        p1.OnReadable(64);
      }
    }
  }
  EXPECT_EQ(k3.sends.size(), 2 * sizes.size());
  ASSERT_EQ(k1.recvs.size(), sizes.size());
  ASSERT_EQ(k2.recvs.size(), sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(k1.recvs[i].bytes, sizes[i]);
    EXPECT_EQ(k1.recvs[i].info.src, (*s2)->local_address());
    EXPECT_EQ(k1.recvs[i].info.src_qpn, 3u);
    EXPECT_TRUE(std::equal(msgs[i].begin(), msgs[i].end(), bufs[i].begin())) << i;
    const Bytes& rev = msgs[sizes.size() - 1 - i];
    EXPECT_EQ(k2.recvs[i].bytes, rev.size());
    EXPECT_TRUE(std::equal(rev.begin(), rev.end(), bufs[sizes.size() + i].begin())) << i;
  }
  EXPECT_EQ(p1.counters().delivered, 2 * sizes.size());
}

}  // namespace
}  // namespace iwarpx::rd
