// The RDM message header codec (wire/rdm_msg.h, docs/wire.md §3.10): known
// bytes, round trips, and every refusal of the decoder.
#include "wire/rdm_msg.h"

#include <vector>

#include <gtest/gtest.h>

namespace iwarpx::wire {
namespace {

std::vector<uint8_t> Encode(const RdmHeader& h, ByteSpan payload = {}) {
  std::vector<uint8_t> out(kRdmRtsMaxSize);
  auto n = EncodeRdmHeader(h, out);
  EXPECT_TRUE(n.ok());
  out.resize(n.ok() ? *n : 0);
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

TEST(RdmMsgTest, EagerKnownBytesAndRoundTrip) {
  RdmHeader h;
  h.op = RdmOp::kEager;
  h.tagged = true;
  h.has_data = true;
  h.tag = 0x0102030405060708;
  h.data = 0xAABB;
  h.size = 3;
  const std::vector<uint8_t> payload = {7, 8, 9};
  const std::vector<uint8_t> bytes = Encode(h, payload);
  const std::vector<uint8_t> want = {1, 1, 0xC0, 0, 0, 0, 0,    0,     // version, op, T|D, msg_id
                                     1, 2, 3,    4, 5, 6, 7,    8,     // tag
                                     0, 0, 0,    0, 0, 0, 0xAA, 0xBB,  // data
                                     0, 0, 0,    0, 0, 0, 0,    3,     // size
                                     7, 8, 9};
  EXPECT_EQ(bytes, want);
  auto m = DecodeRdmMessage(bytes);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->header.op, RdmOp::kEager);
  EXPECT_TRUE(m->header.tagged && m->header.has_data);
  EXPECT_EQ(m->header.tag, h.tag);
  EXPECT_EQ(m->header.data, h.data);
  ASSERT_EQ(m->payload.size(), 3u);
  EXPECT_EQ(m->payload[2], 9);
}

TEST(RdmMsgTest, RtsAndFinRoundTrip) {
  RdmHeader h;
  h.op = RdmOp::kRts;
  h.msg_id = 77;
  h.size = 300;
  h.segment_count = 2;
  h.segments[0] = {0x11223344, 0x1000, 100};
  h.segments[1] = {0x55667788, 0x9000, 200};
  const std::vector<uint8_t> bytes = Encode(h);
  EXPECT_EQ(bytes.size(), 32u + 4 + 48);
  auto m = DecodeRdmMessage(bytes);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->header.segment_count, 2);
  EXPECT_EQ(m->header.segments[1], h.segments[1]);
  EXPECT_EQ(m->header.msg_id, 77u);
  EXPECT_TRUE(m->payload.empty());

  RdmHeader f;
  f.op = RdmOp::kFin;
  f.msg_id = 77;
  f.size = 300;
  auto mf = DecodeRdmMessage(Encode(f));
  ASSERT_TRUE(mf.ok());
  EXPECT_EQ(mf->header.op, RdmOp::kFin);
  EXPECT_EQ(mf->header.size, 300u);
}

TEST(RdmMsgTest, SwitchIsAZeroHeaderAndNothingElse) {
  RdmHeader s;
  s.op = RdmOp::kSwitch;
  std::vector<uint8_t> bytes = Encode(s);
  ASSERT_EQ(bytes.size(), kRdmHeaderSize);
  auto m = DecodeRdmMessage(bytes);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->header.op, RdmOp::kSwitch);
  for (const size_t at : {size_t{7}, size_t{31}}) {  // msg_id, size
    auto bad = bytes;
    bad[at] = 1;
    EXPECT_EQ(DecodeRdmMessage(bad).error(), WireError::kRdmReservedBits) << at;
  }
  bytes.push_back(0);
  EXPECT_EQ(DecodeRdmMessage(bytes).error(), WireError::kRdmBadLength);
  s.size = 1;
  std::vector<uint8_t> out(kRdmRtsMaxSize);
  EXPECT_EQ(EncodeRdmHeader(s, out).error(), WireError::kInvalidArgument);
}

