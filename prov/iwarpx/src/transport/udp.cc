#include "transport/udp.h"

#include <sys/socket.h>

#include <array>
#include <cerrno>

#include "transport/socket_util.h"

namespace iwarpx::transport {
namespace {

BatchResult BatchError(int e) {
  if (e == EAGAIN || e == EWOULDBLOCK) return {0, IoStatus::kWouldBlock, 0};
  return {0, IoStatus::kError, e};
}

}  // namespace

Result<std::unique_ptr<UdpSocket>, IoError> UdpSocket::Bind(const SockAddr& local) {
  if (!local.valid()) return Err{IoError{IoStatus::kError, EAFNOSUPPORT}};
  auto sock = OpenSocket(local.family(), SOCK_DGRAM);
  if (!sock.ok()) return Err{sock.error()};
  UniqueFd fd = std::move(sock).value();
  if (::bind(fd.get(), local.sa(), local.length()) != 0) {
    return Err{IoError{IoStatus::kError, errno}};
  }
  SockAddr bound = LocalAddressOf(fd.get());
  return std::unique_ptr<UdpSocket>(new UdpSocket(std::move(fd), bound));
}

Result<std::unique_ptr<UdpSocket>, IoError> UdpSocket::BindConnected(const SockAddr& local,
                                                                     const SockAddr& peer) {
  if (!local.valid() || !peer.valid()) return Err{IoError{IoStatus::kError, EAFNOSUPPORT}};
  auto sock = OpenSocket(local.family(), SOCK_DGRAM);
  if (!sock.ok()) return Err{sock.error()};
  UniqueFd fd = std::move(sock).value();
  const int one = 1;
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0 ||
      ::bind(fd.get(), local.sa(), local.length()) != 0 ||
      ::connect(fd.get(), peer.sa(), peer.length()) != 0) {
    return Err{IoError{IoStatus::kError, errno}};
  }
  SockAddr bound = LocalAddressOf(fd.get());
  return std::unique_ptr<UdpSocket>(new UdpSocket(std::move(fd), bound, true));
}

