// The FI_IWARPX_STATS_OPS extension (include/rdma/fi_ext_iwarpx.h): the
// operations table fi_open_ops hands out on an iwarpx domain, and the
// FI_IWARPX_STATS=1 report every endpoint prints when it closes.
//
// Contract
// - OpenStatsOps: 0 and *ops = the table for FI_IWARPX_STATS_OPS with flags
//   0; -FI_ENOSYS (logged) for any other name, -FI_EINVAL for flags or a null
//   ops pointer.
// - OpenStatsOps also opens the older names (v1, v2): the same table, whose
//   first members are theirs.
// - The table's ep_stats works on any iwarpx endpoint (MSG, DGRAM, RDM) and
//   takes the endpoint's engine lock itself; peer_count / peer_stats (v3)
//   report an RDM endpoint's peers (rdm_ep_stats.cc), none for other types.
// - ReportAtClose prints one line to stderr when FI_IWARPX_STATS is set:
//   "iwarpx stats: <kind> <address>: name=value ..." (non-zero counters only,
//   "all counters 0" when all are zero). Call it before the channel closes.
#pragma once

#include <cstdint>

#include "progress/endpoint_stats.h"

namespace iwarpx::ofi {

int OpenStatsOps(const char* name, uint64_t flags, void** ops);
void ReportAtClose(const char* kind, const char* address, const progress::EndpointStats& stats);

}  // namespace iwarpx::ofi