// The RDMA-write handshake: RTS with W and no segments, the receiver's CTS
// with its sink segments, and the FIN with W.
TEST(RdmMsgTest, WriteHandshakeRtsCtsAndFinRoundTrip) {
  RdmHeader r;
  r.op = RdmOp::kRts;
  r.write = true;
  r.tagged = true;
  r.tag = 9;
  r.msg_id = 0x10002;
  r.size = 1 << 20;
  std::vector<uint8_t> bytes = Encode(r);
  ASSERT_EQ(bytes.size(), 36u);
  EXPECT_EQ(bytes[2], 0xA0);  // T|W
  auto m = DecodeRdmMessage(bytes);
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->header.write);
  EXPECT_EQ(m->header.segment_count, 0);
  EXPECT_EQ(m->header.size, uint64_t{1} << 20);

  RdmHeader c;
  c.op = RdmOp::kCts;
  c.msg_id = r.msg_id;
  c.size = 1000;
  c.segment_count = 2;
  c.segments[0] = {0xAB, 0x7000, 600};
  c.segments[1] = {0xCD, 0x9000, 400};
  bytes = Encode(c);
  ASSERT_EQ(bytes.size(), 32u + 4 + 48);
  EXPECT_EQ(bytes[1], 5);
  EXPECT_EQ(bytes[2], 0);
  m = DecodeRdmMessage(bytes);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->header.op, RdmOp::kCts);
  EXPECT_FALSE(m->header.write);
  EXPECT_EQ(m->header.segments[1], c.segments[1]);
  RdmHeader none = c;  // a receiver that takes nothing
  none.size = 0;
  none.segment_count = 0;
  bytes = Encode(none);
  ASSERT_EQ(bytes.size(), 36u);
  ASSERT_TRUE(DecodeRdmMessage(bytes).ok());

  RdmHeader f;
  f.op = RdmOp::kFin;
  f.write = true;
  f.msg_id = r.msg_id;
  f.size = 1000;
  bytes = Encode(f);
  ASSERT_EQ(bytes.size(), kRdmHeaderSize);
  m = DecodeRdmMessage(bytes);
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->header.write);
  EXPECT_EQ(m->header.op, RdmOp::kFin);
}

TEST(RdmMsgTest, WriteHandshakeRefusals) {
  std::vector<uint8_t> out(kRdmRtsMaxSize);
  RdmHeader h;
  h.op = RdmOp::kRts;
  h.write = true;
  h.size = 10;
  h.segment_count = 1;  // W: no segments
  h.segments[0].len = 10;
  EXPECT_EQ(EncodeRdmHeader(h, out).error(), WireError::kInvalidArgument);
  h = {};
  h.op = RdmOp::kCts;
  h.tagged = true;  // CTS with T
  EXPECT_EQ(EncodeRdmHeader(h, out).error(), WireError::kInvalidArgument);
  h.tagged = false;
  h.write = true;  // CTS with W
  EXPECT_EQ(EncodeRdmHeader(h, out).error(), WireError::kInvalidArgument);
  h.write = false;
  h.size = 5;  // no segments for 5 bytes
  EXPECT_EQ(EncodeRdmHeader(h, out).error(), WireError::kInvalidArgument);
  for (const RdmOp op : {RdmOp::kEager, RdmOp::kSwitch}) {
    h = {};
    h.op = op;
    h.write = true;
    EXPECT_EQ(EncodeRdmHeader(h, out).error(), WireError::kInvalidArgument);
  }

  // Decoder: W where it has no meaning, a CTS whose lengths do not add up or
  // that carries T/D, too many segments, an RTS with W and segments.
  RdmHeader e;
  e.size = 1;
  std::vector<uint8_t> eager = Encode(e, std::vector<uint8_t>{1});
  eager[2] |= 0x20;
  EXPECT_EQ(DecodeRdmMessage(eager).error(), WireError::kRdmReservedBits);
  RdmHeader sw;
  sw.op = RdmOp::kSwitch;
  std::vector<uint8_t> sb = Encode(sw);
  sb[2] |= 0x20;
  EXPECT_EQ(DecodeRdmMessage(sb).error(), WireError::kRdmReservedBits);
  RdmHeader c;
  c.op = RdmOp::kCts;
  c.msg_id = 3;
  c.size = 8;
  c.segment_count = 1;
  c.segments[0] = {1, 0, 8};
  const std::vector<uint8_t> cts = Encode(c);
  ASSERT_TRUE(DecodeRdmMessage(cts).ok());
  auto bad = cts;
  bad[2] |= 0x20;  // W on a CTS
  EXPECT_EQ(DecodeRdmMessage(bad).error(), WireError::kRdmReservedBits);
  bad = cts;
  bad[59] = 9;  // lengths no longer add up
  EXPECT_EQ(DecodeRdmMessage(bad).error(), WireError::kRdmBadLength);
  bad = cts;
  bad[32] = 5;
  EXPECT_EQ(DecodeRdmMessage(bad).error(), WireError::kRdmBadLength);
  bad = cts;
  bad[2] |= 0x80;  // T
  bad[15] = 1;
  EXPECT_EQ(DecodeRdmMessage(bad).error(), WireError::kRdmReservedBits);
  EXPECT_EQ(DecodeRdmMessage(ByteSpan(cts.data(), cts.size() - 1)).error(), WireError::kTruncated);
  RdmHeader r;
  r.op = RdmOp::kRts;
  r.size = 8;
  r.segment_count = 1;
  r.segments[0] = {1, 0, 8};
  bad = Encode(r);
  bad[2] |= 0x20;  // W with a segment
  EXPECT_EQ(DecodeRdmMessage(bad).error(), WireError::kRdmBadLength);
}

