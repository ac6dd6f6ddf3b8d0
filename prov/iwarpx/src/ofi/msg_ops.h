// MsgOps<Ep>: the fi_ops_msg table of an endpoint class, one thin C entry
// point per call, shared by every endpoint type. Ep provides
//   ssize_t PostRecv(const iovec*, size_t count, fi_addr_t src, void* context,
//                    uint64_t flags);
//   ssize_t PostSend(const iovec*, size_t count, fi_addr_t dest, void* context,
//                    uint64_t flags, uint64_t data);
//   uint64_t rx_op_flags() const; uint64_t tx_op_flags() const;
// and `static Ep* FromEp(struct fid_ep*)`, the object behind its fid_ep. The flags each call passes
// are those of fi_msg(3): the endpoint's op_flags for the calls that take none (without
// FI_REMOTE_CQ_DATA, which only the *data calls and fi_sendmsg carry), FI_INJECT for fi_inject*,
// the caller's flags for fi_*msg.
#pragma once

#include <sys/uio.h>

#include <rdma/fi_endpoint.h>

#include "ofi/common.h"

namespace iwarpx::ofi {

template <class Ep>
struct MsgOps {
  static Ep* Self(struct fid_ep* ep) { return Ep::FromEp(ep); }

  static ssize_t Recv(struct fid_ep* ep, void* buf, size_t len, void* /*desc*/, fi_addr_t src,
                      void* context) {
    const struct iovec iov = {buf, len};
    return Self(ep)->PostRecv(&iov, 1, src, context, Self(ep)->rx_op_flags());
  }
  static ssize_t Recvv(struct fid_ep* ep, const struct iovec* iov, void** /*desc*/, size_t count,
                       fi_addr_t src, void* context) {
    return Self(ep)->PostRecv(iov, count, src, context, Self(ep)->rx_op_flags());
  }
  static ssize_t Recvmsg(struct fid_ep* ep, const struct fi_msg* msg, uint64_t flags) {
    if (msg == nullptr) return -FI_EINVAL;
    return Self(ep)->PostRecv(msg->msg_iov, msg->iov_count, msg->addr, msg->context, flags);
  }
  static ssize_t Send(struct fid_ep* ep, const void* buf, size_t len, void* /*desc*/,
                      fi_addr_t dest, void* context) {
    const struct iovec iov = {const_cast<void*>(buf), len};
    return Self(ep)->PostSend(&iov, 1, dest, context, PlainTxFlags(ep), 0);
  }
  static ssize_t Sendv(struct fid_ep* ep, const struct iovec* iov, void** /*desc*/, size_t count,
                       fi_addr_t dest, void* context) {
    return Self(ep)->PostSend(iov, count, dest, context, PlainTxFlags(ep), 0);
  }
  static ssize_t Sendmsg(struct fid_ep* ep, const struct fi_msg* msg, uint64_t flags) {
    if (msg == nullptr) return -FI_EINVAL;
    return Self(ep)->PostSend(msg->msg_iov, msg->iov_count, msg->addr, msg->context, flags,
                              msg->data);
  }
  static ssize_t Inject(struct fid_ep* ep, const void* buf, size_t len, fi_addr_t dest) {
    const struct iovec iov = {const_cast<void*>(buf), len};
    return Self(ep)->PostSend(&iov, 1, dest, nullptr, FI_INJECT, 0);
  }
  static ssize_t SendData(struct fid_ep* ep, const void* buf, size_t len, void* /*desc*/,
                          uint64_t data, fi_addr_t dest, void* context) {
    const struct iovec iov = {const_cast<void*>(buf), len};
    return Self(ep)->PostSend(&iov, 1, dest, context, PlainTxFlags(ep) | FI_REMOTE_CQ_DATA, data);
  }
  static ssize_t InjectData(struct fid_ep* ep, const void* buf, size_t len, uint64_t data,
                            fi_addr_t dest) {
    const struct iovec iov = {const_cast<void*>(buf), len};
    return Self(ep)->PostSend(&iov, 1, dest, nullptr, FI_INJECT | FI_REMOTE_CQ_DATA, data);
  }

  static constexpr struct fi_ops_msg kTable = {
      .size = sizeof(struct fi_ops_msg),
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
