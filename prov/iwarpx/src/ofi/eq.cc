#include "ofi/eq.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>

#include <rdma/fi_errno.h>

#include "ofi/fabric.h"
#include "ofi/getinfo.h"
#include "ofi/log.h"

namespace iwarpx::ofi {
namespace {

Eq* Self(struct fid_eq* eq) {
  return OwnerOf<Eq>(eq);
}

int EqClose(struct fid* fid) {
  return Self(reinterpret_cast<struct fid_eq*>(fid))->Close();
}
int EqControl(struct fid* fid, int command, void* arg) {
  return Self(reinterpret_cast<struct fid_eq*>(fid))->Control(command, arg);
}
ssize_t EqRead(struct fid_eq* eq, uint32_t* event, void* buf, size_t len, uint64_t flags) {
  return Self(eq)->Read(event, buf, len, flags, 0, false);
}
ssize_t EqReadErr(struct fid_eq* eq, struct fi_eq_err_entry* buf, uint64_t flags) {
  return Self(eq)->ReadErr(buf, flags);
}
ssize_t EqWrite(struct fid_eq* eq, uint32_t event, const void* buf, size_t len, uint64_t flags) {
  return Self(eq)->Write(event, buf, len, flags);
}
ssize_t EqSRead(struct fid_eq* eq, uint32_t* event, void* buf, size_t len, int timeout,
                uint64_t flags) {
  return Self(eq)->Read(event, buf, len, flags, timeout, true);
}
const char* EqStrError(struct fid_eq* /*eq*/, int prov_errno, const void* /*err_data*/, char* buf,
                       size_t len) {
  return ProvErrnoText(prov_errno, buf, len);
}

const struct fi_ops kEqFiOps = {
    .size = sizeof(struct fi_ops),
    .close = EqClose,
    .bind = fi_no_bind,
    .control = EqControl,
    .ops_open = fi_no_ops_open,
    .tostr = fi_no_tostr,
    .ops_set = fi_no_ops_set,
};

const struct fi_ops_eq kEqOps = {
    .size = sizeof(struct fi_ops_eq),
    .read = EqRead,
    .readerr = EqReadErr,
    .write = EqWrite,
    .sread = EqSRead,
    .strerror = EqStrError,
};

}  // namespace

int Eq::Open(struct fid_fabric* fabric, struct fi_eq_attr* attr, struct fid_eq** eq,
             void* context) {
  Fabric* f = Fabric::From(fabric);
  if (f == nullptr || attr == nullptr || eq == nullptr) {
    IWX_WARN(eq, "fi_eq_open: fabric must be iwarpx's, attr and eq not NULL\n");
    return -FI_EINVAL;
  }
  if ((attr->flags & ~static_cast<uint64_t>(FI_WRITE)) != 0) {
    IWX_WARN(eq, "fi_eq_open: flags %#lx are not supported (only FI_WRITE)\n",
             static_cast<unsigned long>(attr->flags));
    return -FI_EBADFLAGS;
  }
  if (attr->size > kMaxEqSize) {
    IWX_WARN(eq, "fi_eq_open: size %zu exceeds the maximum %zu\n", attr->size, kMaxEqSize);
    return -FI_EINVAL;
  }
  auto* e = new (std::nothrow) Eq(f, (attr->flags & FI_WRITE) != 0);
  if (e == nullptr) return -FI_ENOMEM;
  if (const int ret = e->waiter_.Open(attr->wait_obj, f->engine().poll_fd()); ret != 0) {
    IWX_WARN(eq, "fi_eq_open: wait object %d is not supported (NONE, UNSPEC or FD): %s\n",
             static_cast<int>(attr->wait_obj), fi_strerror(-ret));
    delete e;
    return ret;
  }
  if (!e->ring_.Init(attr->size != 0 ? attr->size : kDefaultEqSize)) {
    delete e;
    return -FI_ENOMEM;
  }
  e->handle_.owner = e;
  e->handle_.fid.fid.fclass = FI_CLASS_EQ;
  e->handle_.fid.fid.context = context;
  e->handle_.fid.fid.ops = const_cast<struct fi_ops*>(&kEqFiOps);
  e->handle_.fid.ops = const_cast<struct fi_ops_eq*>(&kEqOps);
  f->Ref();
  *eq = &e->handle_.fid;
  IWX_INFO(eq, "eq %p opened (%zu entries)\n", static_cast<void*>(e), e->ring_.capacity());
  return 0;
}

Eq* Eq::From(struct fid* fid) {
  if (!IsOurs(fid, FI_CLASS_EQ, &kEqFiOps)) return nullptr;
  return OwnerOf<Eq>(reinterpret_cast<struct fid_eq*>(fid));
}

bool Eq::PostLocked(uint32_t event, const void* buf, size_t len) {
  if (len > kMaxEqEntrySize || (buf == nullptr && len != 0)) return false;
  Slot* s = ring_.Push();
  if (s == nullptr) return false;
  s->event = event;
  s->error = false;
  s->len = len;
  if (len != 0) std::memcpy(s->bytes, buf, len);
  waiter_.Signal();
  return true;
}

bool Eq::Post(uint32_t event, const void* buf, size_t len) {
  std::lock_guard<std::mutex> lock(waiter_.mu);
  return PostLocked(event, buf, len);
}

bool Eq::PostCm(uint32_t event, struct fid* fid, struct fi_info* info, const void* data,
                size_t len) {
  if (len > kMaxMpaPrivateData || (data == nullptr && len != 0)) return false;
  alignas(struct fi_eq_cm_entry) uint8_t buf[kMaxEqEntrySize];
  struct fi_eq_cm_entry entry = {};
  entry.fid = fid;
  entry.info = info;
  std::memcpy(buf, &entry, sizeof(entry));
  if (len != 0) std::memcpy(buf + sizeof(entry), data, len);
  return Post(event, buf, sizeof(entry) + len);
}

bool Eq::PostError(const struct fi_eq_err_entry& e, const void* err_data, size_t err_data_size) {
  if (err_data_size > kMaxEqEntrySize || (err_data == nullptr && err_data_size != 0)) return false;
  std::lock_guard<std::mutex> lock(waiter_.mu);
  Slot* s = ring_.Push();
  if (s == nullptr) return false;
  s->event = 0;
  s->error = true;
  s->len = err_data_size;
  if (err_data_size != 0) std::memcpy(s->bytes, err_data, err_data_size);
  s->err = e;
  s->err.err_data = nullptr;
  s->err.err_data_size = 0;
  waiter_.Signal();
  return true;
}

ssize_t Eq::Read(uint32_t* event, void* buf, size_t len, uint64_t flags, int timeout, bool block) {
  if ((flags & ~static_cast<uint64_t>(FI_PEEK)) != 0) {
    IWX_WARN(eq, "fi_eq_read: flags %#lx are not supported (only FI_PEEK)\n",
             static_cast<unsigned long>(flags));
    return -FI_EBADFLAGS;
  }
  if (block && !waiter_.can_block()) {
    IWX_WARN(eq, "fi_eq_sread: the EQ was opened with FI_WAIT_NONE\n");
    return -FI_EINVAL;
  }
  if (block) {
    fabric_->ProgressUntil(timeout, waiter_.fd(), [&] {
      std::lock_guard<std::mutex> lock(waiter_.mu);
      if (!ring_.empty()) return true;
      waiter_.Quiesce(true);
      return false;
    });
  } else {
    fabric_->Progress();
  }
  std::unique_lock<std::mutex> lock(waiter_.mu);
  if (ring_.empty()) return -FI_EAGAIN;
  Slot& s = ring_.front();
  if (s.error) return -FI_EAVAIL;
  if (len < s.len || (buf == nullptr && s.len != 0)) {
    IWX_WARN(eq, "fi_eq_read: buffer of %zu bytes is too small for an event of %zu bytes\n", len,
             s.len);
    return -FI_ETOOSMALL;
  }
  if (event != nullptr) *event = s.event;
  if (s.len != 0) std::memcpy(buf, s.bytes, s.len);
  const auto n = static_cast<ssize_t>(s.len);
  if ((flags & FI_PEEK) == 0) ring_.Pop();
  return n;
}

ssize_t Eq::ReadErr(struct fi_eq_err_entry* buf, uint64_t flags) {
  if (buf == nullptr) {
    IWX_WARN(eq, "fi_eq_readerr: buf is NULL\n");
    return -FI_EINVAL;
  }
  if ((flags & ~static_cast<uint64_t>(FI_PEEK)) != 0) {
    IWX_WARN(eq, "fi_eq_readerr: flags %#lx are not supported (only FI_PEEK)\n",
             static_cast<unsigned long>(flags));
    return -FI_EBADFLAGS;
  }
  fabric_->Progress();
  std::lock_guard<std::mutex> lock(waiter_.mu);
  if (ring_.empty() || !ring_.front().error) return -FI_EAGAIN;
  void* user_err_data = buf->err_data;
  const size_t user_err_size = buf->err_data_size;
  const Slot& s = ring_.front();
  *buf = s.err;
  // fi_eq(3): with err_data_size 0 on input the provider's buffer is returned
  // (valid until the next fi_eq_readerr), else up to err_data_size bytes are
  // copied into the caller's buffer.
  if (s.len == 0) {
    buf->err_data = user_err_size != 0 ? user_err_data : nullptr;
    buf->err_data_size = 0;
  } else if (user_err_size != 0 && user_err_data != nullptr) {
    const size_t n = std::min(user_err_size, s.len);
    std::memcpy(user_err_data, s.bytes, n);
    buf->err_data = user_err_data;
    buf->err_data_size = n;
  } else {
    std::memcpy(last_err_data_, s.bytes, s.len);
    buf->err_data = last_err_data_;
    buf->err_data_size = s.len;
  }
  if ((flags & FI_PEEK) == 0) ring_.Pop();
  return sizeof(*buf);
}

ssize_t Eq::Write(uint32_t event, const void* buf, size_t len, uint64_t flags) {
  if (!writable_) {
    IWX_WARN(eq, "fi_eq_write: the EQ was opened without FI_WRITE (fi_eq(3))\n");
    return -FI_EINVAL;
  }
  if (flags != 0) {
    IWX_WARN(eq, "fi_eq_write: flags %#lx are not supported\n", static_cast<unsigned long>(flags));
    return -FI_EBADFLAGS;
  }
  if (len > kMaxEqEntrySize || (buf == nullptr && len != 0)) {
    IWX_WARN(eq, "fi_eq_write: event of %zu bytes (maximum %zu, buf %p)\n", len, kMaxEqEntrySize,
             buf);
    return -FI_EINVAL;
  }
  std::lock_guard<std::mutex> lock(waiter_.mu);
  if (!PostLocked(event, buf, len)) {
    IWX_WARN(eq, "fi_eq_write: the EQ is full (%zu events)\n", ring_.capacity());
    return -FI_EAGAIN;
  }
  return static_cast<ssize_t>(len);
}

int Eq::Control(int command, void* arg) {
  const int ret = waiter_.Control(command, arg, FI_LOG_EQ, "EQ");
  if (command == FI_GETWAIT && ret == 0) fabric_->StopParking("FI_GETWAIT on an EQ");
  return ret;
}

int Eq::TryWait() {
  fabric_->Progress();
  std::lock_guard<std::mutex> lock(waiter_.mu);
  if (!ring_.empty()) return -FI_EAGAIN;
  waiter_.Drain();
  return 0;
}

int Eq::Close() {
  if (const int refs = refs_.load(std::memory_order_acquire); refs != 0) {
    IWX_WARN(eq, "fi_close(eq %p): %d endpoint(s) still bound\n", static_cast<void*>(this), refs);
    return -FI_EBUSY;
  }
  Fabric* f = fabric_;
  IWX_INFO(eq, "eq %p closed\n", static_cast<void*>(this));
  delete this;
  f->Unref();
  return 0;
}

int EqOpen(struct fid_fabric* fabric, struct fi_eq_attr* attr, struct fid_eq** eq, void* context) {
  return Eq::Open(fabric, attr, eq, context);
}

}  // namespace iwarpx::ofi
