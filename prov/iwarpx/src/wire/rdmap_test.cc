#include "wire/rdmap.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testing/hex.h"
#include "wire/terminate.h"

namespace iwarpx::wire {
namespace {

using ::iwarpx::testing::FromHex;
using ::iwarpx::testing::ToHex;
using Op = RdmapOpcode;

// Encodes `seg`'s header+body with EncodeSegmentHeader and appends its payload.
std::vector<uint8_t> BuildSegment(const Segment& seg) {
  std::vector<uint8_t> out(kDdpMaxHeaderSize + kTerminateMaxBodySize);
  auto n = EncodeSegmentHeader(seg, out);
  EXPECT_TRUE(n.ok()) << (n.ok() ? "" : ToString(n.error()));
  out.resize(n.ok() ? n.value() : 0);
  out.insert(out.end(), seg.payload.begin(), seg.payload.end());
  return out;
}

// ---------------------------------------------------------------- control --

TEST(RdmapControlTest, EncodesVersionOneAndOpcode) {
  EXPECT_EQ(EncodeRdmapControl(Op::kRdmaWrite), 0x40);
  EXPECT_EQ(EncodeRdmapControl(Op::kTerminate), 0x47);
  EXPECT_EQ(EncodeRdmapControl(Op::kAtomicResponse), 0x4B);
}

TEST(RdmapControlTest, DecodesEveryByteByTheRules) {
  for (int i = 0; i < 256; ++i) {
    const auto byte = static_cast<uint8_t>(i);
    auto op = DecodeRdmapControl(byte);
    if ((byte >> 6) != 1) {
      EXPECT_EQ(op.error(), WireError::kRdmapBadVersion) << i;
    } else if ((byte & 0x30) != 0) {
      EXPECT_EQ(op.error(), WireError::kRdmapReservedBits) << i;
    } else if ((byte & 0x0F) >= 0x0C) {
      EXPECT_EQ(op.error(), WireError::kRdmapBadOpcode) << i;
    } else {
      ASSERT_TRUE(op.ok()) << i;
      EXPECT_EQ(static_cast<uint8_t>(op.value()), byte & 0x0F);
      EXPECT_EQ(EncodeRdmapControl(op.value()), byte);
    }
  }
}

// ------------------------------------------------------------ opcode table --

TEST(RdmapOpcodeTableTest, RowsMatchRfc5040AndRfc7306) {
  struct Want {
    Op op;
    bool tagged;
    uint32_t qn;
    size_t body;
    bool payload;
    bool single;
    bool ird;
    bool inval;
    bool se;
  };
  const Want want[] = {
      {Op::kRdmaWrite, true, kQnNone, 0, true, false, false, false, false},
      {Op::kRdmaReadRequest, false, 1, 28, false, true, true, false, false},
      {Op::kRdmaReadResponse, true, kQnNone, 0, true, false, false, false, false},
      {Op::kSend, false, 0, 0, true, false, false, false, false},
      {Op::kSendWithInvalidate, false, 0, 0, true, false, false, true, false},
      {Op::kSendWithSe, false, 0, 0, true, false, false, false, true},
      {Op::kSendWithSeAndInvalidate, false, 0, 0, true, false, false, true, true},
      {Op::kTerminate, false, 2, 4, false, true, false, false, false},
      {Op::kImmediateData, false, 0, 8, false, true, false, false, false},
      {Op::kImmediateDataWithSe, false, 0, 8, false, true, false, false, true},
      {Op::kAtomicRequest, false, 1, 52, false, true, true, false, false},
      {Op::kAtomicResponse, false, 3, 12, false, true, false, false, false},
  };
  ASSERT_EQ(OpcodeTable().size(), std::size(want));
  for (const Want& w : want) {
    const OpcodeInfo& info = GetOpcodeInfo(w.op);
    SCOPED_TRACE(info.name);
    EXPECT_EQ(info.opcode, w.op);
    EXPECT_EQ(info.tagged, w.tagged);
    EXPECT_EQ(info.qn, w.qn);
    EXPECT_EQ(info.header_size, w.tagged ? 14u : 18u);
    EXPECT_EQ(info.body_size, w.body);
    EXPECT_EQ(info.variable_body, w.op == Op::kTerminate);
    EXPECT_EQ(info.payload_allowed, w.payload);
    EXPECT_EQ(info.single_segment, w.single);
    EXPECT_EQ(info.counts_against_ird, w.ird);
    EXPECT_EQ(info.carries_invalidate, w.inval);
    EXPECT_EQ(info.solicited_event, w.se);
    EXPECT_EQ(FindOpcodeInfo(static_cast<uint8_t>(w.op)), &info);
  }
  for (uint8_t raw = 0x0C; raw <= 0x0F; ++raw) EXPECT_EQ(FindOpcodeInfo(raw), nullptr);
  EXPECT_EQ(FindOpcodeInfo(0xFF), nullptr);
  EXPECT_STREQ(ToString(Op::kSendWithSeAndInvalidate), "Send with SE and Invalidate");
  EXPECT_STREQ(ToString(static_cast<Op>(0x0D)), "reserved opcode");
}

// ------------------------------------------------- known-answer vectors --

TEST(RdmapKnownAnswerTest, RdmaWrite) {
  // tshark: iwarp_ddp.tagged_flag=1 last_flag=1 dv=1, iwarp_rdma.version=1
  // iwarp_rdma.opcode=0x0 (Write), iwarp_ddp.stag=0x00001234,
  // iwarp_ddp.tagged_offset=0x0000000000001000, then 4 payload bytes.
  const auto bytes = FromHex("c1 40 00001234 0000000000001000 | deadbeef");
  auto seg = ParseSegment(bytes);
  ASSERT_TRUE(seg.ok());
  EXPECT_EQ(seg->opcode, Op::kRdmaWrite);
  EXPECT_TRUE(seg->ddp.tagged);
  EXPECT_TRUE(seg->ddp.last);
  EXPECT_EQ(seg->ddp.stag, 0x1234u);
  EXPECT_EQ(seg->ddp.to, 0x1000u);
  EXPECT_EQ(ToHex(seg->payload), "deadbeef");
  EXPECT_EQ(seg->payload.data(), bytes.data() + 14);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(seg->body));
  EXPECT_EQ(seg->header_size(), 14u);

