// DgramContext: a transmit or receive context of an FI_EP_DGRAM scalable
// endpoint (fi_tx_context / fi_rx_context; dgram_sep.h) — an fid_ep of
// class FI_CLASS_TX_CTX or FI_CLASS_RX_CTX over UdEndpoint's data path with
// one rd::UdQp on the sep's shared socket: QPN kBaseQpn + index for receive
// context `index`; a send-only QP numbered kBaseQpn for a transmit context.
//
// Contract (fi_endpoint(3))
// - Binds its own CQs and counters (fi_ep_bind): a transmit context only
//   FI_TRANSMIT CQs and FI_SEND counters, a receive context only FI_RECV
//   ones (-FI_EBADFLAGS otherwise). An AV is bound to the sep, never to a
//   context (-FI_EINVAL).
// - fi_enable needs the sep's AV (fi_scalable_ep_bind first; -FI_ENOAV) and
//   the context's CQ (-FI_ENOCQ); the sep need not be enabled yet. Data
//   calls before fi_enable are -FI_EOPBADSTATE; a receive on a transmit
//   context or a send on a receive context is -FI_EINVAL (all logged).
// - Sends and receives behave as on a plain DGRAM endpoint (dgram_ep.h);
//   a receive context takes only datagrams addressed to its QPN, so a
//   message for receive context i never completes on another context.
// - fi_getname gives the sep's (shared) address; ep_stats counts the shared
//   socket's datagrams and every context's QP.
// - fi_close removes the QP (posted operations go unreported) and frees the
//   index for a new fi_tx_context/fi_rx_context.
// Thread-safe: every entry point takes the engine lock.
#pragma once

#include <cstdint>

#include <rdma/fabric.h>
#include <rdma/fi_endpoint.h>

#include "ofi/ud_ep.h"

namespace iwarpx::ofi {

class DgramSep;

class DgramContext final : public UdEndpoint {
 public:
  // Opens context `index` of `sep` (engine lock held; the sep has checked
  // the index) and stores it in *out. -FI_E* (logged) on failure.
  static int Open(DgramSep* sep, bool tx, uint32_t index, const OpenArgs& args, struct fid_ep** ep,
                  void* context, DgramContext** out);

  int Close() override;

 private:
  DgramContext(DgramSep* sep, bool tx, uint32_t index, const OpenArgs& args);
  int CheckBind(struct fid* bfid, uint64_t flags) override;
  int CheckEnable() override;
  [[nodiscard]] transport::SockAddr LocalAddress() const override;
  void CollectStats(progress::EndpointStats* out) const override;

  DgramSep* sep_;
  bool tx_;
  uint32_t index_;
};

}  // namespace iwarpx::ofi
