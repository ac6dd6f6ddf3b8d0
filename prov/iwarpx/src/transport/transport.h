// The lower-layer-protocol (LLP) interfaces the engine drives: a connected
// endpoint (Connection), a passive endpoint (Listener) and a datagram socket
// (DatagramSocket). TCP and UDP (tcp.h, udp.h), SCTP (sctp.h: kernel
// sockets or usrsctp), the fault injector (fault.h) and the test fakes
// (testing/fake_connection.h) implement them.
//
// Message-preserving LLPs (SCTP) extend Connection in sctp.h: SctpConnection
// adds SendMsg/RecvMsg with a per-message MessageInfo (Payload Protocol
// Identifier, stream id, unordered flag, end of message) and doorbell(),
// which says the fd() signals every event as readable (usrsctp's eventfd);
// SendV/RecvV keep their meaning there with a default MessageInfo.
//
// Contract common to every implementation
// - Never blocks. Readiness comes from a Poller (poller.h) on fd(); an
//   implementation without a descriptor (a fake) returns -1 and is driven by
//   calling it.
// - No exceptions, no logging; syscall failures carry errno in `err`.
// - Gather/scatter with iovec spans; the buffers stay owned by the caller and
//   are only used during the call. iovec counts above kMaxIov are truncated to
//   kMaxIov (the caller sees a short count and continues).
// - Not thread-safe: one object is used by one thread at a time (the progress
//   engine serialises). Distinct objects may be used concurrently.
//
// IoResult meanings
//   kOk          `bytes` were sent/received (> 0, or 0 when the iovecs held no
//                space at all). On a stream a short count is normal: the rest
//                of the iovecs was not taken/filled; call again on readiness.
//   kWouldBlock  nothing was transferred; wait for readiness.
//   kClosed      receive only: the peer shut down its write side (orderly end
//                of stream); nothing more will arrive.
//   kError       the endpoint failed (`err`: ECONNRESET, EPIPE, ETIMEDOUT,
//                ECONNREFUSED, ...); treat it as dead.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "base/result.h"
#include "transport/sock_addr.h"

namespace iwarpx::transport {

// Largest iovec count passed to one syscall (Linux UIO_MAXIOV / IOV_MAX).
inline constexpr size_t kMaxIov = 1024;

enum class IoStatus : uint8_t { kOk, kWouldBlock, kClosed, kError };

struct [[nodiscard]] IoResult {
  size_t bytes = 0;
  IoStatus status = IoStatus::kOk;
  int err = 0;  // errno when status == kError

