#include "transport/tcp.h"

#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cerrno>

#include "transport/socket_util.h"

namespace iwarpx::transport {
namespace {

msghdr MessageFor(std::span<const iovec> iov) {
  msghdr msg{};
  // sendmsg does not write through msg_iov; recvmsg writes only into the
  // buffers the iovecs point at, never into the iovec array.
  msg.msg_iov = const_cast<iovec*>(iov.data());
  msg.msg_iovlen = CappedIovCount(iov.size());
  return msg;
}

}  // namespace

TcpConnection::TcpConnection(UniqueFd fd, bool connected)
    : fd_(std::move(fd)), connected_(connected) {
  if (connected_) LearnAddresses();
}

void TcpConnection::LearnAddresses() {
  local_ = LocalAddressOf(fd_.get());
  peer_ = PeerAddressOf(fd_.get());
}

Result<TcpBoundSocket, IoError> TcpBoundSocket::Bind(const SockAddr& addr,
                                                     std::optional<bool> v6only) {
  if (!addr.valid()) return Err{IoError{IoStatus::kError, EAFNOSUPPORT}};
  auto sock = OpenSocket(addr.family(), SOCK_STREAM);
  if (!sock.ok()) return Err{sock.error()};
  UniqueFd fd = std::move(sock).value();
  if (const int e = SetIntOption(fd.get(), SOL_SOCKET, SO_REUSEADDR, 1); e != 0) {
    return Err{IoError{IoStatus::kError, e}};
  }
  if (addr.is_ipv6() && v6only.has_value()) {
    if (const int e = SetIntOption(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, *v6only ? 1 : 0); e != 0) {
      return Err{IoError{IoStatus::kError, e}};
    }
  }
  if (::bind(fd.get(), addr.sa(), addr.length()) != 0) return Err{ErrnoError(errno)};
  const SockAddr local = LocalAddressOf(fd.get());
  return TcpBoundSocket(std::move(fd), local);
}

Result<std::unique_ptr<TcpConnection>, IoError> TcpConnection::Connect(const SockAddr& peer,
                                                                       const SockAddr& local) {
  if (!peer.valid()) return Err{IoError{IoStatus::kError, EAFNOSUPPORT}};
  auto sock = OpenSocket(peer.family(), SOCK_STREAM);
  if (!sock.ok()) return Err{sock.error()};
  UniqueFd fd = std::move(sock).value();
  if (local.valid() && ::bind(fd.get(), local.sa(), local.length()) != 0) {
    return Err{IoError{IoStatus::kError, errno}};
  }
  return Start(std::move(fd), peer);
}

Result<std::unique_ptr<TcpConnection>, IoError> TcpConnection::ConnectFrom(TcpBoundSocket source,
                                                                           const SockAddr& peer) {
  if (!peer.valid() || !source.valid() || source.local_.family() != peer.family()) {
    return Err{IoError{IoStatus::kError, EAFNOSUPPORT}};
  }
  return Start(std::move(source.fd_), peer);
}

Result<std::unique_ptr<TcpConnection>, IoError> TcpConnection::Start(UniqueFd fd,
                                                                     const SockAddr& peer) {
  if (const int e = SetIntOption(fd.get(), IPPROTO_TCP, TCP_NODELAY, 1); e != 0) {
    return Err{IoError{IoStatus::kError, e}};
  }
  int rc = 0;
  do {
    rc = ::connect(fd.get(), peer.sa(), peer.length());
  } while (rc != 0 && errno == EINTR);
  bool connected = true;
  if (rc != 0) {
    if (errno != EINPROGRESS) return Err{IoError{IoStatus::kError, errno}};
    connected = false;
  }
  auto conn = std::unique_ptr<TcpConnection>(new TcpConnection(std::move(fd), connected));
  if (!connected) {
    // The peer is known already, and the kernel chose the source address and
    // port when the handshake started.
    conn->peer_ = peer;
    conn->local_ = LocalAddressOf(conn->fd_.get());
  }
  return conn;
}

Result<std::unique_ptr<TcpConnection>, IoError> TcpConnection::FromAccepted(UniqueFd fd) {
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK) != 0) {
    return Err{IoError{IoStatus::kError, errno}};
  }
  if (const int e = SetIntOption(fd.get(), IPPROTO_TCP, TCP_NODELAY, 1); e != 0) {
    return Err{IoError{IoStatus::kError, e}};
  }
  return std::unique_ptr<TcpConnection>(new TcpConnection(std::move(fd), true));
}

