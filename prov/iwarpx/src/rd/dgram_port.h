// DgramPort: one UDP socket shared by the datagram queue pairs bound to it
// (docs/wire.md §3; seed 002: many QPs per socket, told apart by QP number).
// It frames outgoing datagrams (header + ULPDU parts + pad/CRC trailer in one
// gather send), reads incoming ones in batches into its own receive buffers,
// decodes them (wire/dgram.h) and hands each valid one to the receiver
// attached to its dst_qpn. Everything that fails is dropped and counted,
// never answered (no reflection toward a spoofed source). A bundle (flag B,
// docs/wire.md §3.6.1; its records all checked by the decoder) is handed to
// the receiver as the data datagrams its records stand for, one call each,
// in record order: record i with seq + i, the ack fields on the first only,
// R on the last only, more_records on all but the last, later_record on all
// but the first (only the first may draw a RESET). A bad record drops
// the whole datagram (malformed).
//
// Contract:
// * Single-threaded: the progress engine calls it under its lock.
// * No allocation after construction (receive buffers are preallocated:
//   batch x kDgramMaxSize bytes).
// * A DecodedDgram handed to DgramReceiver::OnDatagram views the port's
//   buffer: valid only during the call.
// * CRC policy: outgoing datagrams carry a CRC when `crc` is on; incoming ones
//   are verified when they carry one, and dropped (PortCounters::no_crc) when
//   they do not and `require_crc` is set.
//
// In-place receive (zero copy for RD Read Responses). With a
// PlacementPredictor set, each read first asks it where the next datagrams'
// payloads belong: "datagram seq S of session X from peer QP Q is the Read
// Response for (STag, TO) whose payload goes to `dest`". For each guess the
// port receives the datagram into three pieces — its own head buffer (the
// 40-byte header and the 14-byte tagged DDP header), `dest`, and the rest of
// its own buffer for pad and CRC — so a right guess lands the payload where
// the QP places it and nobody copies it again (the QP sees its source and
// destination are the same bytes). Then, before anything is dispatched, every
// guessed datagram is checked against its guess (size, source, QPNs, session,
// seq, Read Response opcode, STag, TO): one that differs in anything is put
// back together in the port's buffer (a copy, as without a guess) and
// dispatched like any other. Either way a datagram is decoded, checked,
// counted and delivered exactly as without the predictor; the predictor only
// decides where its bytes are written first. What makes that safe is the
// predictor's promise (PlacementPredictor): whatever lands in `dest` for a
// wrong guess, or a right one that fails its CRC, is overwritten by the right
// bytes before anyone may read them. Right guesses are also decoded (their
// CRC read from the sink) before the first dispatch: a dispatch may complete
// or fail a Read, after which the application may free its sink. A read whose
// guesses were all wrong and that copied at least kCostlyMiss bytes back out
// of a guessed range makes the port stop asking for a while (the next 1, 3,
// 7 ... up to kMaxGuessBackoff reads that receive datagrams; a right guess
// resets it), so a peer whose Read Responses are interleaved with other bulk
// traffic pays that copy rarely.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/bytes.h"
#include "base/result.h"
#include "transport/transport.h"
#include "wire/dgram.h"
#include "wire/dgram_ud.h"
#include "wire/error.h"

