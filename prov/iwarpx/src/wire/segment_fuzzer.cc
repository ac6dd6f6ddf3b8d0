// libFuzzer target for ParseSegment() (rdmap.h): any input must either be
// refused with an error or parse into a Segment whose payload view lies inside
// the input, right after the header, and whose header and body re-encode
// (EncodeSegmentHeader) to the identical bytes. A Terminate body that
// DecodeTerminate() accepts must re-encode identically too. Any violation
// traps. Seeds: corpus/segment/ (one valid segment per opcode).
// The input is parsed with and without ParseOptions::accept_send_imm: the
// option may only add acceptance of a Send's last segment announcing
// Immediate Data (rdmap.h), never refuse or change anything else.
// ParsePlainSend, the receive path's shortcut for plain Sends, may accept
// only what ParseSegment accepts as a plain Send, with the same fields, and
// must accept every such Send.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <variant>

#include "wire/rdmap.h"
#include "wire/terminate.h"

namespace {

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace iwarpx::wire;
  const iwarpx::ByteSpan input(data, size);
  auto plain = ParseSegment(input);
  auto parsed = ParseSegment(input, ParseOptions{.accept_send_imm = true});
  if (plain.ok()) {
    Check(parsed.ok());
    Check(!plain->send_imm_follows());
  } else if (parsed.ok()) {
    Check(parsed->send_imm_follows());
  }
  const std::optional<PlainSend> send = ParsePlainSend(input);
  const bool plain_send =
      plain.ok() &&
      (plain->opcode == RdmapOpcode::kSend || plain->opcode == RdmapOpcode::kSendWithSe) &&
      plain->ddp.rsvd_ulp1_4 == 0;
  Check(send.has_value() == plain_send);
  if (send) {
    Check(send->msn == plain->ddp.msn && send->mo == plain->ddp.mo);
    Check(send->last == plain->ddp.last);
    Check(send->solicited_event == (plain->opcode == RdmapOpcode::kSendWithSe));
  }
  if (!parsed.ok()) return 0;
  const Segment& seg = parsed.value();

  const size_t header = seg.header_size();
  Check(header <= size);
  Check(header + seg.payload.size() == size);
  if (!seg.payload.empty()) {
    Check(seg.payload.data() == data + header);
    Check(seg.info().payload_allowed);
  }
  if (seg.ddp.tagged) Check(!TaggedRangeWraps(seg.ddp.to, seg.payload.size()));

  std::array<uint8_t, kDdpMaxHeaderSize + kTerminateMaxBodySize> out{};
  auto n = EncodeSegmentHeader(seg, out);
  Check(n.ok());
  Check(n.value() == header);
  Check(std::memcmp(out.data(), data, header) == 0);

  if (const auto* term = std::get_if<TerminateBodyView>(&seg.body)) {
    Check(term->bytes.data() == data + seg.ddp.size());
    auto t = DecodeTerminate(term->bytes);
    if (t.ok()) {
      std::array<uint8_t, kTerminateMaxBodySize> body{};
      auto m = EncodeTerminate(t.value(), body);
      Check(m.ok());
      Check(m.value() == term->bytes.size());
      Check(std::memcmp(body.data(), term->bytes.data(), m.value()) == 0);
    }
  }
  return 0;
}
