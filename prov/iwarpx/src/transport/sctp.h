// SCTP behind the transport interface (transport.h): one-to-one style
// associations whose user messages keep their boundaries, with two backends
// chosen by MakeSctpTransport(): the kernel's SCTP sockets (sctp_kernel.h)
// and usrsctp, SCTP in user space over UDP encapsulation (RFC 6951;
// sctp_usrsctp.h). iWARP over SCTP (RFC 5043) is built on this: one DDP
// segment per message with PPID 16, session control with PPID 17.
//
// What SCTP adds to Connection (the interface extension of transport.h)
// - SctpConnection::SendMsg / RecvMsg carry a MessageInfo per message: the
//   Payload Protocol Identifier, the stream id and the unordered flag.
//   SendV/RecvV are SendMsg/RecvMsg with the connection's default send info
//   (set_default_send_info; initially PPID 16, stream 0, ordered) and the
//   receive info dropped.
// - preserves_message_boundaries() is true. One SendMsg sends one whole
//   message or nothing (kWouldBlock when the send buffer has no room for all
//   of it; kError EMSGSIZE when it can never fit). One RecvMsg returns bytes of
//   at most one message; info.end_of_message is false when the message was
//   larger than the buffers, and the next calls return the rest of it.
// - stream ids must be < outbound_streams() (the count negotiated at
//   association setup; kError EINVAL otherwise).
// - ShutdownWrite() starts SCTP's graceful shutdown. SCTP has no half-open
//   state: data already queued in both directions is delivered, then both
//   ends' RecvMsg return kClosed and neither can send. After the peer's
//   shutdown was seen (kClosed), ShutdownWrite() succeeds doing nothing.
// - Both ends advertise the Adaptation Layer Indication with code point 1
//   (DDP, RFC 5043 §5.1) where the backend allows it (both do), unless
//   SctpOptions::adaptation_indication says otherwise (tests only).
// - peer_adaptation_indication(): the indication the peer sent in its INIT or
//   INIT-ACK, learnt from the SCTP_ADAPTATION_INDICATION notification (RFC
//   6458 §6.1.6; both backends subscribe to it, RecvMsg reads and skips it).
//   The stack queues that notification when the association comes up, ahead
//   of every message of the association, and sends none when the peer sent no
//   indication: so once RecvMsg has returned a message, nullopt means the
//   peer sent none. Before that, nullopt means "not known yet".
//
// A dead peer (SctpLimits, applied by both backends to every socket before it
// connects or listens; accepted associations inherit the listener's)
// - A peer process that dies without an ABORT (a SIGKILLed usrsctp peer: its
//   SCTP died with it) is only noticed by retransmission limits. With SCTP's
//   defaults (RTO 1..60 s, 10 association retransmissions, heartbeat every
//   30 s) that takes about six minutes. The limits below end it in seconds.
// - The arithmetic. A timer that expires unanswered counts one error and
//   doubles the RTO (capped at rto_max); any answer (SACK of new data,
//   HEARTBEAT-ACK) resets the count; the association ends (kError ETIMEDOUT
//   from RecvMsg, ECONNABORTED from usrsctp when heartbeats ended it, ENOENT
//   from a usrsctp send after the end; then kClosed) when the count exceeds
//   assoc_max_retrans, i.e. at the (assoc_max_retrans + 1)-th timeout in a
//   row. On loopback the measured RTT is below the 200 ms delayed SACK, so
//   the RTO sits at rto_min. Defaults: rto_min 400, rto_max 1000,
//   assoc_max_retrans 4, heartbeat 500 ms.
//     Sending to a dead peer (T3-rtx timer): 400 + 800 + 1000 + 1000 + 1000
//     = 4.2 s, at most 5 * rto_max = 5 s.
//     Idle (heartbeats only; a HEARTBEAT leaves every heartbeat_interval +
//     RTO/2 + random(0..RTO) while the path is idle and is counted as lost at
//     the next one): 6 periods, 6 * 500 + (400 + 400 + 800 + 3 * 1000) * [0.5..1.5]
//     = 5.3 .. 9.9 s, 7.6 s on average.
//   Both stay under the 10 s of FI_IWARPX_RD_TIMEOUT's default. Measured
//   (usrsctp, loopback, sctp_liveness_test.cc): 3.0-3.2 s sending, quicker
//   than the T3 sum because the heartbeat timer counts too once the blocked
//   sender leaves the path idle; 6.7-8.2 s idle. SCTP's defaults: see
//   docs/design.md "A dead peer" for the number measured without the limits.
// - Why it cannot trip on a merely busy peer: SACKs and HEARTBEAT-ACKs are
//   sent by the peer's SCTP stack (usrsctp's own threads, or its kernel),
//   not by the application, so only a stack that says nothing for about 3 s
//   in a row (the quickest measured end) counts; zero-window probes to a peer that does not read
//   are not counted at all (RFC 4960 §6.2); rto_min (400) stays above the delayed SACK (200 ms) so
//   a lone unacknowledged packet does not time out.
//
// Readiness (fd())
// - Kernel backend: the socket itself, exactly like TCP.
// - usrsctp backend: an eventfd "doorbell" written from usrsctp's upcall. It
//   turns readable whenever anything happened (data, send space, connect
//   finished, error, incoming association) and stays readable until a call
//   returns kWouldBlock with nothing left to report. It is always writable, so
//   a caller must never wait for kWritable on it: doorbell() is true and the
//   caller waits for kReadable and then retries its pending send /
//   FinishConnect as well as RecvMsg.
//
// Backend choice
// - SctpBackend::kAuto = kernel if socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP)
//   works, else usrsctp (this machine: EPROTONOSUPPORT, so usrsctp). Forcing
//   kKernel where the kernel has no SCTP fails with that errno. Parsing
//   FI_IWARPX_SCTP_BACKEND into the enum belongs to ofi/.
//
// Addresses under usrsctp: every process has one UDP encapsulation port
// (usrsctp_stack.h). A listener asked for port 0 takes the SCTP port equal to
// that UDP port when it is free, so "ip:port" of that listener names both;
// A listener asked for a fixed port P that is the process's first usrsctp
// user starts the stack on UDP port P when it is free, so "ip:P" names both
// too (fi_pingpong's server on a given port). SctpOptions::peer_encaps_port
// = 0 means "the peer's UDP port equals the SCTP port connected to". Other
// listeners need the explicit UDP port.
//
// Thread-safety as in transport.h.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "base/result.h"
#include "transport/sock_addr.h"
#include "transport/transport.h"
#include "wire/sctp_session.h"

