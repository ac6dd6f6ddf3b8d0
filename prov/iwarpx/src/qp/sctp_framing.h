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
// exactly its ULPDU (gathered, not copied here), PPID 16, ordered, on the
// stream the image's CRC field names (see "Streams"). SendMsg is
// whole-or-nothing, so a short count always ends at an image boundary and the
// QP never has part of a segment outstanding. A gather list whose first image
// is incomplete, or names a stream the association does not have, is a
// caller bug: kError EMSGSIZE / EINVAL.
//
// Streams (docs/design.md "Streams for untagged Sends", "Streams for Read
// Responses"; docs/wire.md §2.2). Stream 0, ordered, carries every segment
// except the untagged Sends a ULP put on another stream (SendWr::stream, the
// FI_IWARPX_SCTP_OPS extension) and the Read Responses, which go on the
// stream ReadResponseStream() picks from their sink STag, ordered, so all
// responses for one sink STag share a stream and keep their order. The QP
// says which stream an image goes on through the image's CRC field: CRC is
// never negotiated on SCTP, so the 4-byte field is free between the QP and
// this adapter; it holds the stream number big-endian in its low 16 bits (0:
// stream 0), bit 31 (kImageUnordered) asks for SCTP unordered delivery, and
// it never goes on the wire. RDMA Writes stay on stream 0: RFC 5040 §5.5
// wants them placed before a later Send completes, and nothing in a Send's
// header lets the receiver wait for a Write on another stream. Only Read
// Responses are ever sent unordered, and only when session setup negotiated
// it (kSctpSessionFlagUnorderedReadResp; the QP asks per image): the
// requester then matches them by STag, TO and length (queue_pair.h).
//
// The receive side keeps, per stream, the untagged QN 0 message in progress
// and refuses (Terminate, see below) what a correct sender never produces:
//   - a stream >= kMaxSctpStreams: LLP / invalid request or reply;
//   - on a stream other than 0, anything but a Send-family segment or a
//     tagged Read Response (Writes, Read/Atomic Requests, Atomic Responses,
//     Immediate Data, Terminate): LLP / invalid request or reply;
//   - a message delivered unordered that is not a tagged Read Response, or
//     any unordered message when the session did not negotiate unordered
//     Read Responses (accept_unordered false): LLP / invalid request or reply;
//   - a QN 0 message (Send family or Immediate Data, any stream) whose first
//     segment has MO != 0 or whose next segment does not continue it (same
//     MSN, MO = bytes so far): DDP untagged / invalid MO;
//   - a new QN 0 message whose MSN is not beyond the last one seen on its
//     stream (serial arithmetic; MSNs start at 1), or a segment with another
//     MSN while a message is in progress on the stream: DDP untagged / MSN
//     out of range.
// Only the per-stream order of MSNs is checked: an MSN skipped, or one
// reused on another stream, is not detected here (the QP refuses a reused
// MSN while that message is still in progress); buffers are assigned by
// arrival (queue_pair.h), so neither can misplace data.
// So the segments of one message arrive in order on one stream and the QP
// can match a continuation to its message by MSN alone. A segment whose DDP
// header does not decode is passed on: the QP refuses it as on TCP.
//
// Receive (RecvV): one SCTP message is one segment; the messages session
// setup received before its Accept (the constructor's `early`) come first,
// then the association's. A message is received
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
//     the buffer is full): LLP / ULPDU length mismatch;
//   - the stream rules above.
// Messages already complete before a refused one are delivered first.
//
// Everything else (connect state, shutdown, fd) is the SctpConnection's.
// Not thread-safe (as every Connection); borrows the SctpConnection, which
// must outlive it.
#pragma once

#include <sys/uio.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "transport/sctp.h"
#include "transport/sctp_message_queue.h"
#include "transport/transport.h"
#include "wire/error.h"

namespace iwarpx::qp {

// PPID of a DDP segment (RFC 5043, IANA "DDP Segment Chunk").
inline constexpr uint32_t kSctpPpidDdpSegment = 16;
// Streams an iwarpx QP sends on and accepts (0 .. kMaxSctpStreams - 1).
inline constexpr uint16_t kMaxSctpStreams = 16;

class SctpFraming final : public transport::Connection {
 public:
  // accept_unordered: the session negotiated unordered Read Responses, so
  // the peer may send them unordered (nothing else ever).
  // early: messages session setup received before its Accept (the DDP
  // segments that overtook it, cm/sctp_cep.h): received first, exactly as if
  // the association still held them (same checks, same refusals).
  explicit SctpFraming(transport::SctpConnection& sctp, bool accept_unordered = false,
                       transport::SctpMessageQueue early = {});

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
  // Streams Sends may use towards the peer: min(the association's outbound
  // streams, kMaxSctpStreams); 0 before the association is up.
  [[nodiscard]] uint16_t tx_streams() const;
  // Writes `stream` and the unordered bit into the CRC field of an outgoing
  // image (see "Streams").
  static void SetImageStream(uint8_t* crc_field, uint16_t stream, bool unordered = false);
  static constexpr uint32_t kImageUnordered = 0x80000000U;
  // The stream of a Read Response for `sink_stag` on an association with
  // `streams` usable outbound streams (tx_streams()): 1 + sink_stag %
  // (streams - 1), or 0 when there is only one (docs/wire.md §2.2).
  static uint16_t ReadResponseStream(uint32_t sink_stag, uint16_t streams);
  // Segments sent and received so far, in all and per stream (tests).
  [[nodiscard]] uint64_t messages_sent() const { return messages_sent_; }
  [[nodiscard]] uint64_t messages_received() const { return messages_received_; }
  // Segments sent / received with SCTP unordered delivery.
  [[nodiscard]] uint64_t unordered_sent() const { return unordered_sent_; }
  [[nodiscard]] uint64_t unordered_received() const { return unordered_received_; }
  [[nodiscard]] uint64_t messages_sent_on(uint16_t stream) const {
    return stream < kMaxSctpStreams ? sent_on_[stream] : 0;
  }
  [[nodiscard]] uint64_t messages_received_on(uint16_t stream) const {
    return stream < kMaxSctpStreams ? received_on_[stream] : 0;
  }

 private:
  // Receives (the rest of) one message into rx_buf_. kOk when a whole
  // message is there (image set up), otherwise what stops it.
  transport::IoResult ReceiveMessage();
  void Refuse(wire::TermCause cause) { refusal_ = cause; }
  // The stream rules for the complete message in rx_buf_ (msg_len_ bytes,
  // received on rx_stream_); false after Refuse.
  bool AdmitOnStream();

  // Receive side, per stream: the last QN 0 message that started on it.
  struct StreamRx {
    bool open = false;     // its last segment has not arrived yet
    uint32_t msn = 0;      // its MSN (0: none yet; MSNs start at 1)
    uint64_t next_mo = 0;  // open: the MO its next segment must have
  };
  std::array<StreamRx, kMaxSctpStreams> rx_streams_{};
  uint16_t rx_stream_ = 0;     // stream of the message being received
  bool rx_unordered_ = false;  // it was sent unordered
  bool accept_unordered_ = false;

  transport::SctpConnection& sctp_;
  transport::SctpMessageQueue early_;  // received before the association's next message
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
  uint64_t unordered_sent_ = 0;
  uint64_t unordered_received_ = 0;
  std::array<uint64_t, kMaxSctpStreams> sent_on_{};
  std::array<uint64_t, kMaxSctpStreams> received_on_{};
};

}  // namespace iwarpx::qp
