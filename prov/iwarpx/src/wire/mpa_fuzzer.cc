// libFuzzer target for the MPA Request/Reply codec (wire/mpa.h).
//
// The input is one candidate frame (plus whatever follows it), decoded as a
// Request and as a Reply under the RFC limit (512) and the Linux limit (256).
// Checked on every input:
// * the header-only step and the full decoder agree (same error, or the
//   header's frame_length is what the decoder consumed, or the input is too
//   short and the decoder says kTruncated);
// * a frame accepted under 256 is accepted under 512;
// * the private-data view lies inside the input;
// * every accepted frame re-encodes to exactly the bytes it was decoded from.
// Any violation traps. Seeds: corpus/mpa/ (plain frames as sent on the wire).
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "wire/mpa.h"

namespace iwarpx::wire {
namespace {

void Check(bool condition) {
  if (!condition) __builtin_trap();
}

// Returns true if the frame was accepted.
bool DecodeAndCheck(ByteSpan in, MpaFrameKind kind, uint16_t limit) {
  const MpaLimits limits{.max_private_data = limit};
  auto header = DecodeMpaHeader(in, kind, limits);
  auto decoded = DecodeMpaFrame(in, kind, limits);
  if (!header.ok()) {
    Check(!decoded.ok() && decoded.error() == header.error());
    return false;
  }
  Check(header->frame_length == kMpaHeaderSize + header->pd_length);
  Check(header->pd_length <= limit);
  if (header->frame_length > in.size()) {
    Check(!decoded.ok() && decoded.error() == WireError::kTruncated);
    return false;
  }
  Check(decoded.ok());
  Check(decoded->consumed == header->frame_length);
  const auto& frame = decoded->frame;
  Check(frame.kind == kind);
  Check(frame.private_data.empty() ||
        (frame.private_data.data() >= in.data() &&
         frame.private_data.data() + frame.private_data.size() <= in.data() + in.size()));
  Check(MpaFrameSize(frame) == decoded->consumed);

  std::array<uint8_t, kMpaMaxFrameSize> out{};
  auto written = EncodeMpaFrame(frame, out);
  Check(written.ok());
  Check(written.value() == decoded->consumed);
  Check(std::memcmp(out.data(), in.data(), written.value()) == 0);
  return true;
}

void FuzzOne(ByteSpan in) {
  for (MpaFrameKind kind : {MpaFrameKind::kRequest, MpaFrameKind::kReply}) {
    const bool linux_ok = DecodeAndCheck(in, kind, kMpaLinuxPrivateDataLimit);
    const bool rfc_ok = DecodeAndCheck(in, kind, kMpaMaxPrivateData);
    Check(!linux_ok || rfc_ok);
  }
}

}  // namespace
}  // namespace iwarpx::wire

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  iwarpx::wire::FuzzOne(iwarpx::ByteSpan(data, size));
  return 0;
}
