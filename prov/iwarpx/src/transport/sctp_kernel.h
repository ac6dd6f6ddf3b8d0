// Kernel SCTP backend of SctpConnection / SctpListener (sctp.h): Linux
// one-to-one style sockets, socket(family, SOCK_STREAM, IPPROTO_SCTP).
//
// Contract (beyond sctp.h)
// - Sockets are non-blocking and close-on-exec, with SCTP_NODELAY,
//   SCTP_RECVRCVINFO, SCTP_INITMSG and the liveness limits (SCTP_RTOINFO,
//   SCTP_ASSOCINFO, SCTP_PEER_ADDR_PARAMS) from SctpOptions, the DDP
//   adaptation indication and the SCTP_ADAPTATION_INDICATION notification
//   (SCTP_EVENTS; RecvMsg reads and skips it, accepted sockets inherit it). A dead peer ends the
//   association with ETIMEDOUT from recvmsg, as for usrsctp. fd() is the socket: readiness exactly
//   as for TCP (doorbell() false; wait for kWritable while connecting or when a send would block).
// - SendMsg: one sendmsg(MSG_NOSIGNAL) with an SCTP_SNDINFO control message
//   (stream, unordered flag, PPID in network byte order), at most kMaxIov
//   iovecs. RecvMsg: one recvmsg; the SCTP_RCVINFO control message gives
//   PPID/stream/unordered, MSG_EOR the end of the message; 0 bytes = kClosed.
//   EINTR is retried inside the call.
// - Connect/Listen fail with the errno of socket() (EPROTONOSUPPORT on a
//   kernel without SCTP) and are otherwise like TcpConnection/TcpListener.
// - Ownership: each object owns its descriptor.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "base/result.h"
#include "transport/fd.h"
#include "transport/sctp.h"

namespace iwarpx::transport {

class KernelSctpConnection final : public SctpConnection {
 public:
  static Result<std::unique_ptr<KernelSctpConnection>, IoError> Connect(const SockAddr& peer,
                                                                        const SctpOptions& options);

  IoResult SendMsg(std::span<const iovec> iov, const MessageInfo& info) override;
  IoResult RecvMsg(std::span<const iovec> iov, MessageInfo& info) override;
  [[nodiscard]] bool connected() const override { return connected_; }
  IoResult FinishConnect() override;
  Status ShutdownWrite() override;
  [[nodiscard]] int fd() const override { return fd_.get(); }
  [[nodiscard]] SockAddr local_address() const override { return local_; }
  [[nodiscard]] SockAddr peer_address() const override { return peer_; }
  [[nodiscard]] uint16_t outbound_streams() const override { return outbound_streams_; }
  [[nodiscard]] bool doorbell() const override { return false; }
  [[nodiscard]] SctpBackend backend() const override { return SctpBackend::kKernel; }
  [[nodiscard]] Result<SctpLimits, int> limits() const override;
  [[nodiscard]] std::optional<uint32_t> peer_adaptation_indication() const override {
    return peer_adaptation_;
  }

 private:
  friend class KernelSctpListener;
  KernelSctpConnection(UniqueFd fd, bool connected);
  void LearnAssociation();

  UniqueFd fd_;
  bool connected_ = false;
  bool peer_closed_ = false;  // RecvMsg returned kClosed
  uint16_t outbound_streams_ = 0;
  std::optional<uint32_t> peer_adaptation_;  // from SCTP_ADAPTATION_INDICATION
  SockAddr local_;
  SockAddr peer_;
};

class KernelSctpListener final : public SctpListener {
 public:
  static Result<std::unique_ptr<KernelSctpListener>, IoError> Listen(const SockAddr& addr,
                                                                     const SctpOptions& options);

  Result<std::unique_ptr<SctpConnection>, IoError> AcceptSctp() override;
  [[nodiscard]] int fd() const override { return fd_.get(); }
  [[nodiscard]] SockAddr local_address() const override { return local_; }
  [[nodiscard]] bool doorbell() const override { return false; }

 private:
  KernelSctpListener(UniqueFd fd, SockAddr local) : fd_(std::move(fd)), local_(local) {}

  UniqueFd fd_;
  SockAddr local_;
};

// socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP) works: 0, else its errno.
int KernelSctpAvailable();

}  // namespace iwarpx::transport
