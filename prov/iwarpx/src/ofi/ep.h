// The FI_EP_MSG endpoint (fi_endpoint): the libfabric face of one
// progress::MsgChannel (MPA setup, then the queue pair). Every libfabric call
// on it maps to a channel/QP call under the fabric's engine lock, and every
// engine report (progress::ChannelSink) becomes a CQ entry, a counter
// increment or an EQ event.
//
// Contract (fi_endpoint(3), fi_cm(3), fi_msg(3), fi_rma(3), fi_atomic(3))
// - Setup: fi_ep_bind an EQ (required for fi_enable), CQs (FI_TRANSMIT,
//   FI_RECV, optionally FI_SELECTIVE_COMPLETION) and counters (FI_SEND,
//   FI_RECV, FI_READ, FI_WRITE); fi_enable; then fi_connect (active side) or
//   fi_accept (an endpoint opened from an FI_CONNREQ's info).
// - info->handle: an FI_CONNREQ handle makes the endpoint the responder of
//   that pending connection; an iwarpx passive endpoint lends its bound
//   address (PassiveEndpoint::LendAddress): the endpoint owns that socket,
//   fi_connect connects from it (-FI_EINVAL for a peer of another family).
//   Any other handle is -FI_EINVAL (logged).
// - fi_getname: the local address of the connection once fi_connect/fi_accept
//   made one, before that the lent or fi_setname/src_addr address.
// - Receives posted after fi_enable and before the connection exists are
//   queued (at most rx_attr->size) and handed to the QP before it reads
//   anything. Transmit operations before FI_CONNECTED is possible fail with
//   -FI_EOPBADSTATE.
// - Completions: every operation is signalled to the engine; a CQ entry is
//   written unless the CQ was bound with FI_SELECTIVE_COMPLETION and the
//   operation lacks FI_COMPLETION (fi_inject* never writes one). Counters
//   count every success and failure. Errors carry err (FI_ECANCELED for
//   operations flushed by a local close, FI_ECONNABORTED when the connection
//   was lost, FI_EACCES for protection errors reported by a Terminate, else
//   FI_EIO) and prov_errno = layer << 16 | etype << 8 | code of the iWARP
//   Terminate cause (fi_cq_strerror decodes it).
// - FI_INJECT: up to inject_size bytes are copied at the call; the buffer is
//   reusable on return. FI_FENCE waits for earlier Reads/atomics.
// - Write completion levels: by default (FI_TRANSMIT_COMPLETE) a write
//   completes once its last FPDU was handed to TCP. FI_DELIVERY_COMPLETE
//   adds a zero-length RDMA Read behind it (RDMAP orders a Read Response
//   after the Writes before it were placed, and a refused Write ends in a
//   Terminate instead): the write completes, or fails with the target's
//   cause, when that Read does.
// - FI_REMOTE_CQ_DATA on RMA writes travels as an RFC 7306 Immediate Data
//   message: it consumes a receive at the target, whose completion has
//   FI_REMOTE_CQ_DATA | FI_RMA | FI_REMOTE_WRITE and `data`.
// - RDMA Read sinks: a registered buffer (desc) is used as is; without desc
//   the buffer is registered for local write for the duration of the Read.
// - Atomics: 64- and 32-bit integers (RFC 7306 Fetch-and-Add, Swap and
//   Compare-and-Swap; 32-bit ones as masked requests on the enclosing 8-byte
//   word, qp/work_request.h); FI_SUM, FI_ATOMIC_READ (fetch-add of 0),
//   FI_ATOMIC_WRITE (swap), FI_BOR and FI_BAND (masked swaps of ones and
//   zeros), FI_CSWAP. The target must be naturally aligned.
// - CQ and counter bindings, operation slots and completion entries are the
//   EpReporter's, shared with the other endpoint types.
// - EQ events: FI_CONNECTED (with the peer's accept data on the active
//   side), FI_SHUTDOWN when the peer closes or the connection fails after
//   it was established, also to the side that called fi_shutdown (as the
//   verbs and tcp providers do), and an error event
//   for a failed connect (err FI_ECONNREFUSED with the peer's reject data in
//   err_data, FI_ETIMEDOUT, ...).
// Thread-safe: every entry point takes the engine lock.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_endpoint.h>

#include "ofi/common.h"
#include "ofi/ep_reporter.h"
#include "ofi/getinfo.h"
#include "progress/msg_channel.h"
#include "qp/work_request.h"
#include "transport/sock_addr.h"
#include "transport/tcp.h"

namespace iwarpx::ofi {

class Cntr;
class Cq;
class Domain;
class Eq;
class Fabric;

class Endpoint final : public progress::ChannelSink {
 public:
  static int Open(struct fid_domain* domain, struct fi_info* info, struct fid_ep** ep,
                  void* context);
  static Endpoint* From(struct fid* fid);
  struct fid_ep* fid() {
    return &handle_.fid;
  }
  ~Endpoint() override;

