#include "ofi/domain.h"

#include <cstring>
#include <mutex>
#include <new>

#include <rdma/fi_atomic.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "base/random.h"
#include "ofi/av.h"
#include "ofi/cntr.h"
#include "ofi/cq.h"
#include "ofi/dgram_ep.h"
#include "ofi/dgram_sep.h"
#include "ofi/ep.h"
#include "ofi/ext_sctp.h"
#include "ofi/ext_stats.h"
#include "ofi/fabric.h"
#include "ofi/getinfo.h"
#include "ofi/log.h"
#include "ofi/mr.h"
#include "ofi/poll.h"
#include "ofi/prov.h"
#include "ofi/rdm_ep.h"

namespace iwarpx::ofi {
namespace {

std::atomic<uint32_t> g_next_pd{1};

int DomainClose(struct fid* fid) {
  return Domain::From(fid)->Close();
}

int OpenByType(struct fid_domain* domain, struct fi_info* info, struct fid_ep** ep, void* context) {
  if (info != nullptr && info->ep_attr != nullptr && info->ep_attr->type == FI_EP_RDM) {
    return RdmEndpoint::Open(domain, info, ep, context);
  }
  if (info != nullptr && info->ep_attr != nullptr && info->ep_attr->type == FI_EP_DGRAM) {
    return DgramEndpoint::Open(domain, info, ep, context);
  }
  return EndpointOpen(domain, info, ep, context);
}

int Endpoint(struct fid_domain* domain, struct fi_info* info, struct fid_ep** ep, void* context) {
  return OpenByType(domain, info, ep, context);
}

int Endpoint2(struct fid_domain* domain, struct fi_info* info, struct fid_ep** ep, uint64_t flags,
              void* context) {
  if (flags != 0) {
    IWX_WARN(ep_ctrl, "fi_endpoint2: flags %#lx are not supported\n",
             static_cast<unsigned long>(flags));
    return -FI_EBADFLAGS;
  }
  return OpenByType(domain, info, ep, context);
}

int ScalableEp(struct fid_domain* domain, struct fi_info* info, struct fid_ep** sep,
               void* context) {
  return DgramSep::Open(domain, info, sep, context);
}

int StxCtx(struct fid_domain* /*domain*/, struct fi_tx_attr* /*attr*/, struct fid_stx** /*stx*/,
           void* /*context*/) {
  IWX_WARN(domain, "fi_stx_context: shared transmit contexts are not supported\n");
  return -FI_ENOSYS;
}

int SrxCtx(struct fid_domain* /*domain*/, struct fi_rx_attr* /*attr*/, struct fid_ep** /*rx_ep*/,
           void* /*context*/) {
  IWX_WARN(domain, "fi_srx_context: shared receive contexts are not supported\n");
  return -FI_ENOSYS;
}

int QueryCollective(struct fid_domain* /*domain*/, enum fi_collective_op /*coll*/,
                    struct fi_collective_attr* /*attr*/, uint64_t /*flags*/) {
  IWX_WARN(domain, "fi_query_collective: collectives are not supported\n");
  return -FI_ENOSYS;
}

int DomainOpsOpen(struct fid* /*fid*/, const char* name, uint64_t flags, void** ops,
                  void* /*context*/) {
  if (IsSctpOpsName(name)) return OpenSctpOps(name, flags, ops);
  return OpenStatsOps(name, flags, ops);
}

const struct fi_ops kDomainFiOps = {
    .size = sizeof(struct fi_ops),
    .close = DomainClose,
    .bind = fi_no_bind,
    .control = fi_no_control,
    .ops_open = DomainOpsOpen,
    .tostr = fi_no_tostr,
    .ops_set = fi_no_ops_set,
};

const struct fi_ops_domain kDomainOps = {
    .size = sizeof(struct fi_ops_domain),
    .av_open = AvOpen,
    .cq_open = CqOpen,
    .endpoint = Endpoint,
    .scalable_ep = ScalableEp,
    .cntr_open = CntrOpen,
    .poll_open = PollOpen,
    .stx_ctx = StxCtx,
    .srx_ctx = SrxCtx,
    .query_atomic = QueryAtomic,
    .query_collective = QueryCollective,
    .endpoint2 = Endpoint2,
};

}  // namespace

Domain::Domain(Fabric* fabric, uint64_t mr_mode, uint32_t pd, size_t max_mr)
    : fabric_(fabric), mr_mode_(mr_mode), pd_(pd), table_(Random::FromOs(), max_mr) {}

int Domain::Open(struct fid_fabric* fabric, struct fi_info* info, struct fid_domain** domain,
                 void* context) {
  Fabric* f = Fabric::From(fabric);
  if (f == nullptr || info == nullptr || domain == nullptr) {
    IWX_WARN(domain, "fi_domain: fabric, info and domain must be iwarpx's and not NULL\n");
    return -FI_EINVAL;
  }
  if (info->domain_attr != nullptr && info->domain_attr->name != nullptr &&
      std::strcmp(info->domain_attr->name, kDomainName) != 0) {
    IWX_WARN(domain, "fi_domain: unknown domain name '%s' (this provider has '%s')\n",
             info->domain_attr->name, kDomainName);
    return -FI_EINVAL;
  }
  if (const int ret = CheckDomainInfo(info); ret != 0) return ret;
  const uint64_t mr_mode = EffectiveMrMode(info, f->api_version());
  auto* d = new (std::nothrow) Domain(f, mr_mode, g_next_pd.fetch_add(1), GetParams().max_mr);
  if (d == nullptr) return -FI_ENOMEM;
  d->handle_.owner = d;
  d->handle_.fid.fid.fclass = FI_CLASS_DOMAIN;
  d->handle_.fid.fid.context = context;
  d->handle_.fid.fid.ops = const_cast<struct fi_ops*>(&kDomainFiOps);
  d->handle_.fid.ops = const_cast<struct fi_ops_domain*>(&kDomainOps);
  d->handle_.fid.mr = const_cast<struct fi_ops_mr*>(&MrOps());
  const bool auto_progress =
      GetParams().progress_thread ||
      (info->domain_attr != nullptr && (info->domain_attr->data_progress == FI_PROGRESS_AUTO ||
                                        info->domain_attr->control_progress == FI_PROGRESS_AUTO));
  if (auto_progress) f->StartProgressThread();
  f->Ref();
  *domain = d->fid();
  IWX_INFO(domain, "domain %p opened (pd %u, mr_mode %#lx)\n", static_cast<void*>(d), d->pd_,
           static_cast<unsigned long>(mr_mode));
  return 0;
}

Domain* Domain::From(struct fid* fid) {
  if (!IsOurs(fid, FI_CLASS_DOMAIN, &kDomainFiOps)) return nullptr;
  return OwnerOf<Domain>(reinterpret_cast<struct fid_domain*>(fid));
}

std::mutex& Domain::table_mu() {
  return fabric_->engine().mu();
}

int Domain::Close() {
  if (const int refs = refs_.load(std::memory_order_acquire); refs != 0) {
    IWX_WARN(domain,
             "fi_close(domain %p): %d CQ(s)/counter(s)/MR(s)/endpoint(s)/poll set(s) still open\n",
             static_cast<void*>(this), refs);
    return -FI_EBUSY;
  }
  fabric_->Unref();
  IWX_INFO(domain, "domain %p closed\n", static_cast<void*>(this));
  delete this;
  return 0;
}

int DomainOpen(struct fid_fabric* fabric, struct fi_info* info, struct fid_domain** domain,
               void* context) {
  return Domain::Open(fabric, info, domain, context);
}

// RFC 7306 defines Atomic Fetch-and-Add and Atomic Compare-and-Swap on 64-bit
// operands, and the engine adds Swap; that is the whole atomic repertoire (a
// plain FI_SUM is a fetch-add whose result is dropped, FI_ATOMIC_READ a
// fetch-add of 0, FI_ATOMIC_WRITE a swap, FI_BOR and FI_BAND masked swaps of
// ones or zeros, FI_BXOR a compare-and-swap loop: AtomicWr::xor_loop). 32-bit
// integers are the masked form of the same requests on the enclosing 8-byte
// word (qp/work_request.h).
int QueryAtomic(struct fid_domain* /*domain*/, enum fi_datatype datatype, enum fi_op op,
                struct fi_atomic_attr* attr, uint64_t flags) {
  if (attr == nullptr) return -FI_EINVAL;
  if ((flags & FI_FETCH_ATOMIC) != 0 && (flags & FI_COMPARE_ATOMIC) != 0) {
    IWX_WARN(domain, "fi_query_atomic: FI_FETCH_ATOMIC and FI_COMPARE_ATOMIC are exclusive\n");
    return -FI_EINVAL;
  }
  const size_t size = AtomicOperandSize(datatype);
  if (size == 0) return -FI_EOPNOTSUPP;
  bool ok = false;
  if ((flags & FI_COMPARE_ATOMIC) != 0) {
    ok = op == FI_CSWAP;
  } else if ((flags & FI_FETCH_ATOMIC) != 0) {
    ok = op == FI_SUM || op == FI_BOR || op == FI_BAND || op == FI_BXOR || op == FI_ATOMIC_READ ||
         op == FI_ATOMIC_WRITE;
  } else {
    ok = op == FI_SUM || op == FI_BOR || op == FI_BAND || op == FI_BXOR || op == FI_ATOMIC_WRITE;
  }
  if (!ok) return -FI_EOPNOTSUPP;
  attr->count = 1;
  attr->size = size;
  return 0;
}

}  // namespace iwarpx::ofi
