#include "ofi/mr.h"

#include <new>

#include <rdma/fi_errno.h>

#include "mem/stag_table.h"
#include "ofi/domain.h"
#include "ofi/log.h"

namespace iwarpx::ofi {
namespace {

constexpr uint64_t kKnownAccess =
    FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;

int MrClose(struct fid* fid) {
  return OwnerOf<Mr>(reinterpret_cast<struct fid_mr*>(fid))->Close();
}

const struct fi_ops kMrFiOps = {
    .size = sizeof(struct fi_ops),
    .close = MrClose,
    .bind = fi_no_bind,
    .control = fi_no_control,
    .ops_open = fi_no_ops_open,
    .tostr = fi_no_tostr,
    .ops_set = fi_no_ops_set,
};

int Reg(struct fid* fid, const void* buf, size_t len, uint64_t access, uint64_t offset,
        uint64_t requested_key, uint64_t flags, struct fid_mr** mr, void* context) {
  struct iovec iov = {.iov_base = const_cast<void*>(buf), .iov_len = len};
  struct fi_mr_attr attr = {};
  attr.mr_iov = &iov;
  attr.iov_count = 1;
  attr.access = access;
  attr.offset = offset;
  attr.requested_key = requested_key;
  attr.context = context;
  return Mr::Register(fid, attr, flags, mr);
}

int RegV(struct fid* fid, const struct iovec* iov, size_t count, uint64_t access, uint64_t offset,
         uint64_t requested_key, uint64_t flags, struct fid_mr** mr, void* context) {
  struct fi_mr_attr attr = {};
  attr.mr_iov = iov;
  attr.iov_count = count;
  attr.access = access;
  attr.offset = offset;
  attr.requested_key = requested_key;
  attr.context = context;
  return Mr::Register(fid, attr, flags, mr);
}

int RegAttr(struct fid* fid, const struct fi_mr_attr* attr, uint64_t flags, struct fid_mr** mr) {
  if (attr == nullptr) {
    IWX_WARN(mr, "fi_mr_regattr: attr is NULL\n");
    return -FI_EINVAL;
  }
  return Mr::Register(fid, *attr, flags, mr);
}

const struct fi_ops_mr kMrOps = {
    .size = sizeof(struct fi_ops_mr),
    .reg = Reg,
    .regv = RegV,
    .regattr = RegAttr,
};

}  // namespace

const struct fi_ops_mr& MrOps() {
  return kMrOps;
}

uint32_t Mr::ToMemAccess(uint64_t fi_access) {
  uint32_t a = 0;
  if ((fi_access & (FI_SEND | FI_WRITE)) != 0) a |= mem::kLocalRead;
  if ((fi_access & (FI_RECV | FI_READ)) != 0) a |= mem::kLocalWrite;
  if ((fi_access & FI_REMOTE_READ) != 0) a |= mem::kRemoteRead;
  if ((fi_access & FI_REMOTE_WRITE) != 0) a |= mem::kRemoteWrite;
  if ((fi_access & (FI_REMOTE_READ | FI_REMOTE_WRITE)) == (FI_REMOTE_READ | FI_REMOTE_WRITE)) {
    a |= mem::kRemoteAtomic;
  }
  return a;
}

int Mr::Register(struct fid* fid, const struct fi_mr_attr& attr, uint64_t flags,
                 struct fid_mr** mr) {
  Domain* d = Domain::From(fid);
  if (d == nullptr || mr == nullptr) {
    IWX_WARN(mr, "fi_mr_reg: fid must be an iwarpx domain and mr not NULL\n");
    return -FI_EINVAL;
  }
  if (flags != 0) {
    IWX_WARN(mr, "fi_mr_reg: flags %#lx are not supported\n", static_cast<unsigned long>(flags));
    return -FI_EBADFLAGS;
  }
  if (attr.iov_count != 1 || attr.mr_iov == nullptr) {
    IWX_WARN(mr,
             "fi_mr_regv: %zu iovecs; iwarpx registers exactly one per region (mr_iov_limit 1)\n",
             attr.iov_count);
    return -FI_EINVAL;
  }
  if ((attr.access & ~kKnownAccess) != 0) {
    IWX_WARN(mr, "fi_mr_reg: unsupported access bits %#lx\n",
             static_cast<unsigned long>(attr.access & ~kKnownAccess));
    return -FI_EINVAL;
  }
  if (attr.offset != 0) {
    IWX_WARN(mr, "fi_mr_reg: offset must be 0 (fi_mr(3)), got %#lx\n",
             static_cast<unsigned long>(attr.offset));
    return -FI_EINVAL;
  }
  if (attr.iface != FI_HMEM_SYSTEM || attr.auth_key_size != 0) {
    IWX_WARN(mr, "fi_mr_regattr: only host memory without auth keys can be registered\n");
    return -FI_ENOSYS;
  }
  const struct iovec& iov = attr.mr_iov[0];
  auto* host = static_cast<uint8_t*>(iov.iov_base);
  mem::RegionSpec spec;
  spec.host = host;
  spec.length = iov.iov_len;
  spec.base_to = (d->mr_mode() & FI_MR_VIRT_ADDR) != 0 ? reinterpret_cast<uintptr_t>(host) : 0;
  spec.access = ToMemAccess(attr.access);
  spec.pd = d->pd();

