// DgramPort: one UDP socket shared by the datagram queue pairs bound to it
// (docs/wire.md §3; seed 002: many QPs per socket, told apart by QP number).
// It frames outgoing datagrams (header + ULPDU parts + pad/CRC trailer in one
// gather send), reads incoming ones in batches into its own receive buffers,
// decodes them (wire/dgram.h) and hands each valid one to the receiver
// attached to its dst_qpn. Everything that fails is dropped and counted,
// never answered (no reflection toward a spoofed source).
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
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/bytes.h"
#include "transport/transport.h"
#include "wire/dgram.h"
#include "wire/error.h"

namespace iwarpx::rd {

class DgramReceiver {
 public:
  virtual ~DgramReceiver() = default;
  virtual void OnDatagram(const wire::DecodedDgram& dgram, const transport::SockAddr& from) = 0;
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
};

class DgramPort {
 public:
  DgramPort(transport::DatagramSocket& socket, const PortConfig& config);

  // Routes datagrams for `qpn` to `receiver` (false if the QPN is taken).
  bool Attach(uint32_t qpn, DgramReceiver* receiver);
  void Detach(uint32_t qpn);

  // Sends one datagram: `header` (its C flag follows the port's policy) and
  // the ULPDU parts, which are only read. kWouldBlock leaves nothing sent.
  transport::IoStatus Send(const transport::SockAddr& to, const wire::DgramHeader& header,
                           std::span<const ByteSpan> ulpdu);

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

  [[nodiscard]] const PortCounters& counters() const { return counters_; }
  [[nodiscard]] transport::DatagramSocket& socket() { return socket_; }
  [[nodiscard]] int fd() const { return socket_.fd(); }

 private:
  void Dispatch(ByteSpan bytes, bool truncated, const transport::SockAddr& from);

  transport::DatagramSocket& socket_;
  PortConfig config_;
  std::unordered_map<uint32_t, DgramReceiver*> receivers_;
  std::vector<uint8_t> buffers_;  // batch x kDgramMaxSize
  std::vector<iovec> iovs_;
  std::vector<transport::DgramMessage> msgs_;
  PortCounters counters_;
};

}  // namespace iwarpx::rd
