// Small socket helpers shared by tcp.cc, udp.cc and the SCTP backends (internal to the
// transport layer; the engine uses tcp.h/udp.h).
//
// Contract: every function is a thin wrapper of one or two syscalls; errors
// are returned as errno values (0 = success), nothing is logged. Thread-safe
// in the sense of the underlying syscalls (no shared state).
#pragma once

#include <sys/socket.h>

#include "base/result.h"
#include "transport/fd.h"
#include "transport/sock_addr.h"
#include "transport/transport.h"

namespace iwarpx::transport {

// socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, protocol).
Result<UniqueFd, IoError> OpenSocket(int family, int type, int protocol = 0);

// errno as an IoError: EAGAIN/EWOULDBLOCK -> kWouldBlock, others kError.
IoError ErrnoError(int e);

// Progress of a non-blocking connect() on `fd`: kOk = connected, kWouldBlock
// = still in progress, kError = failed (SO_ERROR, e.g. ECONNREFUSED).
IoResult ConnectProgress(int fd);

// setsockopt with an int value; 0 or errno.
int SetIntOption(int fd, int level, int name, int value);
// getsockopt of an int value.
Result<int, IoError> GetIntOption(int fd, int level, int name);

// getsockname / getpeername; empty SockAddr on failure (e.g. ENOTCONN).
SockAddr LocalAddressOf(int fd);
SockAddr PeerAddressOf(int fd);

// Sets SO_SNDBUF / SO_RCVBUF to `bytes` and returns the value the kernel
// actually applied (Linux doubles the request and caps it at
// net.core.[rw]mem_max).
Result<int, IoError> SetBufferSize(int fd, int option, int bytes);

// The iovec count of one syscall: min(iov.size(), kMaxIov).
inline size_t CappedIovCount(size_t n) {
  return n < kMaxIov ? n : kMaxIov;
}

}  // namespace iwarpx::transport
