// DgramChannel: one UDP socket as the engine drives it — the socket, its
// rd::DgramPort, and the UD queue pairs on it: one for a plain endpoint, one
// per transmit and receive context for a scalable endpoint (seed 002: many
// QPs share a socket, told apart by QP number). It watches the socket for
// reading always and for writing while any QP has a send backlog. Knows
// nothing of libfabric: each QP reports through the rd::UdSink it was added
// with.
//
// Contract
// - Every call needs the engine lock; the channel registers itself with the
//   engine at Open and unregisters when destroyed.
// - Each readiness callback reads at most `kReadBudget` datagrams, so one
//   busy socket cannot starve the others in a pass.
// - After posting a send the owner calls AfterPost(): a send that found the
//   socket full makes the channel wait for writability; when the socket
//   turns writable every QP's backlog is sent, in QP order.
// - AddQp/RemoveQp may be called at any time (engine lock); a QP that goes
//   takes its queued sends and posted receives with it, unreported.
// - With a FaultSpec that has any fault (FI_IWARPX_FAULT), the socket is
//   wrapped in a transport::FaultInjector: outgoing datagrams are dropped,
//   duplicated, reordered or corrupted as the seeded spec says.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/result.h"
#include "progress/endpoint_stats.h"
#include "progress/engine.h"
#include "rd/dgram_port.h"
#include "rd/ud_qp.h"
#include "transport/fault.h"
#include "transport/sock_addr.h"
#include "transport/udp.h"

namespace iwarpx::progress {

class DgramChannel final : public Pollable {
 public:
  static constexpr size_t kReadBudget = 64;

  // Binds a UDP socket to `local` (port 0: any) and opens one UD QP on it.
  static Result<std::unique_ptr<DgramChannel>, transport::IoError> Open(
      Engine& engine, const transport::SockAddr& local, const rd::PortConfig& port,
      const rd::UdConfig& qp, rd::UdSink& sink, const transport::FaultSpec& faults = {});
  // Binds a UDP socket with no QP yet (AddQp adds them).
  static Result<std::unique_ptr<DgramChannel>, transport::IoError> OpenShared(
      Engine& engine, const transport::SockAddr& local, const rd::PortConfig& port,
      const transport::FaultSpec& faults = {});
  ~DgramChannel() override;

  // A new QP on the socket; nullptr when `config.receives` and its QPN is
  // already attached (or out of memory).
  rd::UdQp* AddQp(const rd::UdConfig& config, rd::UdSink& sink);
  // Destroys a QP AddQp returned.
  void RemoveQp(rd::UdQp* qp);
  // The first QP (the one Open made).
  rd::UdQp& qp() { return *qps_.front(); }
  rd::DgramPort& port() { return *port_; }
  [[nodiscard]] transport::SockAddr local_address() const { return socket_->local_address(); }
  void AfterPost();
  void CollectStats(EndpointStats* out) const;

  // Pollable.
  [[nodiscard]] int fd() const override { return socket_->fd(); }
  [[nodiscard]] uint32_t interest() const override;
  void OnReady(uint32_t events) override;
  bool PollDirect() override { return port_->OnReadable(kReadBudget) > 0; }

 private:
  explicit DgramChannel(Engine& engine) : engine_(engine) {}

  Engine& engine_;
  std::unique_ptr<transport::DatagramSocket> socket_;  // UDP, maybe under a FaultInjector
  transport::FaultInjector* faults_ = nullptr;         // socket_ when it is one
  std::unique_ptr<rd::DgramPort> port_;
  std::vector<std::unique_ptr<rd::UdQp>> qps_;
};

}  // namespace iwarpx::progress
