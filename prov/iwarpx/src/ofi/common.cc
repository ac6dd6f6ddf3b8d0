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

namespace {

const char* CopyText(const char* text, char* buf, size_t len) {
  if (buf != nullptr && len != 0) {
    std::snprintf(buf, len, "%s", text);
    return buf;
  }
  return text;
}

}  // namespace

const char* ProvErrnoText(int prov_errno, char* buf, size_t len) {
  // prov_errno = layer << 16 | etype << 8 | code of the iWARP Terminate cause
  // (qp::ProvErrno), for CQ errors and connection errors alike; 0: none.
  if (prov_errno == 0) return CopyText("no iWARP Terminate cause", buf, len);
  if (prov_errno < 0 || prov_errno > 0xFFFFFF) {
    return CopyText("not an iWARP Terminate cause", buf, len);
  }
  const wire::TermCause c{static_cast<uint8_t>(prov_errno >> 16),
                          static_cast<uint8_t>((prov_errno >> 8) & 0xFF),
                          static_cast<uint8_t>(prov_errno & 0xFF)};
  return CopyText(wire::ToString(c), buf, len);
}

size_t AtomicOperandSize(enum fi_datatype t) {
  switch (t) {
    case FI_UINT64:
    case FI_INT64: return sizeof(uint64_t);
    case FI_UINT32:
    case FI_INT32: return sizeof(uint32_t);
    default: return 0;
  }
}

}  // namespace iwarpx::ofi
