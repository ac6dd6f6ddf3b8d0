// The interface through which a QueuePair reports completions and connection
// events. The ofi layer implements it (CQ entries, counters, EQ events); tests
// implement it with a recorder. The engine knows nothing of libfabric.
//
// Contract
// * Called synchronously from inside QueuePair calls (Post*, OnReadable,
//   OnWritable, Start, Disconnect), on the caller's thread. An implementation
//   must not call back into the same QueuePair from a callback.
// * Success completions are reported only for WRs posted with kWrSignaled
//   (receives always complete). Every WR that does not succeed gets exactly
//   one OnError; a WR never gets both.
// * Data placed into a receive buffer or Read sink is valid once the success
//   completion arrives (after the carrying FPDUs' CRCs were verified). After an
//   error completion its contents are undefined.
#pragma once

#include <cstddef>
#include <cstdint>

#include "wire/error.h"

namespace iwarpx::qp {

enum class WcOp : uint8_t { kSend, kRecv, kWrite, kRead, kAtomic };

// Why a connection ended.
enum class TermOrigin : uint8_t {
  kSent,            // we detected an error and sent a Terminate
  kReceived,        // the peer sent a Terminate
  kConnectionLost,  // the LLP closed or failed without a Terminate
  kLocalClose,      // the local side called Disconnect()
};

struct WcError {
  TermOrigin origin = TermOrigin::kConnectionLost;
  wire::TermCause cause{};  // the Terminate cause (kLlpStreamLost for a lost connection)
};

// The libfabric prov_errno the engine suggests for `cause`:
// layer << 16 | etype << 8 | code.
constexpr int ProvErrno(wire::TermCause cause) {
  return (cause.layer << 16) | (cause.etype << 8) | cause.code;
}

// Details of a completed receive.
struct RecvInfo {
  bool has_imm = false;  // RFC 7306 Immediate Data (FI_REMOTE_CQ_DATA); bytes is 0
  uint64_t imm = 0;      // unless send_imm:
  // The Immediate Data belonged to a Send (iwarpx Send with Immediate Data):
  // `bytes` is the Send's length, placed in this receive's buffer.
  bool send_imm = false;
  bool solicited = false;         // Send with SE / Immediate Data with SE
  bool invalidated = false;       // Send with Invalidate: this STag was invalidated
  uint32_t invalidated_stag = 0;  // (FI_REMOTE_INVALIDATE-style reporting)
};

class CompletionSink {
 public:
  virtual ~CompletionSink() = default;

  virtual void OnSendComplete(uint64_t context) = 0;
  // `bytes`: the length of the received message.
  virtual void OnRecvComplete(uint64_t context, size_t bytes, const RecvInfo& info) = 0;
  // `op`: kWrite, kRead or kAtomic (the fetched value is already stored).
  virtual void OnRdmaComplete(uint64_t context, WcOp op) = 0;
  virtual void OnError(uint64_t context, WcOp op, const WcError& error) = 0;
  // The connection is usable (after the RTR arrived on a responder).
  virtual void OnEstablished() = 0;
  // The connection is over; called once, before the error completions.
  virtual void OnTerminated(wire::TermCause cause, TermOrigin origin) = 0;
  // Target side: the last segment of a peer's RDMA Write to `stag` was
  // placed (its CRC verified), reported in stream order with the receive
  // completions, so everything the Write carried is in place. For protocols
  // that detect Writes themselves (the RDM endpoint's RC-FP ring); a
  // zero-length Write (the RTR) is not reported. Default: nothing.
  virtual void OnRemoteWrite(uint32_t /*stag*/) {}
};

}  // namespace iwarpx::qp
