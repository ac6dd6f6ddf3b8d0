#include "ofi/ep_ops.h"

#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "ofi/domain.h"
#include "ofi/ep.h"
#include "ofi/ep_noops.h"
#include "ofi/log.h"
#include "ofi/msg_ops.h"
#include "ofi/rma_ops.h"

namespace iwarpx::ofi {
namespace {

Endpoint* Self(struct fid_ep* ep) {
  return OwnerOf<Endpoint>(ep);
}
Endpoint* SelfFid(struct fid* fid) {
  return OwnerOf<Endpoint>(reinterpret_cast<struct fid_ep*>(fid));
}

// --- fi_ops ---
int EpClose(struct fid* fid) {
  return SelfFid(fid)->Close();
}
int EpBind(struct fid* fid, struct fid* bfid, uint64_t flags) {
  return SelfFid(fid)->Bind(bfid, flags);
}
int EpControl(struct fid* fid, int command, void* arg) {
  return SelfFid(fid)->Control(command, arg);
}

// --- fi_ops_ep ---
ssize_t EpCancel(struct fid* fid, void* context) {
  return SelfFid(fid)->Cancel(context);
}
int EpGetOpt(struct fid* fid, int level, int optname, void* optval, size_t* optlen) {
  return SelfFid(fid)->GetOpt(level, optname, optval, optlen);
}
int EpSetOpt(struct fid* fid, int level, int optname, const void* optval, size_t optlen) {
  return SelfFid(fid)->SetOpt(level, optname, optval, optlen);
}

// --- fi_ops_cm ---
int EpSetName(fid_t fid, void* addr, size_t addrlen) {
  return SelfFid(fid)->SetName(addr, addrlen);
}
int EpGetName(fid_t fid, void* addr, size_t* addrlen) {
  return SelfFid(fid)->GetName(addr, addrlen);
}
int EpGetPeer(struct fid_ep* ep, void* addr, size_t* addrlen) {
  return Self(ep)->GetPeer(addr, addrlen);
}
int EpConnect(struct fid_ep* ep, const void* addr, const void* param, size_t paramlen) {
  return Self(ep)->Connect(addr, param, paramlen);
}
int EpListen(struct fid_pep* /*pep*/) {
  IWX_WARN(ep_ctrl, "fi_listen: called on an active endpoint\n");
  return -FI_ENOSYS;
}
int EpAccept(struct fid_ep* ep, const void* param, size_t paramlen) {
  return Self(ep)->Accept(param, paramlen);
}
int EpReject(struct fid_pep* /*pep*/, fid_t /*handle*/, const void* /*param*/,
             size_t /*paramlen*/) {
  IWX_WARN(ep_ctrl, "fi_reject: called on an active endpoint\n");
  return -FI_ENOSYS;
}
int EpShutdown(struct fid_ep* ep, uint64_t flags) {
  return Self(ep)->Shutdown(flags);
}
int EpJoin(struct fid_ep* /*ep*/, const void* /*addr*/, uint64_t /*flags*/, struct fid_mc** /*mc*/,
           void* /*context*/) {
  IWX_WARN(ep_ctrl, "fi_join: multicast is not supported\n");
  return -FI_ENOSYS;
}

const struct fi_ops kEpFiOps = {
    .size = sizeof(struct fi_ops),
    .close = EpClose,
    .bind = EpBind,
    .control = EpControl,
    .ops_open = fi_no_ops_open,
    .tostr = fi_no_tostr,
    .ops_set = fi_no_ops_set,
};

const struct fi_ops_ep kEpOps = {
    .size = sizeof(struct fi_ops_ep),
    .cancel = EpCancel,
    .getopt = EpGetOpt,
    .setopt = EpSetOpt,
    .tx_ctx = NoTxContext,
    .rx_ctx = NoRxContext,
    .rx_size_left = NoSizeLeft,
    .tx_size_left = NoSizeLeft,
};

const struct fi_ops_cm kEpCmOps = {
    .size = sizeof(struct fi_ops_cm),
    .setname = EpSetName,
    .getname = EpGetName,
    .getpeer = EpGetPeer,
    .connect = EpConnect,
    .listen = EpListen,
    .accept = EpAccept,
    .reject = EpReject,
    .shutdown = EpShutdown,
    .join = EpJoin,
};

}  // namespace

void InstallEndpointOps(struct fid_ep* ep) {
  ep->fid.ops = const_cast<struct fi_ops*>(&kEpFiOps);
  ep->ops = const_cast<struct fi_ops_ep*>(&kEpOps);
  ep->cm = const_cast<struct fi_ops_cm*>(&kEpCmOps);
  ep->msg = const_cast<struct fi_ops_msg*>(&MsgOps<Endpoint>::kTable);
  ep->rma = const_cast<struct fi_ops_rma*>(&RmaOps<Endpoint>::kTable);
  ep->tagged = const_cast<struct fi_ops_tagged*>(&kNoTaggedOps);
  ep->atomic = const_cast<struct fi_ops_atomic*>(&AtomicOps<Endpoint>::kTable);
  ep->collective = const_cast<struct fi_ops_collective*>(&kNoCollectiveOps);
}

bool IsEndpointFid(const struct fid* fid) {
  return fid != nullptr && fid->ops == &kEpFiOps;
}

}  // namespace iwarpx::ofi