TEST(RdmMsgTest, EncoderRefusesWhatTheFormatCannotCarry) {
  std::vector<uint8_t> out(kRdmRtsMaxSize);
  RdmHeader h;
  h.tag = 5;  // tag without T
  EXPECT_EQ(EncodeRdmHeader(h, out).error(), WireError::kInvalidArgument);
  h = {};
  h.op = RdmOp::kRts;
  h.size = 10;  // no segments
  EXPECT_EQ(EncodeRdmHeader(h, out).error(), WireError::kInvalidArgument);
  h.segment_count = 1;
  h.segments[0].len = 9;  // does not add up
  EXPECT_EQ(EncodeRdmHeader(h, out).error(), WireError::kInvalidArgument);
  h.segments[0].len = 10;
  EXPECT_EQ(EncodeRdmHeader(h, MutableByteSpan(out.data(), 40)).error(), WireError::kNoSpace);
  h = {};
  h.op = RdmOp::kFin;
  h.tagged = true;
  EXPECT_EQ(EncodeRdmHeader(h, out).error(), WireError::kInvalidArgument);
}

TEST(RdmMsgTest, DecoderRefusesBadInputInOrder) {
  RdmHeader h;
  h.size = 4;
  std::vector<uint8_t> good = Encode(h, std::vector<uint8_t>{1, 2, 3, 4});
  ASSERT_TRUE(DecodeRdmMessage(good).ok());
  EXPECT_EQ(DecodeRdmMessage(ByteSpan(good.data(), 1)).error(), WireError::kTruncated);
  auto bad = good;
  bad[0] = 2;
  EXPECT_EQ(DecodeRdmMessage(bad).error(), WireError::kRdmBadVersion);
  bad = good;
  bad[1] = 7;
  EXPECT_EQ(DecodeRdmMessage(bad).error(), WireError::kRdmBadOp);
  bad[1] = 0;
  EXPECT_EQ(DecodeRdmMessage(bad).error(), WireError::kRdmBadOp);
  EXPECT_EQ(DecodeRdmMessage(ByteSpan(good.data(), 31)).error(), WireError::kTruncated);
  bad = good;
  bad[3] = 1;  // reserved flag bit
  EXPECT_EQ(DecodeRdmMessage(bad).error(), WireError::kRdmReservedBits);
  bad = good;
  bad[15] = 1;  // tag without T
  EXPECT_EQ(DecodeRdmMessage(bad).error(), WireError::kRdmReservedBits);
  bad = good;
  bad[23] = 1;  // data without D
  EXPECT_EQ(DecodeRdmMessage(bad).error(), WireError::kRdmReservedBits);
  bad = good;
  bad[7] = 1;  // msg_id on an EAGER
  EXPECT_EQ(DecodeRdmMessage(bad).error(), WireError::kRdmReservedBits);
  bad = good;
  bad.push_back(0);  // one byte more than size
  EXPECT_EQ(DecodeRdmMessage(bad).error(), WireError::kRdmBadLength);
  bad = good;
  bad[31] = 0xFF;  // size far beyond the bytes
  EXPECT_EQ(DecodeRdmMessage(bad).error(), WireError::kRdmBadLength);

  RdmHeader r;
  r.op = RdmOp::kRts;
  r.size = 8;
  r.segment_count = 1;
  r.segments[0] = {1, 0, 8};
  const std::vector<uint8_t> rts = Encode(r);
  ASSERT_TRUE(DecodeRdmMessage(rts).ok());
  bad = rts;
  bad[32] = 5;  // too many segments
  EXPECT_EQ(DecodeRdmMessage(bad).error(), WireError::kRdmBadLength);
  bad = rts;
  bad[33] = 1;
  EXPECT_EQ(DecodeRdmMessage(bad).error(), WireError::kRdmReservedBits);
  bad = rts;
  bad[40] = 1;  // segment reserved word
  EXPECT_EQ(DecodeRdmMessage(bad).error(), WireError::kRdmReservedBits);
  bad = rts;
  bad[59] = 9;  // lengths no longer add up to size
  EXPECT_EQ(DecodeRdmMessage(bad).error(), WireError::kRdmBadLength);
  EXPECT_EQ(DecodeRdmMessage(ByteSpan(rts.data(), rts.size() - 1)).error(), WireError::kTruncated);
  bad = rts;
  bad.push_back(0);
  EXPECT_EQ(DecodeRdmMessage(bad).error(), WireError::kRdmBadLength);
}

