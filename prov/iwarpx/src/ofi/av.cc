#include "ofi/av.h"

#include <netinet/in.h>

#include <cstdio>
#include <cstring>
#include <new>

#include <rdma/fi_errno.h>

#include "base/hash.h"
#include "ofi/domain.h"
#include "ofi/log.h"
#include "ofi/rx_addr.h"

namespace iwarpx::ofi {
namespace {

Av* Self(struct fid_av* av) {
  return OwnerOf<Av>(av);
}

int AvClose(struct fid* fid) {
  return Av::From(fid)->Close();
}

int AvBind(struct fid* /*fid*/, struct fid* /*bfid*/, uint64_t /*flags*/) {
  IWX_WARN(av, "fi_av_bind: asynchronous (FI_EVENT) address vectors are not supported\n");
  return -FI_ENOSYS;
}

int AvInsert(struct fid_av* av, const void* addr, size_t count, fi_addr_t* fi_addr, uint64_t flags,
             void* context) {
  return Self(av)->Insert(addr, count, fi_addr, flags, context);
}

int AvInsertSvc(struct fid_av* av, const char* node, const char* service, fi_addr_t* fi_addr,
                uint64_t flags, void* context) {
  return Self(av)->InsertSvc(node, service, fi_addr, flags, context);
}

int AvInsertSym(struct fid_av* /*av*/, const char* /*node*/, size_t /*nodecnt*/,
                const char* /*service*/, size_t /*svccnt*/, fi_addr_t* /*fi_addr*/,
                uint64_t /*flags*/, void* /*context*/) {
  IWX_WARN(av, "fi_av_insertsym: not supported; insert addresses or use fi_av_insertsvc\n");
  return -FI_ENOSYS;
}

int AvRemove(struct fid_av* av, fi_addr_t* fi_addr, size_t count, uint64_t flags) {
  return Self(av)->Remove(fi_addr, count, flags);
}

int AvLookup(struct fid_av* av, fi_addr_t fi_addr, void* addr, size_t* addrlen) {
  return Self(av)->Lookup(fi_addr, addr, addrlen);
}

const char* AvStraddrOp(struct fid_av* /*av*/, const void* addr, char* buf, size_t* len) {
  return AvStraddr(addr, buf, len);
}

const struct fi_ops kAvFiOps = {
    .size = sizeof(struct fi_ops),
    .close = AvClose,
    .bind = AvBind,
    .control = fi_no_control,
    .ops_open = fi_no_ops_open,
    .tostr = fi_no_tostr,
    .ops_set = fi_no_ops_set,
};

const struct fi_ops_av kAvOps = {
    .size = sizeof(struct fi_ops_av),
    .insert = AvInsert,
    .insertsvc = AvInsertSvc,
    .insertsym = AvInsertSym,
    .remove = AvRemove,
    .lookup = AvLookup,
    .straddr = AvStraddrOp,
    .av_set = nullptr,
};

// The size of the sockaddr at p (its family's struct), or 0 if it is neither
// AF_INET nor AF_INET6.
size_t SockaddrSize(const void* p) {
  sa_family_t family = 0;
  std::memcpy(&family, static_cast<const uint8_t*>(p) + offsetof(sockaddr, sa_family),
              sizeof(family));
  if (family == AF_INET) return sizeof(sockaddr_in);
  if (family == AF_INET6) return sizeof(sockaddr_in6);
  return 0;
}

}  // namespace

size_t Av::KeyHash::operator()(const Key& k) const {
  uint64_t w[2] = {0, 0};
  std::memcpy(w, k.bytes, sizeof(w));
  const uint64_t head =
      (uint64_t{static_cast<uint16_t>(k.family)} << 48) | (uint64_t{k.port} << 32) | k.scope;
  return static_cast<size_t>(HashCombine(HashCombine(HashMix(head), w[0]), w[1]));
}

Av::Key Av::KeyOf(const transport::SockAddr& a) {
  Key k{};
  k.family = a.family();
  k.port = a.port();
  if (a.is_ipv6()) {
    const auto* s6 = reinterpret_cast<const sockaddr_in6*>(a.sa());
    std::memcpy(k.bytes, &s6->sin6_addr, sizeof(s6->sin6_addr));
    k.scope = s6->sin6_scope_id;
  } else {
    const auto* s4 = reinterpret_cast<const sockaddr_in*>(a.sa());
    std::memcpy(k.bytes, &s4->sin_addr, sizeof(s4->sin_addr));
  }
  return k;
}

int Av::Open(struct fid_domain* domain, struct fi_av_attr* attr, struct fid_av** av,
             void* context) {
  Domain* d = Domain::From(domain != nullptr ? &domain->fid : nullptr);
  if (d == nullptr || attr == nullptr || av == nullptr) {
    IWX_WARN(av, "fi_av_open: domain must be iwarpx's, attr and av not NULL\n");
    return -FI_EINVAL;
  }
  if (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_TABLE && attr->type != FI_AV_MAP) {
    IWX_WARN(av, "fi_av_open: unknown type %d\n", static_cast<int>(attr->type));
    return -FI_EINVAL;
  }
  if ((attr->flags & FI_EVENT) != 0 || attr->name != nullptr) {
    IWX_WARN(av, "fi_av_open: FI_EVENT and named (shared) address vectors are not supported\n");
    return -FI_ENOSYS;
  }
  if (const char* why = RxCtxBitsProblem(attr->rx_ctx_bits, attr->count); why != nullptr) {
    IWX_WARN(av, "fi_av_open: rx_ctx_bits %d with count %zu refused: %s\n", attr->rx_ctx_bits,
             attr->count, why);
    return -FI_EINVAL;
  }
  const enum fi_av_type type = attr->type == FI_AV_UNSPEC ? FI_AV_TABLE : attr->type;
  auto* a = new (std::nothrow) Av(d, type, attr->rx_ctx_bits);
  if (a == nullptr) return -FI_ENOMEM;
  a->entries_.reserve(attr->count);
  a->handle_.owner = a;
  a->handle_.fid.fid.fclass = FI_CLASS_AV;
  a->handle_.fid.fid.context = context;
  a->handle_.fid.fid.ops = const_cast<struct fi_ops*>(&kAvFiOps);
  a->handle_.fid.ops = const_cast<struct fi_ops_av*>(&kAvOps);
  attr->type = type;
  d->Ref();
  *av = &a->handle_.fid;
  IWX_INFO(av, "av %p opened (%s, rx_ctx_bits %d)\n", static_cast<void*>(a),
           type == FI_AV_MAP ? "FI_AV_MAP" : "FI_AV_TABLE", attr->rx_ctx_bits);
  return 0;
}

Av* Av::From(struct fid* fid) {
  if (!IsOurs(fid, FI_CLASS_AV, &kAvFiOps)) return nullptr;
  return OwnerOf<Av>(reinterpret_cast<struct fid_av*>(fid));
}

fi_addr_t Av::InsertOne(const transport::SockAddr& a) {
  const Key k = KeyOf(a);
  if (auto it = index_.find(k); it != index_.end()) return it->second;
  const auto fa = static_cast<fi_addr_t>(entries_.size());
  entries_.emplace_back(a);
  index_.emplace(k, fa);
  last_find_.reset();
  generation_.fetch_add(1, std::memory_order_release);
  return fa;
}

int Av::Insert(const void* addr, size_t count, fi_addr_t* fi_addr, uint64_t flags, void* context) {
  if ((flags & ~FI_SYNC_ERR) != 0) {
    IWX_WARN(av, "fi_av_insert: flags %#lx are not supported\n",
             static_cast<unsigned long>(flags & ~FI_SYNC_ERR));
    return -FI_EBADFLAGS;
  }
  if (addr == nullptr && count != 0) {
    IWX_WARN(av, "fi_av_insert: addr is NULL\n");
    return -FI_EINVAL;
  }
  int* errors = (flags & FI_SYNC_ERR) != 0 ? static_cast<int*>(context) : nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  const auto* p = static_cast<const uint8_t*>(addr);
  int inserted = 0;
  for (size_t i = 0; i < count; ++i) {
    const size_t size = SockaddrSize(p);
    std::optional<transport::SockAddr> a;
    if (size != 0)
      a = transport::SockAddr::FromRaw(reinterpret_cast<const sockaddr*>(p),
                                       static_cast<socklen_t>(size));
    if (!a) {
      IWX_WARN(av, "fi_av_insert: entry %zu is not a sockaddr_in/sockaddr_in6\n", i);
      if (fi_addr != nullptr) fi_addr[i] = FI_ADDR_NOTAVAIL;
      if (errors != nullptr) errors[i] = -FI_EINVAL;
      // The size of an unknown entry is unknown: the rest cannot be located.
      for (size_t j = i + 1; j < count; ++j) {
        if (fi_addr != nullptr) fi_addr[j] = FI_ADDR_NOTAVAIL;
        if (errors != nullptr) errors[j] = -FI_EINVAL;
      }
      break;
    }
    const fi_addr_t fa = InsertOne(*a);
    if (fi_addr != nullptr) fi_addr[i] = fa;
    if (errors != nullptr) errors[i] = 0;
    ++inserted;
    p += size;
  }
  return inserted;
}

int Av::InsertSvc(const char* node, const char* service, fi_addr_t* fi_addr, uint64_t flags,
                  void* context) {
  if (node == nullptr || service == nullptr) {
    IWX_WARN(av, "fi_av_insertsvc: node and service are required\n");
    return -FI_EINVAL;
  }
  auto a = transport::SockAddr::Resolve(node, service);
  if (!a.ok()) {
    IWX_WARN(av, "fi_av_insertsvc: cannot resolve %s:%s (%s)\n", node, service,
             transport::AddrErrorName(a.error()));
    if (fi_addr != nullptr) *fi_addr = FI_ADDR_NOTAVAIL;
    if ((flags & FI_SYNC_ERR) != 0 && context != nullptr) *static_cast<int*>(context) = -FI_EINVAL;
    return 0;
  }
  return Insert(a->sa(), 1, fi_addr, flags, context);
}

int Av::Remove(fi_addr_t* fi_addr, size_t count, uint64_t flags) {
  if (flags != 0) {
    IWX_WARN(av, "fi_av_remove: flags must be 0\n");
    return -FI_EBADFLAGS;
  }
  if (fi_addr == nullptr && count != 0) return -FI_EINVAL;
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < count; ++i) {
    if (fi_addr[i] >= entries_.size() || !entries_[fi_addr[i]]) {
      IWX_WARN(av, "fi_av_remove: fi_addr %lu is not in the address vector\n",
               static_cast<unsigned long>(fi_addr[i]));
      return -FI_EINVAL;
    }
  }
  for (size_t i = 0; i < count; ++i) {
    index_.erase(KeyOf(*entries_[fi_addr[i]]));
    entries_[fi_addr[i]].reset();
  }
  last_find_.reset();
  generation_.fetch_add(1, std::memory_order_release);
  return 0;
}

