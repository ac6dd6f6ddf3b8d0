// libFuzzer target for what a connected RDM peer controls in RC-FP: the
// hello with its ring description (rc_hello.h) and the bytes of a ring slot
// (rc_fastpath.h). Properties: a hello either is refused or re-encodes to
// the same bytes with a ring that passes valid(); a slot is empty,
// malformed, or ready with its RDM message inside the slot.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "rdm/rc_fastpath.h"
#include "rdm/rc_hello.h"

namespace {
void Check(bool ok) {
  if (!ok) __builtin_trap();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace iwarpx::rdm;
  // First byte: how much of the rest is the hello.
  if (size == 0) return 0;
  const size_t hello_len = std::min<size_t>(data[0] % (kRcHelloMaxSize + 4), size - 1);
  const iwarpx::ByteSpan hello(data + 1, hello_len);
  if (const auto h = DecodeRcHelloFull(hello)) {
    Check(h->udp_port != 0);
    std::array<uint8_t, kRcHelloMaxSize> again{};
    const size_t n = EncodeRcHello(h->udp_port, h->ring, again);
    Check(n == hello.size() && std::equal(again.begin(), again.begin() + n, hello.begin()));
    Check(!h->ring || h->ring->valid());
  }
  // The rest: the first slot of a two-slot ring of 128-byte slots.
  constexpr uint32_t kSlotBytes = 128;
  std::vector<uint8_t> ring(FpRx::RegionBytes(2, kSlotBytes));
  const size_t rest = size - 1 - hello_len;
  std::copy_n(data + 1 + hello_len, std::min<size_t>(rest, kSlotBytes), ring.begin());
  const FpRx rx(ring.data(), 2, kSlotBytes);
  FpRx::Message m;
  if (rx.Next(&m) == FpRx::Status::kReady) {
    Check(m.rdm.data() == ring.data() + kFpSlotHeaderSize);
    Check(m.rdm.size() >= 32 && m.rdm.size() <= kSlotBytes - kFpSlotHeaderSize);
  }
  return 0;
}