  std::vector<uint8_t> out(14);
  ASSERT_EQ(EncodeWriteHeader(0x1234, 0x1000, true, out).value(), 14u);
  EXPECT_EQ(out, std::vector<uint8_t>(bytes.begin(), bytes.begin() + 14));
}

TEST(RdmapKnownAnswerTest, RdmaReadRequest) {
  // tshark: iwarp_ddp.qn=1 msn=1 mo=0, iwarp_rdma.opcode=0x1,
  // iwarp_rdma.sinkstag=0x00000abc sinkto=0x2000 rdmardsz=256
  // srcstag=0x00000def srcto=0x3000. ULPDU 46 bytes (FPDU 52, no pad).
  const auto bytes = FromHex(
      "41 41 00000000 00000001 00000001 00000000 |"
      "00000abc 0000000000002000 00000100 00000def 0000000000003000");
  ASSERT_EQ(bytes.size(), 46u);
  auto seg = ParseSegment(bytes);
  ASSERT_TRUE(seg.ok());
  EXPECT_EQ(seg->opcode, Op::kRdmaReadRequest);
  EXPECT_EQ(seg->ddp.qn, 1u);
  EXPECT_EQ(seg->ddp.msn, 1u);
  const auto* rr = std::get_if<ReadRequestBody>(&seg->body);
  ASSERT_NE(rr, nullptr);
  EXPECT_EQ(*rr, (ReadRequestBody{0xABC, 0x2000, 0x100, 0xDEF, 0x3000}));
  EXPECT_TRUE(seg->payload.empty());
  EXPECT_EQ(seg->header_size(), 46u);

  std::vector<uint8_t> out(46);
  ASSERT_EQ(EncodeReadRequest(1, *rr, out).value(), 46u);
  EXPECT_EQ(out, bytes);
}

TEST(RdmapKnownAnswerTest, RdmaReadResponseNotLast) {
  const auto bytes = FromHex("81 42 00000abc 0000000000002000 | 0102030405");
  auto seg = ParseSegment(bytes);
  ASSERT_TRUE(seg.ok());
  EXPECT_EQ(seg->opcode, Op::kRdmaReadResponse);
  EXPECT_FALSE(seg->ddp.last);
  EXPECT_EQ(seg->ddp.stag, 0xABCu);
  EXPECT_EQ(seg->payload.size(), 5u);
  std::vector<uint8_t> out(14);
  ASSERT_TRUE(EncodeReadResponseHeader(0xABC, 0x2000, false, out).ok());
  EXPECT_EQ(ToHex(out), "814200000abc0000000000002000");
}

TEST(RdmapKnownAnswerTest, SendFamily) {
  struct Case {
    const char* hex;
    SendParams params;
    Op op;
  };
  const Case cases[] = {
      // Send, MSN 1, one segment, payload "hello".
      {"41 43 00000000 00000000 00000001 00000000 | 68656c6c6f",
       {false, false, 0, 1, 0, true},
       Op::kSend},
      // Send with Invalidate of STag 0x0000beef, MSN 2.
      {"41 44 0000beef 00000000 00000002 00000000 | 00",
       {false, true, 0xBEEF, 2, 0, true},
       Op::kSendWithInvalidate},
      // Send with SE, middle segment (L=0) at MO 256, MSN 3.
      {"01 45 00000000 00000000 00000003 00000100 | ffff",
       {true, false, 0, 3, 256, false},
       Op::kSendWithSe},
      // Send with SE and Invalidate, zero-length.
      {"41 46 12345678 00000000 00000004 00000000",
       {true, true, 0x12345678, 4, 0, true},
       Op::kSendWithSeAndInvalidate},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.hex);
    const auto bytes = FromHex(c.hex);
    auto seg = ParseSegment(bytes);
    ASSERT_TRUE(seg.ok()) << ToString(seg.error());
    EXPECT_EQ(seg->opcode, c.op);
    EXPECT_EQ(seg->ddp.qn, 0u);
    EXPECT_EQ(seg->ddp.msn, c.params.msn);
    EXPECT_EQ(seg->ddp.mo, c.params.mo);
    EXPECT_EQ(seg->ddp.last, c.params.last);
    EXPECT_EQ(seg->ddp.rsvd_ulp1_4, c.params.invalidate_stag);
    EXPECT_EQ(seg->payload.size(), bytes.size() - 18);

    std::vector<uint8_t> out(18);
    ASSERT_EQ(EncodeSendHeader(c.params, out).value(), 18u);
    EXPECT_EQ(out, std::vector<uint8_t>(bytes.begin(), bytes.begin() + 18));
  }
}

