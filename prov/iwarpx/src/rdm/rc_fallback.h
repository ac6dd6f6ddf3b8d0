// The per-peer state of the lossless fall-back of a broken connection
// (rdm_core_fallback.cc; docs/design.md "Connected channels in the RDM
// endpoint", Failure; the TAKEN op in docs/wire.md §3.10): the numbered
// messages this side sent on the connection and keeps until the peer reports
// them taken, the count of the peer's it took, and where the exchange after
// a break stands. Plain data: RdmCore does the work.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/lazy_deque.h"
#include "wire/rdm_msg.h"

namespace iwarpx::rdm {

// Bounds: a sender keeps at most this much (then sends that would take the
// connection return EAGAIN); a receiver reports well before (its thresholds
// are below the bound, so reports always free it).
inline constexpr size_t kFbKeepBytes = size_t{1} << 20;
inline constexpr size_t kFbKeepMsgs = 256;
inline constexpr uint64_t kFbReportMsgs = 64;
inline constexpr uint64_t kFbReportBytes = uint64_t{256} << 10;

// TAKEN's msg_id: a report on the connection, BROKEN and RESENT on RD.
inline constexpr uint32_t kTakenReport = 0;
inline constexpr uint32_t kTakenBroken = 1;
inline constexpr uint32_t kTakenResent = 2;

struct FbKept {
  uint64_t seq = 0;
  std::vector<uint8_t> bytes;  // the RDM message as sent (header, EAGER payload)
};

struct FbState {
  // This connection's numbering (reset when a new one gets its QP).
  uint64_t tx_seq = 0;    // numbered messages we posted on it
  uint64_t rx_taken = 0;  // numbered messages of the peer's we took
  uint64_t rx_reported = 0;
  uint64_t rx_unreported_bytes = 0;
  bool report_wanted = false;
  bool report_in_flight = false;
  LazyDeque<FbKept> kept;  // ours, not yet reported taken, by seq (no storage until used)
  size_t kept_bytes = 0;
  // After a break.
  bool broken = false;                        // we broke: sends wait until our RESENT is out
  bool broken_pending = false;                // our BROKEN waits for send-queue room
  bool peer_broken = false;                   // the peer's BROKEN arrived: we resend
  bool resent_pending = false;                // our RESENT waits for room (after the resends)
  bool rx_wait = false;                       // waiting for the peer's RESENT
  bool rx_hold = false;                       // hold RD EAGER/RTS until the peer's BROKEN
  LazyDeque<std::vector<uint8_t>> in_flight;  // resent on RD, until their completions
  std::array<uint8_t, wire::kRdmHeaderSize> report{};
  std::array<uint8_t, wire::kRdmHeaderSize> broken_msg{};
  std::array<uint8_t, wire::kRdmHeaderSize> resent_msg{};
  // Source of our SWITCH (RdmCore::SendSwitch): here rather than in every
  // RdmCore::Peer, as only a peer with a connection sends one.
  std::array<uint8_t, wire::kRdmHeaderSize> switch_header{};
};

}  // namespace iwarpx::rdm
