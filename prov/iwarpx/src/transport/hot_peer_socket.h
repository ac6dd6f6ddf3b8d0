// HotPeerSocket: a UDP socket that reaches one peer through a second socket
// connected to it (docs/PERFORMANCE.md "a connected socket for the hot peer":
// on loopback `send` on a connected UDP socket takes ~0.5 us less per
// datagram than `sendto` on an unconnected one, ~10 % of a round trip).
//
// Contract
// - Built over a bound UdpSocket (the main socket), which it shares
//   (UdpSocket::ShareAddress). Until Connect(), it is the main socket.
// - Connect(peer), once: opens the hot socket, bound to the main socket's
//   address and port and connected to `peer` (UdpSocket::BindConnected), with
//   the buffer sizes set through this object. From then on the kernel
//   delivers `peer`'s datagrams to the hot socket and everyone else's to the
//   main one; datagrams of `peer` already queued on the main socket are read
//   after newer ones of the hot socket (a one-time reordering). Errors leave
//   it as it was (kError and errno; EALREADY once connected).
// - Disconnect(): closes the hot socket (datagrams queued on it are lost, as
//   a datagram may be) and goes back to the main socket alone.
// - Sends to `peer` (SockAddr equality) go on the hot socket, all others on
//   the main one; a batch is sent up to the first message whose socket
//   differs from the first message's (the rest is left for the next call).
//   An ICMP error a connected socket reports for an earlier datagram
//   (ECONNREFUSED: nobody listens at `peer`) is not an error here: the
//   datagram counts as sent and lost, as on an unconnected socket, which the
//   kernel tells nothing. main_blocked()/hot_blocked(): that socket refused
//   a datagram (kWouldBlock) and has taken none since (whose writability the
//   owner should wait for).
// - RecvBatch reads the hot socket first, then fills the rest of the batch
//   from the main one; with set_hot_only(true) it reads the hot socket alone
//   (for a busy poll of the hot peer: an empty read of the main socket costs a
//   system call, and the owner's readiness wait on fd() covers it). fd() is
//   the main socket's; hot_fd() the hot one's
//   (-1 when not connected): an owner that waits for readiness must wait on
//   both.
// - Thread-safety as in transport.h.
#pragma once

#include <memory>

#include "transport/transport.h"
#include "transport/udp.h"

namespace iwarpx::transport {

class HotPeerSocket final : public DatagramSocket {
 public:
  // kError with errno if the main socket cannot be shared.
  static Result<std::unique_ptr<HotPeerSocket>, IoError> Create(std::unique_ptr<UdpSocket> main);

  Status Connect(const SockAddr& peer);
  void Disconnect();
  [[nodiscard]] bool connected() const { return hot_ != nullptr; }
  [[nodiscard]] const SockAddr& peer() const { return peer_; }
  [[nodiscard]] int hot_fd() const { return hot_ != nullptr ? hot_->fd() : -1; }
  [[nodiscard]] bool main_blocked() const { return main_blocked_; }
  [[nodiscard]] bool hot_blocked() const { return hot_blocked_; }
  void set_hot_only(bool on) { hot_only_ = on; }

  IoResult SendTo(const SockAddr& to, std::span<const iovec> iov) override;
  BatchResult SendBatch(std::span<DgramMessage> msgs) override;
  BatchResult RecvBatch(std::span<DgramMessage> msgs) override;
  [[nodiscard]] int fd() const override { return main_->fd(); }
  [[nodiscard]] SockAddr local_address() const override { return main_->local_address(); }

  // Both sockets (the hot one also when it is opened later).
  Result<int, IoError> SetSendBufferSize(int bytes);
  Result<int, IoError> SetRecvBufferSize(int bytes);

 private:
  explicit HotPeerSocket(std::unique_ptr<UdpSocket> main) : main_(std::move(main)) {}
  [[nodiscard]] bool ToHot(const SockAddr& to) const { return hot_ != nullptr && to == peer_; }

  std::unique_ptr<UdpSocket> main_;
  std::unique_ptr<UdpSocket> hot_;
  SockAddr peer_;
  int send_buffer_ = 0;  // 0: not set
  int recv_buffer_ = 0;
  bool main_blocked_ = false;
  bool hot_blocked_ = false;
  bool hot_only_ = false;
};

}  // namespace iwarpx::transport
