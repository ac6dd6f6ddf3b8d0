#include "transport/sctp.h"

#include <cerrno>

#include "transport/sctp_kernel.h"
#include "transport/sctp_usrsctp.h"

namespace iwarpx::transport {

const char* ToString(SctpBackend b) {
  switch (b) {
    case SctpBackend::kAuto: return "auto";
    case SctpBackend::kKernel: return "kernel";
    case SctpBackend::kUsrsctp: return "usrsctp";
  }
  return "unknown";
}

Result<SctpBackend, IoError> ResolveSctpBackend(SctpBackend requested) {
  switch (requested) {
    case SctpBackend::kUsrsctp: return SctpBackend::kUsrsctp;
    case SctpBackend::kKernel:
      if (const int e = KernelSctpAvailable(); e != 0) return Err{IoError{IoStatus::kError, e}};
      return SctpBackend::kKernel;
    case SctpBackend::kAuto:
      return KernelSctpAvailable() == 0 ? SctpBackend::kKernel : SctpBackend::kUsrsctp;
  }
  return Err{IoError{IoStatus::kError, EINVAL}};
}

Result<std::unique_ptr<SctpConnection>, IoError> SctpConnect(SctpBackend backend,
                                                             const SockAddr& peer,
                                                             const SctpOptions& options) {
  auto resolved = ResolveSctpBackend(backend);
  if (!resolved.ok()) return Err{resolved.error()};
  if (*resolved == SctpBackend::kKernel) {
    auto c = KernelSctpConnection::Connect(peer, options);
    if (!c.ok()) return Err{c.error()};
    return std::unique_ptr<SctpConnection>(std::move(c).value());
  }
  auto c = UsrsctpConnection::Connect(peer, options);
  if (!c.ok()) return Err{c.error()};
  return std::unique_ptr<SctpConnection>(std::move(c).value());
}

Result<std::unique_ptr<SctpListener>, IoError> SctpListen(SctpBackend backend, const SockAddr& addr,
                                                          const SctpOptions& options) {
  auto resolved = ResolveSctpBackend(backend);
  if (!resolved.ok()) return Err{resolved.error()};
  if (*resolved == SctpBackend::kKernel) {
    auto l = KernelSctpListener::Listen(addr, options);
    if (!l.ok()) return Err{l.error()};
    return std::unique_ptr<SctpListener>(std::move(l).value());
  }
  auto l = UsrsctpListener::Listen(addr, options);
  if (!l.ok()) return Err{l.error()};
  return std::unique_ptr<SctpListener>(std::move(l).value());
}

}  // namespace iwarpx::transport
