// FI_IWARPX_SCTP_OPS (see the header for the contract).
#include "ofi/ext_sctp.h"

#include <cstring>

#include <rdma/fi_errno.h>
#include <rdma/fi_ext_iwarpx.h>

#include "ofi/ep.h"
#include "ofi/log.h"

namespace iwarpx::ofi {
namespace {

Endpoint* MsgEndpoint(struct fid_ep* ep, const char* call) {
  Endpoint* e = ep != nullptr ? Endpoint::From(&ep->fid) : nullptr;
  if (e == nullptr) {
    IWX_WARN(ep_data, "fi_iwarpx_sctp_ops.%s: %p is not an iwarpx FI_EP_MSG endpoint\n", call,
             static_cast<void*>(ep));
  }
  return e;
}

int TxStreams(struct fid_ep* ep, uint16_t* count) {
  Endpoint* e = MsgEndpoint(ep, "tx_streams");
  if (e == nullptr) return -FI_EINVAL;
  if (count == nullptr) {
    IWX_WARN(ep_data, "fi_iwarpx_sctp_ops.tx_streams: count must not be NULL\n");
    return -FI_EINVAL;
  }
  return e->TxStreams(count);
}

ssize_t SendMsg(struct fid_ep* ep, const struct fi_msg* msg, uint64_t flags, uint16_t stream) {
  Endpoint* e = MsgEndpoint(ep, "sendmsg");
  if (e == nullptr) return -FI_EINVAL;
  if (msg == nullptr) {
    IWX_WARN(ep_data, "fi_iwarpx_sctp_ops.sendmsg: msg must not be NULL\n");
    return -FI_EINVAL;
  }
  if ((flags & FI_REMOTE_CQ_DATA) != 0) {
    IWX_WARN(ep_data, "fi_iwarpx_sctp_ops.sendmsg: no FI_REMOTE_CQ_DATA over SCTP\n");
    return -FI_EOPNOTSUPP;
  }
  return e->PostSend(msg->msg_iov, msg->iov_count, msg->addr, msg->context, flags, 0, stream);
}

struct fi_iwarpx_sctp_ops g_sctp_ops = {
    .size = sizeof(struct fi_iwarpx_sctp_ops),
    .tx_streams = TxStreams,
    .sendmsg = SendMsg,
};

}  // namespace

bool IsSctpOpsName(const char* name) {
  return name != nullptr && std::strcmp(name, FI_IWARPX_SCTP_OPS) == 0;
}

int OpenSctpOps(const char* name, uint64_t flags, void** ops) {
  if (flags != 0 || ops == nullptr) {
    IWX_WARN(domain, "fi_open_ops(%s): flags must be 0 and ops not NULL\n", name);
    return -FI_EINVAL;
  }
  *ops = &g_sctp_ops;
  return 0;
}

}  // namespace iwarpx::ofi
