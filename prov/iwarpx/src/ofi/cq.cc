#include "ofi/cq.h"

#include <cstdio>
#include <cstring>
#include <new>

#include <rdma/fi_errno.h>

#include "ofi/domain.h"
#include "ofi/fabric.h"
#include "ofi/getinfo.h"
#include "ofi/log.h"

namespace iwarpx::ofi {
namespace {

Cq* Self(struct fid_cq* cq) {
  return OwnerOf<Cq>(cq);
}

int CqClose(struct fid* fid) {
  return Self(reinterpret_cast<struct fid_cq*>(fid))->Close();
}
int CqControl(struct fid* fid, int command, void* arg) {
  return Self(reinterpret_cast<struct fid_cq*>(fid))->Control(command, arg);
}

ssize_t CqRead(struct fid_cq* cq, void* buf, size_t count) {
  return Self(cq)->Read(buf, count, nullptr);
}
ssize_t CqReadFrom(struct fid_cq* cq, void* buf, size_t count, fi_addr_t* src_addr) {
  return Self(cq)->Read(buf, count, src_addr);
}
ssize_t CqReadErr(struct fid_cq* cq, struct fi_cq_err_entry* buf, uint64_t flags) {
  return Self(cq)->ReadErr(buf, flags);
}
ssize_t CqSRead(struct fid_cq* cq, void* buf, size_t count, const void* cond, int timeout) {
  return Self(cq)->SRead(buf, count, nullptr, cond, timeout);
}
ssize_t CqSReadFrom(struct fid_cq* cq, void* buf, size_t count, fi_addr_t* src_addr,
                    const void* cond, int timeout) {
  return Self(cq)->SRead(buf, count, src_addr, cond, timeout);
}
int CqSignal(struct fid_cq* cq) {
  return Self(cq)->Signal();
}

const char* CqStrError(struct fid_cq* /*cq*/, int prov_errno, const void* /*err_data*/, char* buf,
                       size_t len) {
  return ProvErrnoText(prov_errno, buf, len);
}

const struct fi_ops kCqFiOps = {
    .size = sizeof(struct fi_ops),
    .close = CqClose,
    .bind = fi_no_bind,
    .control = CqControl,
    .ops_open = fi_no_ops_open,
    .tostr = fi_no_tostr,
    .ops_set = fi_no_ops_set,
};

const struct fi_ops_cq kCqOps = {
    .size = sizeof(struct fi_ops_cq),
    .read = CqRead,
    .readfrom = CqReadFrom,
    .readerr = CqReadErr,
    .sread = CqSRead,
    .sreadfrom = CqSReadFrom,
    .signal = CqSignal,
    .strerror = CqStrError,
};

}  // namespace

int Cq::Open(struct fid_domain* domain, struct fi_cq_attr* attr, struct fid_cq** cq,
             void* context) {
  Domain* d = Domain::From(domain != nullptr ? &domain->fid : nullptr);
  if (d == nullptr || attr == nullptr || cq == nullptr) {
    IWX_WARN(cq, "fi_cq_open: domain must be iwarpx's, attr and cq not NULL\n");
    return -FI_EINVAL;
  }
  if (attr->flags != 0) {
    IWX_WARN(cq, "fi_cq_open: flags %#lx are not supported (no FI_AFFINITY)\n",
             static_cast<unsigned long>(attr->flags));
    return -FI_EBADFLAGS;
  }
  enum fi_cq_format format = attr->format;
  switch (format) {
    case FI_CQ_FORMAT_UNSPEC: format = FI_CQ_FORMAT_CONTEXT; break;
    case FI_CQ_FORMAT_CONTEXT:
    case FI_CQ_FORMAT_MSG:
    case FI_CQ_FORMAT_DATA:
    case FI_CQ_FORMAT_TAGGED: break;
    default:
      IWX_WARN(cq, "fi_cq_open: format %d is not supported (CONTEXT, MSG, DATA or TAGGED)\n",
               static_cast<int>(format));
      return -FI_ENOSYS;
  }
  if (attr->wait_cond != FI_CQ_COND_NONE && attr->wait_cond != FI_CQ_COND_THRESHOLD) {
    IWX_WARN(cq, "fi_cq_open: unknown wait_cond %d\n", static_cast<int>(attr->wait_cond));
    return -FI_EINVAL;
  }
  if (attr->size > kMaxCqSize) {
    IWX_WARN(cq, "fi_cq_open: size %zu exceeds the maximum %zu\n", attr->size, kMaxCqSize);
    return -FI_EINVAL;
  }
  auto* c = new (std::nothrow) Cq(d, format, attr->wait_cond);
  if (c == nullptr) return -FI_ENOMEM;
  if (const int ret = c->waiter_.Open(attr->wait_obj, d->fabric()->engine().poll_fd()); ret != 0) {
    IWX_WARN(cq, "fi_cq_open: wait object %d is not supported (NONE, UNSPEC or FD): %s\n",
             static_cast<int>(attr->wait_obj), fi_strerror(-ret));
    delete c;
    return ret;
  }
  if (!c->ring_.Init(attr->size != 0 ? attr->size : kDefaultCqSize)) {
    delete c;
    return -FI_ENOMEM;
  }
  c->handle_.owner = c;
  c->handle_.fid.fid.fclass = FI_CLASS_CQ;
  c->handle_.fid.fid.context = context;
  c->handle_.fid.fid.ops = const_cast<struct fi_ops*>(&kCqFiOps);
  c->handle_.fid.ops = const_cast<struct fi_ops_cq*>(&kCqOps);
  d->Ref();
  *cq = &c->handle_.fid;
  IWX_INFO(cq, "cq %p opened (format %d, %zu entries, wait fd %d)\n", static_cast<void*>(c),
           static_cast<int>(format), c->ring_.capacity(), c->waiter_.fd());
  return 0;
}

Cq* Cq::From(struct fid* fid) {
  if (!IsOurs(fid, FI_CLASS_CQ, &kCqFiOps)) return nullptr;
  return OwnerOf<Cq>(reinterpret_cast<struct fid_cq*>(fid));
}

bool Cq::Post(const struct fi_cq_data_entry& c, fi_addr_t src) {
  struct fi_cq_tagged_entry t = {};
  t.op_context = c.op_context;
  t.flags = c.flags;
  t.len = c.len;
  t.buf = c.buf;
  t.data = c.data;
  return Post(t, src);
}

bool Cq::Post(const struct fi_cq_tagged_entry& c, fi_addr_t src) {
  std::lock_guard<std::mutex> lock(waiter_.mu);
  Slot* s = ring_.Push();
  if (s == nullptr) return false;
  queued_.store(ring_.size(), std::memory_order_release);
  // Only these fields of a success slot are ever read (ReadLocked).
  s->entry.op_context = c.op_context;
  s->entry.flags = c.flags;
  s->entry.len = c.len;
  s->entry.buf = c.buf;
  s->entry.data = c.data;
  s->entry.tag = c.tag;
  s->src = src;
  s->error = false;
  waiter_.Signal();
  return true;
}

bool Cq::PostError(const struct fi_cq_err_entry& e) {
  std::lock_guard<std::mutex> lock(waiter_.mu);
  Slot* s = ring_.Push();
  if (s == nullptr) return false;
  queued_.store(ring_.size(), std::memory_order_release);
  s->entry = e;
  s->entry.err_data = nullptr;
  s->entry.err_data_size = 0;
  s->src = FI_ADDR_NOTAVAIL;
  s->error = true;
  waiter_.Signal();
  return true;
}

size_t Cq::EntrySize() const {
  switch (format_) {
    case FI_CQ_FORMAT_MSG: return sizeof(struct fi_cq_msg_entry);
    case FI_CQ_FORMAT_DATA: return sizeof(struct fi_cq_data_entry);
    case FI_CQ_FORMAT_TAGGED: return sizeof(struct fi_cq_tagged_entry);
    default: return sizeof(struct fi_cq_entry);
  }
}

ssize_t Cq::ReadLocked(void* buf, size_t count, fi_addr_t* src_addr) {
  if (ring_.empty()) return -FI_EAGAIN;
  if (ring_.front().error) return -FI_EAVAIL;
  auto* out = static_cast<uint8_t*>(buf);
  size_t n = 0;
  const size_t size = EntrySize();
  while (n < count && !ring_.empty() && !ring_.front().error) {
    const Slot& slot = ring_.front();
    const struct fi_cq_err_entry& e = slot.entry;
    // The four formats are prefixes of fi_cq_tagged_entry: each case copies
    // its own size (a constant, so no library memcpy per entry).
    const struct fi_cq_tagged_entry d = {
        .op_context = e.op_context,
        .flags = e.flags,
        .len = e.len,
        .buf = e.buf,
        .data = e.data,
        .tag = e.tag,
    };
    uint8_t* dst = out + n * size;
    switch (format_) {
      case FI_CQ_FORMAT_MSG: std::memcpy(dst, &d, sizeof(struct fi_cq_msg_entry)); break;
      case FI_CQ_FORMAT_DATA: std::memcpy(dst, &d, sizeof(struct fi_cq_data_entry)); break;
      case FI_CQ_FORMAT_TAGGED: std::memcpy(dst, &d, sizeof(struct fi_cq_tagged_entry)); break;
      default: std::memcpy(dst, &d, sizeof(struct fi_cq_entry)); break;
    }
    if (src_addr != nullptr) src_addr[n] = slot.src;
    ring_.Pop();
    ++n;
  }
  queued_.store(ring_.size(), std::memory_order_release);
  return static_cast<ssize_t>(n);
}

ssize_t Cq::Read(void* buf, size_t count, fi_addr_t* src_addr) {
  if (buf == nullptr && count != 0) {
    IWX_WARN(cq, "fi_cq_read: buf is NULL\n");
    return -FI_EINVAL;
  }
  domain_->fabric()->Progress();
  if (queued_.load(std::memory_order_acquire) == 0) return -FI_EAGAIN;
  std::lock_guard<std::mutex> lock(waiter_.mu);
  return ReadLocked(buf, count, src_addr);
}

ssize_t Cq::ReadErr(struct fi_cq_err_entry* buf, uint64_t flags) {
  if (buf == nullptr) {
    IWX_WARN(cq, "fi_cq_readerr: buf is NULL\n");
    return -FI_EINVAL;
  }
  if (flags != 0) {
    IWX_WARN(cq, "fi_cq_readerr: flags %#lx are not supported\n",
             static_cast<unsigned long>(flags));
    return -FI_EBADFLAGS;
  }
  std::lock_guard<std::mutex> lock(waiter_.mu);
  if (ring_.empty() || !ring_.front().error) return -FI_EAGAIN;
  const struct fi_cq_err_entry& e = ring_.front().entry;
  // fi_cq(3) since 1.5: err_data points at the caller's buffer when
  // err_data_size is non-zero; there is no error data yet either way.
  void* user_err_data = buf->err_data;
  const size_t user_err_size = buf->err_data_size;
  *buf = e;
  buf->err_data = user_err_size != 0 ? user_err_data : nullptr;
  buf->err_data_size = 0;
  ring_.Pop();
  queued_.store(ring_.size(), std::memory_order_release);
  return 1;
}

ssize_t Cq::SRead(void* buf, size_t count, fi_addr_t* src_addr, const void* cond, int timeout) {
  if (!waiter_.can_block()) {
    IWX_WARN(cq, "fi_cq_sread: the CQ was opened with FI_WAIT_NONE (fi_cq(3): not allowed)\n");
    return -FI_EINVAL;
  }
  if (buf == nullptr && count != 0) {
    IWX_WARN(cq, "fi_cq_sread: buf is NULL\n");
    return -FI_EINVAL;
  }
  size_t threshold = 1;
  if (wait_cond_ == FI_CQ_COND_THRESHOLD && cond != nullptr) {
    threshold = *static_cast<const size_t*>(cond);
    if (threshold == 0) threshold = 1;
    if (threshold > count) threshold = count;
  }
  // Manual progress: this thread drives the engine while it waits. An
  // fi_cq_signal made before or during the wait ends it once.
  bool interrupted = false;
  domain_->fabric()->ProgressUntil(timeout, waiter_.fd(), [&] {
    std::lock_guard<std::mutex> lock(waiter_.mu);
    const bool ready =
        ring_.size() >= threshold || (!ring_.empty() && ring_.front().error) || ring_.full();
    if (!ready && waiter_.TakeInterrupt()) interrupted = true;
    if (!ready && !interrupted) waiter_.Quiesce(ring_.empty());
    return ready || interrupted;
  });
  std::lock_guard<std::mutex> lock(waiter_.mu);
  return ReadLocked(buf, count, src_addr);
}

int Cq::Signal() {
  std::lock_guard<std::mutex> lock(waiter_.mu);
  waiter_.Interrupt();
  return 0;
}

int Cq::Control(int command, void* arg) {
  const int ret = waiter_.Control(command, arg, FI_LOG_CQ, "CQ");
  if (command == FI_GETWAIT && ret == 0) domain_->fabric()->StopParking("FI_GETWAIT on a CQ");
  return ret;
}

int Cq::TryWait() {
  domain_->fabric()->Progress();
  std::lock_guard<std::mutex> lock(waiter_.mu);
  if (!ring_.empty()) return -FI_EAGAIN;
  waiter_.Drain();
  return 0;
}

bool Cq::HasEntries() {
  std::lock_guard<std::mutex> lock(waiter_.mu);
  return !ring_.empty();
}

int Cq::Close() {
  if (const int refs = refs_.load(std::memory_order_acquire); refs != 0) {
    IWX_WARN(cq, "fi_close(cq %p): %d endpoint(s) or poll set(s) still hold it\n",
             static_cast<void*>(this), refs);
    return -FI_EBUSY;
  }
  Domain* d = domain_;
  IWX_INFO(cq, "cq %p closed\n", static_cast<void*>(this));
  delete this;
  d->Unref();
  return 0;
}

int CqOpen(struct fid_domain* domain, struct fi_cq_attr* attr, struct fid_cq** cq, void* context) {
  return Cq::Open(domain, attr, cq, context);
}

}  // namespace iwarpx::ofi
