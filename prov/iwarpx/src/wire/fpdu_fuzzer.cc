// libFuzzer target: FpduStreamParser / FpduReceiver on arbitrary bytes.
//
// Input layout:
//   byte 0  flags  bit0 CRC on · bit1 markers on · bit2 strict marker Reserved ·
//                  bit3 min_ulpdu 14 (else 0) · bits4-5 max_ulpdu 65535/1442/64/16 ·
//                  bits6-7 split mode (random 1..64 / single bytes /
//                  sizes read from the stream / random 1..2048)
//   byte 1  seed for the chunk sizes
//   byte 2  stream offset / 4 (marker grid position of the first byte)
//   rest    the TCP stream
// Invariants checked (__builtin_trap on violation):
//   * one chunk and many chunks give identical callbacks (same ULPDUs, same
//     single error, same order) and the same final state;
//   * a delivered ULPDU respects [min_ulpdu, max_ulpdu]; at most one OnError
//     and nothing after it;
//   * the pull core never takes more than Needed(), makes progress while not
//     failed, and agrees with the parser.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "wire/fpdu.h"

namespace {

using iwarpx::ByteSpan;
using iwarpx::wire::FpduReceiver;
using iwarpx::wire::FpduRxConfig;
using iwarpx::wire::FpduStreamParser;
using iwarpx::wire::FpduVisitor;
using iwarpx::wire::WireError;

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

uint64_t Hash(ByteSpan s) {
  uint64_t h = 1469598103934665603ull;
  for (uint8_t b : s) h = (h ^ b) * 1099511628211ull;
  return h ^ (uint64_t{s.size()} << 48);
}

struct Log : FpduVisitor {
  explicit Log(const FpduRxConfig& c) : config(c) {}
  void OnFpdu(ByteSpan ulpdu) override {
    Check(!errored);
    Check(ulpdu.size() >= config.min_ulpdu && ulpdu.size() <= config.max_ulpdu);
    events.push_back(Hash(ulpdu));
  }
  void OnError(WireError e) override {
    Check(!errored);
    errored = true;
    events.push_back(0xE0000000'00000000ull | static_cast<uint64_t>(e));
  }
  const FpduRxConfig& config;
  std::vector<uint64_t> events;
  bool errored = false;
};

struct Splitter {
  uint32_t state;
  uint8_t mode;
  ByteSpan stream;
  size_t next_index = 0;
  size_t Next() {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    switch (mode) {
      case 0: return 1 + state % 64;
      case 1: return 1;
      case 2: return stream.empty() ? 1 : 1 + stream[next_index++ % stream.size()] % 97;
      default: return 1 + state % 2048;
    }
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const uint8_t flags = data[0];
  FpduRxConfig config;
  config.crc = (flags & 0x01) != 0;
  config.markers = (flags & 0x02) != 0;
  config.strict_marker_reserved = (flags & 0x04) != 0;
  config.min_ulpdu = (flags & 0x08) != 0 ? iwarpx::wire::kMinDdpSegmentLength : 0;
  static constexpr size_t kMax[] = {65535, 1442, 64, 16};
  config.max_ulpdu = kMax[(flags >> 4) & 3];
  config.stream_offset = uint64_t{data[2]} * 4;
  const ByteSpan stream(data + 3, size - 3);

  // Run 1: the whole stream in one chunk.
  Log one(config);
  FpduStreamParser p1(config);
  p1.Feed(stream, one);

  // Run 2: the same bytes in chunks.
  Log many(config);
  FpduStreamParser p2(config);
  Splitter split{0x9E3779B9u ^ (uint32_t{data[1]} * 0x01000193u), static_cast<uint8_t>(flags >> 6),
                 stream};
  for (size_t pos = 0; pos < stream.size();) {
    const size_t n = split.Next();
    const size_t take = n < stream.size() - pos ? n : stream.size() - pos;
    p2.Feed(stream.subspan(pos, take), many);
    pos += take;
  }
  Check(one.events == many.events);
  Check(p1.failed() == p2.failed());
  Check(p1.mid_fpdu() == p2.mid_fpdu());
  if (p1.failed()) Check(p1.error() == p2.error());

  // Run 3: the pull core alone, offered everything that is left each time.
  FpduReceiver rx(config);
  size_t pos = 0;
  size_t completed = 0;
  while (pos < stream.size()) {
    const size_t needed = rx.Needed();
    auto step = rx.Advance(stream.subspan(pos));
    if (!step.ok()) {
      Check(rx.failed() && rx.Needed() == 0 && step.error() == p1.error());
      break;
    }
    Check(needed > 0);
    Check(step->consumed > 0 && step->consumed <= needed);
    pos += step->consumed;
    if (step->fpdu_complete) ++completed;
  }
  const size_t delivered = one.events.size() - (one.errored ? 1 : 0);
  Check(completed == delivered);
  Check(rx.failed() == p1.failed());
  return 0;
}
