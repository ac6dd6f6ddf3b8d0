// libFuzzer target for the Terminate body codec (terminate.h). The input is a
// Terminate body (what follows the 18-byte DDP header). Properties, each
// trapping when broken:
// * DecodeTerminate() either refuses the input or returns header views that
//   lie inside it, and EncodeTerminate() reproduces the input exactly.
// * MakeTerminate() for an acceptable cause (taken from the first 3 input
//   bytes) over any "offending segment" (the rest of the input) yields a
//   header that encodes and decodes back to itself.
// Seeds: corpus/terminate/.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "wire/terminate.h"

namespace {

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

bool Inside(iwarpx::ByteSpan view, const uint8_t* data, size_t size) {
  return view.empty() || (view.data() >= data && view.data() + view.size() <= data + size);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace iwarpx::wire;
  const iwarpx::ByteSpan input(data, size);
  std::array<uint8_t, kTerminateMaxBodySize> out{};

  auto t = DecodeTerminate(input);
  if (t.ok()) {
    Check(Inside(t->ddp_header, data, size));
    Check(Inside(t->rdmap_header, data, size));
    Check(t->size() == size);
    auto n = EncodeTerminate(t.value(), out);
    Check(n.ok());
    Check(n.value() == size);
    Check(std::memcmp(out.data(), data, size) == 0);
  }

  if (size >= 3) {
    const TermCause cause{static_cast<uint8_t>(data[0] >> 4), static_cast<uint8_t>(data[0] & 0x0F),
                          data[1]};
    const size_t claimed_length = size_t{data[2]} * 300;
    const TerminateHeader made = MakeTerminate(cause, input.subspan(3), claimed_length);
    auto n = EncodeTerminate(made, out);
    Check(n.ok() == IsKnownTermCause(cause));
    if (n.ok()) {
      auto back = DecodeTerminate(iwarpx::ByteSpan(out.data(), n.value()));
      Check(back.ok());
      Check(back->cause == cause);
      Check(back->m == made.m && back->d == made.d && back->r == made.r);
      Check(back->ddp_segment_length == made.ddp_segment_length);
      Check(back->ddp_header.size() == made.ddp_header.size());
      Check(back->rdmap_header.size() == made.rdmap_header.size());
    }
  }
  return 0;
}
