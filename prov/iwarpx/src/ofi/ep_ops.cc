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
int EpTxCtx(struct fid_ep* /*sep*/, int /*index*/, struct fi_tx_attr* /*attr*/,
            struct fid_ep** /*tx_ep*/, void* /*context*/) {
  IWX_WARN(ep_ctrl, "fi_tx_context: scalable endpoints are not supported\n");
  return -FI_ENOSYS;
}
int EpRxCtx(struct fid_ep* /*sep*/, int /*index*/, struct fi_rx_attr* /*attr*/,
            struct fid_ep** /*rx_ep*/, void* /*context*/) {
  IWX_WARN(ep_ctrl, "fi_rx_context: scalable endpoints are not supported\n");
  return -FI_ENOSYS;
}
ssize_t EpSizeLeft(struct fid_ep* /*ep*/) {
  return -FI_ENOSYS;  // deprecated in libfabric 1.x
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

// --- fi_ops_rma ---
ssize_t RmaRead(struct fid_ep* ep, void* buf, size_t len, void* desc, fi_addr_t /*src*/,
                uint64_t addr, uint64_t key, void* context) {
  const struct iovec iov = {buf, len};
  return Self(ep)->PostRead(&iov, &desc, 1, addr, key, context, Self(ep)->tx_op_flags());
}
ssize_t RmaReadv(struct fid_ep* ep, const struct iovec* iov, void** desc, size_t count,
                 fi_addr_t /*src*/, uint64_t addr, uint64_t key, void* context) {
  return Self(ep)->PostRead(iov, desc, count, addr, key, context, Self(ep)->tx_op_flags());
}
ssize_t RmaReadmsg(struct fid_ep* ep, const struct fi_msg_rma* msg, uint64_t flags) {
  if (msg == nullptr || msg->rma_iov == nullptr || msg->rma_iov_count != 1) {
    IWX_WARN(ep_data, "fi_readmsg: exactly one remote iovec (rma_iov_limit 1)\n");
    return -FI_EINVAL;
  }
  return Self(ep)->PostRead(msg->msg_iov, msg->desc, msg->iov_count, msg->rma_iov[0].addr,
                            msg->rma_iov[0].key, msg->context, flags);
}
ssize_t RmaWrite(struct fid_ep* ep, const void* buf, size_t len, void* /*desc*/, fi_addr_t /*dest*/,
                 uint64_t addr, uint64_t key, void* context) {
  const struct iovec iov = {const_cast<void*>(buf), len};
  return Self(ep)->PostWrite(&iov, 1, addr, key, context, Self(ep)->tx_op_flags(), 0);
}
ssize_t RmaWritev(struct fid_ep* ep, const struct iovec* iov, void** /*desc*/, size_t count,
                  fi_addr_t /*dest*/, uint64_t addr, uint64_t key, void* context) {
  return Self(ep)->PostWrite(iov, count, addr, key, context, Self(ep)->tx_op_flags(), 0);
}
ssize_t RmaWritemsg(struct fid_ep* ep, const struct fi_msg_rma* msg, uint64_t flags) {
  if (msg == nullptr || msg->rma_iov == nullptr || msg->rma_iov_count != 1) {
    IWX_WARN(ep_data, "fi_writemsg: exactly one remote iovec (rma_iov_limit 1)\n");
    return -FI_EINVAL;
  }
  return Self(ep)->PostWrite(msg->msg_iov, msg->iov_count, msg->rma_iov[0].addr,
                             msg->rma_iov[0].key, msg->context, flags, msg->data);
}
ssize_t RmaInject(struct fid_ep* ep, const void* buf, size_t len, fi_addr_t /*dest*/, uint64_t addr,
                  uint64_t key) {
  const struct iovec iov = {const_cast<void*>(buf), len};
  return Self(ep)->PostWrite(&iov, 1, addr, key, nullptr, FI_INJECT, 0);
}
ssize_t RmaWriteData(struct fid_ep* ep, const void* buf, size_t len, void* /*desc*/, uint64_t data,
                     fi_addr_t /*dest*/, uint64_t addr, uint64_t key, void* context) {
  const struct iovec iov = {const_cast<void*>(buf), len};
  return Self(ep)->PostWrite(&iov, 1, addr, key, context,
                             Self(ep)->tx_op_flags() | FI_REMOTE_CQ_DATA, data);
}
ssize_t RmaInjectData(struct fid_ep* ep, const void* buf, size_t len, uint64_t data,
                      fi_addr_t /*dest*/, uint64_t addr, uint64_t key) {
  const struct iovec iov = {const_cast<void*>(buf), len};
  return Self(ep)->PostWrite(&iov, 1, addr, key, nullptr, FI_INJECT | FI_REMOTE_CQ_DATA, data);
}

// --- fi_ops_atomic ---
ssize_t AtomicWrite(struct fid_ep* ep, const void* buf, size_t count, void* /*desc*/,
                    fi_addr_t /*dest*/, uint64_t addr, uint64_t key, enum fi_datatype datatype,
                    enum fi_op op, void* context) {
  return Self(ep)->PostAtomic(buf, count, datatype, op, addr, key, nullptr, nullptr, context,
                              Self(ep)->tx_op_flags(), false, false);
}
ssize_t AtomicWritev(struct fid_ep* ep, const struct fi_ioc* iov, void** /*desc*/, size_t count,
                     fi_addr_t /*dest*/, uint64_t addr, uint64_t key, enum fi_datatype datatype,
                     enum fi_op op, void* context) {
  if (iov == nullptr || count != 1) return -FI_EINVAL;
  return Self(ep)->PostAtomic(iov[0].addr, iov[0].count, datatype, op, addr, key, nullptr, nullptr,
                              context, Self(ep)->tx_op_flags(), false, false);
}
ssize_t AtomicWritemsg(struct fid_ep* ep, const struct fi_msg_atomic* msg, uint64_t flags) {
  if (msg == nullptr || msg->iov_count != 1 || msg->rma_iov_count != 1) return -FI_EINVAL;
  return Self(ep)->PostAtomic(msg->msg_iov[0].addr, msg->msg_iov[0].count, msg->datatype, msg->op,
                              msg->rma_iov[0].addr, msg->rma_iov[0].key, nullptr, nullptr,
                              msg->context, flags, false, false);
}
ssize_t AtomicInject(struct fid_ep* ep, const void* buf, size_t count, fi_addr_t /*dest*/,
                     uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op) {
  return Self(ep)->PostAtomic(buf, count, datatype, op, addr, key, nullptr, nullptr, nullptr,
                              FI_INJECT, false, false);
}
ssize_t AtomicReadWrite(struct fid_ep* ep, const void* buf, size_t count, void* /*desc*/,
                        void* result, void* /*result_desc*/, fi_addr_t /*dest*/, uint64_t addr,
                        uint64_t key, enum fi_datatype datatype, enum fi_op op, void* context) {
  return Self(ep)->PostAtomic(buf, count, datatype, op, addr, key, nullptr, result, context,
                              Self(ep)->tx_op_flags(), true, false);
}
ssize_t AtomicReadWritev(struct fid_ep* ep, const struct fi_ioc* iov, void** /*desc*/, size_t count,
                         struct fi_ioc* resultv, void** /*result_desc*/, size_t result_count,
                         fi_addr_t /*dest*/, uint64_t addr, uint64_t key, enum fi_datatype datatype,
                         enum fi_op op, void* context) {
  if (iov == nullptr || resultv == nullptr || count != 1 || result_count != 1) return -FI_EINVAL;
  return Self(ep)->PostAtomic(iov[0].addr, iov[0].count, datatype, op, addr, key, nullptr,
                              resultv[0].addr, context, Self(ep)->tx_op_flags(), true, false);
}
ssize_t AtomicReadWritemsg(struct fid_ep* ep, const struct fi_msg_atomic* msg,
                           struct fi_ioc* resultv, void** /*result_desc*/, size_t result_count,
                           uint64_t flags) {
  if (msg == nullptr || resultv == nullptr || msg->iov_count != 1 || msg->rma_iov_count != 1 ||
      result_count != 1) {
    return -FI_EINVAL;
  }
  return Self(ep)->PostAtomic(msg->msg_iov[0].addr, msg->msg_iov[0].count, msg->datatype, msg->op,
                              msg->rma_iov[0].addr, msg->rma_iov[0].key, nullptr, resultv[0].addr,
                              msg->context, flags, true, false);
}
ssize_t AtomicCompWrite(struct fid_ep* ep, const void* buf, size_t count, void* /*desc*/,
                        const void* compare, void* /*compare_desc*/, void* result,
                        void* /*result_desc*/, fi_addr_t /*dest*/, uint64_t addr, uint64_t key,
                        enum fi_datatype datatype, enum fi_op op, void* context) {
  return Self(ep)->PostAtomic(buf, count, datatype, op, addr, key, compare, result, context,
                              Self(ep)->tx_op_flags(), true, true);
}
ssize_t AtomicCompWritev(struct fid_ep* ep, const struct fi_ioc* iov, void** /*desc*/, size_t count,
                         const struct fi_ioc* comparev, void** /*compare_desc*/,
                         size_t compare_count, struct fi_ioc* resultv, void** /*result_desc*/,
                         size_t result_count, fi_addr_t /*dest*/, uint64_t addr, uint64_t key,
                         enum fi_datatype datatype, enum fi_op op, void* context) {
  if (iov == nullptr || comparev == nullptr || resultv == nullptr || count != 1 ||
      compare_count != 1 || result_count != 1) {
    return -FI_EINVAL;
  }
  return Self(ep)->PostAtomic(iov[0].addr, iov[0].count, datatype, op, addr, key, comparev[0].addr,
                              resultv[0].addr, context, Self(ep)->tx_op_flags(), true, true);
}
ssize_t AtomicCompWritemsg(struct fid_ep* ep, const struct fi_msg_atomic* msg,
                           const struct fi_ioc* comparev, void** /*compare_desc*/,
                           size_t compare_count, struct fi_ioc* resultv, void** /*result_desc*/,
                           size_t result_count, uint64_t flags) {
  if (msg == nullptr || comparev == nullptr || resultv == nullptr || msg->iov_count != 1 ||
      msg->rma_iov_count != 1 || compare_count != 1 || result_count != 1) {
    return -FI_EINVAL;
  }
  return Self(ep)->PostAtomic(msg->msg_iov[0].addr, msg->msg_iov[0].count, msg->datatype, msg->op,
                              msg->rma_iov[0].addr, msg->rma_iov[0].key, comparev[0].addr,
                              resultv[0].addr, msg->context, flags, true, true);
}
int ValidAtomic(struct fid_ep* /*ep*/, enum fi_datatype datatype, enum fi_op op, size_t* count,
                uint64_t flags) {
  struct fi_atomic_attr attr = {};
  const int ret = QueryAtomic(nullptr, datatype, op, &attr, flags);
  if (ret != 0) return ret;
  if (count != nullptr) *count = attr.count;
  return 0;
}
int AtomicWriteValid(struct fid_ep* ep, enum fi_datatype datatype, enum fi_op op, size_t* count) {
  return ValidAtomic(ep, datatype, op, count, 0);
}
int AtomicReadWriteValid(struct fid_ep* ep, enum fi_datatype datatype, enum fi_op op,
                         size_t* count) {
  return ValidAtomic(ep, datatype, op, count, FI_FETCH_ATOMIC);
}
int AtomicCompWriteValid(struct fid_ep* ep, enum fi_datatype datatype, enum fi_op op,
                         size_t* count) {
  return ValidAtomic(ep, datatype, op, count, FI_COMPARE_ATOMIC);
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
    .tx_ctx = EpTxCtx,
    .rx_ctx = EpRxCtx,
    .rx_size_left = EpSizeLeft,
    .tx_size_left = EpSizeLeft,
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

const struct fi_ops_rma kEpRmaOps = {
    .size = sizeof(struct fi_ops_rma),
    .read = RmaRead,
    .readv = RmaReadv,
    .readmsg = RmaReadmsg,
    .write = RmaWrite,
    .writev = RmaWritev,
    .writemsg = RmaWritemsg,
    .inject = RmaInject,
    .writedata = RmaWriteData,
    .injectdata = RmaInjectData,
};

const struct fi_ops_atomic kEpAtomicOps = {
    .size = sizeof(struct fi_ops_atomic),
    .write = AtomicWrite,
    .writev = AtomicWritev,
    .writemsg = AtomicWritemsg,
    .inject = AtomicInject,
    .readwrite = AtomicReadWrite,
    .readwritev = AtomicReadWritev,
    .readwritemsg = AtomicReadWritemsg,
    .compwrite = AtomicCompWrite,
    .compwritev = AtomicCompWritev,
    .compwritemsg = AtomicCompWritemsg,
    .writevalid = AtomicWriteValid,
    .readwritevalid = AtomicReadWriteValid,
    .compwritevalid = AtomicCompWriteValid,
};

}  // namespace

void InstallEndpointOps(struct fid_ep* ep) {
  ep->fid.ops = const_cast<struct fi_ops*>(&kEpFiOps);
  ep->ops = const_cast<struct fi_ops_ep*>(&kEpOps);
  ep->cm = const_cast<struct fi_ops_cm*>(&kEpCmOps);
  ep->msg = const_cast<struct fi_ops_msg*>(&MsgOps<Endpoint>::kTable);
  ep->rma = const_cast<struct fi_ops_rma*>(&kEpRmaOps);
  ep->tagged = const_cast<struct fi_ops_tagged*>(&kNoTaggedOps);
  ep->atomic = const_cast<struct fi_ops_atomic*>(&kEpAtomicOps);
  ep->collective = const_cast<struct fi_ops_collective*>(&kNoCollectiveOps);
}

bool IsEndpointFid(const struct fid* fid) {
  return fid != nullptr && fid->ops == &kEpFiOps;
}

}  // namespace iwarpx::ofi