namespace iwarpx::transport {

enum class SctpBackend : uint8_t { kAuto, kKernel, kUsrsctp };

const char* ToString(SctpBackend b);

// The per-message side data of an SCTP message.
struct MessageInfo {
  uint32_t ppid = 16;          // Payload Protocol Identifier (host byte order)
  uint16_t stream = 0;         // stream id, < outbound_streams()
  bool unordered = false;      // send: deliver out of order; recv: was sent so
  bool end_of_message = true;  // recv only: this call returned the message's end
};

// Liveness limits of an association (see "A dead peer" above). Zero keeps
// the backend's default for that field.
struct SctpLimits {
  uint32_t rto_initial_ms = 1000;  // RTO before the first RTT measurement
  uint32_t rto_min_ms = 400;
  uint32_t rto_max_ms = 1000;
  uint16_t assoc_max_retrans = 4;  // SCTP_ASSOCINFO sasoc_asocmaxrxt
  uint16_t path_max_retrans = 4;   // SCTP_PEER_ADDR_PARAMS spp_pathmaxrxt
  uint32_t heartbeat_interval_ms = 500;

  bool operator==(const SctpLimits&) const = default;
};

struct SctpOptions {
  uint16_t streams = 8;            // outbound streams asked for / inbound accepted
  uint16_t peer_encaps_port = 0;   // usrsctp: peer's UDP port; 0 = peer.port()
  uint16_t max_init_attempts = 4;  // INIT retransmissions before ETIMEDOUT
  uint16_t max_init_timeout_ms = 1000;
  int backlog = 128;
  SctpLimits limits;
  // The Adaptation Layer Indication this end sends (RFC 5061); nullopt sends
  // none. Anything but the default is for tests of a peer that is not an
  // RFC 5043 one.
  std::optional<uint32_t> adaptation_indication = wire::kSctpAdaptationCodeDdp;
};

class SctpConnection : public Connection {
 public:
  virtual IoResult SendMsg(std::span<const iovec> iov, const MessageInfo& info) = 0;
  virtual IoResult RecvMsg(std::span<const iovec> iov, MessageInfo& info) = 0;

  IoResult SendV(std::span<const iovec> iov) final { return SendMsg(iov, default_send_info_); }
  IoResult RecvV(std::span<const iovec> iov) final {
    MessageInfo ignored;
    return RecvMsg(iov, ignored);
  }
  [[nodiscard]] bool preserves_message_boundaries() const final { return true; }

  // Outbound streams of the association (0 until connected).
  [[nodiscard]] virtual uint16_t outbound_streams() const = 0;
  // See "Readiness" above.
  [[nodiscard]] virtual bool doorbell() const = 0;
  [[nodiscard]] virtual SctpBackend backend() const = 0;
  // The limits in force on the association, read back from the stack
  // (getsockopt); errno when it cannot say (e.g. not connected yet).
  [[nodiscard]] virtual Result<SctpLimits, int> limits() const = 0;
  // The peer's Adaptation Layer Indication (see the header comment).
  [[nodiscard]] virtual std::optional<uint32_t> peer_adaptation_indication() const = 0;

  void set_default_send_info(const MessageInfo& info) { default_send_info_ = info; }
  [[nodiscard]] const MessageInfo& default_send_info() const { return default_send_info_; }

 private:
  MessageInfo default_send_info_;
};

class SctpListener : public Listener {
 public:
  virtual Result<std::unique_ptr<SctpConnection>, IoError> AcceptSctp() = 0;
  Result<std::unique_ptr<Connection>, IoError> Accept() final {
    auto c = AcceptSctp();
    if (!c.ok()) return Err{c.error()};
    return std::unique_ptr<Connection>(std::move(c).value());
  }
  [[nodiscard]] virtual bool doorbell() const = 0;
};

// kAuto -> kKernel or kUsrsctp as described above; kKernel -> error (errno of
// socket()) when the kernel has no SCTP; kUsrsctp -> kUsrsctp.
Result<SctpBackend, IoError> ResolveSctpBackend(SctpBackend requested);

// Starts a non-blocking association to `peer` (FinishConnect as for TCP).
Result<std::unique_ptr<SctpConnection>, IoError> SctpConnect(SctpBackend backend,
                                                             const SockAddr& peer,
                                                             const SctpOptions& options = {});
// Listens on `addr` (port 0: see "Addresses under usrsctp").
Result<std::unique_ptr<SctpListener>, IoError> SctpListen(SctpBackend backend, const SockAddr& addr,
                                                          const SctpOptions& options = {});

}  // namespace iwarpx::transport
