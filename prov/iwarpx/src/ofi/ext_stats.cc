#include "ofi/ext_stats.h"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>

#include <rdma/fi_errno.h>
#include <rdma/fi_ext_iwarpx.h>

#include "ofi/cl_ep.h"
#include "ofi/dgram_sep.h"
#include "ofi/ep.h"
#include "ofi/log.h"
#include "ofi/prov.h"
#include "ofi/rdm_ep.h"

namespace iwarpx::ofi {
namespace {

// The public structure is the internal one, field for field.
#define IWARPX_STAT_SAME_PLACE(name)                                                           \
  static_assert(offsetof(fi_iwarpx_ep_stats, name) == offsetof(progress::EndpointStats, name), \
                "struct fi_iwarpx_ep_stats and EndpointStats differ at " #name);               \
  static_assert(sizeof(fi_iwarpx_ep_stats::name) == sizeof(uint64_t));
IWARPX_ENDPOINT_STATS(IWARPX_STAT_SAME_PLACE)
#undef IWARPX_STAT_SAME_PLACE
static_assert(sizeof(fi_iwarpx_ep_stats) == sizeof(progress::EndpointStats));

int EpStats(struct fid_ep* ep, struct fi_iwarpx_ep_stats* stats, size_t len) {
  if (ep == nullptr || stats == nullptr) {
    IWX_WARN(ep_ctrl, "fi_iwarpx_stats_ops.ep_stats: ep and stats must not be NULL\n");
    return -FI_EINVAL;
  }
  progress::EndpointStats s;
  if (ClEndpoint* cl = ClEndpoint::From(&ep->fid); cl != nullptr) {
    cl->Stats(&s);
  } else if (Endpoint* msg = Endpoint::From(&ep->fid); msg != nullptr) {
    msg->Stats(&s);
  } else if (DgramSep* sep = DgramSep::From(&ep->fid); sep != nullptr) {
    sep->Stats(&s);
  } else {
    IWX_WARN(ep_ctrl, "fi_iwarpx_stats_ops.ep_stats: %p is not an iwarpx endpoint\n",
             static_cast<void*>(ep));
    return -FI_EINVAL;
  }
  std::memcpy(stats, &s, std::min(len, sizeof(s)));
  return 0;
}

// Peers exist on RDM endpoints only; any other iwarpx endpoint has none.
// -FI_EINVAL (logged) when `ep` is not an iwarpx endpoint.
int PeerCount(struct fid_ep* ep, size_t* count) {
  if (ep == nullptr || count == nullptr) {
    IWX_WARN(ep_ctrl, "fi_iwarpx_stats_ops.peer_count: ep and count must not be NULL\n");
    return -FI_EINVAL;
  }
  if (ClEndpoint* cl = ClEndpoint::From(&ep->fid); cl != nullptr) {
    auto* rdm = dynamic_cast<RdmEndpoint*>(cl);
    *count = rdm != nullptr ? rdm->PeerCount() : 0;
    return 0;
  }
  if (Endpoint::From(&ep->fid) != nullptr || DgramSep::From(&ep->fid) != nullptr) {
    *count = 0;
    return 0;
  }
  IWX_WARN(ep_ctrl, "fi_iwarpx_stats_ops.peer_count: %p is not an iwarpx endpoint\n",
           static_cast<void*>(ep));
  return -FI_EINVAL;
}

int PeerStats(struct fid_ep* ep, size_t index, struct fi_iwarpx_peer_stats* stats, size_t len) {
  if (ep == nullptr || stats == nullptr) {
    IWX_WARN(ep_ctrl, "fi_iwarpx_stats_ops.peer_stats: ep and stats must not be NULL\n");
    return -FI_EINVAL;
  }
  ClEndpoint* cl = ClEndpoint::From(&ep->fid);
  if (cl == nullptr && Endpoint::From(&ep->fid) == nullptr && DgramSep::From(&ep->fid) == nullptr) {
    IWX_WARN(ep_ctrl, "fi_iwarpx_stats_ops.peer_stats: %p is not an iwarpx endpoint\n",
             static_cast<void*>(ep));
    return -FI_EINVAL;
  }
  auto* rdm = dynamic_cast<RdmEndpoint*>(cl);
  fi_iwarpx_peer_stats s{};
  if (rdm == nullptr || !rdm->PeerStats(index, &s)) return -FI_ENOENT;
  std::memcpy(stats, &s, std::min(len, sizeof(s)));
  return 0;
}

struct fi_iwarpx_stats_ops g_stats_ops = {
    .size = sizeof(struct fi_iwarpx_stats_ops),
    .ep_stats = EpStats,
    .peer_count = PeerCount,
    .peer_stats = PeerStats,
};

}  // namespace

int OpenStatsOps(const char* name, uint64_t flags, void** ops) {
  if (name == nullptr || (std::strcmp(name, FI_IWARPX_STATS_OPS) != 0 &&
                          std::strcmp(name, FI_IWARPX_STATS_OPS_V2) != 0 &&
                          std::strcmp(name, FI_IWARPX_STATS_OPS_V1) != 0)) {
    IWX_WARN(domain, "fi_open_ops: unknown operations \"%s\" (iwarpx offers \"%s\", \"%s\")\n",
             name != nullptr ? name : "(null)", FI_IWARPX_STATS_OPS, FI_IWARPX_SCTP_OPS);
    return -FI_ENOSYS;
  }
  if (flags != 0 || ops == nullptr) {
    IWX_WARN(domain, "fi_open_ops(%s): flags must be 0 and ops not NULL\n", name);
    return -FI_EINVAL;
  }
  *ops = &g_stats_ops;
  return 0;
}

void ReportAtClose(const char* kind, const char* address, const progress::EndpointStats& stats) {
  std::string line;
#define IWARPX_STAT_PRINT(name)                                                          \
  if (stats.name != 0) {                                                                 \
    line += " " #name "=" + std::to_string(static_cast<unsigned long long>(stats.name)); \
  }
  IWARPX_ENDPOINT_STATS(IWARPX_STAT_PRINT)
#undef IWARPX_STAT_PRINT
  if (line.empty()) line = " all counters 0";
  std::fprintf(stderr, "iwarpx stats: %s %s:%s\n", kind, address, line.c_str());
}

}  // namespace iwarpx::ofi