// The copy rendezvous: RTS with C and no segments, the receiver's CTS with C
// naming the bytes it takes and its largest fragment, DATA fragments with
// their offset where the tag goes.
TEST(RdmMsgTest, CopyRtsCtsAndDataRoundTrip) {
  RdmHeader r;
  r.op = RdmOp::kRts;
  r.copy = true;
  r.tagged = true;
  r.tag = 0x77;
  r.has_data = true;
  r.data = 5;
  r.msg_id = 0x30004;
  r.size = 100000;
  std::vector<uint8_t> bytes = Encode(r);
  ASSERT_EQ(bytes.size(), 36u);
  EXPECT_EQ(bytes[2], 0xD0);  // T|D|C
  auto m = DecodeRdmMessage(bytes);
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->header.copy);
  EXPECT_FALSE(m->header.write);
  EXPECT_EQ(m->header.tag, 0x77u);
  EXPECT_EQ(m->header.offset, 0u);

  RdmHeader c;
  c.op = RdmOp::kCts;
  c.copy = true;
  c.msg_id = r.msg_id;
  c.size = 60000;
  c.offset = 4064;  // the receiver's largest fragment
  bytes = Encode(c);
  ASSERT_EQ(bytes.size(), 36u);
  EXPECT_EQ(bytes[1], 5);
  EXPECT_EQ(bytes[2], 0x10);
  EXPECT_EQ(bytes[14], 0x0F);  // 4064 = 0x0FE0 at bytes 8..15
  EXPECT_EQ(bytes[15], 0xE0);
  m = DecodeRdmMessage(bytes);
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->header.copy);
  EXPECT_EQ(m->header.offset, 4064u);
  EXPECT_EQ(m->header.tag, 0u);
  EXPECT_EQ(m->header.size, 60000u);

  RdmHeader d;
  d.op = RdmOp::kData;
  d.msg_id = r.msg_id;
  d.offset = 0x0102030405060708;
  d.size = 3;
  bytes = Encode(d, std::vector<uint8_t>{9, 8, 7});
  ASSERT_EQ(bytes.size(), kRdmHeaderSize + 3);
  EXPECT_EQ(bytes[1], 6);
  EXPECT_EQ(bytes[2], 0);
  EXPECT_EQ(bytes[8], 0x01);
  EXPECT_EQ(bytes[15], 0x08);
  m = DecodeRdmMessage(bytes);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->header.op, RdmOp::kData);
  EXPECT_EQ(m->header.offset, d.offset);
  EXPECT_EQ(m->header.msg_id, d.msg_id);
  ASSERT_EQ(m->payload.size(), 3u);
  EXPECT_EQ(m->payload[2], 7);
}

