// RmaOps<Ep> and AtomicOps<Ep>: the fi_ops_rma and fi_ops_atomic tables of an
// endpoint class, one thin C entry point per call, shared by the endpoint
// types that offer RMA and atomics (MSG, RDM). Ep provides
//   ssize_t PostWrite(const iovec*, size_t count, fi_addr_t dest, uint64_t addr,
//                     uint64_t key, void* context, uint64_t flags, uint64_t data);
//   ssize_t PostRead(const iovec*, void** desc, size_t count, fi_addr_t src,
//                    uint64_t addr, uint64_t key, void* context, uint64_t flags);
//   ssize_t PostAtomic(const void* buf, size_t count, fi_datatype, fi_op,
//                      fi_addr_t dest, uint64_t addr, uint64_t key,
//                      const void* compare, void* result, void* context,
//                      uint64_t flags, bool fetch, bool cmp);
//   uint64_t tx_op_flags() const;
// and `static Ep* FromEp(struct fid_ep*)`, the object behind its fid_ep. Flags as in MsgOps: the
// endpoint's op_flags for calls that take none, FI_INJECT for fi_inject*, FI_REMOTE_CQ_DATA for the
// *data calls, the caller's flags for fi_*msg. One remote iovec (rma_iov_limit 1) and one local ioc
// per atomic.
#pragma once

#include <sys/uio.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "ofi/common.h"
#include "ofi/domain.h"
#include "ofi/log.h"

namespace iwarpx::ofi {

template <class Ep>
struct RmaOps {
  static Ep* Self(struct fid_ep* ep) { return Ep::FromEp(ep); }

  static ssize_t Read(struct fid_ep* ep, void* buf, size_t len, void* desc, fi_addr_t src,
                      uint64_t addr, uint64_t key, void* context) {
    const struct iovec iov = {buf, len};
    return Self(ep)->PostRead(&iov, &desc, 1, src, addr, key, context, Self(ep)->tx_op_flags());
  }
  static ssize_t Readv(struct fid_ep* ep, const struct iovec* iov, void** desc, size_t count,
                       fi_addr_t src, uint64_t addr, uint64_t key, void* context) {
    return Self(ep)->PostRead(iov, desc, count, src, addr, key, context, Self(ep)->tx_op_flags());
  }
  static ssize_t Readmsg(struct fid_ep* ep, const struct fi_msg_rma* msg, uint64_t flags) {
    if (msg == nullptr || msg->rma_iov == nullptr || msg->rma_iov_count != 1) {
      IWX_WARN(ep_data, "fi_readmsg: exactly one remote iovec (rma_iov_limit 1)\n");
      return -FI_EINVAL;
    }
    return Self(ep)->PostRead(msg->msg_iov, msg->desc, msg->iov_count, msg->addr,
                              msg->rma_iov[0].addr, msg->rma_iov[0].key, msg->context, flags);
  }
  static ssize_t Write(struct fid_ep* ep, const void* buf, size_t len, void* /*desc*/,
                       fi_addr_t dest, uint64_t addr, uint64_t key, void* context) {
    const struct iovec iov = {const_cast<void*>(buf), len};
    return Self(ep)->PostWrite(&iov, 1, dest, addr, key, context, PlainFlags(ep), 0);
  }
  static ssize_t Writev(struct fid_ep* ep, const struct iovec* iov, void** /*desc*/, size_t count,
                        fi_addr_t dest, uint64_t addr, uint64_t key, void* context) {
    return Self(ep)->PostWrite(iov, count, dest, addr, key, context, PlainFlags(ep), 0);
  }
  static ssize_t Writemsg(struct fid_ep* ep, const struct fi_msg_rma* msg, uint64_t flags) {
    if (msg == nullptr || msg->rma_iov == nullptr || msg->rma_iov_count != 1) {
      IWX_WARN(ep_data, "fi_writemsg: exactly one remote iovec (rma_iov_limit 1)\n");
      return -FI_EINVAL;
    }
    return Self(ep)->PostWrite(msg->msg_iov, msg->iov_count, msg->addr, msg->rma_iov[0].addr,
                               msg->rma_iov[0].key, msg->context, flags, msg->data);
  }
  static ssize_t Inject(struct fid_ep* ep, const void* buf, size_t len, fi_addr_t dest,
                        uint64_t addr, uint64_t key) {
    const struct iovec iov = {const_cast<void*>(buf), len};
    return Self(ep)->PostWrite(&iov, 1, dest, addr, key, nullptr, FI_INJECT, 0);
  }
  static ssize_t WriteData(struct fid_ep* ep, const void* buf, size_t len, void* /*desc*/,
                           uint64_t data, fi_addr_t dest, uint64_t addr, uint64_t key,
                           void* context) {
    const struct iovec iov = {const_cast<void*>(buf), len};
    return Self(ep)->PostWrite(&iov, 1, dest, addr, key, context,
                               PlainFlags(ep) | FI_REMOTE_CQ_DATA, data);
  }
  static ssize_t InjectData(struct fid_ep* ep, const void* buf, size_t len, uint64_t data,
                            fi_addr_t dest, uint64_t addr, uint64_t key) {
    const struct iovec iov = {const_cast<void*>(buf), len};
    return Self(ep)->PostWrite(&iov, 1, dest, addr, key, nullptr, FI_INJECT | FI_REMOTE_CQ_DATA,
                               data);
  }

