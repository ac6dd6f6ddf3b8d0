// The RC-FP ring and credit logic with a fake network (a memcpy stands for
// the RDMA Write the engine would place): slot layout, wrap-around over
// many laps, credits exhausted and returned (piggybacked or by the credit
// word), the delayed explicit update, and refusal of every malformed slot
// or credit count; the hello that carries a ring description.
#include "rdm/rc_fastpath.h"

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "rdm/rc_hello.h"
#include "wire/rdm_msg.h"

namespace iwarpx::rdm {
namespace {

constexpr uint32_t kSlots = 4;

// One direction: a writer (FpTx) and the ring it writes into (FpRx).
struct FakeLink {
  uint32_t slot_bytes = FpSlotBytes(wire::kRdmHeaderSize + 64);
  std::vector<uint8_t> region = std::vector<uint8_t>(FpRx::RegionBytes(kSlots, slot_bytes));
  FpRingDesc desc{0x1234, 0x10000, kSlots, slot_bytes};
  FpTx tx{desc};
  FpRx rx{region.data(), kSlots, slot_bytes};

  // The Write of message `payload` with piggybacked `credits`.
  void Write(const std::vector<uint8_t>& payload, uint32_t credits) {
    ASSERT_TRUE(tx.HasCredit());
    const FpTx::Slot s = tx.Take();
    wire::RdmHeader h;
    h.op = wire::RdmOp::kEager;
    h.size = payload.size();
    std::vector<uint8_t> img(kFpSlotHeaderSize + wire::kRdmHeaderSize + payload.size());
    ASSERT_TRUE(wire::EncodeRdmHeader(h, MutableByteSpan(img).subspan(kFpSlotHeaderSize)).ok());
    EncodeFpSlotHeader(s.seq, static_cast<uint32_t>(img.size() - kFpSlotHeaderSize), credits,
                       img.data());
    std::memcpy(img.data() + kFpSlotHeaderSize + wire::kRdmHeaderSize, payload.data(),
                payload.size());
    ASSERT_LE(s.to - desc.base + img.size(), size_t{kSlots} * slot_bytes);
    std::memcpy(region.data() + (s.to - desc.base), img.data(), img.size());
  }
  // The credit-word Write of the ring's owner.
  void WriteCreditWord(uint32_t consumed) {
    StoreBe32(region.data() + (desc.credit_word() - desc.base), consumed);
  }
  // Takes the head message; returns its first payload byte.
  int Take(uint32_t* credits = nullptr) {
    FpRx::Message m;
    if (rx.Next(&m) != FpRx::Status::kReady) return -1;
    auto msg = wire::DecodeRdmMessage(m.rdm);
    if (!msg.ok()) return -2;
    if (credits != nullptr) *credits = m.credits;
    const int first = msg->payload.empty() ? 256 : msg->payload[0];
    rx.Consume();
    return first;
  }
};

TEST(FpRingTest, SlotBytesAndSeq) {
  EXPECT_EQ(FpSlotBytes(2048 + 32), 2096u);
  EXPECT_EQ(FpSlotBytes(1), 24u);
  EXPECT_EQ(FpSeqOf(0), 0x80000000u);
  EXPECT_EQ(FpSeqOf(0x7FFFFFFF), 0xFFFFFFFFu);
  EXPECT_EQ(FpSeqOf(0x80000000), 0x80000000u);  // wraps, never 0
  EXPECT_NE(FpSeqOf(uint64_t{1} << 40), 0u);
}

TEST(FpRingTest, EmptyThenInOrderAcrossManyLaps) {
  FakeLink l;
  FpRx::Message m;
  EXPECT_EQ(l.rx.Next(&m), FpRx::Status::kEmpty);
  // 10 laps, one message at a time, credits piggybacked back at once.
  for (int i = 0; i < 40; ++i) {
    l.Write({static_cast<uint8_t>(i)}, 0);
    EXPECT_EQ(l.Take(), i) << i;
    EXPECT_EQ(l.rx.Next(&m), FpRx::Status::kEmpty) << i;
    ASSERT_TRUE(l.tx.AcceptCredits(l.rx.consumed()));
    EXPECT_EQ(l.tx.in_flight(), 0u);
  }
}

TEST(FpRingTest, CreditsExhaustedUntilReturned) {
  FakeLink l;
  for (uint32_t i = 0; i < kSlots; ++i) l.Write({static_cast<uint8_t>(i)}, 0);
  EXPECT_FALSE(l.tx.HasCredit());  // the caller's next rule (or a wait) applies
  // The owner consumes two; until it says so the writer still has none.
  EXPECT_EQ(l.Take(), 0);
  EXPECT_EQ(l.Take(), 1);
  EXPECT_FALSE(l.tx.HasCredit());
  // The delayed explicit update: due at half a ring.
  EXPECT_EQ(l.rx.unreported(), 2u);
  EXPECT_TRUE(l.rx.UpdateDue());
  l.WriteCreditWord(l.rx.consumed());
  ASSERT_TRUE(l.tx.AcceptCredits(l.rx.credit_word()));
  l.rx.Reported(l.rx.consumed());
  EXPECT_FALSE(l.rx.UpdateDue());
  EXPECT_EQ(l.tx.in_flight(), 2u);
  // Wrap-around into the two freed slots, the others still unconsumed.
  l.Write({10}, 0);
  l.Write({11}, 0);
  EXPECT_FALSE(l.tx.HasCredit());
  EXPECT_EQ(l.Take(), 2);
  EXPECT_EQ(l.Take(), 3);
  EXPECT_EQ(l.Take(), 10);
  EXPECT_EQ(l.Take(), 11);
  EXPECT_EQ(l.Take(), -1);
}

TEST(FpRingTest, PiggybackedCreditsMakeTheExplicitUpdateUnneeded) {
  // A ping-pong: each side's next Write carries what it consumed.
  FakeLink ab;  // a writes into b's ring
  FakeLink ba;  // b writes into a's ring
  for (int i = 0; i < 50; ++i) {
    ab.Write({static_cast<uint8_t>(i)}, ba.rx.consumed());
    ba.rx.Reported(ba.rx.consumed());
    uint32_t credits = 0;
    ASSERT_EQ(ab.Take(&credits), i);
    ASSERT_TRUE(ba.tx.AcceptCredits(credits));
    EXPECT_FALSE(ab.rx.UpdateDue());
    ba.Write({static_cast<uint8_t>(i + 1)}, ab.rx.consumed());
    ab.rx.Reported(ab.rx.consumed());
    ASSERT_EQ(ba.Take(&credits), i + 1);
    ASSERT_TRUE(ab.tx.AcceptCredits(credits));
    EXPECT_FALSE(ba.rx.UpdateDue());
    // a's message was answered; b's is acknowledged by a's next one.
    EXPECT_EQ(ab.tx.in_flight(), 0u);
    EXPECT_EQ(ba.tx.in_flight(), 1u);
  }
}

TEST(FpRingTest, StaleOrForgedCreditsAreIgnored) {
  FakeLink l;
  l.Write({1}, 0);
  l.Write({2}, 0);
  EXPECT_FALSE(l.tx.AcceptCredits(3));            // more than was written
  EXPECT_FALSE(l.tx.AcceptCredits(0xFFFFFFFFu));  // "backwards" mod 2^32
  EXPECT_TRUE(l.tx.AcceptCredits(1));
  EXPECT_TRUE(l.tx.AcceptCredits(1));  // the same count again: no step
  EXPECT_FALSE(l.tx.AcceptCredits(0));
  EXPECT_EQ(l.tx.in_flight(), 1u);
  // Reported() ignores a count older than what was reported.
  EXPECT_EQ(l.Take(), 1);
  EXPECT_EQ(l.Take(), 2);
  l.rx.Reported(2);
  l.rx.Reported(1);
  EXPECT_EQ(l.rx.unreported(), 0u);
}

TEST(FpRingTest, MalformedSlotsAreRefused) {
  auto corrupt = [](size_t offset, uint32_t value) {
    FakeLink l;
    l.Write({7, 8, 9}, 0);
    StoreBe32(l.region.data() + offset, value);
    FpRx::Message m;
    return l.rx.Next(&m);
  };
  EXPECT_EQ(corrupt(0, FpSeqOf(1)), FpRx::Status::kMalformed);  // seq of another lap
  EXPECT_EQ(corrupt(0, 0), FpRx::Status::kEmpty);
  EXPECT_EQ(corrupt(4, 31), FpRx::Status::kMalformed);               // shorter than an RDM header
  EXPECT_EQ(corrupt(4, FpSlotBytes(96)), FpRx::Status::kMalformed);  // past the slot
  EXPECT_EQ(corrupt(12, 1), FpRx::Status::kMalformed);               // reserved
  EXPECT_EQ(corrupt(8, 12345), FpRx::Status::kReady);                // credits are checked by FpTx
}

TEST(FpRingTest, RingDescriptionLimits) {
  FpRingDesc d{1, 4096, 32, 2096};
  EXPECT_TRUE(d.valid());
  EXPECT_EQ(d.credit_word(), 4096u + 32 * 2096);
  auto bad = [&](auto change) {
    FpRingDesc x = d;
    change(x);
    return x.valid();
  };
  EXPECT_FALSE(bad([](FpRingDesc& x) { x.stag = 0; }));
  EXPECT_FALSE(bad([](FpRingDesc& x) { x.slots = 1; }));
  EXPECT_FALSE(bad([](FpRingDesc& x) { x.slots = kFpMaxSlots + 1; }));
  EXPECT_FALSE(bad([](FpRingDesc& x) { x.slot_bytes = 60; }));
  EXPECT_FALSE(bad([](FpRingDesc& x) { x.slot_bytes = 2097; }));
  EXPECT_FALSE(bad([](FpRingDesc& x) { x.slot_bytes = kFpMaxSlotBytes + 8; }));
  EXPECT_FALSE(bad([](FpRingDesc& x) { x.base = UINT64_MAX - 100; }));
}

TEST(RcHelloTest, CarriesARingAndRefusesBadOnes) {
  const FpRingDesc ring{0xABCDEF01, 0x7F0012345678, 32, 2096};
  std::array<uint8_t, kRcHelloMaxSize> h{};
  ASSERT_EQ(EncodeRcHello(4791, ring, h), kRcHelloMaxSize);
  auto d = DecodeRcHelloFull(ByteSpan(h.data(), h.size()));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->udp_port, 4791);
  ASSERT_TRUE(d->ring);
  EXPECT_EQ(*d->ring, ring);
  EXPECT_EQ(DecodeRcHello(ByteSpan(h.data(), h.size())), std::optional<uint16_t>(4791));
  // Without a ring: the 8-byte form.
  ASSERT_EQ(EncodeRcHello(4791, std::nullopt, h), kRcHelloSize);
  d = DecodeRcHelloFull(ByteSpan(h.data(), kRcHelloSize));
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->ring);
  // The flag and the length must agree; the ring must be in range; other
  // flag bits are reserved.
  ASSERT_EQ(EncodeRcHello(4791, ring, h), kRcHelloMaxSize);
  EXPECT_FALSE(DecodeRcHelloFull(ByteSpan(h.data(), kRcHelloSize)));
  auto with = [&](size_t at, uint8_t v) {
    auto x = h;
    x[at] = v;
    return DecodeRcHelloFull(ByteSpan(x.data(), x.size())).has_value();
  };
  EXPECT_FALSE(with(5, 0x03));
  EXPECT_FALSE(with(5, 0x00));
  EXPECT_TRUE(with(15, 64));     // 64 slots: another valid ring
  EXPECT_FALSE(with(15, 1));     // 1 slot
  EXPECT_FALSE(with(19, 0x31));  // 2097 slot bytes: not a multiple of 8
  auto zero_port = h;
  zero_port[6] = zero_port[7] = 0;
  EXPECT_FALSE(DecodeRcHelloFull(ByteSpan(zero_port.data(), zero_port.size())));
  auto zero_stag = h;
  std::fill(zero_stag.begin() + 8, zero_stag.begin() + 12, 0);
  EXPECT_FALSE(DecodeRcHelloFull(ByteSpan(zero_stag.data(), zero_stag.size())));
}

}  // namespace
}  // namespace iwarpx::rdm
