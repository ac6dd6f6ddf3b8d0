// DgramSep: an FI_EP_DGRAM scalable endpoint (fi_scalable_ep) — one UDP
// socket and its rd::DgramPort (a progress::DgramChannel with no QP of its
// own) shared by up to kMaxDgramCtx transmit and receive contexts, each an
// rd::UdQp on that socket (seed 002: many QPs per socket, told apart by the
// QP number in every datagram; docs/design.md, DGRAM).
//
// Contract (fi_endpoint(3), fi_scalable_ep_bind, fi_tx_context/fi_rx_context)
// - Open: info->ep_attr->type FI_EP_DGRAM (others -FI_ENOSYS);
//   ep_attr->tx_ctx_cnt / rx_ctx_cnt contexts (0 means 1; above
//   kMaxDgramCtx, or FI_SHARED_CONTEXT, -FI_EINVAL). The socket is bound at
//   once (info->src_addr or the wildcard address), so fi_getname on the sep
//   gives the one address every context sends from and receives on.
// - fi_scalable_ep_bind takes an AV of the domain (nothing else; -FI_EINVAL).
//   fi_enable on the sep needs it (-FI_ENOAV). The sep itself carries no
//   data: its data calls are -FI_ENOSYS (logged).
// - fi_tx_context / fi_rx_context(sep, i, attr, &ep, context): 0 <= i <
//   tx/rx_ctx_cnt (-FI_EINVAL), one open context per index (-FI_EBUSY
//   while index i is open). attr (optional) sets the queue size (<= the
//   provider's maximum) and op_flags; the sep's info gives the defaults.
//   Each context is a DgramContext (dgram_ctx.h).
// - Receive context i is the QP numbered kBaseQpn + i on the shared socket:
//   a peer reaches it with fi_rx_addr(fi_addr_of_sep, i, rx_ctx_bits), and a
//   plain fi_addr (or a peer's ordinary endpoint) reaches context 0.
// - Every transmit context sends with src_qpn = kBaseQpn (it receives
//   nothing itself, so no number of its own would mean anything to a peer):
//   a datagram from any context of a sep looks like one from an ordinary
//   endpoint at the sep's address, and a receiver's FI_SOURCE names that
//   address's AV entry (fi_cq_readfrom), whichever context sent it.
// - fi_close of the sep while any context is open is -FI_EBUSY (logged).
// Thread-safe: every entry point takes the engine lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_endpoint.h>

#include "ofi/cl_ep.h"
#include "ofi/common.h"
#include "progress/dgram_channel.h"

namespace iwarpx::ofi {

class Av;
class DgramContext;
class Domain;
class Fabric;

class DgramSep {
 public:
  static int Open(struct fid_domain* domain, struct fi_info* info, struct fid_ep** sep,
                  void* context);
  // The sep behind a fid, or nullptr if it is not one of ours.
  static DgramSep* From(struct fid* fid);

  int Close();
  int Bind(struct fid* bfid, uint64_t flags);
  int Control(int command, void* arg);
  int GetName(void* addr, size_t* addrlen);
  // FI_IWARPX_STATS_OPS ep_stats: the shared socket's and every context's counters.
  void Stats(progress::EndpointStats* out);
  // fi_tx_context (`tx`) / fi_rx_context; `attr` is a fi_tx_attr / fi_rx_attr or NULL.
  int OpenContext(bool tx, int index, uint64_t op_flags, size_t size, struct fid_ep** ep,
                  void* context);

  // For the contexts, engine lock held.
  progress::DgramChannel& channel() { return *channel_; }
  Av* av() { return av_; }
  // Context `index` of that direction closed.
  void Release(bool tx, uint32_t index);
  Fabric* fabric() { return fabric_; }

 private:
  DgramSep(const ClEndpoint::OpenArgs& args, size_t tx_cnt, size_t rx_cnt);
  ~DgramSep();

  FidHandle<struct fid_ep, DgramSep> handle_;
  ClEndpoint::OpenArgs args_;
  Domain* domain_;
  Fabric* fabric_;
  std::unique_ptr<progress::DgramChannel> channel_;
  Av* av_ = nullptr;
  std::vector<DgramContext*> tx_;  // open contexts by index (nullptr: none)
  std::vector<DgramContext*> rx_;
  bool enabled_ = false;
};

}  // namespace iwarpx::ofi