  const bool prov_key = (d->mr_mode() & FI_MR_PROV_KEY) != 0;
  if (!prov_key && (attr.requested_key == 0 || attr.requested_key > UINT32_MAX)) {
    IWX_WARN(mr, "fi_mr_reg: requested_key %#lx is not a non-zero 32-bit STag\n",
             static_cast<unsigned long>(attr.requested_key));
    return -FI_EKEYREJECTED;
  }
  auto* m = new (std::nothrow) Mr(d, 0, spec.access);
  if (m == nullptr) return -FI_ENOMEM;
  m->host_ = host;
  m->base_to_ = spec.base_to;
  {
    std::lock_guard<std::mutex> lock(d->table_mu());
    auto r = prov_key
                 ? d->table().Register(spec)
                 : d->table().RegisterWithStag(static_cast<uint32_t>(attr.requested_key), spec);
    if (!r.ok()) {
      delete m;
      const int ret = ToFiErr(r.error());
      IWX_WARN(mr, "fi_mr_reg: registration of %zu bytes failed: %s\n", iov.iov_len,
               fi_strerror(-ret));
      return ret;
    }
    m->stag_ = r.value();
  }
  d->Ref();
  m->handle_.owner = m;
  m->handle_.fid.fid.fclass = FI_CLASS_MR;
  m->handle_.fid.fid.context = attr.context;
  m->handle_.fid.fid.ops = const_cast<struct fi_ops*>(&kMrFiOps);
  m->handle_.fid.mem_desc = m;
  m->handle_.fid.key = m->stag_;
  *mr = &m->handle_.fid;
  IWX_DBG(mr, "mr %p: STag %#x, %zu bytes, access %#x\n", static_cast<void*>(m), m->stag_,
          iov.iov_len, m->access_);
  return 0;
}

Mr* Mr::FromDesc(void* desc) {
  if (desc == nullptr) return nullptr;
  auto* m = static_cast<Mr*>(desc);
  return m->handle_.fid.fid.fclass == FI_CLASS_MR && m->handle_.fid.fid.ops == &kMrFiOps ? m
                                                                                         : nullptr;
}

int Mr::Close() {
  {
    std::lock_guard<std::mutex> lock(domain_->table_mu());
    [[maybe_unused]] const bool was_live = domain_->table().Deregister(stag_);
  }
  domain_->Unref();
  delete this;
  return 0;
}

}  // namespace iwarpx::ofi
