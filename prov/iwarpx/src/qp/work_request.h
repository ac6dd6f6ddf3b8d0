// Work requests a QueuePair accepts (queue_pair.h). Plain values: the QP
// copies them into a preallocated queue slot when posted, so the caller's
// struct may go away at once; the memory the SGL points to must stay valid
// (and, for a receive or Read sink, unread by the caller) until the WR
// completes.
//
// * Sgl: at most kMaxSge {addr, len} pieces, gathered in order on send and
//   scattered in order on receive. A piece with len 0 is allowed (and its
//   addr may then be null).
// * context: the caller's 64-bit cookie, handed back in every completion.
// * flags: kSignaled asks for a success completion (errors are always
//   reported); kFence makes the WR wait until every earlier RDMA Read has
//   completed (libfabric FI_FENCE).
// * RDMA Write: SGL is the local source, remote_stag/remote_to the peer's
//   data sink (RFC 5040 §5.1). With `with_imm` the Write is followed by an
//   RFC 7306 Immediate Data message carrying `imm` (libfabric fi_writedata):
//   it consumes a posted receive at the target, which completes with
//   RecvInfo::has_imm. The WR completes when both have been sent.
// * Send with `with_imm` (libfabric fi_senddata; the iwarpx extension of
//   docs/wire.md, usable only on a connection whose MPA exchange negotiated
//   it, MpaOutcome::send_imm, else PostSend returns kNotNegotiated): the
//   Send's last segment announces an Immediate Data message carrying `imm`,
//   which follows it. The target completes ONE receive (the Send's) with
//   RecvInfo::has_imm and send_imm. The WR completes when both have been sent.
// * Send `stream` (iWARP over SCTP only; docs/design.md "Streams for untagged
//   Sends"): the SCTP stream every segment of this Send travels on. 0 (the
//   default) is the ordered stream all other traffic uses, so the Send keeps
//   every RDMAP ordering rule. On stream k != 0 the Send is ordered only with
//   the other Sends on stream k: the peer places and completes it before or
//   after any message on another stream, and a posted receive is consumed by
//   whichever Send's first segment arrives first (libfabric receive matching
//   without FI_ORDER_SAS). PostSend returns kInvalid for k != 0 on a
//   connection that is not SCTP, for k >= the association's streams
//   (SctpFraming::tx_streams()) and together with `with_imm`.
// * RDMA Read: the sink is a tagged range of *local* registered memory
//   (local_stag/local_to, registered in the QP's StagTable with kLocalWrite
//   and the QP's protection domain); the source is remote_stag/remote_to at
//   the peer. The Read Response is placed straight into the sink after the
//   same StagTable check as any tagged placement.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "wire/rdmap_atomic.h"

namespace iwarpx::qp {

inline constexpr size_t kMaxSge = 4;

struct Sge {
  void* addr = nullptr;
  size_t len = 0;
};

struct Sgl {
  std::array<Sge, kMaxSge> sge{};
  uint8_t count = 0;

  // Sum of the pieces' lengths.
  [[nodiscard]] size_t Length() const {
    size_t n = 0;
    for (uint8_t i = 0; i < count && i < kMaxSge; ++i) n += sge[i].len;
    return n;
  }
  // At most kMaxSge pieces, and only empty pieces may have a null addr.
  [[nodiscard]] bool Valid() const {
    if (count > kMaxSge) return false;
    for (uint8_t i = 0; i < count; ++i) {
      if (sge[i].addr == nullptr && sge[i].len != 0) return false;
    }
    return true;
  }
  // Appends a piece; false when full.
  bool Add(void* addr, size_t len) {
    if (count >= kMaxSge) return false;
    sge[count++] = Sge{addr, len};
    return true;
  }
};

enum WrFlags : uint32_t {
  kWrSignaled = 1u << 0,
  kWrFence = 1u << 1,
};

struct SendWr {
  uint64_t context = 0;
  Sgl sgl;
  uint32_t flags = kWrSignaled;
  bool with_imm = false;
  uint64_t imm = 0;
  uint16_t stream = 0;  // SCTP stream (see above)
};

struct RecvWr {
  uint64_t context = 0;
  Sgl sgl;
};

struct WriteWr {
  uint64_t context = 0;
  Sgl sgl;  // local source
  uint32_t remote_stag = 0;
  uint64_t remote_to = 0;
  uint32_t flags = kWrSignaled;
  bool with_imm = false;
  uint64_t imm = 0;
};

struct ReadWr {
  uint64_t context = 0;
  uint32_t local_stag = 0;  // sink, registered with kLocalWrite
  uint64_t local_to = 0;
  uint32_t length = 0;
  uint32_t remote_stag = 0;  // source at the peer
  uint64_t remote_to = 0;
  uint32_t flags = kWrSignaled;
};

// RFC 7306 atomic at the peer (fi_atomic / fi_fetch_atomic /
// fi_compare_atomic): counted against ORD like a Read. The target must be
// registered there with kRemoteAtomic.
//   kFetchAdd: *target += operand
//   kSwap:     *target = (*target & ~swap_mask) | (operand & swap_mask)
//              (RFC 7306's masked swap; swap_mask all ones is a plain swap,
//              operand ~0 under mask x is a bitwise OR with x, operand 0
//              under mask ~x a bitwise AND with x)
//   kCmpSwap:  if (*target == compare) *target = operand
// `size` is the operand width in bytes:
// * 8: a 64-bit atomic; remote_to must be 8-byte aligned.
// * 4: a 32-bit atomic; remote_to must be 4-byte aligned. RFC 7306 atomics
//   act on 64 bits, so this is the masked form of the same request on the
//   enclosing 8-byte-aligned word (remote_to & ~7): only the 32-bit lane that
//   holds the target changes (fetch-add with a field boundary at bit 31,
//   swap and compare with a lane mask), the other lane is read and left as it
//   was. Lanes follow this host's byte order, so both peers must share it.
//   The whole 8-byte word must lie inside the peer's region, or the peer
//   answers with a protection Terminate.
// Only the operand's low `size` bytes count. The original value (`size`
// bytes) is stored at `result` (if not null) before the success completion.
// xor_loop: *target ^= operand, which RFC 7306 has no request for, carried
// out as a compare-and-swap loop on the target's lane (`op` is ignored): the
// first Compare and Swap guesses 0, and each miss's Atomic Response carries
// the value to guess next, so an uncontended XOR costs one or two round
// trips. It is atomic with respect to every other atomic at the target. The
// loop holds the send queue behind it until it succeeds, so work posted after
// it still executes after it.
struct AtomicWr {
  uint64_t context = 0;
  wire::AtomicOp op = wire::AtomicOp::kFetchAdd;
  uint8_t size = 8;
  uint32_t remote_stag = 0;
  uint64_t remote_to = 0;
  uint64_t operand = 0;
  uint64_t compare = 0;
  uint64_t swap_mask = UINT64_MAX;  // kSwap only: the bits (of the low `size` bytes) replaced
  bool xor_loop = false;
  void* result = nullptr;
  uint32_t flags = kWrSignaled;
};

}  // namespace iwarpx::qp