TEST(RdmapKnownAnswerTest, TerminateIsLocatedNotDecoded) {
  // RDMAP / remote operation / unexpected opcode, no headers included.
  const auto bytes = FromHex("41 47 00000000 00000002 00000001 00000000 | 02060000");
  auto seg = ParseSegment(bytes);
  ASSERT_TRUE(seg.ok());
  EXPECT_EQ(seg->opcode, Op::kTerminate);
  const auto* t = std::get_if<TerminateBodyView>(&seg->body);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(ToHex(t->bytes), "02060000");
  EXPECT_EQ(t->bytes.data(), bytes.data() + 18);
  EXPECT_TRUE(seg->payload.empty());
  EXPECT_EQ(seg->header_size(), 22u);

  std::vector<uint8_t> out(18);
  ASSERT_EQ(EncodeTerminateHeader(1, out).value(), 18u);
  EXPECT_EQ(out, std::vector<uint8_t>(bytes.begin(), bytes.begin() + 18));
}

TEST(RdmapKnownAnswerTest, ImmediateData) {
  for (bool se : {false, true}) {
    const auto bytes = FromHex(se ? "41 49 00000000 00000000 00000009 00000000 | 0102030405060708"
                                  : "41 48 00000000 00000000 00000003 00000000 | 0102030405060708");
    auto seg = ParseSegment(bytes);
    ASSERT_TRUE(seg.ok());
    EXPECT_EQ(seg->opcode, se ? Op::kImmediateDataWithSe : Op::kImmediateData);
    const auto* imm = std::get_if<ImmediateDataBody>(&seg->body);
    ASSERT_NE(imm, nullptr);
    EXPECT_EQ(imm->data, 0x0102030405060708u);
    std::vector<uint8_t> out(26);
    ASSERT_EQ(EncodeImmediateData(se, se ? 9 : 3, 0x0102030405060708u, out).value(), 26u);
    EXPECT_EQ(out, bytes);
  }
}

