// libFuzzer target for the DDP Stream Session Control codec
// (wire/sctp_session.h).
//
// The input is one candidate PPID-17 SCTP message, decoded under the RFC
// limit (512) and a policy limit of 256. Checked on every input:
// * a message accepted under 256 is accepted under 512, with the same fields;
// * the private-data view lies inside the input, after the header;
// * an accepted message has exactly the size the header announces;
// * every accepted message re-encodes to exactly the input bytes;
// * the input cut short by one byte is never accepted (kTruncated when the
//   full message was accepted);
// * the Send with Immediate Data and unordered Read Responses bits are
//   decoded only inside an IRD/ORD block, and IRD/ORD stay 14-bit values.
// Any violation traps. Seeds: corpus/sctp_session/ (messages as sent).
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "wire/sctp_session.h"

namespace iwarpx::wire {
namespace {

void Check(bool condition) {
  if (!condition) __builtin_trap();
}

void FuzzOne(ByteSpan in) {
  auto rfc = DecodeSctpSessionMessage(in, {.max_private_data = kSctpSessionMaxPrivateData});
  auto small = DecodeSctpSessionMessage(in, {.max_private_data = 256});
  if (small.ok()) {
    Check(rfc.ok());
    Check(small->function == rfc->function && small->ird_ord == rfc->ird_ord &&
          small->send_imm == rfc->send_imm &&
          small->unordered_read_resp == rfc->unordered_read_resp);
  }
  if (!rfc.ok()) return;

  const SctpSessionMessage& m = rfc.value();
  Check(SctpSessionMessageSize(m) == in.size());
  Check(m.private_data.empty() ||
        (m.private_data.data() >= in.data() + kSctpSessionHeaderSize &&
         m.private_data.data() + m.private_data.size() == in.data() + in.size()));
  Check(!m.ird_ord || (m.function == SctpSessionFunction::kInitiate ||
                       m.function == SctpSessionFunction::kAccept));
  // The Send with Immediate Data bit only inside an IRD/ORD block, whose
  // values stay 14-bit.
  Check(!m.send_imm || m.ird_ord);
  Check(!m.unordered_read_resp || m.ird_ord);
  Check(!m.ird_ord ||
        (m.ird_ord->ird <= kSctpSessionIrdOrdMask && m.ird_ord->ord <= kSctpSessionIrdOrdMask));

  std::array<uint8_t, kSctpSessionMaxMessageSize> out{};
  auto written = EncodeSctpSessionMessage(m, out);
  Check(written.ok());
  Check(written.value() == in.size());
  Check(std::memcmp(out.data(), in.data(), in.size()) == 0);

  auto cut = DecodeSctpSessionMessage(in.first(in.size() - 1));
  Check(!cut.ok() && cut.error() == WireError::kTruncated);
}

}  // namespace
}  // namespace iwarpx::wire

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  iwarpx::wire::FuzzOne(iwarpx::ByteSpan(data, size));
  return 0;
}
