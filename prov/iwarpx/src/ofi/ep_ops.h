// The libfabric ops tables of the MSG endpoint (fi_ops, fi_ops_ep, fi_ops_cm,
// fi_ops_msg, fi_ops_rma, fi_ops_atomic, and -FI_ENOSYS tables for tagged
// and collective calls): thin C entry points that recover the Endpoint and
// call it. Unsupported calls return -FI_ENOSYS with a log line, never crash.
#pragma once

#include <rdma/fi_endpoint.h>

namespace iwarpx::ofi {

// Fills every ops pointer of `ep`.
void InstallEndpointOps(struct fid_ep* ep);
// True when `fid` carries the endpoint's fi_ops (it is an iwarpx endpoint).
bool IsEndpointFid(const struct fid* fid);

}  // namespace iwarpx::ofi
