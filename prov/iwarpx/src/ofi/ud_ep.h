// UdEndpoint: the data path every FI_EP_DGRAM face shares — a plain
// endpoint (DgramEndpoint) and the transmit and receive contexts of a
// scalable endpoint (DgramContext). Each is one rd::UdQp on a
// progress::DgramChannel (its own, or the scalable endpoint's shared one):
// sends and receives are posted to that QP, and its completions become CQ
// entries and counter increments through the endpoint's EpReporter.
//
// Contract (fi_msg(3); the endpoint-level promises are in dgram_ep.h)
// - A subclass sets channel_ and qp_ before Install() and keeps both alive
//   until its Close. `dirs` says which calls the face takes: a call of the
//   other direction is -FI_EINVAL (logged), before any other check.
// - PostSend resolves dest through the bound AV (Av::Resolve): the datagram
//   goes to the entry's address with dst_qpn = kBaseQpn + the receive
//   context index fi_rx_addr put in dest (0 for a plain fi_addr: a plain
//   endpoint, or receive context 0 of a scalable one). src_qpn is the QP's
//   number (kBaseQpn for every sender, see dgram_sep.h).
// - Receives report the sender's plain AV entry (FI_ADDR_NOTAVAIL if not
//   in the AV); the sender's src_qpn is not reported.
// Thread-safe: every entry point takes the engine lock.
#pragma once

#include <cstdint>
#include <memory>

#include <rdma/fabric.h>
#include <rdma/fi_endpoint.h>

#include "ofi/av_memo.h"
#include "ofi/cl_ep.h"
#include "progress/dgram_channel.h"
#include "rd/ud_qp.h"

namespace iwarpx::ofi {

// The QPN of a plain DGRAM endpoint and of receive context 0 of a scalable
// one; receive context i is kBaseQpn + i.
inline constexpr uint32_t kBaseQpn = 0;

// Binds the UDP socket of a DGRAM endpoint or scalable endpoint to `local`
// with the provider's datagram settings (FI_IWARPX_DGRAM_CRC,
// FI_IWARPX_FAULT), no QP on it yet. Engine lock held. 0, or -FI_E* logged
// naming `call`.
int OpenDgramChannel(progress::Engine& engine, const transport::SockAddr& local, const char* call,
                     std::unique_ptr<progress::DgramChannel>* out);

class UdEndpoint : public ClEndpoint, public rd::UdSink {
 public:
  enum Dirs : uint8_t { kSends = 1, kReceives = 2, kBoth = 3 };

  static UdEndpoint* FromEp(struct fid_ep* ep) {
    return static_cast<UdEndpoint*>(ClEndpoint::FromEp(ep));
  }

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

 protected:
  UdEndpoint(const OpenArgs& args, const char* kind, Dirs dirs)
      : ClEndpoint(args, kind), dirs_(dirs) {}

  progress::DgramChannel* channel_ = nullptr;
  rd::UdQp* qp_ = nullptr;

 private:
  const Dirs dirs_;
  AvMemo av_memo_;  // engine lock
};

}  // namespace iwarpx::ofi