namespace iwarpx::rd {

class DgramReceiver {
 public:
  virtual ~DgramReceiver() = default;
  virtual void OnDatagram(const wire::DecodedDgram& dgram, const transport::SockAddr& from) = 0;
  // A UD Send decoded in one step (wire/dgram_ud.h), CRC policy already
  // applied. A receiver that takes it returns true; the default returns
  // false without doing anything, and the port then decodes the same
  // datagram generically and calls OnDatagram (the RD receivers).
  virtual bool OnUdSend(const wire::UdSendView& /*send*/, const transport::SockAddr& /*from*/) {
    return false;
  }
};

// One guess of PlacementPredictor (see the file comment).
struct PlacementGuess {
  transport::SockAddr from;  // the peer's address
  uint32_t dst_qpn = 0;      // our QP
  uint32_t src_qpn = 0;      // the peer's QP
  uint32_t session = 0;      // the peer's current session
  uint32_t seq = 0;          // the datagram's RD sequence number
  uint32_t stag = 0;         // the Read Response's sink STag and TO
  uint64_t to = 0;
  MutableByteSpan dest;  // where its payload goes; the payload is exactly dest.size() bytes
};

class PlacementPredictor {
 public:
  virtual ~PlacementPredictor() = default;
  // Up to out.size() guesses for the next datagrams in the order they would
  // arrive; returns how many were written (0: receive as usual). Promise:
  // until every guessed datagram has been dispatched, nothing but the
  // receive writes to any `dest`, each `dest` is memory the receiver may
  // overwrite now (registered, writable, not yet validly filled: an
  // outstanding Read's unfilled sink range), and the bytes there are
  // overwritten with the right ones before anyone may read them.
  virtual size_t PredictPlacement(std::span<PlacementGuess> out) = 0;
};

struct PortConfig {
  bool crc = true;           // FI_IWARPX_DGRAM_CRC
  bool require_crc = false;  // drop datagrams without one
  size_t batch = 16;         // datagrams read per RecvBatch call (<= kMaxBatch)
};

// Why incoming datagrams were dropped, and how many were delivered.
struct PortCounters {
  uint64_t delivered = 0;
  uint64_t truncated = 0;    // larger than kDgramMaxSize
  uint64_t no_crc = 0;       // C clear while require_crc
  uint64_t unknown_qpn = 0;  // no receiver attached to dst_qpn
  uint64_t bad_crc = 0;
  uint64_t malformed = 0;  // any other decode failure
  uint64_t send_errors = 0;
  uint64_t placed = 0;        // datagrams received in place (a PlacementPredictor's right guess)
  uint64_t place_misses = 0;  // guessed, but another datagram came: put back together
  uint64_t bundles = 0;       // of `delivered`, bundles (each handed on as its records)
  uint64_t bundles_sent = 0;  // SendBundle datagrams the socket took
};

class DgramPort {
 public:
  DgramPort(transport::DatagramSocket& socket, const PortConfig& config);

  // Routes datagrams for `qpn` to `receiver` (false if the QPN is taken).
  bool Attach(uint32_t qpn, DgramReceiver* receiver);
  void Detach(uint32_t qpn);

  // Sends one datagram: `header` (its C flag follows the port's policy) and
  // the ULPDU parts, which are only read. kWouldBlock leaves nothing sent.
  // A small one (ULPDU <= kFlatUlpduMax) is built in one buffer with one CRC
  // pass and sent as one iovec (cheaper than four pieces; ~0.05 us at 8 B).
  transport::IoStatus Send(const transport::SockAddr& to, const wire::DgramHeader& header,
                           std::span<const ByteSpan> ulpdu);

  // Sends one bundle (docs/wire.md §3.6.1): `header` (B is set here, C
  // follows the port's policy) and the records made of `segments` (n >= 2,
  // each >= 14 bytes, together at most kDgramMaxUlpdu bytes as records),
  // which are only read; built in one buffer of the port (made at the first
  // bundle) and sent as one iovec. kWouldBlock leaves nothing sent; kError
  // for segments the format cannot carry.
  transport::IoStatus SendBundle(const transport::SockAddr& to, const wire::DgramHeader& header,
                                 std::span<const ByteSpan> segments);

  // Sends one UD Send (wire/dgram_ud.h) carrying the payload parts, which
  // are only read: with at most 238 payload bytes it is built in one buffer
  // with one CRC pass by EncodeUdSend (the bytes Send() would send, without
  // the generic encoders' work); a larger one goes through Send().
  transport::IoStatus SendUd(const transport::SockAddr& to, const wire::UdSendFields& fields,
                             std::span<const ByteSpan> payload);

  // One datagram of a SendBatch: `to` and the ULPDU parts are only read, and
  // must stay valid during the call.
  struct OutDgram {
    const transport::SockAddr* to = nullptr;
    wire::DgramHeader header;
    std::span<const ByteSpan> ulpdu;
  };
  // Sends up to kMaxBatch datagrams, in order, with one sendmmsg. `count` is
  // how many the socket took. A short count with kOk: call again for the
  // rest (the next call says why they stopped). count == 0: kWouldBlock
  // (nothing more for now) or kError (the first one failed, e.g. EMSGSIZE;
  // the caller may go on with the ones after it).
  transport::BatchResult SendBatch(std::span<const OutDgram> out);

