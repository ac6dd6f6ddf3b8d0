// libFuzzer target for the send-rule chain parser (send_rules.h). Property:
// Parse either refuses the text or returns a chain whose last rule is
// any:ud_zcopy, whose canonical text parses back to an equal chain, and whose
// Select returns a channel that is available and large enough.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "rdm/send_rules.h"

namespace {
void Check(bool ok) {
  if (!ok) __builtin_trap();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace iwarpx::rdm;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto c = SendRuleChain::Parse(text);
  if (!c.ok()) {
    Check(!c.error().empty());
    return 0;
  }
  Check(!c->rules().empty() && c->rules().size() <= SendRuleChain::kMaxRules);
  Check(c->rules().back().cond.always() && c->rules().back().channel == Channel::kUdZcopy);
  auto back = SendRuleChain::Parse(c->ToString());
  Check(back.ok() && *back == *c);
  ChannelLimits lim;
  lim.max_size[static_cast<int>(Channel::kUdSr)] = 16352;
  lim.max_size[static_cast<int>(Channel::kRcFp)] = 2048;
  const ChannelSet some{Channel::kUdSr, Channel::kRcFp, Channel::kCopy};
  for (const uint64_t sz : {uint64_t{0}, uint64_t{8}, uint64_t{2048}, uint64_t{2049},
                            uint64_t{16352}, uint64_t{1} << 20, UINT64_MAX}) {
    const Channel ch = c->Select(sz, size, some, lim);
    Check(ch == Channel::kUdZcopy || (some.Has(ch) && sz <= lim.of(ch)));
  }
  return 0;
}