  static constexpr struct fi_ops_rma kTable = {
      .size = sizeof(struct fi_ops_rma),
      .read = Read,
      .readv = Readv,
      .readmsg = Readmsg,
      .write = Write,
      .writev = Writev,
      .writemsg = Writemsg,
      .inject = Inject,
      .writedata = WriteData,
      .injectdata = InjectData,
  };

 private:
  static uint64_t PlainFlags(struct fid_ep* ep) {
    return Self(ep)->tx_op_flags() & ~uint64_t{FI_REMOTE_CQ_DATA};
  }
};

template <class Ep>
struct AtomicOps {
  static Ep* Self(struct fid_ep* ep) { return Ep::FromEp(ep); }

  static ssize_t Write(struct fid_ep* ep, const void* buf, size_t count, void* /*desc*/,
                       fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype datatype,
                       enum fi_op op, void* context) {
    return Self(ep)->PostAtomic(buf, count, datatype, op, dest, addr, key, nullptr, nullptr,
                                context, Self(ep)->tx_op_flags(), false, false);
  }
  static ssize_t Writev(struct fid_ep* ep, const struct fi_ioc* iov, void** /*desc*/, size_t count,
                        fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype datatype,
                        enum fi_op op, void* context) {
    if (iov == nullptr || count != 1) return -FI_EINVAL;
    return Self(ep)->PostAtomic(iov[0].addr, iov[0].count, datatype, op, dest, addr, key, nullptr,
                                nullptr, context, Self(ep)->tx_op_flags(), false, false);
  }
  static ssize_t Writemsg(struct fid_ep* ep, const struct fi_msg_atomic* msg, uint64_t flags) {
    if (msg == nullptr || msg->iov_count != 1 || msg->rma_iov_count != 1) return -FI_EINVAL;
    return Self(ep)->PostAtomic(msg->msg_iov[0].addr, msg->msg_iov[0].count, msg->datatype, msg->op,
                                msg->addr, msg->rma_iov[0].addr, msg->rma_iov[0].key, nullptr,
                                nullptr, msg->context, flags, false, false);
  }
  static ssize_t Inject(struct fid_ep* ep, const void* buf, size_t count, fi_addr_t dest,
                        uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op) {
    return Self(ep)->PostAtomic(buf, count, datatype, op, dest, addr, key, nullptr, nullptr,
                                nullptr, FI_INJECT, false, false);
  }
  static ssize_t ReadWrite(struct fid_ep* ep, const void* buf, size_t count, void* /*desc*/,
                           void* result, void* /*result_desc*/, fi_addr_t dest, uint64_t addr,
                           uint64_t key, enum fi_datatype datatype, enum fi_op op, void* context) {
    return Self(ep)->PostAtomic(buf, count, datatype, op, dest, addr, key, nullptr, result, context,
                                Self(ep)->tx_op_flags(), true, false);
  }
  static ssize_t ReadWritev(struct fid_ep* ep, const struct fi_ioc* iov, void** /*desc*/,
                            size_t count, struct fi_ioc* resultv, void** /*result_desc*/,
                            size_t result_count, fi_addr_t dest, uint64_t addr, uint64_t key,
                            enum fi_datatype datatype, enum fi_op op, void* context) {
    if (iov == nullptr || resultv == nullptr || count != 1 || result_count != 1) return -FI_EINVAL;
    return Self(ep)->PostAtomic(iov[0].addr, iov[0].count, datatype, op, dest, addr, key, nullptr,
                                resultv[0].addr, context, Self(ep)->tx_op_flags(), true, false);
  }
  static ssize_t ReadWritemsg(struct fid_ep* ep, const struct fi_msg_atomic* msg,
                              struct fi_ioc* resultv, void** /*result_desc*/, size_t result_count,
                              uint64_t flags) {
    if (msg == nullptr || resultv == nullptr || msg->iov_count != 1 || msg->rma_iov_count != 1 ||
        result_count != 1) {
      return -FI_EINVAL;
    }
    return Self(ep)->PostAtomic(msg->msg_iov[0].addr, msg->msg_iov[0].count, msg->datatype, msg->op,
                                msg->addr, msg->rma_iov[0].addr, msg->rma_iov[0].key, nullptr,
                                resultv[0].addr, msg->context, flags, true, false);
  }
  static ssize_t CompWrite(struct fid_ep* ep, const void* buf, size_t count, void* /*desc*/,
                           const void* compare, void* /*compare_desc*/, void* result,
                           void* /*result_desc*/, fi_addr_t dest, uint64_t addr, uint64_t key,
                           enum fi_datatype datatype, enum fi_op op, void* context) {
    return Self(ep)->PostAtomic(buf, count, datatype, op, dest, addr, key, compare, result, context,
                                Self(ep)->tx_op_flags(), true, true);
  }
  static ssize_t CompWritev(struct fid_ep* ep, const struct fi_ioc* iov, void** /*desc*/,
                            size_t count, const struct fi_ioc* comparev, void** /*compare_desc*/,
                            size_t compare_count, struct fi_ioc* resultv, void** /*result_desc*/,
                            size_t result_count, fi_addr_t dest, uint64_t addr, uint64_t key,
                            enum fi_datatype datatype, enum fi_op op, void* context) {
    if (iov == nullptr || comparev == nullptr || resultv == nullptr || count != 1 ||
        compare_count != 1 || result_count != 1) {
      return -FI_EINVAL;
    }
    return Self(ep)->PostAtomic(iov[0].addr, iov[0].count, datatype, op, dest, addr, key,
                                comparev[0].addr, resultv[0].addr, context, Self(ep)->tx_op_flags(),
                                true, true);
  }
  static ssize_t CompWritemsg(struct fid_ep* ep, const struct fi_msg_atomic* msg,
                              const struct fi_ioc* comparev, void** /*compare_desc*/,
                              size_t compare_count, struct fi_ioc* resultv, void** /*result_desc*/,
                              size_t result_count, uint64_t flags) {
    if (msg == nullptr || comparev == nullptr || resultv == nullptr || msg->iov_count != 1 ||
        msg->rma_iov_count != 1 || compare_count != 1 || result_count != 1) {
      return -FI_EINVAL;
    }
    return Self(ep)->PostAtomic(msg->msg_iov[0].addr, msg->msg_iov[0].count, msg->datatype, msg->op,
                                msg->addr, msg->rma_iov[0].addr, msg->rma_iov[0].key,
                                comparev[0].addr, resultv[0].addr, msg->context, flags, true, true);
  }
  static int Valid(enum fi_datatype datatype, enum fi_op op, size_t* count, uint64_t flags) {
    struct fi_atomic_attr attr = {};
    const int ret = QueryAtomic(nullptr, datatype, op, &attr, flags);
    if (ret != 0) return ret;
    if (count != nullptr) *count = attr.count;
    return 0;
  }
  static int WriteValid(struct fid_ep* /*ep*/, enum fi_datatype datatype, enum fi_op op,
                        size_t* count) {
    return Valid(datatype, op, count, 0);
  }
  static int ReadWriteValid(struct fid_ep* /*ep*/, enum fi_datatype datatype, enum fi_op op,
                            size_t* count) {
    return Valid(datatype, op, count, FI_FETCH_ATOMIC);
  }
  static int CompWriteValid(struct fid_ep* /*ep*/, enum fi_datatype datatype, enum fi_op op,
                            size_t* count) {
    return Valid(datatype, op, count, FI_COMPARE_ATOMIC);
  }

  static constexpr struct fi_ops_atomic kTable = {
      .size = sizeof(struct fi_ops_atomic),
      .write = Write,
      .writev = Writev,
      .writemsg = Writemsg,
      .inject = Inject,
      .readwrite = ReadWrite,
      .readwritev = ReadWritev,
      .readwritemsg = ReadWritemsg,
      .compwrite = CompWrite,
      .compwritev = CompWritev,
      .compwritemsg = CompWritemsg,
      .writevalid = WriteValid,
      .readwritevalid = ReadWriteValid,
      .compwritevalid = CompWriteValid,
  };
};

}  // namespace iwarpx::ofi
