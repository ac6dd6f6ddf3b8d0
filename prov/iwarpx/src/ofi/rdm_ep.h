// The FI_EP_RDM endpoint: reliable, connectionless messages, tagged messages,
// RMA and atomics over datagram iWARP's reliable-datagram (RD) service on UDP
// — the libfabric face of one rdm::RdmCore (docs/design.md "RDM endpoint",
// docs/wire.md §3.6-3.10).
//
// Contract (fi_endpoint(3), fi_msg(3), fi_tagged(3), fi_rma(3), fi_atomic(3))
// - Setup as every connectionless endpoint (ClEndpoint): the UDP socket is
//   bound at fi_endpoint, fi_getname gives its address; bind an AV and CQs
//   (and counters), then fi_enable. Peers are named by fi_addr from the AV;
//   the first message to a peer (or from it) opens its RD queue pair, no
//   connection calls.
// - Messages up to max_msg_size (2 GiB) of at most 3 iovecs; between a pair
//   in order (FI_ORDER_SAS and the RMA orders of a connected QP), matched in
//   arrival order. Up to FI_IWARPX_RDM_EAGER - 32 bytes go eagerly (a send
//   completes once the RD stream holds its copy), larger ones by rendezvous
//   (the receiver pulls them with RDMA Read into the matched buffer; the send
//   completes when it has). Remote CQ data travels in the message header
//   (FI_REMOTE_CQ_DATA; fi_writedata's arrives as RFC 7306 Immediate Data).
// - Receives: FI_DIRECTED_RECV honours the src fi_addr when the endpoint was
//   opened with that capability; fi_cq_readfrom reports the source (or
//   FI_ADDR_NOTAVAIL when it is not in the AV). A message longer than the
//   buffer completes with an error entry FI_ETRUNC (len placed, olen cut).
//   FI_MULTI_RECV (untagged receives, one iovec): messages fill the buffer one
//   after another, each completion's buf says where; the one after which fewer
//   than FI_OPT_MIN_MULTI_RECV bytes (default 64) are left carries
//   FI_MULTI_RECV and releases the buffer. Multi-receive buffers take untagged
//   messages ahead of ordinary untagged receives.
//   Tagged receives take FI_PEEK (found: a completion with len/tag/data;
//   none: error FI_ENOMSG), FI_PEEK|FI_CLAIM, FI_CLAIM (the claimed message,
//   context = the peek's) and FI_DISCARD.
// - Send rules naming rc_sr/rc_rdma (FI_IWARPX_SEND_RULES) make the endpoint
//   listen on TCP at its UDP address and port number and move busy peers
//   (FI_IWARPX_RC_THRESHOLD_MSGS/_BYTES, at most FI_IWARPX_MAX_RC) to an
//   on-demand TCP iWARP connection, order kept (rdm/rdm_core.h).
// - A peer that stops answering for FI_IWARPX_RD_TIMEOUT fails its pending
//   operations with error completions; a later send opens a new session.
// - fi_cancel of a posted receive completes it with FI_ECANCELED.
// Thread-safe: every entry point takes the engine lock.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_ext_iwarpx.h>

#include "ofi/cl_ep.h"
#include "ofi/qp_post.h"
#include "rdm/rdm_core.h"

namespace iwarpx::ofi {

class RdmEndpoint final : public ClEndpoint, public rdm::RdmSink {
 public:
  static int Open(struct fid_domain* domain, struct fi_info* info, struct fid_ep** ep,
                  void* context);
  static RdmEndpoint* FromEp(struct fid_ep* ep) {
    return static_cast<RdmEndpoint*>(ClEndpoint::FromEp(ep));
  }

  int Close() override;
  ssize_t Cancel(void* context) override;
  // FI_OPT_MIN_MULTI_RECV (FI_OPT_ENDPOINT level); others -FI_ENOPROTOOPT.
  int GetOpt(int level, int optname, void* optval, size_t* optlen) override;
  int SetOpt(int level, int optname, const void* optval, size_t optlen) override;