TEST(RdmMsgTest, CopyRefusals) {
  std::vector<uint8_t> out(kRdmRtsMaxSize);
  RdmHeader h;
  h.op = RdmOp::kRts;
  h.copy = true;
  h.write = true;  // C and W
  EXPECT_EQ(EncodeRdmHeader(h, out).error(), WireError::kInvalidArgument);
  h.write = false;
  h.size = 10;
  h.segment_count = 1;  // C: no segments
  h.segments[0].len = 10;
  EXPECT_EQ(EncodeRdmHeader(h, out).error(), WireError::kInvalidArgument);
  for (const RdmOp op : {RdmOp::kEager, RdmOp::kFin, RdmOp::kSwitch, RdmOp::kData}) {
    h = {};
    h.op = op;
    h.copy = true;  // C where it means nothing
    EXPECT_EQ(EncodeRdmHeader(h, out).error(), WireError::kInvalidArgument);
  }
  h = {};
  h.offset = 1;  // an offset on an EAGER
  EXPECT_EQ(EncodeRdmHeader(h, out).error(), WireError::kInvalidArgument);
  h = {};
  h.op = RdmOp::kCts;
  h.copy = true;
  h.size = 10;  // bytes to take but no fragment size
  EXPECT_EQ(EncodeRdmHeader(h, out).error(), WireError::kInvalidArgument);
  h = {};
  h.op = RdmOp::kData;
  h.size = 2;
  h.offset = UINT64_MAX;  // offset + size wraps
  EXPECT_EQ(EncodeRdmHeader(h, out).error(), WireError::kInvalidArgument);
  h.offset = 0;
  h.tagged = true;  // DATA with T
  EXPECT_EQ(EncodeRdmHeader(h, out).error(), WireError::kInvalidArgument);

  // Decoder.
  RdmHeader d;
  d.op = RdmOp::kData;
  d.msg_id = 1;
  d.offset = 100;
  d.size = 2;
  const std::vector<uint8_t> data = Encode(d, std::vector<uint8_t>{1, 2});
  ASSERT_TRUE(DecodeRdmMessage(data).ok());
  auto bad = data;
  bad.push_back(3);  // one byte more than size
  EXPECT_EQ(DecodeRdmMessage(bad).error(), WireError::kRdmBadLength);
  EXPECT_EQ(DecodeRdmMessage(ByteSpan(data.data(), data.size() - 1)).error(),
            WireError::kRdmBadLength);
  bad = data;
  for (size_t i = 8; i < 16; ++i) bad[i] = 0xFF;  // offset + size wraps
  EXPECT_EQ(DecodeRdmMessage(bad).error(), WireError::kRdmBadLength);
  for (const uint8_t flag : {uint8_t{0x80}, uint8_t{0x40}, uint8_t{0x20}, uint8_t{0x10}}) {
    bad = data;  // T, D, W, C on DATA
    bad[2] = static_cast<uint8_t>(bad[2] | flag);
    EXPECT_EQ(DecodeRdmMessage(bad).error(), WireError::kRdmReservedBits) << int{flag};
  }
  RdmHeader e;
  e.size = 1;
  bad = Encode(e, std::vector<uint8_t>{1});
  bad[2] |= 0x10;  // C on an EAGER
  EXPECT_EQ(DecodeRdmMessage(bad).error(), WireError::kRdmReservedBits);
  RdmHeader c;
  c.op = RdmOp::kCts;
  c.copy = true;
  c.size = 8;
  c.offset = 8;
  const std::vector<uint8_t> cts = Encode(c);
  ASSERT_TRUE(DecodeRdmMessage(cts).ok());
  bad = cts;
  bad[15] = 0;  // no fragment size for 8 bytes
  EXPECT_EQ(DecodeRdmMessage(bad).error(), WireError::kRdmBadLength);
  bad = cts;
  bad[32] = 1;  // a segment on a CTS with C
  bad.resize(bad.size() + kRdmSegmentSize, 0);
  EXPECT_EQ(DecodeRdmMessage(bad).error(), WireError::kRdmBadLength);
  RdmHeader r;
  r.op = RdmOp::kRts;
  r.copy = true;
  r.size = 8;
  bad = Encode(r);
  bad[2] |= 0x20;  // C with W
  EXPECT_EQ(DecodeRdmMessage(bad).error(), WireError::kRdmBadLength);
}

}  // namespace
}  // namespace iwarpx::wire
