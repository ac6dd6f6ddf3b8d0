// libFuzzer target: marker insertion (MarkerInserter) and marker stripping
// (FpduStreamParser with markers) round trip, plus single-byte corruption.
//
// Input layout:
//   byte 0    flags  bit0 CRC on · bit1 markers on (else plain EncodeFpdu) ·
//                    bit2 corrupt one byte · bits3-7 unused
//   byte 1    seed for the read splits
//   byte 2    starting stream position / 4
//   bytes 3-4 corruption position (BE16, modulo the stream length)
//   rest      FPDU descriptions: one length byte L, then the ULPDU is the next
//             L*8 % 1500 bytes of the input, taken cyclically from the whole
//             remaining input; repeated until the input is used up (max 64).
// Invariants (__builtin_trap on violation):
//   * without corruption the parser returns exactly the ULPDUs that were
//     framed, in order, with no error, whatever the read splits;
//   * with one byte corrupted, every FPDU that ends before the corrupted byte
//     is still delivered unchanged and in order; with CRC on, the FPDU that
//     contains the corrupted byte is never delivered unless the byte was in
//     its ULPDU_Length field (which reframes the stream).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "wire/fpdu.h"
#include "wire/markers.h"

namespace {

using iwarpx::ByteSpan;
using iwarpx::MutableByteSpan;
using iwarpx::wire::FpduRxConfig;
using iwarpx::wire::FpduStreamParser;
using iwarpx::wire::FpduVisitor;
using iwarpx::wire::WireError;
using Bytes = std::vector<uint8_t>;

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

struct Collect : FpduVisitor {
  void OnFpdu(ByteSpan ulpdu) override {
    Check(errors == 0);
    fpdus.emplace_back(ulpdu.begin(), ulpdu.end());
  }
  void OnError(WireError) override { ++errors; }
  std::vector<Bytes> fpdus;
  int errors = 0;
};

struct Frame {
  size_t begin;         // offset of the FPDU in the wire image
  size_t end;           // one past its CRC field
  size_t length_field;  // offset of its ULPDU_Length field
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 6) return 0;
  const bool crc = (data[0] & 0x01) != 0;
  const bool markers = (data[0] & 0x02) != 0;
  const bool corrupt = (data[0] & 0x04) != 0;
  uint32_t seed = 0x811C9DC5u ^ data[1];
  const uint64_t start = markers ? uint64_t{data[2]} * 4 : 0;
  const size_t corrupt_at = (size_t{data[3]} << 8) | data[4];
  const ByteSpan spec(data + 5, size - 5);

  // Frame the described ULPDUs.
  std::vector<Bytes> ulpdus;
  std::vector<Frame> frames;
  Bytes wire;
  iwarpx::wire::MarkerInserter tx(start);
  size_t cursor = 0;
  for (size_t i = 0; i < spec.size() && ulpdus.size() < 64; ++i) {
    const size_t len = (size_t{spec[i]} * 8) % 1500;
    Bytes u(len);
    for (size_t k = 0; k < len; ++k) u[k] = spec[(cursor + k) % spec.size()];
    cursor += len;

    Bytes plain(iwarpx::wire::FpduWireLength(len));
    Check(iwarpx::wire::EncodeFpdu(u, crc, plain).ok());
    const size_t before = wire.size();
    if (markers) {
      const ByteSpan body = ByteSpan(plain).first(plain.size() - iwarpx::wire::kFpduCrcSize);
      wire.resize(before + tx.MarkedSize(body.size()));
      auto r = tx.Insert(body, crc, MutableByteSpan(wire).subspan(before));
      Check(r.ok() && before + r.value() == wire.size());
    } else {
      wire.insert(wire.end(), plain.begin(), plain.end());
    }
    const size_t lead = markers && iwarpx::wire::BytesToNextMarker(start + before) == 0
                            ? iwarpx::wire::kMarkerSize
                            : 0;
    frames.push_back({before, wire.size(), before + lead});
    ulpdus.push_back(std::move(u));
  }
  if (wire.empty()) return 0;

  size_t bad = wire.size();
  if (corrupt) {
    bad = corrupt_at % wire.size();
    wire[bad] = static_cast<uint8_t>(wire[bad] ^ (1u << (data[1] & 7)));
  }

  FpduRxConfig config;
  config.crc = crc;
  config.markers = markers;
  config.stream_offset = start;
  config.min_ulpdu = 0;
  FpduStreamParser parser(config);
  Collect got;
  for (size_t pos = 0; pos < wire.size();) {
    seed ^= seed << 13;
    seed ^= seed >> 17;
    seed ^= seed << 5;
    size_t n = 1 + seed % 1024;
    if (n > wire.size() - pos) n = wire.size() - pos;
    parser.Feed(ByteSpan(wire).subspan(pos, n), got);
    pos += n;
  }

  if (!corrupt) {
    Check(got.errors == 0);
    Check(got.fpdus == ulpdus);
    Check(!parser.mid_fpdu());
    return 0;
  }
  size_t intact = 0;
  while (intact < frames.size() && frames[intact].end <= bad) ++intact;
  Check(got.fpdus.size() >= intact);
  for (size_t i = 0; i < intact; ++i) Check(got.fpdus[i] == ulpdus[i]);
  if (crc && intact < frames.size()) {
    const Frame& f = frames[intact];
    const bool in_length = bad >= f.length_field && bad < f.length_field + 2;
    if (!in_length) {
      Check(got.fpdus.size() == intact);
      Check(got.errors == 1);
    }
  }
  return 0;
}