int Av::Lookup(fi_addr_t fi_addr, void* addr, size_t* addrlen) {
  if (addrlen == nullptr) return -FI_EINVAL;
  const std::optional<transport::SockAddr> a = Get(fi_addr);
  if (!a) {
    IWX_WARN(av, "fi_av_lookup: fi_addr %lu is not in the address vector\n",
             static_cast<unsigned long>(fi_addr));
    return -FI_EINVAL;
  }
  const size_t n = a->length();
  if (addr != nullptr) std::memcpy(addr, a->sa(), std::min(n, *addrlen));
  *addrlen = n;
  return 0;
}

std::optional<transport::SockAddr> Av::Get(fi_addr_t fi_addr) {
  std::lock_guard<std::mutex> lock(mu_);
  if (fi_addr >= entries_.size()) return std::nullopt;
  return entries_[fi_addr];
}

std::optional<Av::Target> Av::Resolve(fi_addr_t fi_addr) {
  const RxAddr r = SplitRxAddr(fi_addr, rx_ctx_bits_);
  std::lock_guard<std::mutex> lock(mu_);
  if (r.entry >= entries_.size() || !entries_[r.entry]) return std::nullopt;
  return Target{*entries_[r.entry], r.rx_index};
}

fi_addr_t Av::Find(const transport::SockAddr& addr) {
  std::lock_guard<std::mutex> lock(mu_);
  if (last_find_ && last_find_->addr == addr) return last_find_->result;
  const fi_addr_t result = FindLocked(addr);
  last_find_ = LastFind{addr, result};
  return result;
}

