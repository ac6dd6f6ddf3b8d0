#include "ofi/common.h"

#include <cstdio>

#include <rdma/fi_errno.h>

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
  const char* text = fi_strerror(prov_errno < 0 ? -prov_errno : prov_errno);
  if (buf != nullptr && len != 0) {
    std::snprintf(buf, len, "%s", text);
    return buf;
  }
  return text;
}

}  // namespace iwarpx::ofi
