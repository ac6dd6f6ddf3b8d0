#include "ofi/poll.h"

#include <algorithm>
#include <mutex>
#include <new>
#include <vector>

#include <rdma/fi_errno.h>

#include "ofi/cntr.h"
#include "ofi/common.h"
#include "ofi/cq.h"
#include "ofi/domain.h"
#include "ofi/fabric.h"
#include "ofi/log.h"

namespace iwarpx::ofi {
namespace {

// One CQ or counter of the set; exactly one of the pointers is set.
struct Member {
  struct fid* fid;
  Cq* cq;
  Cntr* cntr;
  int adds;  // fi_poll_add calls not yet matched by fi_poll_del
};

class PollSet {
 public:
  explicit PollSet(Domain* domain) : domain_(domain) {}

  int Add(struct fid* fid, uint64_t flags);
  int Del(struct fid* fid, uint64_t flags);
  int Poll(void** context, int count);
  int Close();

  FidHandle<struct fid_poll, PollSet> handle_;

 private:
  // The member for `fid` checked against this domain, or a -FI_E* in ret.
  bool Resolve(const char* call, struct fid* fid, uint64_t flags, Member* m, int* ret);

  Domain* domain_;
  std::mutex mu_;
  std::vector<Member> members_;  // mu_
};

PollSet* Self(struct fid_poll* p) {
  return OwnerOf<PollSet>(p);
}

int PollClose(struct fid* fid) {
  return Self(reinterpret_cast<struct fid_poll*>(fid))->Close();
}
int PollPoll(struct fid_poll* pollset, void** context, int count) {
  return Self(pollset)->Poll(context, count);
}
int PollAdd(struct fid_poll* pollset, struct fid* event_fid, uint64_t flags) {
  return Self(pollset)->Add(event_fid, flags);
}
int PollDel(struct fid_poll* pollset, struct fid* event_fid, uint64_t flags) {
  return Self(pollset)->Del(event_fid, flags);
}

const struct fi_ops kPollFiOps = {
    .size = sizeof(struct fi_ops),
    .close = PollClose,
    .bind = fi_no_bind,
    .control = fi_no_control,
    .ops_open = fi_no_ops_open,
    .tostr = fi_no_tostr,
    .ops_set = fi_no_ops_set,
};

const struct fi_ops_poll kPollOps = {
    .size = sizeof(struct fi_ops_poll),
    .poll = PollPoll,
    .poll_add = PollAdd,
    .poll_del = PollDel,
};

bool PollSet::Resolve(const char* call, struct fid* fid, uint64_t flags, Member* m, int* ret) {
  if (flags != 0) {
    IWX_WARN(domain, "%s: flags %#lx are not supported (must be 0)\n", call,
             static_cast<unsigned long>(flags));
    *ret = -FI_EBADFLAGS;
    return false;
  }
  *m = {fid, Cq::From(fid), Cntr::From(fid), 1};
  if (m->cq == nullptr && m->cntr == nullptr) {
    IWX_WARN(domain, "%s: fid %p (class %d) is not an iwarpx CQ or counter\n", call,
             static_cast<void*>(fid), fid != nullptr ? static_cast<int>(fid->fclass) : -1);
    *ret = -FI_EINVAL;
    return false;
  }
  Domain* owner = m->cq != nullptr ? m->cq->domain() : m->cntr->domain();
  if (owner != domain_) {
    IWX_WARN(domain, "%s: fid %p was opened from another domain than the poll set\n", call,
             static_cast<void*>(fid));
    *ret = -FI_EINVAL;
    return false;
  }
  return true;
}

int PollSet::Add(struct fid* fid, uint64_t flags) {
  Member m{};
  int ret = 0;
  if (!Resolve("fi_poll_add", fid, flags, &m, &ret)) return ret;
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = std::find_if(members_.begin(), members_.end(),
                               [fid](const Member& x) { return x.fid == fid; });
  if (it != members_.end()) {
    ++it->adds;  // e.g. one CQ for transmit and receive, added for both
    return 0;
  }
  members_.push_back(m);
  if (m.cq != nullptr) {
    m.cq->Ref();
  } else {
    m.cntr->Ref();
  }
  return 0;
}

int PollSet::Del(struct fid* fid, uint64_t flags) {
  Member m{};
  int ret = 0;
  if (!Resolve("fi_poll_del", fid, flags, &m, &ret)) return ret;
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = std::find_if(members_.begin(), members_.end(),
                               [fid](const Member& x) { return x.fid == fid; });
  if (it == members_.end()) {
    IWX_WARN(domain, "fi_poll_del: fid %p is not in poll set %p\n", static_cast<void*>(fid),
             static_cast<void*>(this));
    return -FI_EINVAL;
  }
  if (--it->adds > 0) return 0;
  members_.erase(it);
  if (m.cq != nullptr) {
    m.cq->Unref();
  } else {
    m.cntr->Unref();
  }
  return 0;
}

int PollSet::Poll(void** context, int count) {
  if (count < 0 || (context == nullptr && count > 0)) {
    IWX_WARN(domain, "fi_poll: count %d must be >= 0 and context not NULL\n", count);
    return -FI_EINVAL;
  }
  domain_->fabric()->Progress();
  std::lock_guard<std::mutex> lock(mu_);
  int n = 0;
  for (const Member& m : members_) {
    if (n == count) break;
    const bool news = m.cq != nullptr ? m.cq->HasEntries() : m.cntr->TakeChange();
    if (news) context[n++] = m.fid->context;
  }
  return n;
}

int PollSet::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!members_.empty()) {
      IWX_WARN(domain, "fi_close(poll set %p): %zu CQ(s)/counter(s) still in it (fi_poll_del)\n",
               static_cast<void*>(this), members_.size());
      return -FI_EBUSY;
    }
  }
  Domain* d = domain_;
  IWX_INFO(domain, "poll set %p closed\n", static_cast<void*>(this));
  delete this;
  d->Unref();
  return 0;
}

}  // namespace

int PollOpen(struct fid_domain* domain, struct fi_poll_attr* attr, struct fid_poll** pollset) {
  Domain* d = Domain::From(domain != nullptr ? &domain->fid : nullptr);
  if (d == nullptr || attr == nullptr || pollset == nullptr) {
    IWX_WARN(domain, "fi_poll_open: domain must be iwarpx's, attr and pollset not NULL\n");
    return -FI_EINVAL;
  }
  if (attr->flags != 0) {
    IWX_WARN(domain, "fi_poll_open: flags %#lx are reserved and must be 0\n",
             static_cast<unsigned long>(attr->flags));
    return -FI_EBADFLAGS;
  }
  auto* p = new (std::nothrow) PollSet(d);
  if (p == nullptr) return -FI_ENOMEM;
  p->handle_.owner = p;
  p->handle_.fid.fid.fclass = FI_CLASS_POLL;
  p->handle_.fid.fid.context = nullptr;
  p->handle_.fid.fid.ops = const_cast<struct fi_ops*>(&kPollFiOps);
  p->handle_.fid.ops = const_cast<struct fi_ops_poll*>(&kPollOps);
  d->Ref();
  *pollset = &p->handle_.fid;
  IWX_INFO(domain, "poll set %p opened\n", static_cast<void*>(p));
  return 0;
}

}  // namespace iwarpx::ofi