TEST(RdmapKnownAnswerTest, AtomicRequestCmpSwap) {
  // tshark: iwarp_rdma.opcode=0xa (Atomic Request), iwarp_ddp.qn=1,
  // iwarp_rdma.atomic.opcode=2 (CmpSwap), request_identifier=7,
  // remote_stag=0x1111, remote_tagged_offset=0x4000, swap_data/mask,
  // compare_data/mask.
  const auto bytes = FromHex(
      "41 4a 00000000 00000001 00000002 00000000 |"
      "00000002 00000007 00001111 0000000000004000"
      "1111111111111111 ffffffffffffffff 2222222222222222 ffffffffffffffff");
  ASSERT_EQ(bytes.size(), 70u);
  auto seg = ParseSegment(bytes);
  ASSERT_TRUE(seg.ok());
  EXPECT_EQ(seg->opcode, Op::kAtomicRequest);
  const auto* a = std::get_if<AtomicRequestBody>(&seg->body);
  ASSERT_NE(a, nullptr);
  const AtomicRequestBody want{AtomicOp::kCmpSwap,
                               7,
                               0x1111,
                               0x4000,
                               0x1111111111111111u,
                               0xFFFFFFFFFFFFFFFFu,
                               0x2222222222222222u,
                               0xFFFFFFFFFFFFFFFFu};
  EXPECT_EQ(*a, want);
  std::vector<uint8_t> out(70);
  ASSERT_EQ(EncodeAtomicRequest(2, want, out).value(), 70u);
  EXPECT_EQ(out, bytes);
}

TEST(RdmapKnownAnswerTest, AtomicResponse) {
  const auto bytes =
      FromHex("41 4b 00000000 00000003 00000001 00000000 | 00000007 0000000000000005");
  auto seg = ParseSegment(bytes);
  ASSERT_TRUE(seg.ok());
  const auto* a = std::get_if<AtomicResponseBody>(&seg->body);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(*a, (AtomicResponseBody{7, 5}));
  std::vector<uint8_t> out(30);
  ASSERT_EQ(EncodeAtomicResponse(1, *a, out).value(), 30u);
  EXPECT_EQ(out, bytes);
}

TEST(RdmapKnownAnswerTest, ZeroLengthRtrMessages) {
  // RFC 6581 RTR: 0-byte Write with siw's STag 1 / TO 0, 0-byte Read Request.
  EXPECT_TRUE(ParseSegment(FromHex("c1 40 00000001 0000000000000000")).ok());
  const auto rr =
      ParseSegment(FromHex("41 41 00000000 00000001 00000001 00000000 |"
                           "00000001 0000000000000000 00000000 00000001 0000000000000000"));
  ASSERT_TRUE(rr.ok());
  EXPECT_EQ(std::get<ReadRequestBody>(rr->body).read_size, 0u);
}

// ----------------------------------------------------------- round trips --

// A random but valid segment for `op` whose payload views `storage`.
Segment RandomSegment(Op op, std::mt19937_64& rng, std::vector<uint8_t>& storage) {
  const OpcodeInfo& info = GetOpcodeInfo(op);
  Segment seg;
  seg.opcode = op;
  seg.ddp.tagged = info.tagged;
  seg.ddp.rsvd_ulp0 = EncodeRdmapControl(op);
  if (info.tagged) {
    seg.ddp.last = (rng() & 1) != 0;
    seg.ddp.stag = static_cast<uint32_t>(rng());
    seg.ddp.to = rng() >> (rng() % 64);
  } else {
    seg.ddp.qn = info.qn;
    seg.ddp.msn = static_cast<uint32_t>(rng());
    seg.ddp.last = info.single_segment || (rng() & 1) != 0;
    seg.ddp.mo = info.single_segment ? 0 : static_cast<uint32_t>(rng());
    if (info.carries_invalidate) seg.ddp.rsvd_ulp1_4 = static_cast<uint32_t>(rng());
  }
  storage.clear();
  if (info.payload_allowed) {
    storage.resize(rng() % 64);
    for (auto& b : storage) b = static_cast<uint8_t>(rng());
    if (info.tagged && TaggedRangeWraps(seg.ddp.to, storage.size())) seg.ddp.to = 0;
    seg.payload = storage;
  }
  switch (op) {
    case Op::kRdmaReadRequest:
      seg.body = ReadRequestBody{static_cast<uint32_t>(rng()), rng(), static_cast<uint32_t>(rng()),
                                 static_cast<uint32_t>(rng()), rng()};
      break;
    case Op::kImmediateData:
    case Op::kImmediateDataWithSe: seg.body = ImmediateDataBody{rng()}; break;
    case Op::kAtomicRequest:
      seg.body = AtomicRequestBody{static_cast<AtomicOp>(rng() % 3),
                                   static_cast<uint32_t>(rng()),
                                   static_cast<uint32_t>(rng()),
                                   rng(),
                                   rng(),
                                   rng(),
                                   rng(),
                                   rng()};
      break;
    case Op::kAtomicResponse:
      seg.body = AtomicResponseBody{static_cast<uint32_t>(rng()), rng()};
      break;
    case Op::kTerminate: {
      // A valid minimal Terminate body: RDMAP / remote op / unspecified.
      static const uint8_t kBody[] = {0x02, 0xFF, 0x00, 0x00};
      seg.body = TerminateBodyView{kBody};
      break;
    }
    default: break;
  }
  return seg;
}

