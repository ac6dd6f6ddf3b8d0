// usrsctp backend of SctpConnection / SctpListener (sctp.h): SCTP in user
// space over UDP encapsulation (RFC 6951), for hosts whose kernel has no SCTP.
//
// Contract (beyond sctp.h)
// - Each object holds a UsrsctpStack reference (usrsctp_stack.h) and one
//   usrsctp one-to-one socket (SOCK_STREAM, IPPROTO_SCTP), non-blocking, with
//   SCTP_NODELAY, SCTP_RECVRCVINFO, max burst 0 (no burst limit), SCTP_INITMSG and the
//   liveness limits (SCTP_RTOINFO, SCTP_ASSOCINFO, SCTP_PEER_ADDR_PARAMS) from SctpOptions,
//   the SCTP_ASSOC_CHANGE and SCTP_ADAPTATION_INDICATION notifications, the DDP adaptation
//   indication (SctpOptions::adaptation_indication) and the remote UDP
//   encapsulation port.
// - The end of an association by the limits (a dead peer) shows as kError
//   from the next call: RecvMsg returns usrsctp's SO_ERROR of a one-to-one
//   socket that lost its association (ETIMEDOUT after data retransmissions,
//   ECONNABORTED after heartbeats; RecvMsg skips the SCTP_COMM_LOST
//   notification that comes first), SendMsg ENOENT (no association); an ABORT from the peer is
//   ECONNRESET; kClosed after that.
// - The end of a gracefully shut-down association is the SCTP_SHUTDOWN_COMP
//   notification (SCTP_ASSOC_CHANGE is subscribed; RecvMsg reads and skips
//   every other notification): usrsctp may free such an association late,
//   from a timer that rings no doorbell (the .cc, ReadNotification). After
//   kClosed, RecvMsg keeps returning kClosed.
// - fd() is the eventfd doorbell (sctp.h "Readiness"); doorbell() is true.
// - Accepted connections: the listener's upcall accepts them on usrsctp's
//   thread and keeps them until AcceptSctp (usrsctp_stack.h "Accept on the
//   stack's thread"; at most SctpOptions::backlog, past it AcceptSctp
//   accepts from usrsctp's queue itself). The doorbell rings once at
//   construction, so data queued before it existed is read. That covers
//   data whose packet's upcall went to the listener (usrsctp aims it at
//   so_head until the accept; a waiting connection's upcall rings the
//   listener's doorbell): usrsctp queues such data under the association's
//   lock, and the constructor takes that lock (SCTP_STATUS) after the
//   doorbell is registered and before it rings (docs/design.md "Accepted
//   connections"; usrsctp_accept_wakeup_test.cc).
// - usrsctp has no gather/scatter: SendMsg with more than one iovec copies
//   into a per-connection staging buffer (grown to the largest message sent,
//   then reused); RecvMsg with more than one iovec receives into a staging
//   buffer of at most kRecvStaging bytes and scatters from it (a larger
//   message arrives in several calls, end_of_message false until the last).
// - Destruction closes the socket (usrsctp_close: an association still up is
//   shut down gracefully in the background) after unregistering the doorbell.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "base/result.h"
#include "transport/fd.h"
#include "transport/sctp.h"

struct socket;

namespace iwarpx::transport {

class UsrsctpConnection final : public SctpConnection {
 public:
  static constexpr size_t kRecvStaging = size_t{256} * 1024;

  static Result<std::unique_ptr<UsrsctpConnection>, IoError> Connect(const SockAddr& peer,
                                                                     const SctpOptions& options);
  ~UsrsctpConnection() override;

  IoResult SendMsg(std::span<const iovec> iov, const MessageInfo& info) override;
  IoResult RecvMsg(std::span<const iovec> iov, MessageInfo& info) override;
  [[nodiscard]] bool connected() const override { return connected_; }
  IoResult FinishConnect() override;
  Status ShutdownWrite() override;
  [[nodiscard]] int fd() const override { return doorbell_.get(); }
  [[nodiscard]] SockAddr local_address() const override { return local_; }
  [[nodiscard]] SockAddr peer_address() const override { return peer_; }
  [[nodiscard]] uint16_t outbound_streams() const override { return outbound_streams_; }
  [[nodiscard]] bool doorbell() const override { return true; }
  [[nodiscard]] SctpBackend backend() const override { return SctpBackend::kUsrsctp; }
  [[nodiscard]] Result<SctpLimits, int> limits() const override;
  [[nodiscard]] std::optional<uint32_t> peer_adaptation_indication() const override {
    return peer_adaptation_;
  }
  // Diagnostics: the association's max burst (SCTP_MAX_BURST; 0 = no
  // limit, what every socket here asks for, see ConfigureThroughput in the
  // .cc), or errno.
  [[nodiscard]] Result<uint32_t, int> max_burst() const;
  // Diagnostics: the socket's receive buffer (SO_RCVBUF, usrsctp's sb_hiwat:
  // the association's receive window), or errno.
  [[nodiscard]] Result<uint32_t, int> receive_buffer() const;

 private:
  friend class UsrsctpListener;
  UsrsctpConnection(struct socket* so, UniqueFd doorbell, bool connected);
  // Called when a call finds nothing to do: empties the doorbell, then rings
  // it again if usrsctp still has something to report.
  void Rearm();
  // Send space rings the doorbell only while `want` (usrsctp_stack.h).
  void WantWrite(bool want);
  void LearnAssociation();
  // One usrsctp_recvv; nullopt when it read a notification that RecvMsg
  // skips (anything but the end of the association).
  std::optional<IoResult> RecvOnce(std::span<const iovec> iov, size_t total, MessageInfo& info);

  struct socket* so_ = nullptr;
  UniqueFd doorbell_;
  bool connected_ = false;
  bool peer_closed_ = false;  // RecvMsg returned kClosed
  bool want_write_ = true;    // mirrors UsrsctpStack::SetWantWrite for so_ (true at Register)
  uint16_t outbound_streams_ = 0;
  std::optional<uint32_t> peer_adaptation_;  // from SCTP_ADAPTATION_INDICATION
  SockAddr local_;
  SockAddr peer_;
  std::vector<uint8_t> send_staging_;
  std::vector<uint8_t> recv_staging_;
};

class UsrsctpListener final : public SctpListener {
 public:
  static Result<std::unique_ptr<UsrsctpListener>, IoError> Listen(const SockAddr& addr,
                                                                  const SctpOptions& options);
  ~UsrsctpListener() override;

  Result<std::unique_ptr<SctpConnection>, IoError> AcceptSctp() override;
  [[nodiscard]] int fd() const override { return doorbell_.get(); }
  [[nodiscard]] SockAddr local_address() const override { return local_; }
  [[nodiscard]] bool doorbell() const override { return true; }

 private:
  UsrsctpListener(struct socket* so, UniqueFd doorbell, SockAddr local)
      : so_(so), doorbell_(std::move(doorbell)), local_(local) {}

  struct socket* so_ = nullptr;
  UniqueFd doorbell_;
  SockAddr local_;
};

}  // namespace iwarpx::transport
