// TCP implementation of Connection and Listener (transport.h).
//
// Contract
// - Sockets are non-blocking and close-on-exec; connections have TCP_NODELAY
//   on (the engine gathers a whole FPDU into one SendV, so Nagle only adds
//   latency).
// - TcpConnection::Connect() starts a non-blocking connect and returns a
//   connection that is usually still connecting (see
//   Connection::FinishConnect); an immediate failure (EADDRNOTAVAIL,
//   ENETUNREACH, ECONNREFUSED reported at once, ...) is an error right away.
// - SendV: sendmsg(MSG_NOSIGNAL) with at most kMaxIov iovecs, so a send to a
//   dead peer returns kError EPIPE instead of raising SIGPIPE. RecvV:
//   recvmsg; 0 bytes from the kernel with buffer space offered = kClosed;
//   ECONNRESET = kError ECONNRESET. EINTR is retried inside the call.
// - TcpListener::Listen binds with SO_REUSEADDR (so a restarted server can
//   re-bind a port in TIME_WAIT); port 0 picks an ephemeral port, read it
//   back with local_address(). An IPv6 wildcard listener follows the host's
//   net.ipv6.bindv6only default unless `v6only` is given.
// - TcpBoundSocket reserves a local address before it is known whether it
//   will listen or connect (libfabric's fi_setname on a passive endpoint):
//   bound with SO_REUSEADDR like a listener, port 0 resolved at once. It is
//   consumed by exactly one TcpListener::ListenOn or TcpConnection::ConnectFrom;
//   on failure there the socket is closed (the address released). Move-only.
// - A connection's local_address() is known as soon as Connect() returns
//   (the kernel picks the source address and port when the connect starts).
// - Ownership: each object owns its descriptor (closed on destruction, which
//   aborts nothing: pending data is sent by the kernel as for close(2)).
//   Thread-safety as in transport.h.
#pragma once

#include <memory>
#include <optional>

#include "base/result.h"
#include "transport/fd.h"
#include "transport/sock_addr.h"
#include "transport/transport.h"

namespace iwarpx::transport {

class TcpBoundSocket {
 public:
  TcpBoundSocket() = default;
  // socket + SO_REUSEADDR (+ IPV6_V6ONLY when given) + bind(addr). errno on
  // failure (EADDRINUSE when a listener holds the address).
  static Result<TcpBoundSocket, IoError> Bind(const SockAddr& addr,
                                              std::optional<bool> v6only = {});

  [[nodiscard]] bool valid() const { return fd_.valid(); }
  // The bound address with the real port; empty when !valid().
  [[nodiscard]] SockAddr local_address() const { return local_; }
  [[nodiscard]] int fd() const { return fd_.get(); }

 private:
  friend class TcpConnection;
  friend class TcpListener;
  TcpBoundSocket(UniqueFd fd, SockAddr local) : fd_(std::move(fd)), local_(local) {}

  UniqueFd fd_;
  SockAddr local_;
};

class TcpConnection final : public Connection {
 public:
  // Starts a non-blocking connect to `peer`; `local`, when valid, is bound
  // first (a source address or port).
  static Result<std::unique_ptr<TcpConnection>, IoError> Connect(const SockAddr& peer,
                                                                 const SockAddr& local = {});
  // Connects from a reserved address; `source` must be valid and of the
  // peer's family (EAFNOSUPPORT otherwise).
  static Result<std::unique_ptr<TcpConnection>, IoError> ConnectFrom(TcpBoundSocket source,
                                                                     const SockAddr& peer);
  // Wraps an accepted, connected socket (sets O_NONBLOCK and TCP_NODELAY).
  static Result<std::unique_ptr<TcpConnection>, IoError> FromAccepted(UniqueFd fd);

  IoResult SendV(std::span<const iovec> iov) override;
  IoResult RecvV(std::span<const iovec> iov) override;
  [[nodiscard]] bool preserves_message_boundaries() const override { return false; }
  [[nodiscard]] bool connected() const override { return connected_; }
  IoResult FinishConnect() override;
  Status ShutdownWrite() override;
  [[nodiscard]] size_t unacknowledged_bytes() const override;
  [[nodiscard]] int fd() const override { return fd_.get(); }
  [[nodiscard]] SockAddr local_address() const override { return local_; }
  [[nodiscard]] SockAddr peer_address() const override { return peer_; }

  // SO_SNDBUF / SO_RCVBUF; returns the effective value.
  Result<int, IoError> SetSendBufferSize(int bytes);
  Result<int, IoError> SetRecvBufferSize(int bytes);

 private:
  TcpConnection(UniqueFd fd, bool connected);
  // Sets TCP_NODELAY and starts connect() on a socket already bound or not.
  static Result<std::unique_ptr<TcpConnection>, IoError> Start(UniqueFd fd, const SockAddr& peer);
  void LearnAddresses();

  UniqueFd fd_;
  bool connected_ = false;
  SockAddr local_;
  SockAddr peer_;
};

class TcpListener final : public Listener {
 public:
  static constexpr int kDefaultBacklog = 128;

  static Result<std::unique_ptr<TcpListener>, IoError> Listen(const SockAddr& addr,
                                                              int backlog = kDefaultBacklog,
                                                              std::optional<bool> v6only = {});
  // Listens on a reserved address (consumed; `source` must be valid).
  static Result<std::unique_ptr<TcpListener>, IoError> ListenOn(TcpBoundSocket source,
                                                                int backlog = kDefaultBacklog);

  Result<std::unique_ptr<Connection>, IoError> Accept() override;
  [[nodiscard]] int fd() const override { return fd_.get(); }
  [[nodiscard]] SockAddr local_address() const override { return local_; }

 private:
  TcpListener(UniqueFd fd, SockAddr local) : fd_(std::move(fd)), local_(local) {}

  UniqueFd fd_;
  SockAddr local_;
};

}  // namespace iwarpx::transport
