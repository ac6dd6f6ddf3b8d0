// Poll sets (fi_poll_open, fi_poll_add, fi_poll_del, fi_poll; fi_poll(3)):
// one call that drives progress and names the CQs and counters of a domain
// that have something for the application.
//
// Contract
// - fi_poll_open(domain, attr, &pollset): attr->flags must be 0
//   (-FI_EBADFLAGS); the poll set holds a reference on the domain.
// - fi_poll_add/fi_poll_del take a CQ or counter opened from the same domain
//   and flags 0. Another class, another domain's object or another
//   provider's fid: -FI_EINVAL. Adding a member again is counted (one CQ
//   used for transmit and receive may be added for both): it leaves the set
//   at the matching fi_poll_del and is reported once per fi_poll. Deleting
//   one that is not a member: -FI_EINVAL. A member holds a
//   reference on its CQ or counter, so fi_close on it returns -FI_EBUSY until
//   fi_poll_del.
// - fi_close(pollset) with members left: -FI_EBUSY (fi_poll(3)).
// - fi_poll(pollset, context, count) runs one engine pass (manual progress,
//   as fi_cq_read does), then writes the fid context of each member with news,
//   in the order they were added, up to count, and returns how many (0: none).
//   News is, for a CQ, a queued completion or error completion (nothing is
//   taken off the queue); for a counter, a value or error count that changed
//   since the last fi_poll, fi_cntr_add or fi_cntr_set (the counter's
//   checkpoint, cntr.h). count < 0, or context NULL with count > 0:
//   -FI_EINVAL.
// All ops are thread-safe (one mutex per poll set).
#pragma once

#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

namespace iwarpx::ofi {

int PollOpen(struct fid_domain* domain, struct fi_poll_attr* attr, struct fid_poll** pollset);

}  // namespace iwarpx::ofi
