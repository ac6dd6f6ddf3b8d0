#include "rdm/rc_fastpath.h"

#include <cstring>

#include "wire/rdm_msg.h"

namespace iwarpx::rdm {

bool FpRingDesc::valid() const {
  return stag != 0 && slots >= kFpMinSlots && slots <= kFpMaxSlots &&
         slot_bytes >= kFpMinSlotBytes && slot_bytes <= kFpMaxSlotBytes && slot_bytes % 8 == 0 &&
         base <= UINT64_MAX - (uint64_t{slots} * slot_bytes + kFpCreditWordSize);
}

uint32_t FpSlotBytes(size_t max_message) {
  const size_t n = kFpSlotHeaderSize + max_message;
  return static_cast<uint32_t>((n + 7) & ~size_t{7});
}

void EncodeFpSlotHeader(uint32_t seq, uint32_t len, uint32_t credits, uint8_t* out) {
  StoreBe32(out, seq);
  StoreBe32(out + 4, len);
  StoreBe32(out + 8, credits);
  StoreBe32(out + 12, 0);
}

FpTx::Slot FpTx::Take() {
  Slot s;
  s.to = ring_.base + (written_ % ring_.slots) * ring_.slot_bytes;
  s.seq = FpSeqOf(written_);
  ++written_;
  return s;
}

bool FpTx::AcceptCredits(uint32_t consumed) {
  // Both counts mod 2^32: the step forward must not pass what was written.
  const auto step = static_cast<uint32_t>(consumed - static_cast<uint32_t>(acked_));
  if (step > written_ - acked_) return false;
  acked_ += step;
  return true;
}

FpRx::FpRx(uint8_t* memory, uint32_t slots, uint32_t slot_bytes)
    : mem_(memory), slots_(slots), slot_bytes_(slot_bytes) {}

FpRx::Status FpRx::Next(Message* out) const {
  const uint8_t* s = mem_ + (consumed_ % slots_) * slot_bytes_;
  const uint32_t seq = LoadBe32(s);
  if (seq == 0) return Status::kEmpty;
  const uint32_t len = LoadBe32(s + 4);
  if (seq != FpSeqOf(consumed_) || LoadBe32(s + 12) != 0 || len < wire::kRdmHeaderSize ||
      len > slot_bytes_ - kFpSlotHeaderSize) {
    return Status::kMalformed;
  }
  out->rdm = ByteSpan(s + kFpSlotHeaderSize, len);
  out->credits = LoadBe32(s + 8);
  return Status::kReady;
}

void FpRx::Consume() {
  uint8_t* s = mem_ + (consumed_ % slots_) * slot_bytes_;
  std::memset(s, 0, kFpSlotHeaderSize);
  ++consumed_;
}

uint32_t FpRx::credit_word() const {
  return LoadBe32(mem_ + size_t{slots_} * slot_bytes_);
}

void FpRx::Reported(uint32_t count) {
  const auto behind = static_cast<uint32_t>(static_cast<uint32_t>(consumed_) - count);
  if (behind > consumed_ - reported_) return;  // older than what was reported already
  reported_ = consumed_ - behind;
}

}  // namespace iwarpx::rdm