bool SameSegment(const Segment& a, const Segment& b) {
  if (!(a.ddp == b.ddp) || a.opcode != b.opcode || a.body.index() != b.body.index()) return false;
  if (a.payload.size() != b.payload.size() ||
      !std::equal(a.payload.begin(), a.payload.end(), b.payload.begin())) {
    return false;
  }
  if (const auto* t = std::get_if<TerminateBodyView>(&a.body)) {
    const auto& u = std::get<TerminateBodyView>(b.body);
    return std::equal(t->bytes.begin(), t->bytes.end(), u.bytes.begin(), u.bytes.end());
  }
  if (const auto* x = std::get_if<ReadRequestBody>(&a.body)) {
    return *x == std::get<ReadRequestBody>(b.body);
  }
  if (const auto* x = std::get_if<ImmediateDataBody>(&a.body)) {
    return *x == std::get<ImmediateDataBody>(b.body);
  }
  if (const auto* x = std::get_if<AtomicRequestBody>(&a.body)) {
    return *x == std::get<AtomicRequestBody>(b.body);
  }
  if (const auto* x = std::get_if<AtomicResponseBody>(&a.body)) {
    return *x == std::get<AtomicResponseBody>(b.body);
  }
  return true;
}

TEST(RdmapRoundTripTest, EveryOpcodeWithRandomFields) {
  std::mt19937_64 rng(5040);
  std::vector<uint8_t> storage;
  for (const OpcodeInfo& info : OpcodeTable()) {
    SCOPED_TRACE(info.name);
    for (int i = 0; i < 500; ++i) {
      const Segment seg = RandomSegment(info.opcode, rng, storage);
      const auto bytes = BuildSegment(seg);
      auto back = ParseSegment(bytes);
      ASSERT_TRUE(back.ok()) << ToString(back.error()) << " " << ToHex(bytes);
      ASSERT_TRUE(SameSegment(seg, back.value())) << ToHex(bytes);
      EXPECT_EQ(back->header_size() + back->payload.size(), bytes.size());
    }
  }
}

TEST(RdmapRoundTripTest, TypedEncodersAgreeWithGenericEncoder) {
  std::mt19937_64 rng(7306);
  std::vector<uint8_t> storage;
  std::vector<uint8_t> typed(128);
  for (int i = 0; i < 300; ++i) {
    for (const OpcodeInfo& info : OpcodeTable()) {
      Segment seg = RandomSegment(info.opcode, rng, storage);
      seg.payload = {};
      const auto generic = BuildSegment(seg);
      Result<size_t, WireError> n = Err{WireError::kInvalidArgument};
      switch (info.opcode) {
        case Op::kRdmaWrite:
          n = EncodeWriteHeader(seg.ddp.stag, seg.ddp.to, seg.ddp.last, typed);
          break;
        case Op::kRdmaReadResponse:
          n = EncodeReadResponseHeader(seg.ddp.stag, seg.ddp.to, seg.ddp.last, typed);
          break;
        case Op::kRdmaReadRequest:
          n = EncodeReadRequest(seg.ddp.msn, std::get<ReadRequestBody>(seg.body), typed);
          break;
        case Op::kSend:
        case Op::kSendWithInvalidate:
        case Op::kSendWithSe:
        case Op::kSendWithSeAndInvalidate:
          n = EncodeSendHeader({info.solicited_event, info.carries_invalidate, seg.ddp.rsvd_ulp1_4,
                                seg.ddp.msn, seg.ddp.mo, seg.ddp.last},
                               typed);
          break;
        case Op::kTerminate: n = EncodeTerminateHeader(seg.ddp.msn, typed); break;
        case Op::kImmediateData:
        case Op::kImmediateDataWithSe:
          n = EncodeImmediateData(info.solicited_event, seg.ddp.msn,
                                  std::get<ImmediateDataBody>(seg.body).data, typed);
          break;
        case Op::kAtomicRequest:
          n = EncodeAtomicRequest(seg.ddp.msn, std::get<AtomicRequestBody>(seg.body), typed);
          break;
        case Op::kAtomicResponse:
          n = EncodeAtomicResponse(seg.ddp.msn, std::get<AtomicResponseBody>(seg.body), typed);
          break;
      }
      ASSERT_TRUE(n.ok()) << info.name;
      const size_t cmp = info.opcode == Op::kTerminate ? 18 : generic.size();
      ASSERT_EQ(n.value(), cmp) << info.name;
      EXPECT_TRUE(
          std::equal(typed.begin(), typed.begin() + static_cast<long>(cmp), generic.begin()))
          << info.name;
    }
  }
}

