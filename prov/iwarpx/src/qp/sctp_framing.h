// SctpFraming: the lower edge of a QueuePair on an SCTP association (iWARP
// over SCTP, RFC 5043; WIRE.md §5; docs/design.md "iWARP over SCTP"). There
// is no MPA on SCTP: one DDP segment is one SCTP user message with Payload
// Protocol Identifier 16, and SCTP's checksum protects it.
//
// Why an adapter: the QueuePair speaks FPDU images on a byte stream, and the
// RD service already runs it unchanged on a message LLP by translating those
// images at the Connection seam (rd/rd_stream.h). SctpFraming is the same
// split for SCTP, so every RDMAP/DDP check, placement rule and Terminate is
// the one engine's. The QueuePair creates it itself when its connection
// preserves_message_boundaries() (QueuePair::Create); it requires the
// outcome to have CRC and markers off (SCTP session setup negotiates neither).
//
// Transmit (SendV): the gather list holds whole FPDU images (2-byte
// ULPDU_Length | ULPDU | PAD | CRC field). Each image becomes one SendMsg of
// exactly its ULPDU (gathered, not copied here), PPID 16, stream 0, ordered.
// SendMsg is whole-or-nothing, so a short count always ends at an image
// boundary and the QP never has part of a segment outstanding. A gather list
// whose first image is incomplete is a caller bug: kError EMSGSIZE.
//
// Streams: every segment, tagged or not, goes on stream 0, ordered. The
// engine's receive checks rely on one ordered sequence per direction: a Read
// Response's TO must continue the ORQ head's (a Read Response overtaking its
// predecessor would be refused), Read and Atomic Responses must complete in
// ORQ order, and RFC 5040 requires an RDMA Write to be placed before a later
// Send completes — none of which holds once tagged segments travel on other
// streams (ordered or not) without a cross-stream barrier in the receiver.
// Spreading tagged segments over streams 1..n-1 is left for when the engine
// has one (docs/design.md).
//
// Receive (RecvV): one SCTP message is one segment. A message is received
// whole into a per-connection buffer of wire::kMaxUlpduLength bytes (pieces
// of a partially delivered message are joined), then handed to the caller as
// the FPDU image the QP parses (ULPDU_Length, the message, zero PAD and CRC
// field), possibly over several calls. A message shorter than a DDP header is
// passed on unchanged, so the QP refuses it exactly as a short FPDU on TCP.
// Refused here (refusal() says the Terminate cause; RecvV then returns kError
// EPROTO, every later call too, while the association stays up so the QP can
// send its Terminate):
//   - a PPID other than 16 (a session control message, PPID 17, after setup
//     included): LLP / invalid request or reply;
//   - a message longer than wire::kMaxUlpduLength (not end_of_message once
//     the buffer is full): LLP / ULPDU length mismatch.
// Messages already complete before a refused one are delivered first.
//
// Everything else (connect state, shutdown, fd) is the SctpConnection's.
// Not thread-safe (as every Connection); borrows the SctpConnection, which
// must outlive it.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "transport/sctp.h"
#include "transport/transport.h"
#include "wire/error.h"

namespace iwarpx::qp {

// PPID of a DDP segment (RFC 5043, IANA "DDP Segment Chunk").
inline constexpr uint32_t kSctpPpidDdpSegment = 16;

class SctpFraming final : public transport::Connection {
 public:
  explicit SctpFraming(transport::SctpConnection& sctp);

  transport::IoResult SendV(std::span<const iovec> iov) override;
  transport::IoResult RecvV(std::span<const iovec> iov) override;
  // True: a short RecvV does not mean the association is drained (the QP
  // reads on until kWouldBlock, which also clears a usrsctp doorbell).
  [[nodiscard]] bool preserves_message_boundaries() const override { return true; }
  [[nodiscard]] bool connected() const override { return sctp_.connected(); }
  transport::IoResult FinishConnect() override { return sctp_.FinishConnect(); }
  transport::Status ShutdownWrite() override { return sctp_.ShutdownWrite(); }
  [[nodiscard]] int fd() const override { return sctp_.fd(); }
  [[nodiscard]] transport::SockAddr local_address() const override { return sctp_.local_address(); }
  [[nodiscard]] transport::SockAddr peer_address() const override { return sctp_.peer_address(); }

  // Set once an inbound message was refused (see the file comment).
  [[nodiscard]] const std::optional<wire::TermCause>& refusal() const { return refusal_; }
  // Segments sent and received so far (tests).
  [[nodiscard]] uint64_t messages_sent() const { return messages_sent_; }
  [[nodiscard]] uint64_t messages_received() const { return messages_received_; }

 private:
  // Receives (the rest of) one message into rx_buf_. kOk when a whole
  // message is there (image set up), otherwise what stops it.
  transport::IoResult ReceiveMessage();
  void Refuse(wire::TermCause cause) { refusal_ = cause; }

  transport::SctpConnection& sctp_;
  std::optional<wire::TermCause> refusal_;
  std::unique_ptr<uint8_t[]> rx_buf_;  // wire::kMaxUlpduLength bytes
  size_t rx_fill_ = 0;                 // bytes of the message being received
  uint32_t rx_ppid_ = 0;               // PPID of the message being received
  // The FPDU image of the last complete message: image_len_ bytes, of which
  // image_off_ were handed out. Nothing pending when equal.
  size_t image_len_ = 0;
  size_t image_off_ = 0;
  size_t msg_len_ = 0;
  uint64_t messages_sent_ = 0;
  uint64_t messages_received_ = 0;
};

}  // namespace iwarpx::qp