fi_addr_t Av::FindLocked(const transport::SockAddr& addr) const {
  auto it = index_.find(KeyOf(addr));
  if (it == index_.end() && addr.is_loopback()) {
    // A peer on this host bound to the wildcard address names itself 0.0.0.0
    // (or ::) with fi_getname, but its datagrams come from the loopback
    // address: the wildcard entry with the same port is that peer.
    transport::SockAddr any = addr.is_ipv6() ? transport::SockAddr::Any6(addr.port())
                                             : transport::SockAddr::Any4(addr.port());
    it = index_.find(KeyOf(any));
  }
  return it == index_.end() ? FI_ADDR_NOTAVAIL : it->second;
}

int Av::Close() {
  if (const int refs = refs_.load(std::memory_order_acquire); refs != 0) {
    IWX_WARN(av, "fi_close(av %p): %d endpoint(s) still bound\n", static_cast<void*>(this), refs);
    return -FI_EBUSY;
  }
  Domain* d = domain_;
  IWX_INFO(av, "av %p closed\n", static_cast<void*>(this));
  delete this;
  d->Unref();
  return 0;
}

int AvOpen(struct fid_domain* domain, struct fi_av_attr* attr, struct fid_av** av, void* context) {
  return Av::Open(domain, attr, av, context);
}

const char* AvStraddr(const void* addr, char* buf, size_t* len) {
  if (addr == nullptr || len == nullptr) return nullptr;
  const size_t size = SockaddrSize(addr);
  std::optional<transport::SockAddr> a;
  if (size != 0) {
    a = transport::SockAddr::FromRaw(static_cast<const sockaddr*>(addr),
                                     static_cast<socklen_t>(size));
  }
  char text[96];
  int n = 0;
  if (a) {
    n = std::snprintf(text, sizeof(text), "fi_sockaddr_in%s://%s", a->is_ipv6() ? "6" : "",
                      a->ToString().c_str());
  } else {
    n = std::snprintf(text, sizeof(text), "fi_addr_unspec://");
  }
  if (buf != nullptr && *len > 0) {
    const size_t copy = std::min(static_cast<size_t>(n), *len - 1);
    std::memcpy(buf, text, copy);
    buf[copy] = '\0';
  }
  *len = static_cast<size_t>(n) + 1;
  return buf;
}

}  // namespace iwarpx::ofi
