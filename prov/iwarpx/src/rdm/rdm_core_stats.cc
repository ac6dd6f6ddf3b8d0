// RdmCore's per-peer statistics (rdm/peer_stats.h): a peer's snapshot with
// its live RD session's counters, and the names the log and the stats report
// use. The counting itself is in rdm_core.cc / rdm_core_rc.cc, where the
// messages and connections are.
#include "rdm/peer_stats.h"
#include "rdm/rdm_core.h"

namespace iwarpx::rdm {

const char* PeerStateName(PeerState s) {
  switch (s) {
    case PeerState::kDatagram: return "datagram";
    case PeerState::kConnecting: return "connecting";
    case PeerState::kConnected: return "connected";
  }
  return "?";
}

const char* PeerEventName(PeerEvent e) {
  switch (e) {
    case PeerEvent::kRcConnecting: return "connecting";
    case PeerEvent::kRcAccepted: return "accepted a connection";
    case PeerEvent::kRcUp: return "connected";
    case PeerEvent::kRcClosed: return "connection closed";
    case PeerEvent::kRdFailed: return "datagram session failed";
  }
  return "?";
}

void RdmCore::CountRdSession(Peer& p, const rd::RdQp& q) {
  const rd::RdStreamStats& c = q.stream().stats();
  PeerCounters::Events& e = p.stats.events();
  e.rd_retransmitted += c.retransmitted;
  e.rd_probes_sent += c.probes_sent;
}

bool RdmCore::Snapshot(PeerId id, PeerSnapshot* out) {
  Peer* p = PeerById(id);
  if (p == nullptr) return false;
  out->addr = p->addr;
  out->stats = p->stats.Snapshot();
  if (p->link == nullptr) {
    out->state = PeerState::kDatagram;
  } else {
    out->state = p->link->up ? PeerState::kConnected : PeerState::kConnecting;
  }
  // The live session (a failed one is no longer found: PeerFailed counted it).
  if (const rd::RdQp* q = channel_->Find({p->addr, kRdmQpn}); q != nullptr) {
    const rd::RdStreamStats& c = q->stream().stats();
    out->stats.rd_retransmitted += c.retransmitted;
    out->stats.rd_probes_sent += c.probes_sent;
  }
  return true;
}

}  // namespace iwarpx::rdm