// ----------------------------------------------------------------- encoders --

// ParsePlainSend (the whole-Send shortcut) against ParseSegment: every plain
// Send header is taken with its fields, and nothing ParseSegment refuses, or
// parses as another opcode or as a Send with Invalidate or Immediate Data.
TEST(RdmapPlainSendTest, AgreesWithParseSegment) {
  std::mt19937 rng(17);
  std::vector<uint8_t> out(18);
  for (const bool se : {false, true}) {
    for (const bool last : {false, true}) {
      SendParams p;
      p.solicited_event = se;
      p.last = last;
      p.msn = 0x01020304;
      p.mo = last ? 0 : 4096;
      ASSERT_TRUE(EncodeSendHeader(p, out).ok());
      out.push_back(0xAB);  // a payload byte
      const auto s = ParsePlainSend(out);
      ASSERT_TRUE(s.has_value());
      EXPECT_EQ(s->msn, p.msn);
      EXPECT_EQ(s->mo, p.mo);
      EXPECT_EQ(s->last, last);
      EXPECT_EQ(s->solicited_event, se);
      out.resize(18);
    }
  }
  size_t accepted = 0;
  for (int i = 0; i < 200000; ++i) {
    std::vector<uint8_t> b(18 + rng() % 4);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    // Mostly near-valid headers: the interesting cases differ in one field.
    if (i % 4 != 0) {
      b[0] = (i % 3 == 0) ? 0x41 : 0x01;
      b[1] = (i % 5 == 0) ? 0x45 : 0x43;
      if (i % 7 != 0) std::fill(b.begin() + 2, b.begin() + 10, 0);
      if (i % 11 == 0) b[5] = 1;  // RsvdULP 1: Immediate Data announced
    }
    const auto seg = ParseSegment(b);
    const auto s = ParsePlainSend(b);
    const bool plain = seg.ok() && (seg->opcode == Op::kSend || seg->opcode == Op::kSendWithSe) &&
                       seg->ddp.rsvd_ulp1_4 == 0;
    ASSERT_EQ(s.has_value(), plain) << ToHex(b);
    if (s) {
      ++accepted;
      EXPECT_EQ(s->msn, seg->ddp.msn);
      EXPECT_EQ(s->mo, seg->ddp.mo);
      EXPECT_EQ(s->last, seg->ddp.last);
    }
  }
  EXPECT_GT(accepted, 10000u);  // the comparison saw many valid Sends
  EXPECT_FALSE(ParsePlainSend(std::vector<uint8_t>(17, 0)).has_value());  // short
}

TEST(RdmapEncodeTest, ShortBuffersGiveNoSpace) {
  std::vector<uint8_t> out(13);
  EXPECT_EQ(EncodeWriteHeader(1, 0, true, out).error(), WireError::kNoSpace);
  EXPECT_EQ(EncodeReadResponseHeader(1, 0, true, out).error(), WireError::kNoSpace);
  out.resize(17);
  EXPECT_EQ(EncodeSendHeader({}, out).error(), WireError::kNoSpace);
  EXPECT_EQ(EncodeTerminateHeader(1, out).error(), WireError::kNoSpace);
  out.resize(45);
  EXPECT_EQ(EncodeReadRequest(1, {}, out).error(), WireError::kNoSpace);
  out.resize(25);
  EXPECT_EQ(EncodeImmediateData(false, 1, 0, out).error(), WireError::kNoSpace);
  out.resize(69);
  EXPECT_EQ(EncodeAtomicRequest(1, {}, out).error(), WireError::kNoSpace);
  out.resize(29);
  EXPECT_EQ(EncodeAtomicResponse(1, {}, out).error(), WireError::kNoSpace);
}