  static IoResult Ok(size_t n) { return {n, IoStatus::kOk, 0}; }
  static IoResult WouldBlock() { return {0, IoStatus::kWouldBlock, 0}; }
  static IoResult Closed() { return {0, IoStatus::kClosed, 0}; }
  static IoResult Error(int e) { return {0, IoStatus::kError, e}; }
  [[nodiscard]] bool ok() const { return status == IoStatus::kOk; }
};

// The error side of Result<T, IoError> (setup calls, Accept): status is
// kWouldBlock or kError, never kOk.
struct IoError {
  IoStatus status = IoStatus::kError;
  int err = 0;
};

// Outcome of a call that has no value: err == 0 is success, else errno.
struct [[nodiscard]] Status {
  int err = 0;
  [[nodiscard]] bool ok() const { return err == 0; }
};

// Sum of the iov_len of `iov`.
inline size_t TotalLength(std::span<const iovec> iov) {
  size_t n = 0;
  for (const iovec& v : iov) n += v.iov_len;
  return n;
}

// A piece of a gather list that is lent memory (zero-copy hint): iov[index]
// lies in the registered region named `key` (an STag), readable until the
// region's owner reclaims it (mem::StagTable lending). A stream that keeps
// sent bytes after SendV returns (the RD stream keeps them for resending) may
// keep a pointer instead of a copy; every other stream copies as always.
struct LentIov {
  size_t index = 0;
  uint32_t key = 0;
};

// A connected LLP endpoint (TCP, SCTP).
class Connection {
 public:
  virtual ~Connection() = default;
  Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Gather send: takes a prefix of the bytes described by `iov` (all of it
  // on a message-preserving LLP, where a short count never happens).
  virtual IoResult SendV(std::span<const iovec> iov) = 0;
  // SendV with the pieces of `iov` that are lent memory (ascending index).
  virtual IoResult SendVLent(std::span<const iovec> iov, std::span<const LentIov> /*lent*/) {
    return SendV(iov);
  }
  // Whole-ULPDU send, for a connection that carries every FPDU as a message
  // of its own without MPA CRC or markers (the RD stream, rd/rd_stream.h):
  // `ulpdu` is one ULPDU (DDP/RDMAP header first) that the caller would
  // otherwise frame as one FPDU for SendV. kOk (bytes: the ULPDU's length):
  // taken as that FPDU would have been; kWouldBlock: nothing taken (no room
  // now, or no such send on this connection: the default); kError as SendV.
  virtual IoResult SendWhole(std::span<const iovec> /*ulpdu*/) { return IoResult::WouldBlock(); }
  // Scatter receive: fills `iov` in order with the next bytes of the stream.
  // For direct placement the engine passes iov[0] = the rest of the current
  // payload in registered memory and iov[1] = a staging buffer for the next
  // headers. On a message-preserving LLP one call returns at most one message.
  virtual IoResult RecvV(std::span<const iovec> iov) = 0;
  [[nodiscard]] virtual bool preserves_message_boundaries() const = 0;

  // A connection made by a non-blocking connect starts "connecting"
  // (connected() false). When fd() turns writable (or reports an error), the
  // caller calls FinishConnect(): kOk = connected, kWouldBlock = still in
  // progress, kError = the connect failed (err = ECONNREFUSED,
  // ETIMEDOUT, ...). Accepted connections are connected from the start and
  // FinishConnect() returns kOk.
  [[nodiscard]] virtual bool connected() const = 0;
  virtual IoResult FinishConnect() = 0;

  // Half-close: the peer's RecvV sees kClosed after the data already sent.
  virtual Status ShutdownWrite() = 0;
  // Bytes the LLP took (SendV returned them) that the peer's stack has not
  // acknowledged yet: TCP's unsent plus unacknowledged send queue (SIOCOUTQ).
  // A close while it is non-zero can lose them (a socket closed with unread
  // input sends RST and drops its send queue), so an endpoint that promised
  // delivery waits for 0 first. 0 where the LLP cannot tell.
  [[nodiscard]] virtual size_t unacknowledged_bytes() const { return 0; }

  [[nodiscard]] virtual int fd() const = 0;
  // Empty SockAddr until connected.
  [[nodiscard]] virtual SockAddr local_address() const = 0;
  [[nodiscard]] virtual SockAddr peer_address() const = 0;
};

// A passive endpoint.
class Listener {
 public:
  virtual ~Listener() = default;
  Listener() = default;
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // One pending connection, already non-blocking and connected; error
  // kWouldBlock when none is pending, kError with errno otherwise (errors
  // such as ECONNABORTED concern one pending connection only: keep
  // accepting).
  virtual Result<std::unique_ptr<Connection>, IoError> Accept() = 0;
  [[nodiscard]] virtual int fd() const = 0;
  [[nodiscard]] virtual SockAddr local_address() const = 0;
};

// One datagram of a batch.
//   send: `iov` gathers the datagram, `addr` is the destination; on return
//         `bytes` is what the kernel took (the whole datagram).
//   recv: `iov` is the scatter buffer; on return `addr` is the source,
//         `bytes` the bytes placed and `truncated` is set when the datagram
//         was larger than the buffer (MSG_TRUNC: the rest is lost).
struct DgramMessage {
  std::span<const iovec> iov;
  SockAddr addr;
  size_t bytes = 0;
  bool truncated = false;
};

// Result of a batch: the first `count` messages were done. kOk when
// count > 0 (a later message's error shows up on the next call);
// kWouldBlock or kError (err) when count == 0.
struct [[nodiscard]] BatchResult {
  size_t count = 0;
  IoStatus status = IoStatus::kOk;
  int err = 0;
  [[nodiscard]] bool ok() const { return status == IoStatus::kOk; }
};

// A datagram socket (UDP now). Each SendTo/message is one datagram: it is
// sent whole or not at all (kError EMSGSIZE when too large).
class DatagramSocket {
 public:
  virtual ~DatagramSocket() = default;
  DatagramSocket() = default;
  DatagramSocket(const DatagramSocket&) = delete;
  DatagramSocket& operator=(const DatagramSocket&) = delete;

  virtual IoResult SendTo(const SockAddr& to, std::span<const iovec> iov) = 0;
  // At most kMaxBatch messages per call; the rest is left for the next call.
  virtual BatchResult SendBatch(std::span<DgramMessage> msgs) = 0;
  virtual BatchResult RecvBatch(std::span<DgramMessage> msgs) = 0;
  [[nodiscard]] virtual int fd() const = 0;
  [[nodiscard]] virtual SockAddr local_address() const = 0;

  static constexpr size_t kMaxBatch = 64;
};

}  // namespace iwarpx::transport
