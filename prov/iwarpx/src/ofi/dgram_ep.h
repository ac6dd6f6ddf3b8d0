// The FI_EP_DGRAM endpoint: datagram iWARP's unreliable datagram (UD)
// service over UDP (docs/wire.md §3.5) — the libfabric face of one
// progress::DgramChannel (a UDP socket, its rd::DgramPort and an rd::UdQp
// numbered kBaseQpn). The data path is UdEndpoint's (ud_ep.h), shared with
// the contexts of scalable endpoints (dgram_sep.h), which put several QPs on
// one socket.
//
// Contract (fi_endpoint(3), fi_msg(3), fi_av(3))
// - The UDP socket is bound when the endpoint opens (info->src_addr, or the
//   wildcard address of the family with port 0), so fi_getname gives its
//   address at once; fi_setname is -FI_ENOSYS. The name is a plain
//   sockaddr_in/sockaddr_in6: a peer inserts it into its AV as is.
// - Setup: fi_ep_bind an AV (required), CQs and counters (EpReporter), then
//   fi_enable. Data calls before fi_enable are -FI_EOPBADSTATE.
// - fi_send/sendv/sendmsg/inject name the peer by fi_addr (an entry of the
//   bound AV; -FI_EINVAL otherwise), or by fi_rx_addr(fi_addr, i, bits) when
//   the AV has rx_ctx_bits: receive context i of a peer's scalable endpoint
//   (dst_qpn kBaseQpn + i; a plain fi_addr reaches a plain endpoint or
//   receive context 0). One message is one datagram: at most
//   max_msg_size (rd::kUdMaxMessage) bytes. fi_sendmsg with FI_MORE queues
//   the datagram; the next send without FI_MORE (or the next progress pass)
//   sends the queue with one sendmmsg per 64 datagrams. A send completes
//   when UDP took the datagram; delivery is not promised (UD), and a datagram that finds
//   no posted receive, or fails its CRC, is dropped and counted.
// - Receives complete in arrival order with FI_RECV | FI_MSG and the length;
//   fi_cq_readfrom reports the sender's fi_addr if it is in the AV, else
//   FI_ADDR_NOTAVAIL. A message longer than the buffer completes with an
//   error entry: err FI_ETRUNC, len = bytes placed, olen = bytes cut.
// - fi_cancel of a posted receive completes it with FI_ECANCELED.
// - Not offered: remote CQ data (fi_senddata/fi_injectdata: -FI_ENOSYS),
//   RMA, atomics, tagged, collectives (-FI_ENOSYS tables), connection calls.
// Thread-safe: every entry point takes the engine lock.
#pragma once

#include <cstdint>
#include <memory>

#include <rdma/fabric.h>
#include <rdma/fi_endpoint.h>

#include "ofi/ud_ep.h"
#include "progress/dgram_channel.h"

namespace iwarpx::ofi {

class DgramEndpoint final : public UdEndpoint {
 public:
  static int Open(struct fid_domain* domain, struct fi_info* info, struct fid_ep** ep,
                  void* context);

  int Close() override;

 private:
  explicit DgramEndpoint(const OpenArgs& args) : UdEndpoint(args, "a DGRAM endpoint", kBoth) {}
  [[nodiscard]] transport::SockAddr LocalAddress() const override { return own_->local_address(); }
  void CollectStats(progress::EndpointStats* out) const override { own_->CollectStats(out); }

  std::unique_ptr<progress::DgramChannel> own_;  // channel_ points here
};

}  // namespace iwarpx::ofi
