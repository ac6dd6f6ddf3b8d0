// TaggedOps<Ep>: the fi_ops_tagged table of an endpoint class, one thin C
// entry point per call (fi_tagged(3)). Ep provides
//   ssize_t PostTRecv(const iovec*, size_t count, fi_addr_t src, uint64_t tag,
//                     uint64_t ignore, void* context, uint64_t flags);
//   ssize_t PostTSend(const iovec*, size_t count, fi_addr_t dest, uint64_t tag,
//                     void* context, uint64_t flags, uint64_t data);
//   uint64_t rx_op_flags() const; uint64_t tx_op_flags() const;
//   static Ep* FromEp(struct fid_ep*);
// Flags as in MsgOps; fi_trecvmsg's flags carry FI_PEEK, FI_CLAIM and
// FI_DISCARD through to PostTRecv.
#pragma once

#include <sys/uio.h>

#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

namespace iwarpx::ofi {

template <class Ep>
struct TaggedOps {
  static Ep* Self(struct fid_ep* ep) { return Ep::FromEp(ep); }

  static ssize_t Recv(struct fid_ep* ep, void* buf, size_t len, void* /*desc*/, fi_addr_t src,
                      uint64_t tag, uint64_t ignore, void* context) {
    const struct iovec iov = {buf, len};
    return Self(ep)->PostTRecv(&iov, 1, src, tag, ignore, context, Self(ep)->rx_op_flags());
  }
  static ssize_t Recvv(struct fid_ep* ep, const struct iovec* iov, void** /*desc*/, size_t count,
                       fi_addr_t src, uint64_t tag, uint64_t ignore, void* context) {
    return Self(ep)->PostTRecv(iov, count, src, tag, ignore, context, Self(ep)->rx_op_flags());
  }
  static ssize_t Recvmsg(struct fid_ep* ep, const struct fi_msg_tagged* msg, uint64_t flags) {
    if (msg == nullptr) return -FI_EINVAL;
    return Self(ep)->PostTRecv(msg->msg_iov, msg->iov_count, msg->addr, msg->tag, msg->ignore,
                               msg->context, flags);
  }
  static ssize_t Send(struct fid_ep* ep, const void* buf, size_t len, void* /*desc*/,
                      fi_addr_t dest, uint64_t tag, void* context) {
    const struct iovec iov = {const_cast<void*>(buf), len};
    return Self(ep)->PostTSend(&iov, 1, dest, tag, context, PlainTxFlags(ep), 0);
  }
  static ssize_t Sendv(struct fid_ep* ep, const struct iovec* iov, void** /*desc*/, size_t count,
                       fi_addr_t dest, uint64_t tag, void* context) {
    return Self(ep)->PostTSend(iov, count, dest, tag, context, PlainTxFlags(ep), 0);
  }
  static ssize_t Sendmsg(struct fid_ep* ep, const struct fi_msg_tagged* msg, uint64_t flags) {
    if (msg == nullptr) return -FI_EINVAL;
    return Self(ep)->PostTSend(msg->msg_iov, msg->iov_count, msg->addr, msg->tag, msg->context,
                               flags, msg->data);
  }
  static ssize_t Inject(struct fid_ep* ep, const void* buf, size_t len, fi_addr_t dest,
                        uint64_t tag) {
    const struct iovec iov = {const_cast<void*>(buf), len};
    return Self(ep)->PostTSend(&iov, 1, dest, tag, nullptr, FI_INJECT, 0);
  }
  static ssize_t SendData(struct fid_ep* ep, const void* buf, size_t len, void* /*desc*/,
                          uint64_t data, fi_addr_t dest, uint64_t tag, void* context) {
    const struct iovec iov = {const_cast<void*>(buf), len};
    return Self(ep)->PostTSend(&iov, 1, dest, tag, context, PlainTxFlags(ep) | FI_REMOTE_CQ_DATA,
                               data);
  }
  static ssize_t InjectData(struct fid_ep* ep, const void* buf, size_t len, uint64_t data,
                            fi_addr_t dest, uint64_t tag) {
    const struct iovec iov = {const_cast<void*>(buf), len};
    return Self(ep)->PostTSend(&iov, 1, dest, tag, nullptr, FI_INJECT | FI_REMOTE_CQ_DATA, data);
  }

  static constexpr struct fi_ops_tagged kTable = {
      .size = sizeof(struct fi_ops_tagged),
      .recv = Recv,
      .recvv = Recvv,
      .recvmsg = Recvmsg,
      .send = Send,
      .sendv = Sendv,
      .sendmsg = Sendmsg,
      .inject = Inject,
      .senddata = SendData,
      .injectdata = InjectData,
  };

 private:
  static uint64_t PlainTxFlags(struct fid_ep* ep) {
    return Self(ep)->tx_op_flags() & ~uint64_t{FI_REMOTE_CQ_DATA};
  }
};

}  // namespace iwarpx::ofi
