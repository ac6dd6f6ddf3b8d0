#include "transport/socket_util.h"

#include <cerrno>

namespace iwarpx::transport {

Result<UniqueFd, IoError> OpenSocket(int family, int type) {
  UniqueFd fd(::socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Err{IoError{IoStatus::kError, errno}};
  return fd;
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
