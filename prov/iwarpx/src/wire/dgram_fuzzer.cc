// libFuzzer target for the datagram-iWARP framing (wire/dgram.h).
//
// Properties checked on every input:
//   * DecodeDgram never reads outside the input (ASan) and never crashes.
//   * A datagram accepted with CRC verification is also accepted without it,
//     with the same header and ULPDU.
//   * Every accepted datagram re-encodes (EncodeDgram) to the same bytes. The
//     CRC field is compared only when it was verified; with C clear the
//     re-encoded field must be zero.
//   * FrameDgram over the ULPDU split in two gives the same header, trailer
//     and size as EncodeDgram.
//   * DecodeDgramSplit of the input cut into head ‖ placed ‖ tail at points
//     chosen by the input agrees with DecodeDgram of the whole: whatever it
//     accepts, DecodeDgram accepts with the same header, flags and ULPDU bytes
//     (and its views stay inside their pieces).
//   * Bundles (flag B, wire/dgram_bundle.h): an accepted bundle's records
//     walk inside its ULPDU, as many as CountBundleRecords says, and
//     EncodeDgramBundle of those segments gives the same bytes; the input
//     read as a bare record list is walked the same way when accepted.
//   * The one-step UD Send codec (wire/dgram_ud.h) agrees with the generic
//     decoders both ways: DecodeUdSend accepts exactly what DecodeDgram +
//     ParseSegment accept as a UD Send / Send with SE, with the same fields
//     and payload view, and EncodeUdSend re-encodes it to the same bytes.
// Seeds: corpus/dgram/ (valid datagrams of every type plus edge cases).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "wire/dgram.h"
#include "wire/dgram_bundle.h"
#include "wire/dgram_ud.h"

