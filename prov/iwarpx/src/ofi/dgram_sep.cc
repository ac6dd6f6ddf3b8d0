#include "ofi/dgram_sep.h"

#include <mutex>
#include <new>

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>

#include "ofi/av.h"
#include "ofi/dgram_ctx.h"
#include "ofi/domain.h"
#include "ofi/ep_noops.h"
#include "ofi/ext_stats.h"
#include "ofi/fabric.h"
#include "ofi/getinfo.h"
#include "ofi/log.h"
#include "ofi/prov.h"
#include "ofi/ud_ep.h"

namespace iwarpx::ofi {
namespace {

DgramSep* Self(struct fid* fid) {
  return OwnerOf<DgramSep>(reinterpret_cast<struct fid_ep*>(fid));
}
DgramSep* SelfEp(struct fid_ep* ep) {
  return OwnerOf<DgramSep>(ep);
}

// --- fi_ops ---
int SepClose(struct fid* fid) {
  return Self(fid)->Close();
}
int SepBind(struct fid* fid, struct fid* bfid, uint64_t flags) {
  return Self(fid)->Bind(bfid, flags);
}
int SepControl(struct fid* fid, int command, void* arg) {
  return Self(fid)->Control(command, arg);
}

// --- fi_ops_ep ---
ssize_t SepCancel(struct fid* /*fid*/, void* /*context*/) {
  return -FI_ENOENT;  // nothing is ever posted on the sep itself
}
int SepGetOpt(struct fid* /*fid*/, int /*level*/, int optname, void* /*optval*/,
              size_t* /*optlen*/) {
  IWX_WARN(ep_ctrl, "fi_getopt: option %d is not supported on a scalable endpoint\n", optname);
  return -FI_ENOPROTOOPT;
}
int SepSetOpt(struct fid* /*fid*/, int /*level*/, int optname, const void* /*optval*/,
              size_t /*optlen*/) {
  IWX_WARN(ep_ctrl, "fi_setopt: option %d is not supported on a scalable endpoint\n", optname);
  return -FI_ENOPROTOOPT;
}
int SepTxContext(struct fid_ep* sep, int index, struct fi_tx_attr* attr, struct fid_ep** tx_ep,
                 void* context) {
  return SelfEp(sep)->OpenContext(true, index, attr != nullptr ? attr->op_flags : ~uint64_t{0},
                                  attr != nullptr ? attr->size : 0, tx_ep, context);
}
int SepRxContext(struct fid_ep* sep, int index, struct fi_rx_attr* attr, struct fid_ep** rx_ep,
                 void* context) {
  return SelfEp(sep)->OpenContext(false, index, attr != nullptr ? attr->op_flags : ~uint64_t{0},
                                  attr != nullptr ? attr->size : 0, rx_ep, context);
}

// --- fi_ops_cm: the connectionless table with the sep's fi_getname ---
int SepGetName(fid_t fid, void* addr, size_t* addrlen) {
  return Self(fid)->GetName(addr, addrlen);
}

const struct fi_ops kSepFiOps = {
    .size = sizeof(struct fi_ops),
    .close = SepClose,
    .bind = SepBind,
    .control = SepControl,
    .ops_open = fi_no_ops_open,
    .tostr = fi_no_tostr,
    .ops_set = fi_no_ops_set,
};

const struct fi_ops_ep kSepEpOps = {
    .size = sizeof(struct fi_ops_ep),
    .cancel = SepCancel,
    .getopt = SepGetOpt,
    .setopt = SepSetOpt,
    .tx_ctx = SepTxContext,
    .rx_ctx = SepRxContext,
    .rx_size_left = NoSizeLeft,
    .tx_size_left = NoSizeLeft,
};

struct fi_ops_cm SepCmOps() {
  struct fi_ops_cm ops = kClCmOps;
  ops.getname = SepGetName;
  return ops;
}
const struct fi_ops_cm kSepCmOps = SepCmOps();

// A context count from ep_attr: 0 means one.
size_t CtxCount(size_t asked) {
  return asked == 0 ? 1 : asked;
}

}  // namespace

DgramSep::DgramSep(const ClEndpoint::OpenArgs& args, size_t tx_cnt, size_t rx_cnt)
    : args_(args),
      domain_(args.domain),
      fabric_(args.domain->fabric()),
      tx_(tx_cnt, nullptr),
      rx_(rx_cnt, nullptr) {}

DgramSep::~DgramSep() {
  if (av_ != nullptr) av_->Unref();
}

int DgramSep::Open(struct fid_domain* domain, struct fi_info* info, struct fid_ep** sep,
                   void* context) {
  ClEndpoint::OpenArgs args;
  if (const int r = ClEndpoint::ParseOpen(domain, info, sep, &args); r != 0) return r;
  if (info->ep_attr == nullptr || info->ep_attr->type != FI_EP_DGRAM) {
    IWX_WARN(ep_ctrl, "fi_scalable_ep: scalable endpoints are offered on FI_EP_DGRAM only\n");
    return -FI_ENOSYS;
  }
  const size_t tx_cnt = CtxCount(info->ep_attr->tx_ctx_cnt);
  const size_t rx_cnt = CtxCount(info->ep_attr->rx_ctx_cnt);
  if (tx_cnt > kMaxDgramCtx || rx_cnt > kMaxDgramCtx) {
    IWX_WARN(ep_ctrl,
             "fi_scalable_ep: ep_attr tx_ctx_cnt/rx_ctx_cnt %zu/%zu (at most %zu each; no "
             "FI_SHARED_CONTEXT)\n",
             info->ep_attr->tx_ctx_cnt, info->ep_attr->rx_ctx_cnt, kMaxDgramCtx);
    return -FI_EINVAL;
  }
  auto* s = new (std::nothrow) DgramSep(args, tx_cnt, rx_cnt);
  if (s == nullptr) return -FI_ENOMEM;
  {
    std::lock_guard<std::mutex> lock(s->fabric_->engine().mu());
    if (const int r =
            OpenDgramChannel(s->fabric_->engine(), args.local, "fi_scalable_ep", &s->channel_);
        r != 0) {
      delete s;
      return r;
    }
  }
  s->handle_.owner = s;
  s->handle_.fid.fid.fclass = FI_CLASS_SEP;
  s->handle_.fid.fid.context = context;
  s->handle_.fid.fid.ops = const_cast<struct fi_ops*>(&kSepFiOps);
  s->handle_.fid.ops = const_cast<struct fi_ops_ep*>(&kSepEpOps);
  s->handle_.fid.cm = const_cast<struct fi_ops_cm*>(&kSepCmOps);
  s->handle_.fid.msg = const_cast<struct fi_ops_msg*>(&kNoMsgOps);
  s->handle_.fid.tagged = const_cast<struct fi_ops_tagged*>(&kNoTaggedOps);
  s->handle_.fid.rma = const_cast<struct fi_ops_rma*>(&kNoRmaOps);
  s->handle_.fid.atomic = const_cast<struct fi_ops_atomic*>(&kNoAtomicOps);
  s->handle_.fid.collective = const_cast<struct fi_ops_collective*>(&kNoCollectiveOps);
  s->domain_->Ref();
  *sep = &s->handle_.fid;
  IWX_INFO(ep_ctrl, "dgram sep %p opened on %s (%zu tx, %zu rx contexts)\n", static_cast<void*>(s),
           s->channel_->local_address().ToString().c_str(), tx_cnt, rx_cnt);
  return 0;
}

DgramSep* DgramSep::From(struct fid* fid) {
  if (!IsOurs(fid, FI_CLASS_SEP, &kSepFiOps)) return nullptr;
  return Self(fid);
}

int DgramSep::Close() {
  {
    std::lock_guard<std::mutex> lock(fabric_->engine().mu());
    size_t open = 0;
    for (const auto* v : {&tx_, &rx_}) {
      for (const DgramContext* c : *v) open += c != nullptr ? 1 : 0;
    }
    if (open != 0) {
      IWX_WARN(ep_ctrl, "fi_close(sep %p): %zu context(s) still open; close them first\n",
               static_cast<void*>(this), open);
      return -FI_EBUSY;
    }
    if (GetParams().stats) {
      progress::EndpointStats st;
      channel_->CollectStats(&st);
      ReportAtClose("a DGRAM scalable endpoint", channel_->local_address().ToString().c_str(), st);
    }
    channel_.reset();
  }
  IWX_INFO(ep_ctrl, "dgram sep %p closed\n", static_cast<void*>(this));
  Domain* d = domain_;
  delete this;
  d->Unref();
  return 0;
}

int DgramSep::Bind(struct fid* bfid, uint64_t /*flags*/) {
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  if (enabled_) {
    IWX_WARN(ep_ctrl, "fi_scalable_ep_bind: the scalable endpoint is already enabled\n");
    return -FI_EOPBADSTATE;
  }
  Av* av = Av::From(bfid);
  if (av == nullptr || av->domain() != domain_) {
    IWX_WARN(ep_ctrl,
             "fi_scalable_ep_bind: only an address vector of the same domain binds to a "
             "scalable endpoint (CQs and counters bind to its contexts)\n");
    return -FI_EINVAL;
  }
  if (av_ != nullptr) av_->Unref();
  av_ = av;
  av_->Ref();
  return 0;
}

int DgramSep::Control(int command, void* /*arg*/) {
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  if (command != FI_ENABLE) {
    IWX_WARN(ep_ctrl, "fi_control: command %d is not supported on a scalable endpoint\n", command);
    return -FI_ENOSYS;
  }
  if (av_ == nullptr) {
    IWX_WARN(ep_ctrl, "fi_enable: a scalable endpoint needs an AV (fi_scalable_ep_bind)\n");
    return -FI_ENOAV;
  }
  enabled_ = true;
  return 0;
}

void DgramSep::Stats(progress::EndpointStats* out) {
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  channel_->CollectStats(out);
}

int DgramSep::GetName(void* addr, size_t* addrlen) {
  if (addrlen == nullptr) return -FI_EINVAL;
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  return CopyName(channel_->local_address(), addr, addrlen);
}

int DgramSep::OpenContext(bool tx, int index, uint64_t op_flags, size_t size, struct fid_ep** ep,
                          void* context) {
  const char* call = tx ? "fi_tx_context" : "fi_rx_context";
  if (ep == nullptr) {
    IWX_WARN(ep_ctrl, "%s: the endpoint pointer is NULL\n", call);
    return -FI_EINVAL;
  }
  std::lock_guard<std::mutex> lock(fabric_->engine().mu());
  std::vector<DgramContext*>& slots = tx ? tx_ : rx_;
  if (index < 0 || static_cast<size_t>(index) >= slots.size()) {
    IWX_WARN(ep_ctrl, "%s: index %d is outside 0..%zu (ep_attr %s)\n", call, index,
             slots.size() - 1, tx ? "tx_ctx_cnt" : "rx_ctx_cnt");
    return -FI_EINVAL;
  }
  const auto at = static_cast<size_t>(index);
  if (slots[at] != nullptr) {
    IWX_WARN(ep_ctrl, "%s: context %d is already open\n", call, index);
    return -FI_EBUSY;
  }
  const size_t max = tx ? kTxSize : kRxSize;
  if (size > max) {
    IWX_WARN(ep_ctrl, "%s: size %zu exceeds %zu\n", call, size, max);
    return -FI_EINVAL;
  }
  ClEndpoint::OpenArgs args = args_;
  if (size != 0) (tx ? args.tx_size : args.rx_size) = size;
  if (op_flags != ~uint64_t{0}) (tx ? args.tx_op_flags : args.rx_op_flags) = op_flags;
  return DgramContext::Open(this, tx, static_cast<uint32_t>(at), args, ep, context, &slots[at]);
}

void DgramSep::Release(bool tx, uint32_t index) {
  std::vector<DgramContext*>& slots = tx ? tx_ : rx_;
  if (index < slots.size()) slots[index] = nullptr;
}

}  // namespace iwarpx::ofi