  // MsgOps / TaggedOps.
  ssize_t PostRecv(const struct iovec* iov, size_t count, fi_addr_t src, void* context,
                   uint64_t flags);
  ssize_t PostSend(const struct iovec* iov, size_t count, fi_addr_t dest, void* context,
                   uint64_t flags, uint64_t data);
  ssize_t PostTRecv(const struct iovec* iov, size_t count, fi_addr_t src, uint64_t tag,
                    uint64_t ignore, void* context, uint64_t flags);
  ssize_t PostTSend(const struct iovec* iov, size_t count, fi_addr_t dest, uint64_t tag,
                    void* context, uint64_t flags, uint64_t data);
  // RmaOps / AtomicOps (qp_post.h on the QP that carries the peer's
  // messages: rdm::RdmCore::RouteRma; -FI_EAGAIN while its connection is
  // being left).
  ssize_t PostWrite(const struct iovec* iov, size_t count, fi_addr_t dest, uint64_t addr,
                    uint64_t key, void* context, uint64_t flags, uint64_t data);
  ssize_t PostRead(const struct iovec* iov, void** desc, size_t count, fi_addr_t src, uint64_t addr,
                   uint64_t key, void* context, uint64_t flags);
  ssize_t PostAtomic(const void* buf, size_t count, enum fi_datatype datatype, enum fi_op op,
                     fi_addr_t dest, uint64_t addr, uint64_t key, const void* compare, void* result,
                     void* context, uint64_t flags, bool fetch, bool cmp);

  // rdm::RdmSink, engine lock held.
  void SendDone(uint64_t context) override;
  void SendFailed(uint64_t context, int err) override;
  void RecvDone(uint64_t context, const rdm::RecvResult& r) override;
  void RecvFailed(uint64_t context, int err) override;
  void RmaDone(uint64_t context) override;
  void RmaFailed(uint64_t context, const qp::WcError& error) override;
  void RemoteWriteData(uint64_t data, rdm::PeerId src) override;
  // Connection and session changes of a peer: one FI_LOG info line each
  // (rdm_ep_stats.cc).
  void OnPeerEvent(rdm::PeerId id, const transport::SockAddr& addr, rdm::PeerEvent e,
                   int err) override;

  // FI_IWARPX_STATS_OPS v3 peer_count / peer_stats (rdm_ep_stats.cc; they
  // take the engine lock). PeerStats: false when `index` names no peer.
  size_t PeerCount();
  bool PeerStats(size_t index, struct fi_iwarpx_peer_stats* out);

 private:
  RdmEndpoint(const OpenArgs& args, uint64_t caps)
      : ClEndpoint(args, "an RDM endpoint"), caps_(caps) {}
  [[nodiscard]] transport::SockAddr LocalAddress() const override { return core_->local_address(); }
  void CollectStats(progress::EndpointStats* out) const override { core_->CollectStats(out); }
  ssize_t Recv(bool tagged, const struct iovec* iov, size_t count, fi_addr_t src, uint64_t tag,
               uint64_t ignore, void* context, uint64_t flags);
  ssize_t Send(bool tagged, const struct iovec* iov, size_t count, fi_addr_t dest, uint64_t tag,
               void* context, uint64_t flags, uint64_t data);
  // Engine lock held: the peer's address for `addr`, or nullopt (logged).
  std::optional<transport::SockAddr> PeerAddress(fi_addr_t addr, const char* call);
  fi_addr_t SourceOf(rdm::PeerId id);
  ssize_t StatusToFi(rdm::RdmStatus s, const char* call);
  // RMA/atomics: routes to the peer's QP, runs `post` there (engine lock
  // held), counts and kicks. FI_MORE in `flags` corks the peer's RD stream
  // (rdm::RdmCore::CorkRma): the next post without it, or the next progress
  // pass, sends what it held, bundled (docs/wire.md §3.6.1).
  ssize_t PostRma(fi_addr_t peer, const char* call, uint64_t flags,
                  const std::function<ssize_t(const QpTarget&)>& post);
  // Engine lock held: peer `index` in the public form.
  bool PeerStatsLocked(size_t index, struct fi_iwarpx_peer_stats* out);
  // FI_IWARPX_STATS=1: the busiest peers, one line each (engine lock held,
  // before the core closes).
  void ReportPeersAtClose();
  // fi_close: drives progress until the core has settled (rdm::RdmCore::
  // Settled: every completed send acknowledged) or FI_IWARPX_RD_LINGER passes.
  void LingerAtClose();

  static constexpr size_t kDefaultMinMultiRecv = 64;

  uint64_t caps_;
  size_t min_multi_recv_ = kDefaultMinMultiRecv;
  std::unique_ptr<rdm::RdmCore> core_;
};

}  // namespace iwarpx::ofi
