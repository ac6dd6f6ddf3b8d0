// -FI_ENOSYS ops tables for the calls an endpoint type does not offer
// (message, tagged, collective, RMA and atomic families). Each entry logs the call it
// refused, so an application learns why; none of them crashes.
#pragma once

#include <rdma/fi_atomic.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

namespace iwarpx::ofi {

// fi_ops_msg of an object that carries no data itself (a scalable endpoint).
extern const struct fi_ops_msg kNoMsgOps;
extern const struct fi_ops_tagged kNoTaggedOps;
extern const struct fi_ops_collective kNoCollectiveOps;
extern const struct fi_ops_rma kNoRmaOps;
extern const struct fi_ops_atomic kNoAtomicOps;

// fi_ops_ep entries no endpoint type offers (scalable endpoints; the
// deprecated size_left calls).
int NoTxContext(struct fid_ep* sep, int index, struct fi_tx_attr* attr, struct fid_ep** tx_ep,
                void* context);
int NoRxContext(struct fid_ep* sep, int index, struct fi_rx_attr* attr, struct fid_ep** rx_ep,
                void* context);
ssize_t NoSizeLeft(struct fid_ep* ep);

}  // namespace iwarpx::ofi
