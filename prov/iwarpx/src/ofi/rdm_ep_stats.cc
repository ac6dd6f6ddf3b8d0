// The RDM endpoint's per-peer observability: FI_IWARPX_STATS_OPS v3
// (peer_count / peer_stats, include/rdma/fi_ext_iwarpx.h), the per-peer table
// FI_IWARPX_STATS=1 prints at close, and the FI_LOG info line for each
// connection or session change of a peer (rdm/peer_stats.h).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "ofi/fabric.h"
#include "ofi/log.h"
#include "ofi/prov.h"
#include "ofi/rdm_ep.h"

namespace iwarpx::ofi {
namespace {

// Rows of the table at close; the rest are summed up in one line.
constexpr size_t kReportRows = 16;

// The public channel indices are rdm::Channel's.
static_assert(FI_IWARPX_CH_UD_SR == static_cast<int>(rdm::Channel::kUdSr));
static_assert(FI_IWARPX_CH_UD_ZCOPY == static_cast<int>(rdm::Channel::kUdZcopy));
static_assert(FI_IWARPX_CH_RC_SR == static_cast<int>(rdm::Channel::kRcSr));
static_assert(FI_IWARPX_CH_RC_FP == static_cast<int>(rdm::Channel::kRcFp));
static_assert(FI_IWARPX_CH_RC_RDMA == static_cast<int>(rdm::Channel::kRcRdma));
static_assert(FI_IWARPX_CH_COPY == static_cast<int>(rdm::Channel::kCopy));
static_assert(rdm::kChannelCount <= FI_IWARPX_MAX_CHANNELS);
static_assert(FI_IWARPX_PEER_DATAGRAM == static_cast<int>(rdm::PeerState::kDatagram));
static_assert(FI_IWARPX_PEER_CONNECTING == static_cast<int>(rdm::PeerState::kConnecting));
static_assert(FI_IWARPX_PEER_CONNECTED == static_cast<int>(rdm::PeerState::kConnected));

void Append(std::string* line, const char* name, uint64_t v) {
  if (v == 0) return;
  *line += ' ';
  *line += name;
  *line += '=';
  *line += std::to_string(static_cast<unsigned long long>(v));
}

uint64_t TotalBytes(const fi_iwarpx_peer_stats& p) {
  uint64_t t = 0;
  for (const fi_iwarpx_channel_stats& c : p.channel) t += c.bytes_sent + c.bytes_received;
  return t;
}

// "name=value" for every non-zero counter of one peer.
std::string PeerLine(const fi_iwarpx_peer_stats& p) {
  std::string line;
  for (size_t i = 0; i < rdm::kChannelCount; ++i) {
    const std::string ch(rdm::ChannelName(static_cast<rdm::Channel>(i)));
    const fi_iwarpx_channel_stats& c = p.channel[i];
    Append(&line, (ch + "_sent").c_str(), c.msgs_sent);
    Append(&line, (ch + "_sent_bytes").c_str(), c.bytes_sent);
    Append(&line, (ch + "_received").c_str(), c.msgs_received);
    Append(&line, (ch + "_received_bytes").c_str(), c.bytes_received);
  }
  Append(&line, "rc_opened", p.rc_opened);
  Append(&line, "rc_accepted", p.rc_accepted);
  Append(&line, "rc_closed", p.rc_closed);
  Append(&line, "rd_sessions", p.rd_sessions);
  Append(&line, "rd_failed", p.rd_failed);
  Append(&line, "rd_retransmitted", p.rd_retransmitted);
  Append(&line, "rd_probes_sent", p.rd_probes_sent);
  return line;
}

// Why a peer's RD session failed, and the parameter that bounds it.
std::string FailureReason(int err) {
  switch (err) {
    case ETIMEDOUT:
      return "no acknowledgement or window update within FI_IWARPX_RD_TIMEOUT=" +
             std::to_string(GetParams().rd_timeout_ms) + " ms";
    case ECONNRESET:
      return "reset: the peer restarted or forgot the session, or its connection broke";
    case EPROTO: return "protocol error: the peer sent a message that does not decode";
    default: return std::string("error: ") + std::strerror(err);
  }
}

}  // namespace

bool RdmEndpoint::PeerStatsLocked(size_t index, fi_iwarpx_peer_stats* out) {
  rdm::PeerSnapshot snap;
  if (core_ == nullptr || !core_->Snapshot(index, &snap)) return false;
  *out = {};
  out->fi_addr = SourceOf(index);
  const socklen_t len = std::min<socklen_t>(snap.addr.length(), sizeof(out->addr));
  std::memcpy(out->addr, snap.addr.sa(), len);
  out->addrlen = len;
  out->state = static_cast<uint32_t>(snap.state);
  const rdm::PeerStats& s = snap.stats;
  out->rc_opened = s.rc_opened;
  out->rc_accepted = s.rc_accepted;
  out->rc_closed = s.rc_closed;
  out->rd_sessions = s.rd_sessions;
  out->rd_failed = s.rd_failed;
  out->rd_retransmitted = s.rd_retransmitted;
  out->rd_probes_sent = s.rd_probes_sent;
  for (size_t i = 0; i < rdm::kChannelCount; ++i) {
    out->channel[i] = {s.channel[i].msgs_sent, s.channel[i].bytes_sent, s.channel[i].msgs_received,
                       s.channel[i].bytes_received};
  }
  return true;
}

size_t RdmEndpoint::PeerCount() {
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  return core_ != nullptr ? core_->peer_count() : 0;
}

bool RdmEndpoint::PeerStats(size_t index, fi_iwarpx_peer_stats* out) {
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  return PeerStatsLocked(index, out);
}

void RdmEndpoint::ReportPeersAtClose() {
  if (!GetParams().stats || core_ == nullptr || core_->peer_count() == 0) return;
  std::vector<fi_iwarpx_peer_stats> peers(core_->peer_count());
  for (size_t i = 0; i < peers.size(); ++i) (void)PeerStatsLocked(i, &peers[i]);
  // Busiest first; ties in the order the peers were first named.
  std::stable_sort(peers.begin(), peers.end(),
                   [](const auto& a, const auto& b) { return TotalBytes(a) > TotalBytes(b); });
  const std::string self = LocalAddress().ToString();
  for (size_t i = 0; i < peers.size() && i < kReportRows; ++i) {
    const fi_iwarpx_peer_stats& p = peers[i];
    const auto addr = transport::SockAddr::FromRaw(reinterpret_cast<const sockaddr*>(p.addr),
                                                   static_cast<socklen_t>(p.addrlen));
    const std::string fi_addr =
        p.fi_addr == FI_ADDR_NOTAVAIL ? "none" : std::to_string(static_cast<uint64_t>(p.fi_addr));
    std::string line = PeerLine(p);
    if (line.empty()) line = " all counters 0";
    std::fprintf(stderr, "iwarpx stats: %s %s: peer %s (fi_addr %s, %s):%s\n", kind_, self.c_str(),
                 addr ? addr->ToString().c_str() : "?", fi_addr.c_str(),
                 rdm::PeerStateName(static_cast<rdm::PeerState>(p.state)), line.c_str());
  }
  if (peers.size() > kReportRows) {
    std::fprintf(stderr, "iwarpx stats: %s %s: and %zu more peers\n", kind_, self.c_str(),
                 peers.size() - kReportRows);
  }
}

void RdmEndpoint::OnPeerEvent(rdm::PeerId id, const transport::SockAddr& addr, rdm::PeerEvent e,
                              int err) {
  if (core_ == nullptr) return;  // closing: the core is being destroyed
  const Params& prm = GetParams();
  const std::string peer = addr.ToString();
  const void* self = static_cast<const void*>(this);
  switch (e) {
    case rdm::PeerEvent::kRcConnecting:
      IWX_INFO(ep_ctrl,
               "rdm ep %p: peer %s reached FI_IWARPX_RC_THRESHOLD_MSGS=%d or _BYTES=%d: "
               "connecting to it on TCP (%u of FI_IWARPX_MAX_RC=%d connections in use)\n",
               self, peer.c_str(), prm.rc_threshold_msgs, prm.rc_threshold_bytes,
               core_->rc_links() + 1, prm.max_rc);
      break;
    case rdm::PeerEvent::kRcAccepted:
      IWX_INFO(ep_ctrl,
               "rdm ep %p: accepted a connection from peer %s (%u of FI_IWARPX_MAX_RC=%d in "
               "use)\n",
               self, peer.c_str(), core_->rc_links(), prm.max_rc);
      break;
    case rdm::PeerEvent::kRcUp:
      IWX_INFO(ep_ctrl,
               "rdm ep %p: connection to peer %s established: its messages now take the "
               "connected channels of FI_IWARPX_SEND_RULES\n",
               self, peer.c_str());
      break;
    case rdm::PeerEvent::kRcClosed:
      IWX_INFO(ep_ctrl,
               "rdm ep %p: connection to peer %s closed (%s); the peer is back on datagram "
               "channels\n",
               self, peer.c_str(), err != 0 ? std::strerror(err) : "refused");
      break;
    case rdm::PeerEvent::kRdFailed:
      IWX_INFO(ep_ctrl,
               "rdm ep %p: peer %s (fi_addr %lu) failed: %s; its pending operations complete "
               "with errors, the next send opens a new session\n",
               self, peer.c_str(), static_cast<unsigned long>(SourceOf(id)),
               FailureReason(err).c_str());
      break;
  }
}

}  // namespace iwarpx::ofi
