#include "ofi/cntr.h"

#include <new>

#include <rdma/fi_errno.h>

#include "ofi/domain.h"
#include "ofi/fabric.h"
#include "ofi/log.h"

namespace iwarpx::ofi {
namespace {

Cntr* Self(struct fid_cntr* c) {
  return OwnerOf<Cntr>(c);
}

int CntrClose(struct fid* fid) {
  return Self(reinterpret_cast<struct fid_cntr*>(fid))->Close();
}
int CntrControl(struct fid* fid, int command, void* arg) {
  return Self(reinterpret_cast<struct fid_cntr*>(fid))->Control(command, arg);
}
uint64_t CntrRead(struct fid_cntr* c) {
  return Self(c)->Read();
}
uint64_t CntrReadErr(struct fid_cntr* c) {
  return Self(c)->ReadErr();
}
int CntrAdd(struct fid_cntr* c, uint64_t v) {
  return Self(c)->Add(v);
}
int CntrSet(struct fid_cntr* c, uint64_t v) {
  return Self(c)->Set(v);
}
int CntrAddErr(struct fid_cntr* c, uint64_t v) {
  return Self(c)->AddErr(v);
}
int CntrSetErr(struct fid_cntr* c, uint64_t v) {
  return Self(c)->SetErr(v);
}
int CntrWait(struct fid_cntr* c, uint64_t threshold, int timeout) {
  return Self(c)->Wait(threshold, timeout);
}

const struct fi_ops kCntrFiOps = {
    .size = sizeof(struct fi_ops),
    .close = CntrClose,
    .bind = fi_no_bind,
    .control = CntrControl,
    .ops_open = fi_no_ops_open,
    .tostr = fi_no_tostr,
    .ops_set = fi_no_ops_set,
};

const struct fi_ops_cntr kCntrOps = {
    .size = sizeof(struct fi_ops_cntr),
    .read = CntrRead,
    .readerr = CntrReadErr,
    .add = CntrAdd,
    .set = CntrSet,
    .wait = CntrWait,
    .adderr = CntrAddErr,
    .seterr = CntrSetErr,
};

}  // namespace

int Cntr::Open(struct fid_domain* domain, struct fi_cntr_attr* attr, struct fid_cntr** cntr,
               void* context) {
  Domain* d = Domain::From(domain != nullptr ? &domain->fid : nullptr);
  if (d == nullptr || attr == nullptr || cntr == nullptr) {
    IWX_WARN(cntr, "fi_cntr_open: domain must be iwarpx's, attr and cntr not NULL\n");
    return -FI_EINVAL;
  }
  if (attr->events != FI_CNTR_EVENTS_COMP) {
    IWX_WARN(cntr, "fi_cntr_open: events %d are not supported (FI_CNTR_EVENTS_COMP)\n",
             static_cast<int>(attr->events));
    return -FI_ENOSYS;
  }
  if (attr->flags != 0) {
    IWX_WARN(cntr, "fi_cntr_open: flags %#lx are not supported\n",
             static_cast<unsigned long>(attr->flags));
    return -FI_EBADFLAGS;
  }
  auto* c = new (std::nothrow) Cntr(d);
  if (c == nullptr) return -FI_ENOMEM;
  if (const int ret = c->waiter_.Open(attr->wait_obj, d->fabric()->engine().poll_fd()); ret != 0) {
    IWX_WARN(cntr, "fi_cntr_open: wait object %d is not supported (NONE, UNSPEC or FD): %s\n",
             static_cast<int>(attr->wait_obj), fi_strerror(-ret));
    delete c;
    return ret;
  }
  c->handle_.owner = c;
  c->handle_.fid.fid.fclass = FI_CLASS_CNTR;
  c->handle_.fid.fid.context = context;
  c->handle_.fid.fid.ops = const_cast<struct fi_ops*>(&kCntrFiOps);
  c->handle_.fid.ops = const_cast<struct fi_ops_cntr*>(&kCntrOps);
  d->Ref();
  *cntr = &c->handle_.fid;
  IWX_INFO(cntr, "cntr %p opened\n", static_cast<void*>(c));
  return 0;
}

Cntr* Cntr::From(struct fid* fid) {
  if (!IsOurs(fid, FI_CLASS_CNTR, &kCntrFiOps)) return nullptr;
  return OwnerOf<Cntr>(reinterpret_cast<struct fid_cntr*>(fid));
}

uint64_t Cntr::Read() {
  domain_->fabric()->Progress();
  std::lock_guard<std::mutex> lock(waiter_.mu);
  return value_;
}

uint64_t Cntr::ReadErr() {
  domain_->fabric()->Progress();
  std::lock_guard<std::mutex> lock(waiter_.mu);
  return errors_;
}

void Cntr::Count(uint64_t value, uint64_t errors) {
  std::lock_guard<std::mutex> lock(waiter_.mu);
  value_ += value;
  errors_ += errors;
  waiter_.Signal();
}

int Cntr::Add(uint64_t value) {
  std::lock_guard<std::mutex> lock(waiter_.mu);
  value_ += value;
  polled_value_ = value_;
  polled_errors_ = errors_;
  waiter_.Signal();
  return 0;
}

int Cntr::Set(uint64_t value) {
  std::lock_guard<std::mutex> lock(waiter_.mu);
  value_ = value;
  polled_value_ = value_;
  polled_errors_ = errors_;
  waiter_.Signal();
  return 0;
}

int Cntr::AddErr(uint64_t value) {
  std::lock_guard<std::mutex> lock(waiter_.mu);
  errors_ += value;
  waiter_.Signal();
  return 0;
}

int Cntr::SetErr(uint64_t value) {
  std::lock_guard<std::mutex> lock(waiter_.mu);
  errors_ = value;
  waiter_.Signal();
  return 0;
}

int Cntr::Wait(uint64_t threshold, int timeout) {
  if (!waiter_.can_block()) {
    IWX_WARN(cntr, "fi_cntr_wait: the counter was opened with FI_WAIT_NONE\n");
    return -FI_EINVAL;
  }
  uint64_t errors_at_start = 0;
  {
    std::lock_guard<std::mutex> lock(waiter_.mu);
    errors_at_start = errors_;
  }
  domain_->fabric()->ProgressUntil(timeout, waiter_.fd(), [&] {
    std::lock_guard<std::mutex> lock(waiter_.mu);
    if (value_ >= threshold || errors_ != errors_at_start) return true;
    waiter_.Quiesce(false);
    return false;
  });
  std::lock_guard<std::mutex> lock(waiter_.mu);
  if (value_ >= threshold) return 0;
  if (errors_ != errors_at_start) return -FI_EAVAIL;
  return -FI_ETIMEDOUT;
}

int Cntr::Control(int command, void* arg) {
  const int ret = waiter_.Control(command, arg, FI_LOG_CNTR, "counter");
  if (command == FI_GETWAIT && ret == 0) {
    domain_->fabric()->StopParking("FI_GETWAIT on a counter");
  }
  return ret;
}

// A counter has no "empty" state; what the application waits for is a change,
// so fi_trywait reports -FI_EAGAIN when the counter changed since the last
// fi_trywait (the application reads it again), else 0.
int Cntr::TryWait() {
  domain_->fabric()->Progress();
  std::lock_guard<std::mutex> lock(waiter_.mu);
  return waiter_.Drain() ? -FI_EAGAIN : 0;
}

bool Cntr::TakeChange() {
  std::lock_guard<std::mutex> lock(waiter_.mu);
  if (value_ == polled_value_ && errors_ == polled_errors_) return false;
  polled_value_ = value_;
  polled_errors_ = errors_;
  return true;
}

int Cntr::Close() {
  if (const int refs = refs_.load(std::memory_order_acquire); refs != 0) {
    IWX_WARN(cntr, "fi_close(cntr %p): %d endpoint(s) or poll set(s) still hold it\n",
             static_cast<void*>(this), refs);
    return -FI_EBUSY;
  }
  Domain* d = domain_;
  IWX_INFO(cntr, "cntr %p closed\n", static_cast<void*>(this));
  delete this;
  d->Unref();
  return 0;
}

int CntrOpen(struct fid_domain* domain, struct fi_cntr_attr* attr, struct fid_cntr** cntr,
             void* context) {
  return Cntr::Open(domain, attr, cntr, context);
}

}  // namespace iwarpx::ofi
