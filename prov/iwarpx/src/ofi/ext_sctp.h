// The FI_IWARPX_SCTP_OPS extension (include/rdma/fi_ext_iwarpx.h): the
// operations table fi_open_ops hands out on an iwarpx domain for choosing the
// SCTP stream of each send on an FI_EP_MSG endpoint over SCTP
// (docs/design.md "Streams for untagged Sends").
//
// Contract
// - IsSctpOpsName: true for FI_IWARPX_SCTP_OPS (the domain's ops_open sends
//   every other name to OpenStatsOps).
// - OpenSctpOps: 0 and *ops = the table for FI_IWARPX_SCTP_OPS with flags 0;
//   -FI_EINVAL (logged) for flags or a null ops pointer.
// - The table's functions accept FI_EP_MSG endpoints only (-FI_EINVAL, logged,
//   for anything else) and take the engine lock through the endpoint.
#pragma once

#include <cstdint>

namespace iwarpx::ofi {

bool IsSctpOpsName(const char* name);
int OpenSctpOps(const char* name, uint64_t flags, void** ops);

}  // namespace iwarpx::ofi