IoResult TcpConnection::FinishConnect() {
  if (connected_) return IoResult::Ok(0);
  const IoResult progress = ConnectProgress(fd_.get());
  if (!progress.ok()) return progress;
  connected_ = true;
  LearnAddresses();
  return IoResult::Ok(0);
}

IoResult TcpConnection::SendV(std::span<const iovec> iov) {
  if (TotalLength(iov) == 0) return IoResult::Ok(0);
  msghdr msg = MessageFor(iov);
  for (;;) {
    const ssize_t n = ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL);
    if (n >= 0) return IoResult::Ok(static_cast<size_t>(n));
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOTCONN) {
      // ENOTCONN: a send before the non-blocking connect has completed.
      if (errno == ENOTCONN && connected_) return IoResult::Error(errno);
      return IoResult::WouldBlock();
    }
    return IoResult::Error(errno);
  }
}

IoResult TcpConnection::RecvV(std::span<const iovec> iov) {
  if (TotalLength(iov) == 0) return IoResult::Ok(0);
  msghdr msg = MessageFor(iov);
  for (;;) {
    const ssize_t n = ::recvmsg(fd_.get(), &msg, 0);
    if (n > 0) return IoResult::Ok(static_cast<size_t>(n));
    if (n == 0) return IoResult::Closed();
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return IoResult::WouldBlock();
    if (errno == ENOTCONN && !connected_) return IoResult::WouldBlock();
    return IoResult::Error(errno);
  }
}

Status TcpConnection::ShutdownWrite() {
  return Status{::shutdown(fd_.get(), SHUT_WR) == 0 ? 0 : errno};
}

size_t TcpConnection::unacknowledged_bytes() const {
  int n = 0;
  if (::ioctl(fd_.get(), SIOCOUTQ, &n) != 0 || n < 0) return 0;
  return static_cast<size_t>(n);
}

Result<int, IoError> TcpConnection::SetSendBufferSize(int bytes) {
  return SetBufferSize(fd_.get(), SO_SNDBUF, bytes);
}

Result<int, IoError> TcpConnection::SetRecvBufferSize(int bytes) {
  return SetBufferSize(fd_.get(), SO_RCVBUF, bytes);
}

Result<std::unique_ptr<TcpListener>, IoError> TcpListener::Listen(const SockAddr& addr, int backlog,
                                                                  std::optional<bool> v6only) {
  auto bound = TcpBoundSocket::Bind(addr, v6only);
  if (!bound.ok()) return Err{bound.error()};
  return ListenOn(std::move(bound).value(), backlog);
}

Result<std::unique_ptr<TcpListener>, IoError> TcpListener::ListenOn(TcpBoundSocket source,
                                                                    int backlog) {
  if (!source.valid()) return Err{IoError{IoStatus::kError, EBADF}};
  if (::listen(source.fd(), backlog) != 0) return Err{ErrnoError(errno)};
  return std::unique_ptr<TcpListener>(new TcpListener(std::move(source.fd_), source.local_));
}

Result<std::unique_ptr<Connection>, IoError> TcpListener::Accept() {
  for (;;) {
    UniqueFd fd(::accept4(fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) {
      if (errno == EINTR) continue;
      return Err{ErrnoError(errno)};
    }
    auto conn = TcpConnection::FromAccepted(std::move(fd));
    if (!conn.ok()) return Err{conn.error()};
    return std::unique_ptr<Connection>(std::move(conn).value());
  }
}

}  // namespace iwarpx::transport