  // fi_ops (ep.cc).
  int Close();
  int Bind(struct fid* bfid, uint64_t flags);
  int Control(int command, void* arg);
  static Endpoint* FromEp(struct fid_ep* ep) { return OwnerOf<Endpoint>(ep); }
  // FI_IWARPX_STATS_OPS ep_stats: the connection's counters (takes the engine lock).
  void Stats(progress::EndpointStats* out);
  // fi_ops_cm (ep.cc).
  int GetName(void* addr, size_t* addrlen);
  int SetName(const void* addr, size_t addrlen);
  int GetPeer(void* addr, size_t* addrlen);
  int Connect(const void* addr, const void* param, size_t paramlen);
  int Accept(const void* param, size_t paramlen);
  int Shutdown(uint64_t flags);
  // fi_ops_ep (ep.cc).
  ssize_t Cancel(void* context);
  int GetOpt(int level, int optname, void* optval, size_t* optlen);
  int SetOpt(int level, int optname, const void* optval, size_t optlen);

  // Data transfer (ep_data.cc). `flags` already include the endpoint's
  // op_flags for calls that take none. The fi_addr_t arguments of the
  // fi_ops_msg calls (MsgOps) mean nothing on a connected endpoint.
  ssize_t PostRecv(const struct iovec* iov, size_t count, fi_addr_t src, void* context,
                   uint64_t flags);
  // FI_REMOTE_CQ_DATA in `flags`: a send with remote CQ data `data`
  // (fi_senddata; -FI_EOPNOTSUPP unless the connection negotiated it).
  // `stream`: the SCTP stream (FI_IWARPX_SCTP_OPS, ext_sctp.h); 0 for the
  // fi_ops_msg calls.
  ssize_t PostSend(const struct iovec* iov, size_t count, fi_addr_t dest, void* context,
                   uint64_t flags, uint64_t data, uint16_t stream = 0);
  // FI_IWARPX_SCTP_OPS tx_streams: 0 and *count, or -FI_EOPBADSTATE.
  int TxStreams(uint16_t* count);
  // The RmaOps/AtomicOps calls (rma_ops.h); the shared body is qp_post.h.
  ssize_t PostWrite(const struct iovec* iov, size_t count, fi_addr_t dest, uint64_t addr,
                    uint64_t key, void* context, uint64_t flags, uint64_t data);
  ssize_t PostRead(const struct iovec* iov, void** desc, size_t count, fi_addr_t src, uint64_t addr,
                   uint64_t key, void* context, uint64_t flags);
  ssize_t PostAtomic(const void* buf, size_t count, enum fi_datatype datatype, enum fi_op op,
                     fi_addr_t dest, uint64_t addr, uint64_t key, const void* compare, void* result,
                     void* context, uint64_t flags, bool fetch, bool cmp);
  [[nodiscard]] uint64_t tx_op_flags() const { return tx_op_flags_; }
  [[nodiscard]] uint64_t rx_op_flags() const { return rx_op_flags_; }

  // progress::ChannelSink (ep.cc), engine lock held.
  void OnQpReady(qp::QueuePair& qp) override;
  void OnConnectFailed(const cm::CepError& error, ByteSpan reject_data) override;
  void OnSendComplete(uint64_t context) override;
  void OnRecvComplete(uint64_t context, size_t bytes, const qp::RecvInfo& info) override;
  void OnRdmaComplete(uint64_t context, qp::WcOp op) override;
  void OnError(uint64_t context, qp::WcOp op, const qp::WcError& error) override;
  void OnEstablished() override;
  void OnTerminated(wire::TermCause cause, qp::TermOrigin origin) override;

 private:
  using Slot = EpReporter::Slot;
  enum class CmState : uint8_t { kIdle, kConnecting, kAccepting, kConnected, kShutdown, kFailed };

  Endpoint(Domain* domain, struct fi_info* info, size_t tx_size, size_t rx_size);
  // info->handle of fi_endpoint: takes over a connection request or a passive
  // endpoint's address. 0 or -FI_E* (logged).
  int AdoptHandle(struct fid* handle);
  // The QP when data may flow, else nullptr with the -FI_E* in *err (logged).
  qp::QueuePair* ReadyQp(const char* call, ssize_t* err);
  // After a post: the QP may have started transmitting or blocked.
  void AfterPost();
  qp::QpConfig MakeQpConfig() const;
  progress::ChannelConfig MakeChannelConfig() const;
  // The application asked for remote CQ data (domain_attr->cq_data_size > 0):
  // only then is the iwarpx Send with Immediate Data extension offered in
  // the MPA exchange (docs/wire.md), so default connections never carry it.
  bool WantsCqData() const;

  FidHandle<struct fid_ep, Endpoint> handle_;
  Domain* domain_;
  Fabric* fabric_;
  struct fi_info* info_;  // our copy
  Eq* eq_ = nullptr;
  EpReporter reporter_;  // CQs, counters, operation slots
  uint64_t tx_op_flags_ = 0;
  uint64_t rx_op_flags_ = 0;
  bool enabled_ = false;
  CmState cm_state_ = CmState::kIdle;
  transport::SockAddr name_;          // fi_setname / src_addr / the lent address
  transport::TcpBoundSocket source_;  // lent by a passive endpoint, until fi_connect
  std::unique_ptr<progress::MsgChannel> channel_;
  qp::QueuePair* qp_ = nullptr;  // channel_->qp() once it exists

  std::vector<qp::RecvWr> early_recvs_;  // posted before the QP existed
};

int EndpointOpen(struct fid_domain* domain, struct fi_info* info, struct fid_ep** ep,
                 void* context);

}  // namespace iwarpx::ofi
