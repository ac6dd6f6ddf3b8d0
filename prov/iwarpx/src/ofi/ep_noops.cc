#include "ofi/ep_noops.h"

#include <rdma/fi_errno.h>

#include "ofi/log.h"

namespace iwarpx::ofi {
namespace {

// --- fi_ops_msg: a scalable endpoint posts through its contexts ---
ssize_t MsgNo(const char* call) {
  IWX_WARN(ep_data,
           "%s: a scalable endpoint carries no data itself; post on a context "
           "(fi_tx_context/fi_rx_context)\n",
           call);
  return -FI_ENOSYS;
}
ssize_t MRecv(struct fid_ep*, void*, size_t, void*, fi_addr_t, void*) {
  return MsgNo("fi_recv");
}
ssize_t MRecvv(struct fid_ep*, const struct iovec*, void**, size_t, fi_addr_t, void*) {
  return MsgNo("fi_recvv");
}
ssize_t MRecvmsg(struct fid_ep*, const struct fi_msg*, uint64_t) {
  return MsgNo("fi_recvmsg");
}
ssize_t MSend(struct fid_ep*, const void*, size_t, void*, fi_addr_t, void*) {
  return MsgNo("fi_send");
}
ssize_t MSendv(struct fid_ep*, const struct iovec*, void**, size_t, fi_addr_t, void*) {
  return MsgNo("fi_sendv");
}
ssize_t MSendmsg(struct fid_ep*, const struct fi_msg*, uint64_t) {
  return MsgNo("fi_sendmsg");
}
ssize_t MInject(struct fid_ep*, const void*, size_t, fi_addr_t) {
  return MsgNo("fi_inject");
}
ssize_t MSendData(struct fid_ep*, const void*, size_t, void*, uint64_t, fi_addr_t, void*) {
  return MsgNo("fi_senddata");
}
ssize_t MInjectData(struct fid_ep*, const void*, size_t, uint64_t, fi_addr_t) {
  return MsgNo("fi_injectdata");
}

// --- fi_ops_tagged ---
ssize_t TagNo(const char* call) {
  IWX_WARN(ep_data, "%s: tagged messages are not supported on this endpoint (no FI_TAGGED)\n",
           call);
  return -FI_ENOSYS;
}
ssize_t TRecv(struct fid_ep*, void*, size_t, void*, fi_addr_t, uint64_t, uint64_t, void*) {
  return TagNo("fi_trecv");
}
ssize_t TRecvv(struct fid_ep*, const struct iovec*, void**, size_t, fi_addr_t, uint64_t, uint64_t,
               void*) {
  return TagNo("fi_trecvv");
}
ssize_t TRecvmsg(struct fid_ep*, const struct fi_msg_tagged*, uint64_t) {
  return TagNo("fi_trecvmsg");
}
ssize_t TSend(struct fid_ep*, const void*, size_t, void*, fi_addr_t, uint64_t, void*) {
  return TagNo("fi_tsend");
}
ssize_t TSendv(struct fid_ep*, const struct iovec*, void**, size_t, fi_addr_t, uint64_t, void*) {
  return TagNo("fi_tsendv");
}
ssize_t TSendmsg(struct fid_ep*, const struct fi_msg_tagged*, uint64_t) {
  return TagNo("fi_tsendmsg");
}
ssize_t TInject(struct fid_ep*, const void*, size_t, fi_addr_t, uint64_t) {
  return TagNo("fi_tinject");
}
ssize_t TSendData(struct fid_ep*, const void*, size_t, void*, uint64_t, fi_addr_t, uint64_t,
                  void*) {
  return TagNo("fi_tsenddata");
}
ssize_t TInjectData(struct fid_ep*, const void*, size_t, uint64_t, fi_addr_t, uint64_t) {
  return TagNo("fi_tinjectdata");
}

// --- fi_ops_collective: not supported ---
ssize_t CollNo() {
  IWX_WARN(ep_data, "collective operations are not supported\n");
  return -FI_ENOSYS;
}
ssize_t CollBarrier(struct fid_ep*, fi_addr_t, void*) {
  return CollNo();
}
ssize_t CollBarrier2(struct fid_ep*, fi_addr_t, uint64_t, void*) {
  return CollNo();
}
ssize_t CollBroadcast(struct fid_ep*, void*, size_t, void*, fi_addr_t, fi_addr_t, enum fi_datatype,
                      uint64_t, void*) {
  return CollNo();
}
ssize_t CollAllToAll(struct fid_ep*, const void*, size_t, void*, void*, void*, fi_addr_t,
                     enum fi_datatype, uint64_t, void*) {
  return CollNo();
}
ssize_t CollAllReduce(struct fid_ep*, const void*, size_t, void*, void*, void*, fi_addr_t,
                      enum fi_datatype, enum fi_op, uint64_t, void*) {
  return CollNo();
}
ssize_t CollAllGather(struct fid_ep*, const void*, size_t, void*, void*, void*, fi_addr_t,
                      enum fi_datatype, uint64_t, void*) {
  return CollNo();
}
ssize_t CollReduceScatter(struct fid_ep*, const void*, size_t, void*, void*, void*, fi_addr_t,
                          enum fi_datatype, enum fi_op, uint64_t, void*) {
  return CollNo();
}
ssize_t CollReduce(struct fid_ep*, const void*, size_t, void*, void*, void*, fi_addr_t, fi_addr_t,
                   enum fi_datatype, enum fi_op, uint64_t, void*) {
  return CollNo();
}
ssize_t CollScatter(struct fid_ep*, const void*, size_t, void*, void*, void*, fi_addr_t, fi_addr_t,
                    enum fi_datatype, uint64_t, void*) {
  return CollNo();
}
ssize_t CollGather(struct fid_ep*, const void*, size_t, void*, void*, void*, fi_addr_t, fi_addr_t,
                   enum fi_datatype, uint64_t, void*) {
  return CollNo();
}
ssize_t CollMsg(struct fid_ep*, const struct fi_msg_collective*, struct fi_ioc*, void**, size_t,
                uint64_t) {
  return CollNo();
}

// --- fi_ops_rma ---
ssize_t RmaNo(const char* call) {
  IWX_WARN(ep_data, "%s: RMA is not supported on this endpoint (no FI_RMA)\n", call);
  return -FI_ENOSYS;
}
ssize_t RRead(struct fid_ep*, void*, size_t, void*, fi_addr_t, uint64_t, uint64_t, void*) {
  return RmaNo("fi_read");
}
ssize_t RReadv(struct fid_ep*, const struct iovec*, void**, size_t, fi_addr_t, uint64_t, uint64_t,
               void*) {
  return RmaNo("fi_readv");
}
ssize_t RReadmsg(struct fid_ep*, const struct fi_msg_rma*, uint64_t) {
  return RmaNo("fi_readmsg");
}
ssize_t RWrite(struct fid_ep*, const void*, size_t, void*, fi_addr_t, uint64_t, uint64_t, void*) {
  return RmaNo("fi_write");
}
ssize_t RWritev(struct fid_ep*, const struct iovec*, void**, size_t, fi_addr_t, uint64_t, uint64_t,
                void*) {
  return RmaNo("fi_writev");
}
ssize_t RWritemsg(struct fid_ep*, const struct fi_msg_rma*, uint64_t) {
  return RmaNo("fi_writemsg");
}
ssize_t RInject(struct fid_ep*, const void*, size_t, fi_addr_t, uint64_t, uint64_t) {
  return RmaNo("fi_inject_write");
}
ssize_t RWriteData(struct fid_ep*, const void*, size_t, void*, uint64_t, fi_addr_t, uint64_t,
                   uint64_t, void*) {
  return RmaNo("fi_writedata");
}
ssize_t RInjectData(struct fid_ep*, const void*, size_t, uint64_t, fi_addr_t, uint64_t, uint64_t) {
  return RmaNo("fi_inject_writedata");
}

// --- fi_ops_atomic ---
ssize_t AtomicNo(const char* call) {
  IWX_WARN(ep_data, "%s: atomics are not supported on this endpoint (no FI_ATOMIC)\n", call);
  return -FI_ENOSYS;
}
ssize_t AWrite(struct fid_ep*, const void*, size_t, void*, fi_addr_t, uint64_t, uint64_t,
               enum fi_datatype, enum fi_op, void*) {
  return AtomicNo("fi_atomic");
}
ssize_t AWritev(struct fid_ep*, const struct fi_ioc*, void**, size_t, fi_addr_t, uint64_t, uint64_t,
                enum fi_datatype, enum fi_op, void*) {
  return AtomicNo("fi_atomicv");
}
ssize_t AWritemsg(struct fid_ep*, const struct fi_msg_atomic*, uint64_t) {
  return AtomicNo("fi_atomicmsg");
}
ssize_t AInject(struct fid_ep*, const void*, size_t, fi_addr_t, uint64_t, uint64_t,
                enum fi_datatype, enum fi_op) {
  return AtomicNo("fi_inject_atomic");
}
ssize_t AReadWrite(struct fid_ep*, const void*, size_t, void*, void*, void*, fi_addr_t, uint64_t,
                   uint64_t, enum fi_datatype, enum fi_op, void*) {
  return AtomicNo("fi_fetch_atomic");
}
ssize_t AReadWritev(struct fid_ep*, const struct fi_ioc*, void**, size_t, struct fi_ioc*, void**,
                    size_t, fi_addr_t, uint64_t, uint64_t, enum fi_datatype, enum fi_op, void*) {
  return AtomicNo("fi_fetch_atomicv");
}
ssize_t AReadWritemsg(struct fid_ep*, const struct fi_msg_atomic*, struct fi_ioc*, void**, size_t,
                      uint64_t) {
  return AtomicNo("fi_fetch_atomicmsg");
}
ssize_t ACompWrite(struct fid_ep*, const void*, size_t, void*, const void*, void*, void*, void*,
                   fi_addr_t, uint64_t, uint64_t, enum fi_datatype, enum fi_op, void*) {
  return AtomicNo("fi_compare_atomic");
}
ssize_t ACompWritev(struct fid_ep*, const struct fi_ioc*, void**, size_t, const struct fi_ioc*,
                    void**, size_t, struct fi_ioc*, void**, size_t, fi_addr_t, uint64_t, uint64_t,
                    enum fi_datatype, enum fi_op, void*) {
  return AtomicNo("fi_compare_atomicv");
}
ssize_t ACompWritemsg(struct fid_ep*, const struct fi_msg_atomic*, const struct fi_ioc*, void**,
                      size_t, struct fi_ioc*, void**, size_t, uint64_t) {
  return AtomicNo("fi_compare_atomicmsg");
}
int AValid(struct fid_ep*, enum fi_datatype, enum fi_op, size_t*) {
  return static_cast<int>(AtomicNo("fi_atomicvalid"));
}

}  // namespace

const struct fi_ops_tagged kNoTaggedOps = {
    .size = sizeof(struct fi_ops_tagged),
    .recv = TRecv,
    .recvv = TRecvv,
    .recvmsg = TRecvmsg,
    .send = TSend,
    .sendv = TSendv,
    .sendmsg = TSendmsg,
    .inject = TInject,
    .senddata = TSendData,
    .injectdata = TInjectData,
};

const struct fi_ops_collective kNoCollectiveOps = {
    .size = sizeof(struct fi_ops_collective),
    .barrier = CollBarrier,
    .broadcast = CollBroadcast,
    .alltoall = CollAllToAll,
    .allreduce = CollAllReduce,
    .allgather = CollAllGather,
    .reduce_scatter = CollReduceScatter,
    .reduce = CollReduce,
    .scatter = CollScatter,
    .gather = CollGather,
    .msg = CollMsg,
    .barrier2 = CollBarrier2,
};

const struct fi_ops_rma kNoRmaOps = {
    .size = sizeof(struct fi_ops_rma),
    .read = RRead,
    .readv = RReadv,
    .readmsg = RReadmsg,
    .write = RWrite,
    .writev = RWritev,
    .writemsg = RWritemsg,
    .inject = RInject,
    .writedata = RWriteData,
    .injectdata = RInjectData,
};

const struct fi_ops_atomic kNoAtomicOps = {
    .size = sizeof(struct fi_ops_atomic),
    .write = AWrite,
    .writev = AWritev,
    .writemsg = AWritemsg,
    .inject = AInject,
    .readwrite = AReadWrite,
    .readwritev = AReadWritev,
    .readwritemsg = AReadWritemsg,
    .compwrite = ACompWrite,
    .compwritev = ACompWritev,
    .compwritemsg = ACompWritemsg,
    .writevalid = AValid,
    .readwritevalid = AValid,
    .compwritevalid = AValid,
};

const struct fi_ops_msg kNoMsgOps = {
    .size = sizeof(struct fi_ops_msg),
    .recv = MRecv,
    .recvv = MRecvv,
    .recvmsg = MRecvmsg,
    .send = MSend,
    .sendv = MSendv,
    .sendmsg = MSendmsg,
    .inject = MInject,
    .senddata = MSendData,
    .injectdata = MInjectData,
};

int NoTxContext(struct fid_ep* /*sep*/, int /*index*/, struct fi_tx_attr* /*attr*/,
                struct fid_ep** /*tx_ep*/, void* /*context*/) {
  IWX_WARN(ep_ctrl, "fi_tx_context: scalable endpoints are not supported\n");
  return -FI_ENOSYS;
}

int NoRxContext(struct fid_ep* /*sep*/, int /*index*/, struct fi_rx_attr* /*attr*/,
                struct fid_ep** /*rx_ep*/, void* /*context*/) {
  IWX_WARN(ep_ctrl, "fi_rx_context: scalable endpoints are not supported\n");
  return -FI_ENOSYS;
}

ssize_t NoSizeLeft(struct fid_ep* /*ep*/) {
  return -FI_ENOSYS;  // deprecated in libfabric 1.x
}

}  // namespace iwarpx::ofi
