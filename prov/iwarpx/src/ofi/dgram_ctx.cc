#include "ofi/dgram_ctx.h"

#include <mutex>
#include <new>

#include <rdma/fi_errno.h>

#include "ofi/av.h"
#include "ofi/cntr.h"
#include "ofi/cq.h"
#include "ofi/dgram_sep.h"
#include "ofi/fabric.h"
#include "ofi/log.h"
#include "ofi/msg_ops.h"

namespace iwarpx::ofi {

DgramContext::DgramContext(DgramSep* sep, bool tx, uint32_t index, const OpenArgs& args)
    : UdEndpoint(args, tx ? "a DGRAM transmit context" : "a DGRAM receive context",
                 tx ? kSends : kReceives),
      sep_(sep),
      tx_(tx),
      index_(index) {}

int DgramContext::Open(DgramSep* sep, bool tx, uint32_t index, const OpenArgs& args,
                       struct fid_ep** ep, void* context, DgramContext** out) {
  auto* c = new (std::nothrow) DgramContext(sep, tx, index, args);
  if (c == nullptr) return -FI_ENOMEM;
  rd::UdConfig qp;
  // A transmit context receives nothing: it sends as the sep's base QP.
  qp.qpn = tx ? kBaseQpn : kBaseQpn + index;
  qp.receives = !tx;
  qp.sq_depth = tx ? static_cast<uint32_t>(args.tx_size) : 1;
  qp.rq_depth = tx ? 1 : static_cast<uint32_t>(args.rx_size);
  c->channel_ = &sep->channel();
  c->qp_ = c->channel_->AddQp(qp, *c);
  if (c->qp_ == nullptr) {
    IWX_WARN(ep_ctrl, "%s: cannot add QP %u to the shared socket\n",
             tx ? "fi_tx_context" : "fi_rx_context", qp.qpn);
    delete c;
    return -FI_ENOMEM;
  }
  c->Install(context, &MsgOps<UdEndpoint>::kTable, nullptr, nullptr, nullptr, ep,
             tx ? FI_CLASS_TX_CTX : FI_CLASS_RX_CTX);
  *out = c;
  IWX_INFO(ep_ctrl, "dgram %s context %u (qpn %u) opened on %s\n", tx ? "tx" : "rx", index, qp.qpn,
           c->channel_->local_address().ToString().c_str());
  return 0;
}

int DgramContext::Close() {
  {
    std::lock_guard<std::mutex> lock(fabric_->engine().mu());
    channel_->RemoveQp(qp_);  // posted operations go with it
    qp_ = nullptr;
    sep_->Release(tx_, index_);
  }
  IWX_INFO(ep_ctrl, "dgram %s context %u closed\n", tx_ ? "tx" : "rx", index_);
  Destroy();
  return 0;
}

int DgramContext::CheckBind(struct fid* bfid, uint64_t flags) {
  if (Av::From(bfid) != nullptr) {
    IWX_WARN(ep_ctrl,
             "fi_ep_bind: bind the AV to the scalable endpoint (fi_scalable_ep_bind), not to "
             "%s\n",
             kind_);
    return -FI_EINVAL;
  }
  const bool cq = Cq::From(bfid) != nullptr;
  const bool cntr = Cntr::From(bfid) != nullptr;
  const uint64_t wrong = tx_ ? (cq ? FI_RECV : FI_RECV | FI_READ | FI_WRITE)
                             : (cq ? FI_TRANSMIT : FI_SEND | FI_READ | FI_WRITE);
  if ((cq || cntr) && (flags & wrong) != 0) {
    IWX_WARN(ep_ctrl, "fi_ep_bind: flags %#lx name the other direction of %s\n",
             static_cast<unsigned long>(flags), kind_);
    return -FI_EBADFLAGS;
  }
  return 0;
}

int DgramContext::CheckEnable() {
  if (sep_->av() == nullptr) {
    IWX_WARN(ep_ctrl,
             "fi_enable: %s needs the scalable endpoint's address vector (fi_scalable_ep_bind "
             "first)\n",
             kind_);
    return -FI_ENOAV;
  }
  if ((tx_ ? reporter_.tx_cq() : reporter_.rx_cq()) == nullptr) {
    IWX_WARN(ep_ctrl, "fi_enable: bind %s CQ to %s first\n", tx_ ? "a transmit" : "a receive",
             kind_);
    return -FI_ENOCQ;
  }
  if (av_ == nullptr) {
    av_ = sep_->av();
    av_->Ref();
  }
  return 0;
}

transport::SockAddr DgramContext::LocalAddress() const {
  return channel_->local_address();
}

void DgramContext::CollectStats(progress::EndpointStats* out) const {
  channel_->CollectStats(out);
}

}  // namespace iwarpx::ofi