namespace iwarpx::wire {
namespace {

uint8_t g_out[kDgramMaxSize];

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

void CheckReencode(ByteSpan in, const DecodedDgram& d) {
  const size_t size = in.size();
  const size_t body = size - kDgramCrcSize;
  const ByteSpan whole[1] = {d.ulpdu};
  const auto n = EncodeDgram(d.header, whole, d.crc_present, g_out);
  Check(n.ok() && n.value() == size);
  Check(std::memcmp(g_out, in.data(), body) == 0);
  if (d.crc_checked) Check(std::memcmp(g_out + body, in.data() + body, kDgramCrcSize) == 0);
  if (!d.crc_present) Check(LoadBe32(g_out + body) == 0);

  // Gather framing with the ULPDU split at a point chosen by the input.
  // A bundle's records are framed from one piece only.
  const size_t cut =
      d.ulpdu.empty() || d.header.bundle ? 0 : in.data()[size - 1] % (d.ulpdu.size() + 1);
  const ByteSpan parts[2] = {d.ulpdu.first(cut), d.ulpdu.subspan(cut)};
  const auto f = FrameDgram(d.header, parts, d.crc_present);
  Check(f.ok() && f.value().datagram_size == size);
  const DgramFraming& fr = f.value();
  Check(std::memcmp(fr.header.data(), g_out, kDgramHeaderSize) == 0);
  Check(kDgramHeaderSize + d.ulpdu.size() + fr.trailer_size == size);
  Check(std::memcmp(fr.trailer.data(), g_out + kDgramHeaderSize + d.ulpdu.size(),
                    fr.trailer_size) == 0);
}

// Walks a record list CountBundleRecords accepted; returns its segments
// (at most kMaxSegments kept).
constexpr size_t kMaxSegments = kDgramMaxSize / BundleRecordSize(kDgramMinDdpSegment);
ByteSpan g_segments[kMaxSegments];

size_t WalkRecords(ByteSpan records) {
  if (records.size() > kDgramMaxSize) return 0;
  const auto count = CountBundleRecords(records);
  if (!count.ok()) return 0;
  Check(*count >= kBundleMinRecords && *count <= kMaxSegments);
  BundleReader r(records);
  size_t n = 0;
  ByteSpan s;
  while (r.Next(&s)) {
    Check(n < *count);
    Check(s.size() >= kDgramMinDdpSegment);
    Check(s.data() >= records.data() && s.data() + s.size() <= records.data() + records.size());
    g_segments[n++] = s;
  }
  Check(n == *count);
  return n;
}

void CheckBundle(ByteSpan in, const DecodedDgram& d) {
  if (!d.header.bundle) return;
  const size_t n = WalkRecords(d.ulpdu);
  Check(n >= kBundleMinRecords);
  const auto e = EncodeDgramBundle(d.header, std::span(g_segments, n), d.crc_present, g_out);
  Check(e.ok() && e.value() == in.size());
  const size_t body = in.size() - kDgramCrcSize;
  Check(std::memcmp(g_out, in.data(), body) == 0);
  if (d.crc_checked) Check(std::memcmp(g_out + body, in.data() + body, kDgramCrcSize) == 0);
}

void CheckSplit(ByteSpan in) {
  if (in.size() < kDgramHeaderSize + 2) return;
  const size_t head = kDgramHeaderSize + in[in.size() - 1] % 32;
  const size_t tail = in[in.size() - 2] % 8;
  if (head + tail >= in.size()) return;
  const ByteSpan h = in.first(head);
  const ByteSpan p = in.subspan(head, in.size() - head - tail);
  const ByteSpan t = in.subspan(in.size() - tail);
  for (const bool verify : {true, false}) {
    const auto split = DecodeDgramSplit(h, p, t, verify);
    if (!split.ok()) continue;
    const auto whole = DecodeDgram(in, verify);
    Check(whole.ok());
    const DecodedDgram& s = split.value();
    const DecodedDgram& w = whole.value();
    Check(s.header == w.header && s.crc_present == w.crc_present && s.crc_checked == w.crc_checked);
    Check(s.ulpdu.data() == h.data() + kDgramHeaderSize &&
          s.ulpdu.size() == head - kDgramHeaderSize);
    Check(s.ulpdu_placed.data() == p.data() && s.ulpdu_placed.size() == p.size());
    Check(w.ulpdu.size() == s.ulpdu.size() + s.ulpdu_placed.size());
  }
}

void CheckUdSend(ByteSpan in) {
  for (const bool verify : {true, false}) {
    const auto fast = DecodeUdSend(in, verify);
    const auto generic = DecodeUdSendGeneric(in, verify);
    Check(fast.has_value() == generic.has_value());
    if (!fast) continue;
    Check(fast->fields == generic->fields && fast->crc_present == generic->crc_present &&
          fast->crc_checked == generic->crc_checked);
    Check(fast->payload.data() == generic->payload.data() &&
          fast->payload.size() == generic->payload.size());
    const auto n =
        EncodeUdSend(fast->fields, std::span(&fast->payload, 1), fast->crc_present, g_out);
    Check(n.ok() && n.value() == in.size());
    const size_t body = in.size() - kDgramCrcSize;
    Check(std::memcmp(g_out, in.data(), body) == 0);
    if (fast->crc_checked) Check(std::memcmp(g_out + body, in.data() + body, kDgramCrcSize) == 0);
  }
}

void FuzzOne(const uint8_t* data, size_t size) {
  const ByteSpan in(data, size);
  CheckSplit(in);
  CheckUdSend(in);
  (void)WalkRecords(in);
  const auto verified = DecodeDgram(in, /*verify_crc=*/true);
  const auto unverified = DecodeDgram(in, /*verify_crc=*/false);
  if (verified.ok()) {
    Check(unverified.ok());
    Check(verified.value().header == unverified.value().header);
    Check(verified.value().ulpdu.data() == unverified.value().ulpdu.data());
    Check(verified.value().ulpdu.size() == unverified.value().ulpdu.size());
    Check(verified.value().crc_checked == verified.value().crc_present);
    CheckReencode(in, verified.value());
    CheckBundle(in, verified.value());
  }
  if (unverified.ok()) {
    Check(!unverified.value().crc_checked);
    const ByteSpan u = unverified.value().ulpdu;
    Check(u.empty() || (u.data() >= data && u.data() + u.size() <= data + size));
    CheckReencode(in, unverified.value());
    CheckBundle(in, unverified.value());
  }
}

}  // namespace
}  // namespace iwarpx::wire

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  iwarpx::wire::FuzzOne(data, size);
  return 0;
}
