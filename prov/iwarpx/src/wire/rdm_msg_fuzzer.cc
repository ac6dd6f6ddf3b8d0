// libFuzzer target for the RDM message header codec (rdm_msg.h). Property:
// DecodeRdmMessage either refuses the input or returns a message whose
// payload view lies inside it, and re-encoding the header (plus the payload)
// reproduces the input exactly. Seeds: corpus/rdm_msg/.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "wire/rdm_msg.h"

namespace {
void Check(bool ok) {
  if (!ok) __builtin_trap();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace iwarpx::wire;
  auto m = DecodeRdmMessage(iwarpx::ByteSpan(data, size));
  if (!m.ok()) return 0;
  std::array<uint8_t, kRdmRtsMaxSize> out{};
  auto n = EncodeRdmHeader(m->header, out);
  Check(n.ok());
  Check(*n + m->payload.size() == size);
  Check(std::memcmp(out.data(), data, *n) == 0);
  Check(m->payload.empty() || (m->payload.data() == data + *n));
  return 0;
}
