// Glue shared by every libfabric object of the provider: mapping a fid back to
// its C++ object, the "not supported" stubs that fill ops tables (libfabric's
// own fi_no_* live in its internal prov/util, which an external provider
// cannot link), and the one mapping from internal statuses to -FI_E*.
//
// Contract: every object embeds one FidHandle as its libfabric face; the
// application only ever sees &handle.fid. A fid that did not come from this
// provider is recognised by its ops pointer (IsOurs) and rejected with
// -FI_EINVAL, never dereferenced as ours. All functions here are thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>

#include "mem/stag_table.h"

namespace iwarpx::ofi {

// F is the libfabric struct (fid_cq, fid_domain, ...), T the C++ object.
// Standard-layout: &handle == &handle.fid == &handle.fid.fid.
template <class F, class T>
struct FidHandle {
  F fid{};
  T* owner = nullptr;
};

// The object behind a fid of a known class; the caller has checked the class
// and ops (IsOurs).
template <class T, class F>
T* OwnerOf(F* f) {
  return reinterpret_cast<FidHandle<F, T>*>(f)->owner;
}

// True when `f` is of class `fclass` and was created by this provider.
inline bool IsOurs(const struct fid* f, size_t fclass, const struct fi_ops* ops) {
  return f != nullptr && f->fclass == fclass && f->ops == ops;
}

// -FI_E* for an internal status.
int ToFiErr(mem::RegisterError e);

// fi_cq_strerror / fi_eq_strerror: the prov_errno of a CQ or EQ error is the
// iWARP Terminate cause (layer << 16 | etype << 8 | code, qp::ProvErrno; 0
// when there is none, e.g. a refused TCP connect); its RFC description,
// copied into buf when buf/len are given, else a static string.
const char* ProvErrnoText(int prov_errno, char* buf, size_t len);

// Operand width in bytes of an atomic datatype the engine carries, 0 if none:
// 64-bit integers, and 32-bit ones as the masked form of the 64-bit request
// (qp/work_request.h).
size_t AtomicOperandSize(enum fi_datatype t);

// Stubs for ops the provider does not support: each returns -FI_ENOSYS.
int fi_no_bind(struct fid* fid, struct fid* bfid, uint64_t flags);
int fi_no_control(struct fid* fid, int command, void* arg);
int fi_no_ops_open(struct fid* fid, const char* name, uint64_t flags, void** ops, void* context);
int fi_no_tostr(const struct fid* fid, char* buf, size_t len);
int fi_no_ops_set(struct fid* fid, const char* name, uint64_t flags, void* ops, void* context);

}  // namespace iwarpx::ofi
