#include "ofi/common.h"

#include <cstdio>

#include <rdma/fi_errno.h>

#include "wire/error.h"

namespace iwarpx::ofi {

int ToFiErr(mem::RegisterError e) {
  switch (e) {
    case mem::RegisterError::kInvalidArgument: return -FI_EINVAL;
    case mem::RegisterError::kStagInUse: return -FI_ENOKEY;
    case mem::RegisterError::kTableFull: return -FI_ENOSPC;
  }
  return -FI_EOTHER;
}

int fi_no_bind(struct fid* /*fid*/, struct fid* /*bfid*/, uint64_t /*flags*/) {
  return -FI_ENOSYS;
}
int fi_no_control(struct fid* /*fid*/, int /*command*/, void* /*arg*/) {
  return -FI_ENOSYS;
}
int fi_no_ops_open(struct fid* /*fid*/, const char* /*name*/, uint64_t /*flags*/, void** /*ops*/,
                   void* /*context*/) {
  return -FI_ENOSYS;
}
int fi_no_tostr(const struct fid* /*fid*/, char* /*buf*/, size_t /*len*/) {
  return -FI_ENOSYS;
}
int fi_no_ops_set(struct fid* /*fid*/, const char* /*name*/, uint64_t /*flags*/, void* /*ops*/,
                  void* /*context*/) {
  return -FI_ENOSYS;
}

const char* ProvErrnoText(int prov_errno, char* buf, size_t len) {
  // prov_errno = layer << 16 | etype << 8 | code of the iWARP Terminate cause
  // (qp::ProvErrno); 0 when there was none.
  const auto layer = static_cast<uint8_t>((prov_errno >> 16) & 0xff);
  const auto etype = static_cast<uint8_t>((prov_errno >> 8) & 0xff);
  const auto code = static_cast<uint8_t>(prov_errno & 0xff);
  const bool is_cause = prov_errno >= 0 && (prov_errno >> 24) == 0 && layer <= 2;
  const char* text = is_cause ? wire::DescribeTermCause(wire::TermCause{layer, etype, code})
                              : "unknown provider error";
  if (prov_errno == 0) text = "no iWARP Terminate cause";
  thread_local char local[160];
  char* out = buf != nullptr && len != 0 ? buf : local;
  const size_t out_len = buf != nullptr && len != 0 ? len : sizeof(local);
  if (is_cause && prov_errno != 0) {
    std::snprintf(out, out_len, "iWARP Terminate: %s (layer %u, type %u, code %#x)", text,
                  static_cast<unsigned>(layer), static_cast<unsigned>(etype),
                  static_cast<unsigned>(code));
  } else {
    std::snprintf(out, out_len, "%s (prov_errno %d)", text, prov_errno);
  }
  return out;
}

}  // namespace iwarpx::ofi