Status UdpSocket::ShareAddress() {
  const int one = 1;
  if (::setsockopt(fd_.get(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0) {
    return Status{errno};
  }
  return Status{};
}

IoResult UdpSocket::SendTo(const SockAddr& to, std::span<const iovec> iov) {
  if (iov.size() > kMaxIov) return IoResult::Error(EMSGSIZE);
  // A connected socket sends without an address: with one, the kernel would
  // look the route up again (the cost BindConnected exists to save).
  const sockaddr* name = connected_ ? nullptr : to.sa();
  const socklen_t name_len = connected_ ? 0 : to.length();
  if (iov.size() == 1) {
    // One piece: sendto, which the kernel takes without copying in a
    // msghdr and an iovec array (the udp provider's call, too).
    for (;;) {
      const ssize_t n =
          ::sendto(fd_.get(), iov[0].iov_base, iov[0].iov_len, MSG_NOSIGNAL, name, name_len);
      if (n >= 0) return IoResult::Ok(static_cast<size_t>(n));
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return IoResult::WouldBlock();
      return IoResult::Error(errno);
    }
  }
  msghdr msg{};
  msg.msg_name = const_cast<sockaddr*>(name);  // read only by sendmsg
  msg.msg_namelen = name_len;
  msg.msg_iov = const_cast<iovec*>(iov.data());
  msg.msg_iovlen = iov.size();
  for (;;) {
    const ssize_t n = ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL);
    if (n >= 0) return IoResult::Ok(static_cast<size_t>(n));
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return IoResult::WouldBlock();
    return IoResult::Error(errno);
  }
}

BatchResult UdpSocket::SendBatch(std::span<DgramMessage> msgs) {
  // Only the n headers used are zeroed (all kMaxBatch would be 4 KiB per call).
  std::array<mmsghdr, kMaxBatch> hdrs;  // NOLINT(cppcoreguidelines-pro-type-member-init)
  const size_t n = msgs.size() < kMaxBatch ? msgs.size() : kMaxBatch;
  if (n == 0) return {};
  for (size_t i = 0; i < n; ++i) {
    hdrs[i] = mmsghdr{};
    if (msgs[i].iov.size() > kMaxIov) {
      if (i == 0) return BatchError(EMSGSIZE);
      return SendBatch(msgs.first(i));  // send the valid prefix; the bad one fails next call
    }
    msghdr& h = hdrs[i].msg_hdr;
    if (!connected_) {
      h.msg_name = const_cast<sockaddr*>(msgs[i].addr.sa());
      h.msg_namelen = msgs[i].addr.length();
    }
    h.msg_iov = const_cast<iovec*>(msgs[i].iov.data());
    h.msg_iovlen = msgs[i].iov.size();
  }
  for (;;) {
    const int sent = ::sendmmsg(fd_.get(), hdrs.data(), static_cast<unsigned>(n), MSG_NOSIGNAL);
    if (sent >= 0) {
      for (size_t i = 0; i < static_cast<size_t>(sent); ++i) {
        msgs[i].bytes = hdrs[i].msg_len;
        msgs[i].truncated = false;
      }
      return {static_cast<size_t>(sent), IoStatus::kOk, 0};
    }
    if (errno == EINTR) continue;
    return BatchError(errno);
  }
}

BatchResult UdpSocket::RecvBatch(std::span<DgramMessage> msgs) {
  // Only the n headers used are zeroed (all kMaxBatch would be 4 KiB per poll).
  std::array<mmsghdr, kMaxBatch> hdrs;  // NOLINT(cppcoreguidelines-pro-type-member-init)
  const size_t n = msgs.size() < kMaxBatch ? msgs.size() : kMaxBatch;
  if (n == 0) return {};
  if (n == 1 && msgs[0].iov.size() == 1) return RecvOne(msgs[0]);
  for (size_t i = 0; i < n; ++i) {
    hdrs[i] = mmsghdr{};
    msghdr& h = hdrs[i].msg_hdr;
    h.msg_name = msgs[i].addr.raw();
    h.msg_namelen = SockAddr::capacity();
    h.msg_iov = const_cast<iovec*>(msgs[i].iov.data());
    h.msg_iovlen = CappedIovCount(msgs[i].iov.size());
  }
  if (n == 1) {
    msghdr& h = hdrs[0].msg_hdr;
    for (;;) {
      const ssize_t got = ::recvmsg(fd_.get(), &h, MSG_DONTWAIT);
      if (got >= 0) {
        msgs[0].addr.Adopt(h.msg_namelen);
        msgs[0].bytes = static_cast<size_t>(got);
        msgs[0].truncated = (h.msg_flags & MSG_TRUNC) != 0;
        return {1, IoStatus::kOk, 0};
      }
      if (errno == EINTR) continue;
      return BatchError(errno);
    }
  }
  for (;;) {
    const int got =
        ::recvmmsg(fd_.get(), hdrs.data(), static_cast<unsigned>(n), MSG_DONTWAIT, nullptr);
    if (got >= 0) {
      for (size_t i = 0; i < static_cast<size_t>(got); ++i) {
        msgs[i].addr.Adopt(hdrs[i].msg_hdr.msg_namelen);
        msgs[i].bytes = hdrs[i].msg_len;
        msgs[i].truncated = (hdrs[i].msg_hdr.msg_flags & MSG_TRUNC) != 0;
      }
      return {static_cast<size_t>(got), IoStatus::kOk, 0};
    }
    if (errno == EINTR) continue;
    return BatchError(errno);
  }
}

BatchResult UdpSocket::RecvOne(DgramMessage& m) {
  // recvfrom: no msghdr or iovec array to copy in and out, the cheapest
  // receive (a busy poll's empty read is mostly this call). MSG_TRUNC makes
  // it return the datagram's real length, which tells truncation apart.
  const iovec& v = m.iov[0];
  for (;;) {
    socklen_t len = SockAddr::capacity();
    const ssize_t got =
        ::recvfrom(fd_.get(), v.iov_base, v.iov_len, MSG_DONTWAIT | MSG_TRUNC, m.addr.raw(), &len);
    if (got >= 0) {
      const auto real = static_cast<size_t>(got);
      m.addr.Adopt(len);
      m.truncated = real > v.iov_len;
      m.bytes = m.truncated ? v.iov_len : real;
      return {1, IoStatus::kOk, 0};
    }
    if (errno == EINTR) continue;
    return BatchError(errno);
  }
}

Result<int, IoError> UdpSocket::SetSendBufferSize(int bytes) {
  return SetBufferSize(fd_.get(), SO_SNDBUF, bytes);
}

Result<int, IoError> UdpSocket::SetRecvBufferSize(int bytes) {
  return SetBufferSize(fd_.get(), SO_RCVBUF, bytes);
}

}  // namespace iwarpx::transport