  // Reads and dispatches up to `budget` datagrams; returns how many were read.
  size_t OnReadable(size_t budget);
  // Receive in place where `p` guesses right (nullptr: never). `p` must
  // outlive the port or be reset first.
  void SetPredictor(PlacementPredictor* p) { predictor_ = p; }

  [[nodiscard]] const PortCounters& counters() const { return counters_; }
  [[nodiscard]] transport::DatagramSocket& socket() { return socket_; }
  [[nodiscard]] int fd() const { return socket_.fd(); }

 private:
  static constexpr uint32_t kMaxGuessBackoff = 63;
  // The head piece of an in-place receive: datagram header + tagged DDP header.
  static constexpr size_t kHeadPiece = wire::kDgramHeaderSize + wire::kDgramMinDdpSegment;
  struct InPlace {
    std::array<uint8_t, kHeadPiece> head;
    std::array<iovec, 3> iov;
  };

  // A guessed datagram that matched, decoded before anything is dispatched.
  struct SplitDecode {
    wire::DecodedDgram dgram;
    wire::WireError err{};
    bool ok = false;
  };
  enum class Settled : uint8_t { kHit, kMiss, kCostlyMiss };
  // A wrong guess that landed this many bytes in its dest counts for the backoff.
  static constexpr size_t kCostlyMiss = 4096;

  void Dispatch(ByteSpan bytes, bool truncated, const transport::SockAddr& from);
  // The one-step path of a UD Send: false when its receiver wants the
  // generic decode (nothing counted then).
  bool DeliverUdSend(const wire::UdSendView& send, const transport::SockAddr& from);
  // The receiver attached to `qpn`, or nullptr (remembers the last answer).
  DgramReceiver* ReceiverFor(uint32_t qpn);
  void CountUndecodable(wire::WireError e);
  void DeliverDecoded(const wire::DecodedDgram& d, const transport::SockAddr& from);
  // A decoded bundle's records, each as its data datagram (file comment).
  void DeliverBundle(const wire::DecodedDgram& d, const transport::SockAddr& from);
  // Points the first guesses' messages at their head, dest and tail; returns how many.
  size_t Guess(size_t want);
  // After the read: kHit if message i matched its guess (its payload is in
  // place; split_[i] holds its decode); otherwise it was put back together in
  // its buffer, kCostlyMiss if kCostlyMiss bytes or more had landed in dest.
  Settled Settle(size_t i);
  [[nodiscard]] uint8_t* Buffer(size_t i) { return buffers_.data() + i * wire::kDgramMaxSize; }

  transport::DatagramSocket& socket_;
  PortConfig config_;
  std::unordered_map<uint32_t, DgramReceiver*> receivers_;
  // ReceiverFor's last answer (a port mostly serves one QP); reset by
  // Attach and Detach.
  uint32_t last_qpn_ = 0;
  DgramReceiver* last_receiver_ = nullptr;
  std::vector<uint8_t> buffers_;  // batch x kDgramMaxSize
  std::vector<iovec> iovs_;
  std::vector<transport::DgramMessage> msgs_;
  PlacementPredictor* predictor_ = nullptr;
  std::vector<PlacementGuess> guesses_;  // allocated with the first predictor use
  std::vector<InPlace> in_place_;
  std::vector<uint8_t> matched_;
  std::vector<SplitDecode> split_;
  uint32_t guess_backoff_ = 0;    // reads without guesses after the next all-wrong one
  uint32_t guess_skip_ = 0;       // reads left without guesses
  bool last_read_empty_ = false;  // the last read got nothing: probe with one
  // Send()'s buffer for a small datagram built whole.
  static constexpr size_t kFlatUlpduMax = 256;
  alignas(8) std::array<uint8_t, wire::DgramSize(kFlatUlpduMax)> flat_{};
  // SendBundle's buffer: kDgramMaxSize bytes, made at the first bundle (a
  // port that never bundles keeps none).
  std::unique_ptr<uint8_t[]> bundle_;
  PortCounters counters_;
};

}  // namespace iwarpx::rd
