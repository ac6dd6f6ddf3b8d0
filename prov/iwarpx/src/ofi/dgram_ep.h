// The FI_EP_DGRAM endpoint: datagram iWARP's unreliable datagram (UD)
// service over UDP (docs/wire.md §3.5) — the libfabric face of one
// progress::DgramChannel (a UDP socket, its rd::DgramPort and an rd::UdQp).
//
// Contract (fi_endpoint(3), fi_msg(3), fi_av(3))
// - The UDP socket is bound when the endpoint opens (info->src_addr, or the
//   wildcard address of the family with port 0), so fi_getname gives its
//   address at once; fi_setname is -FI_ENOSYS. The name is a plain
//   sockaddr_in/sockaddr_in6: a peer inserts it into its AV as is.
// - Setup: fi_ep_bind an AV (required), CQs and counters (EpReporter), then
//   fi_enable. Data calls before fi_enable are -FI_EOPBADSTATE.
// - fi_send/sendv/sendmsg/inject name the peer by fi_addr (an entry of the
//   bound AV; -FI_EINVAL otherwise). One message is one datagram: at most
//   max_msg_size (rd::kUdMaxMessage) bytes. fi_sendmsg with FI_MORE queues
//   the datagram; the next send without FI_MORE (or the next progress pass)
//   sends the queue with one sendmmsg per 64 datagrams. A send completes when UDP took
//   the datagram; delivery is not promised (UD), and a datagram that finds
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

#include "ofi/cl_ep.h"
#include "progress/dgram_channel.h"
#include "rd/ud_qp.h"

namespace iwarpx::ofi {

class DgramEndpoint final : public ClEndpoint, public rd::UdSink {
 public:
  static int Open(struct fid_domain* domain, struct fi_info* info, struct fid_ep** ep,
                  void* context);
  static DgramEndpoint* FromEp(struct fid_ep* ep) {
    return static_cast<DgramEndpoint*>(ClEndpoint::FromEp(ep));
  }

  int Close() override;
  ssize_t Cancel(void* context) override;
  // The fi_ops_msg calls (MsgOps). `src` is ignored (no FI_DIRECTED_RECV);
  // FI_REMOTE_CQ_DATA is -FI_ENOSYS.
  ssize_t PostRecv(const struct iovec* iov, size_t count, fi_addr_t src, void* context,
                   uint64_t flags);
  ssize_t PostSend(const struct iovec* iov, size_t count, fi_addr_t dest, void* context,
                   uint64_t flags, uint64_t data);

  // rd::UdSink, engine lock held.
  void OnSendComplete(uint64_t context) override;
  void OnRecvComplete(uint64_t context, size_t bytes, const rd::UdRecvInfo& info) override;
  void OnError(uint64_t context, qp::WcOp op, rd::UdError error, int err) override;

 private:
  explicit DgramEndpoint(const OpenArgs& args) : ClEndpoint(args, "a DGRAM endpoint") {}
  [[nodiscard]] transport::SockAddr LocalAddress() const override {
    return channel_->local_address();
  }
  void CollectStats(progress::EndpointStats* out) const override { channel_->CollectStats(out); }

  std::unique_ptr<progress::DgramChannel> channel_;
};

}  // namespace iwarpx::ofi