TEST(RdmapEncodeTest, InconsistentArgumentsAreRefused) {
  std::vector<uint8_t> out(128);
  SendParams p;
  p.invalidate_stag = 5;  // without invalidate
  EXPECT_EQ(EncodeSendHeader(p, out).error(), WireError::kInvalidArgument);

  AtomicRequestBody a;
  a.op = static_cast<AtomicOp>(7);
  EXPECT_EQ(EncodeAtomicRequest(1, a, out).error(), WireError::kInvalidArgument);

  Segment seg;
  seg.opcode = Op::kSend;
  seg.ddp.qn = 1;  // wrong queue
  EXPECT_EQ(EncodeSegmentHeader(seg, out).error(), WireError::kInvalidArgument);
  seg.ddp.qn = 0;
  seg.ddp.tagged = true;  // wrong model
  EXPECT_EQ(EncodeSegmentHeader(seg, out).error(), WireError::kInvalidArgument);
  seg.ddp.tagged = false;
  seg.body = ImmediateDataBody{1};  // wrong body
  EXPECT_EQ(EncodeSegmentHeader(seg, out).error(), WireError::kInvalidArgument);
  seg.body = std::monostate{};
  EXPECT_EQ(EncodeSegmentHeader(seg, out).value(), 18u);

  seg.opcode = Op::kRdmaReadRequest;
  seg.ddp.qn = 1;
  seg.ddp.last = true;
  EXPECT_EQ(EncodeSegmentHeader(seg, out).error(), WireError::kInvalidArgument);  // no body
  seg.body = ReadRequestBody{};
  EXPECT_EQ(EncodeSegmentHeader(seg, out).value(), 46u);
  const uint8_t payload[1] = {0};
  seg.payload = payload;  // Read Request carries no payload
  EXPECT_EQ(EncodeSegmentHeader(seg, out).error(), WireError::kInvalidArgument);

  Segment term;
  term.opcode = Op::kTerminate;
  term.ddp.qn = 2;
  term.ddp.last = true;
  const uint8_t short_body[3] = {0, 0, 0};
  term.body = TerminateBodyView{short_body};
  EXPECT_EQ(EncodeSegmentHeader(term, out).error(), WireError::kInvalidArgument);

  Segment write;
  write.opcode = Op::kRdmaWrite;
  write.ddp.tagged = true;
  write.ddp.to = std::numeric_limits<uint64_t>::max();
  const uint8_t two[2] = {1, 2};
  write.payload = two;
  EXPECT_EQ(EncodeSegmentHeader(write, out).error(), WireError::kInvalidArgument);

  Segment reserved;
  reserved.opcode = static_cast<Op>(0x0C);
  EXPECT_EQ(EncodeSegmentHeader(reserved, out).error(), WireError::kInvalidArgument);
}

TEST(RdmapEncodeTest, ControlByteComesFromOpcodeNotRsvdUlp0) {
  Segment seg;
  seg.opcode = Op::kSendWithSe;
  seg.ddp.rsvd_ulp0 = 0xFF;
  seg.ddp.last = true;
  std::vector<uint8_t> out(18);
  ASSERT_TRUE(EncodeSegmentHeader(seg, out).ok());
  EXPECT_EQ(out[1], 0x45);
}

// The fuzzer's seed corpus must hold one valid segment per opcode.
TEST(RdmapSeedCorpusTest, OneValidSeedPerOpcode) {
  const auto dir = std::filesystem::path(__FILE__).parent_path() / "corpus" / "segment";
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << "no corpus at " << dir;
  std::vector<bool> seen(kRdmapOpcodeCount, false);
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                     std::istreambuf_iterator<char>());
    auto seg = ParseSegment(bytes);
    ASSERT_TRUE(seg.ok()) << entry.path() << ": " << ToString(seg.error());
    seen[static_cast<size_t>(seg->opcode)] = true;
    if (const auto* t = std::get_if<TerminateBodyView>(&seg->body)) {
      EXPECT_TRUE(DecodeTerminate(t->bytes).ok()) << entry.path();
    }
  }
  for (size_t op = 0; op < kRdmapOpcodeCount; ++op) EXPECT_TRUE(seen[op]) << "opcode " << op;
}

}  // namespace
}  // namespace iwarpx::wire
