#include "ofi/dgram_ep.h"

#include <mutex>
#include <new>

#include <rdma/fi_errno.h>

#include "ofi/fabric.h"
#include "ofi/log.h"
#include "ofi/msg_ops.h"

namespace iwarpx::ofi {

int DgramEndpoint::Open(struct fid_domain* domain, struct fi_info* info, struct fid_ep** ep,
                        void* context) {
  OpenArgs args;
  if (const int r = ParseOpen(domain, info, ep, &args); r != 0) return r;
  auto* e = new (std::nothrow) DgramEndpoint(args);
  if (e == nullptr) return -FI_ENOMEM;
  {
    std::lock_guard<std::mutex> lock(e->fabric_->engine().mu());
    if (const int r = OpenDgramChannel(e->fabric_->engine(), args.local, "fi_endpoint", &e->own_);
        r != 0) {
      delete e;
      return r;
    }
    rd::UdConfig qp;
    qp.qpn = kBaseQpn;
    qp.sq_depth = static_cast<uint32_t>(args.tx_size);
    qp.rq_depth = static_cast<uint32_t>(args.rx_size);
    e->channel_ = e->own_.get();
    e->qp_ = e->own_->AddQp(qp, *e);
    if (e->qp_ == nullptr) {
      IWX_WARN(ep_ctrl, "fi_endpoint: out of memory for the queue pair\n");
      e->own_.reset();
      delete e;
      return -FI_ENOMEM;
    }
  }
  e->Install(context, &MsgOps<UdEndpoint>::kTable, nullptr, nullptr, nullptr, ep);
  IWX_INFO(ep_ctrl, "dgram ep %p opened on %s (tx %zu, rx %zu)\n", static_cast<void*>(e),
           e->own_->local_address().ToString().c_str(), args.tx_size, args.rx_size);
  return 0;
}

int DgramEndpoint::Close() {
  {
    std::lock_guard<std::mutex> lock(fabric_->engine().mu());
    ReportStatsAtClose();
    qp_ = nullptr;
    channel_ = nullptr;
    own_.reset();  // unregisters; posted operations are dropped with it
  }
  IWX_INFO(ep_ctrl, "dgram ep %p closed\n", static_cast<void*>(this));
  Destroy();
  return 0;
}

}  // namespace iwarpx::ofi
