// Per-peer, per-channel statistics of an RDM endpoint (issue 5 item 4): what
// RdmCore counts for every peer it has known, and what it tells its owner
// when a peer's connection or session changes (for the log).
//
// Contract
// - ChannelCounts are indexed by rdm::Channel (kChannelCount entries), so a
//   channel added to the enum is counted without changing this file. A
//   message counts once, on the channel that carried it: the sender counts it
//   when it is posted (UD-SR/UD-ZCopy on the RD queue pair, RC-SR/RC-RDMA on
//   the connection; after the SWITCH every message is on the connection), the
//   receiver when it is matched or becomes unexpected (EAGER counts as the
//   eager channel, RTS as the rendezvous one of the QP it came on). Bytes are
//   the message size from the header, not wire bytes.
// - PeerStats only grow while the core lives (a failed session's RD counters
//   are added when it fails; PeerSnapshot adds the live session's).
// - Counting is plain increments under the engine lock that already guards
//   the peer: no atomics, no allocation, no logging on the fast path.
// - PeerEvent reports are rare (connection setup and teardown, a session that
//   failed); the owner may log them.
#pragma once

#include <array>
#include <cstdint>

#include "rdm/send_rules.h"
#include "transport/sock_addr.h"

namespace iwarpx::rdm {

struct ChannelCounts {
  uint64_t msgs_sent = 0;
  uint64_t bytes_sent = 0;
  uint64_t msgs_received = 0;
  uint64_t bytes_received = 0;
};

struct PeerStats {
  std::array<ChannelCounts, kChannelCount> channel{};
  uint64_t rc_opened = 0;    // connects started to the peer
  uint64_t rc_accepted = 0;  // the peer's connects accepted
  uint64_t rc_closed = 0;    // connections to the peer that ended (failed, refused or dropped)
  uint64_t rd_sessions = 0;  // RD queue pairs (sessions) made with the peer
  uint64_t rd_failed = 0;    // of those, failed (timeout, RESET, protocol error, lost link)
  // RD data datagrams sent again, and zero-window or liveness probes (a
  // window that stayed closed), over every session with the peer.
  uint64_t rd_retransmitted = 0;
  uint64_t rd_probes_sent = 0;

  void CountSent(Channel c, uint64_t bytes) {
    ChannelCounts& n = channel[static_cast<size_t>(c)];
    ++n.msgs_sent;
    n.bytes_sent += bytes;
  }
  void CountReceived(Channel c, uint64_t bytes) {
    ChannelCounts& n = channel[static_cast<size_t>(c)];
    ++n.msgs_received;
    n.bytes_received += bytes;
  }
  // Bytes sent and received over every channel (for ranking peers).
  [[nodiscard]] uint64_t total_bytes() const {
    uint64_t t = 0;
    for (const ChannelCounts& n : channel) t += n.bytes_sent + n.bytes_received;
    return t;
  }
};

enum class PeerState : uint8_t {
  kDatagram,    // no connection: every message on the RD queue pair
  kConnecting,  // a connection is being set up (outgoing or accepted)
  kConnected,   // the connection is established
};

struct PeerSnapshot {
  transport::SockAddr addr;
  PeerState state = PeerState::kDatagram;
  PeerStats stats;
};

enum class PeerEvent : uint8_t {
  kRcConnecting,  // we started a connect (a threshold was crossed)
  kRcAccepted,    // we accepted the peer's connect
  kRcUp,          // the connection is established; messages may move to it
  kRcClosed,      // the connection ended or never came up (err says why; 0: refused)
  kRdFailed,      // the RD session failed (err: ETIMEDOUT, ECONNRESET, EPROTO, ...)
};

[[nodiscard]] const char* PeerStateName(PeerState s);
[[nodiscard]] const char* PeerEventName(PeerEvent e);

}  // namespace iwarpx::rdm
