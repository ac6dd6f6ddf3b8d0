// RC-FP, the small-message RDMA-write fast path of an RDM connection (seed
// 004 §3 "RC-FP", seed 001 §4.2-4.3, seed 000 §3.3; docs/design.md
// "RC-FP: the RDMA-write ring"; layouts in docs/wire.md §3.11). Pure ring
// and credit logic, no QPs: RdmCore (rdm_core_fp.cc) posts the Writes.
//
// * Each side of a connection that has the fast path owns one receive ring:
//   `slots` slots of SlotBytes(max_message) bytes, followed by an 8-byte
//   credit word, registered for remote write; the peer learns its STag and
//   base from the connection's hello (rc_hello.h). The peer writes message
//   n (n = 0, 1, ...) with one RDMA Write into slot n % slots:
//     0 seq(32) = SeqOf(n) | 4 len(32): bytes of the RDM message that follow
//     8 credits(32): how many messages of the writer's own ring the writer
//       has consumed (cumulative, mod 2^32; piggybacked credit return)
//    12 reserved(32) = 0 | 16 the RDM message (EAGER header + payload)
// * Head and tail are replicated (seed 001 §4.2): the writer (FpTx) counts
//   what it wrote, the owner (FpRx) what it consumed; the owner tells the
//   writer its count by piggybacking it on its own slot writes and, when
//   none flow, by an explicit RDMA Write of the count into the writer's
//   credit word (delayed: only once UpdateDue(), i.e. half a ring was
//   consumed unreported, so a stream costs one extra Write per slots/2
//   messages and a ping-pong none). A writer has a credit while fewer than
//   `slots` of its messages are unconsumed as far as it knows.
// * Arrival: the engine itself places the Write, so the owner learns of it
//   from the placement (QueuePair's CompletionSink::OnRemoteWrite, after the
//   CRC check, in stream order with the connection's receive completions)
//   and then reads the head slot with Next(). No memory polling.
// * Every byte in a ring or credit word was written by the peer: Next()
//   refuses a slot whose seq is not the expected one, whose length is out of
//   range or whose reserved field is set; AcceptCredits() ignores counts that
//   go backwards or beyond what was written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "base/bytes.h"

namespace iwarpx::rdm {

inline constexpr size_t kFpSlotHeaderSize = 16;
inline constexpr size_t kFpCreditWordSize = 8;
// Limits on a ring description (the hello refuses others).
inline constexpr uint32_t kFpMinSlots = 2;
inline constexpr uint32_t kFpMaxSlots = 4096;
inline constexpr uint32_t kFpMinSlotBytes = 64;
inline constexpr uint32_t kFpMaxSlotBytes = 65536;

// What a peer needs to write into a ring (carried in the hello).
struct FpRingDesc {
  uint32_t stag = 0;
  uint64_t base = 0;        // tagged offset of slot 0
  uint32_t slots = 0;       // kFpMinSlots..kFpMaxSlots
  uint32_t slot_bytes = 0;  // kFpMinSlotBytes..kFpMaxSlotBytes, a multiple of 8
  [[nodiscard]] bool valid() const;
  [[nodiscard]] uint64_t credit_word() const { return base + uint64_t{slots} * slot_bytes; }
  friend bool operator==(const FpRingDesc&, const FpRingDesc&) = default;
};

// Bytes of a slot that carries RDM messages (header + payload) of up to
// `max_message` bytes, rounded up to 8.
uint32_t FpSlotBytes(size_t max_message);
// The seq field of message n: never 0, so a cleared slot is never taken.
inline uint32_t FpSeqOf(uint64_t n) {
  return static_cast<uint32_t>(n & 0x7FFFFFFF) | 0x80000000u;
}
void EncodeFpSlotHeader(uint32_t seq, uint32_t len, uint32_t credits, uint8_t* out);

// The writer's side: the peer's ring.
class FpTx {
 public:
  explicit FpTx(const FpRingDesc& ring) : ring_(ring) {}
  [[nodiscard]] const FpRingDesc& ring() const { return ring_; }
  // Largest RDM message (header + payload) a slot takes.
  [[nodiscard]] size_t max_message() const { return ring_.slot_bytes - kFpSlotHeaderSize; }
  [[nodiscard]] bool HasCredit() const { return written_ - acked_ < ring_.slots; }
  [[nodiscard]] uint32_t in_flight() const { return static_cast<uint32_t>(written_ - acked_); }
  struct Slot {
    uint64_t to = 0;  // tagged offset of the slot at the peer
    uint32_t seq = 0;
  };
  // The next slot (needs HasCredit()); counts it written.
  Slot Take();
  // Gives the slot of the last Take() back (the Write could not be posted).
  void Untake() { --written_; }
  // The peer's consumed count (piggybacked or from the credit word). False
  // (and ignored) when it goes backwards or past what was written.
  bool AcceptCredits(uint32_t consumed);

 private:
  FpRingDesc ring_;
  uint64_t written_ = 0;
  uint64_t acked_ = 0;
};

// The owner's side: the ring in local memory.
class FpRx {
 public:
  // `memory`: slots * slot_bytes + kFpCreditWordSize bytes, zeroed.
  FpRx(uint8_t* memory, uint32_t slots, uint32_t slot_bytes);
  // Bytes to allocate and register for such a ring.
  static size_t RegionBytes(uint32_t slots, uint32_t slot_bytes) {
    return size_t{slots} * slot_bytes + kFpCreditWordSize;
  }
  struct Message {
    ByteSpan rdm;          // the RDM message in the slot (valid until Consume)
    uint32_t credits = 0;  // the writer's piggybacked consumed count
  };
  enum class Status : uint8_t { kEmpty, kReady, kMalformed };
  // The head slot: kEmpty (not written yet), kReady (`out` set) or
  // kMalformed (a seq that is not the expected one but not empty either, a
  // bad length or reserved bits).
  Status Next(Message* out) const;
  // The head slot's message was taken: the slot is cleared for the next lap.
  void Consume();
  // The writer's credit word in this region (what the peer wrote there).
  [[nodiscard]] uint32_t credit_word() const;
  // Credit return: what to tell the peer now (piggybacked or explicitly),
  // and whether an explicit update is due (half a ring unreported).
  [[nodiscard]] uint32_t consumed() const { return static_cast<uint32_t>(consumed_); }
  [[nodiscard]] uint32_t unreported() const { return static_cast<uint32_t>(consumed_ - reported_); }
  [[nodiscard]] bool UpdateDue() const { return unreported() >= (slots_ + 1) / 2; }
  // `count` (a consumed() value) reached the peer's side.
  void Reported(uint32_t count);

 private:
  uint8_t* mem_;
  uint32_t slots_;
  uint32_t slot_bytes_;
  uint64_t consumed_ = 0;
  uint64_t reported_ = 0;
};

}  // namespace iwarpx::rdm
