#include "transport/socket_util.h"

#include <cerrno>

namespace iwarpx::transport {

Result<UniqueFd, IoError> OpenSocket(int family, int type, int protocol) {
  UniqueFd fd(::socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, protocol));
  if (!fd.valid()) return Err{IoError{IoStatus::kError, errno}};
  return fd;
}

IoError ErrnoError(int e) {
  return IoError{(e == EAGAIN || e == EWOULDBLOCK) ? IoStatus::kWouldBlock : IoStatus::kError, e};
}

IoResult ConnectProgress(int fd) {
  auto so_error = GetIntOption(fd, SOL_SOCKET, SO_ERROR);
  if (!so_error.ok()) return IoResult::Error(so_error.error().err);
  if (*so_error != 0) return IoResult::Error(*so_error);
  // SO_ERROR is 0 both on success and while the handshake is still running;
  // getpeername tells them apart.
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    if (errno == ENOTCONN) return IoResult::WouldBlock();
    return IoResult::Error(errno);
  }
  return IoResult::Ok(0);
}

int SetIntOption(int fd, int level, int name, int value) {
  return ::setsockopt(fd, level, name, &value, sizeof(value)) == 0 ? 0 : errno;
}

Result<int, IoError> GetIntOption(int fd, int level, int name) {
  int value = 0;
  socklen_t len = sizeof(value);
  if (::getsockopt(fd, level, name, &value, &len) != 0) {
    return Err{IoError{IoStatus::kError, errno}};
  }
  return value;
}

SockAddr LocalAddressOf(int fd) {
  SockAddr addr;
  socklen_t len = SockAddr::capacity();
  if (::getsockname(fd, addr.raw(), &len) != 0) return SockAddr();
  addr.Adopt(len);
  return addr;
}

SockAddr PeerAddressOf(int fd) {
  SockAddr addr;
  socklen_t len = SockAddr::capacity();
  if (::getpeername(fd, addr.raw(), &len) != 0) return SockAddr();
  addr.Adopt(len);
  return addr;
}

Result<int, IoError> SetBufferSize(int fd, int option, int bytes) {
  if (const int e = SetIntOption(fd, SOL_SOCKET, option, bytes); e != 0) {
    return Err{IoError{IoStatus::kError, e}};
  }
  return GetIntOption(fd, SOL_SOCKET, option);
}

}  // namespace iwarpx::transport
