// UDP implementation of DatagramSocket (transport.h), IPv4 and IPv6.
//
// Contract
// - Bind() opens a non-blocking, close-on-exec socket of the address's
//   family and binds it (port 0 = ephemeral; read it back with
//   local_address()). One socket sends to and receives from any peer of its
//   family (an IPv6 socket also reaches IPv4-mapped peers unless v6only).
// - SendTo: one sendto (one iovec) or sendmsg (MSG_NOSIGNAL); the datagram goes whole or not at
//   all: kOk with bytes = its size, kWouldBlock (socket buffer full), or
//   kError (EMSGSIZE above 65507/65527 bytes, ECONNREFUSED reported for an
//   earlier datagram by ICMP, ...). Datagrams with more than kMaxIov iovecs
//   are refused with EMSGSIZE rather than silently cut.
// - SendBatch / RecvBatch: one sendmmsg / recvmmsg of at most kMaxBatch
//   messages (see BatchResult); a RecvBatch of one message is one recvfrom
//   when it has one iovec, else one recvmsg (both cheaper in the kernel than a
//   recvmmsg of one, ~0.05 us per empty poll; recvfrom copies no msghdr or
//   iovec array in or out). RecvBatch fills each
//   message's addr (source), bytes and truncated (MSG_TRUNC: the datagram did not fit in its iovecs
//   and the rest was discarded by the kernel). RecvBatch never waits for more datagrams than are
//   already queued.
// - Set{Send,Recv}BufferSize return the effective size (Linux doubles the
//   request and caps it at net.core.[rw]mem_max).
// - Sharing the address (transport/hot_peer_socket.h): ShareAddress() sets
//   SO_REUSEPORT on a bound socket, so that a socket of BindConnected() may
//   join it on the same address and port (the kernel groups only sockets of
//   one user, and only those that set the option: setting it after the bind
//   keeps an ephemeral port from being given to a stranger's group).
//   BindConnected(local, peer) opens such a socket and connects it to `peer`:
//   the kernel then delivers `peer`'s datagrams to it, not to the unconnected
//   one, and its sends skip the per-datagram route lookup of sendto (they go
//   without an address; the `to` of SendTo/SendBatch is ignored).
// - Thread-safety as in transport.h.
#pragma once

#include <memory>

#include "base/result.h"
#include "transport/fd.h"
#include "transport/sock_addr.h"
#include "transport/transport.h"

namespace iwarpx::transport {

class UdpSocket final : public DatagramSocket {
 public:
  static Result<std::unique_ptr<UdpSocket>, IoError> Bind(const SockAddr& local);
  static Result<std::unique_ptr<UdpSocket>, IoError> BindConnected(const SockAddr& local,
                                                                   const SockAddr& peer);
  Status ShareAddress();

  IoResult SendTo(const SockAddr& to, std::span<const iovec> iov) override;
  BatchResult SendBatch(std::span<DgramMessage> msgs) override;
  BatchResult RecvBatch(std::span<DgramMessage> msgs) override;
  [[nodiscard]] int fd() const override { return fd_.get(); }
  [[nodiscard]] SockAddr local_address() const override { return local_; }

  Result<int, IoError> SetSendBufferSize(int bytes);
  Result<int, IoError> SetRecvBufferSize(int bytes);

 private:
  UdpSocket(UniqueFd fd, SockAddr local, bool connected = false)
      : fd_(std::move(fd)), local_(local), connected_(connected) {}
  // RecvBatch of one message with one iovec.
  BatchResult RecvOne(DgramMessage& m);

  UniqueFd fd_;
  SockAddr local_;
  bool connected_ = false;  // BindConnected: sends carry no address
};

}  // namespace iwarpx::transport
