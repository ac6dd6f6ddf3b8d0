/*
 * btl/iwarpx one-sided operations: put (fi_writemsg with FI_DELIVERY_COMPLETE, so the
 * callback means remote completion), get (fi_readmsg), atomics (fi_atomicmsg /
 * fi_fetch_atomicmsg / fi_compare_atomicmsg on FI_UINT64 or FI_UINT32) and flush. Memory
 * registration is in btl_iwarpx_mr.c.
 */
// clang-format off
#include "opal_config.h" /* first, see btl_iwarpx.h */
// clang-format on

#include <string.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "btl_iwarpx.h"
#include "opal/util/output.h"

static mca_btl_iwarpx_rdma_op_t* op_get(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_endpoint_t* ep,
                                        void* local_address,
                                        mca_btl_base_registration_handle_t* local_handle,
                                        mca_btl_base_rdma_completion_fn_t cbfunc, void* cbcontext,
                                        void* cbdata) {
  mca_btl_iwarpx_rdma_op_t* op = (mca_btl_iwarpx_rdma_op_t*)opal_free_list_get(&m->rdma_ops);
  if (op == NULL) return NULL;
  op->endpoint = ep;
  op->local_address = local_address;
  op->local_handle = local_handle;
  op->cbfunc = cbfunc;
  op->cbcontext = cbcontext;
  op->cbdata = cbdata;
  op->operand[0] = op->operand[1] = 0;
  return op;
}

static uint64_t remote_addr(const mca_btl_iwarpx_module_t* m, uint64_t address,
                            const mca_btl_base_registration_handle_t* h) {
  return m->virt_addr ? address : address - h->base;
}

/* Posts with `post` until it is not -FI_EAGAIN (driving progress once in between) and maps
 * the result: OPAL_SUCCESS (queued, op owned by the completion), OUT_OF_RESOURCE, ERROR. */
typedef ssize_t (*post_fn_t)(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_rdma_op_t* op,
                             const void* args);
static int post_op(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_rdma_op_t* op, post_fn_t post,
                   const void* args, const char* what, volatile int64_t* counter) {
  mca_btl_iwarpx_endpoint_t* ep = op->endpoint;
  OPAL_THREAD_ADD_FETCH64(&m->outstanding, 1);
  OPAL_THREAD_ADD_FETCH64(&ep->pending, 1);
  for (int attempt = 0; attempt < 2; ++attempt) {
    ssize_t ret = post(m, op, args);
    if (ret == 0) {
      OPAL_THREAD_ADD_FETCH64(counter, 1);
      return OPAL_SUCCESS;
    }
    if (ret != -FI_EAGAIN) {
      opal_output_verbose(1, mca_btl_iwarpx_component.output, "btl:iwarpx: %s: %s", what,
                          fi_strerror((int)-ret));
      OPAL_THREAD_ADD_FETCH64(&ep->pending, -1);
      OPAL_THREAD_ADD_FETCH64(&m->outstanding, -1);
      opal_free_list_return(&m->rdma_ops, &op->super);
      return OPAL_ERROR;
    }
    (void)mca_btl_iwarpx_progress();
  }
  OPAL_THREAD_ADD_FETCH64(&m->stats.busy_rdma, 1);
  OPAL_THREAD_ADD_FETCH64(&ep->pending, -1);
  OPAL_THREAD_ADD_FETCH64(&m->outstanding, -1);
  opal_free_list_return(&m->rdma_ops, &op->super);
  return OPAL_ERR_OUT_OF_RESOURCE;
}

void mca_btl_iwarpx_rdma_complete(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_rdma_op_t* op,
                                  int status) {
  mca_btl_iwarpx_endpoint_t* ep = op->endpoint;
  if (op->cbfunc != NULL) {
    op->cbfunc(&m->super, ep, op->local_address, op->local_handle, op->cbcontext, op->cbdata,
               status);
  }
  opal_free_list_return(&m->rdma_ops, &op->super);
  /* After the callback: a flush (or drain) that sees 0 has seen every callback. */
  OPAL_THREAD_ADD_FETCH64(&ep->pending, -1);
  OPAL_THREAD_ADD_FETCH64(&m->outstanding, -1);
}

/* --- put / get ------------------------------------------------------------------------- */

typedef struct rma_args_t {
  void* local;
  size_t size;
  uint64_t addr;
  uint64_t key;
  bool write;
} rma_args_t;

static ssize_t post_rma(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_rdma_op_t* op, const void* p) {
  const rma_args_t* a = p;
  struct iovec iov = {.iov_base = a->local, .iov_len = a->size};
  struct fi_rma_iov rma = {.addr = a->addr, .len = a->size, .key = a->key};
  struct fi_msg_rma msg = {.msg_iov = &iov,
                           .desc = NULL,
                           .iov_count = 1,
                           .addr = op->endpoint->addr,
                           .rma_iov = &rma,
                           .rma_iov_count = 1,
                           .context = &op->ctx,
                           .data = 0};
  /* Writes: FI_DELIVERY_COMPLETE (a zero-length Read behind the write in the provider), so
   * the completion, and the BTL callback, mean the data is visible at the target. */
  return a->write ? fi_writemsg(m->ep, &msg, FI_COMPLETION | FI_DELIVERY_COMPLETE)
                  : fi_readmsg(m->ep, &msg, FI_COMPLETION);
}

static int rma(mca_btl_base_module_t* btl, mca_btl_base_endpoint_t* ep, void* local_address,
               uint64_t remote_address, mca_btl_base_registration_handle_t* local_handle,
               mca_btl_base_registration_handle_t* remote_handle, size_t size,
               mca_btl_base_rdma_completion_fn_t cbfunc, void* cbcontext, void* cbdata,
               bool write) {
  mca_btl_iwarpx_module_t* m = (mca_btl_iwarpx_module_t*)btl;
  mca_btl_iwarpx_rdma_op_t* op =
      op_get(m, ep, local_address, local_handle, cbfunc, cbcontext, cbdata);
  if (op == NULL) return OPAL_ERR_OUT_OF_RESOURCE;
  const rma_args_t a = {.local = local_address,
                        .size = size,
                        .addr = remote_addr(m, remote_address, remote_handle),
                        .key = remote_handle->key,
                        .write = write};
  return post_op(m, op, post_rma, &a, write ? "fi_writemsg" : "fi_readmsg",
                 write ? &m->stats.puts : &m->stats.gets);
}

int mca_btl_iwarpx_put(mca_btl_base_module_t* btl, mca_btl_base_endpoint_t* ep, void* local_address,
                       uint64_t remote_address, mca_btl_base_registration_handle_t* local_handle,
                       mca_btl_base_registration_handle_t* remote_handle, size_t size, int flags,
                       int order, mca_btl_base_rdma_completion_fn_t cbfunc, void* cbcontext,
                       void* cbdata) {
  (void)flags;
  (void)order;
  return rma(btl, ep, local_address, remote_address, local_handle, remote_handle, size, cbfunc,
             cbcontext, cbdata, true);
}

int mca_btl_iwarpx_get(mca_btl_base_module_t* btl, mca_btl_base_endpoint_t* ep, void* local_address,
                       uint64_t remote_address, mca_btl_base_registration_handle_t* local_handle,
                       mca_btl_base_registration_handle_t* remote_handle, size_t size, int flags,
                       int order, mca_btl_base_rdma_completion_fn_t cbfunc, void* cbcontext,
                       void* cbdata) {
  (void)flags;
  (void)order;
  return rma(btl, ep, local_address, remote_address, local_handle, remote_handle, size, cbfunc,
             cbcontext, cbdata, false);
}

/* --- atomics --------------------------------------------------------------------------- */

typedef enum { AMO_PLAIN, AMO_FETCH, AMO_CSWAP } amo_kind_t;

typedef struct amo_args_t {
  amo_kind_t kind;
  enum fi_op op;
  enum fi_datatype dt;
  uint64_t addr;
  uint64_t key;
} amo_args_t;

static bool map_op(mca_btl_base_atomic_op_t op, enum fi_op* out) {
  switch (op) {
    case MCA_BTL_ATOMIC_ADD: *out = FI_SUM; return true;
    case MCA_BTL_ATOMIC_AND: *out = FI_BAND; return true;
    case MCA_BTL_ATOMIC_OR: *out = FI_BOR; return true;
    case MCA_BTL_ATOMIC_XOR: *out = FI_BXOR; return true;
    case MCA_BTL_ATOMIC_SWAP: *out = FI_ATOMIC_WRITE; return true;
    default: return false;
  }
}

/* Stores v as the operand type at slot i of op (the provider reads it from there). */
static void store_operand(mca_btl_iwarpx_rdma_op_t* op, int i, uint64_t v, enum fi_datatype dt) {
  if (dt == FI_UINT32) {
    const uint32_t v32 = (uint32_t)v;
    memcpy(&op->operand[i], &v32, sizeof(v32));
  } else {
    op->operand[i] = v;
  }
}

static ssize_t post_amo(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_rdma_op_t* op, const void* p) {
  const amo_args_t* a = p;
  struct fi_ioc ioc = {.addr = &op->operand[0], .count = 1};
  struct fi_rma_ioc rma = {.addr = a->addr, .count = 1, .key = a->key};
  struct fi_msg_atomic msg = {.msg_iov = &ioc,
                              .desc = NULL,
                              .iov_count = 1,
                              .addr = op->endpoint->addr,
                              .rma_iov = &rma,
                              .rma_iov_count = 1,
                              .datatype = a->dt,
                              .op = a->op,
                              .context = &op->ctx,
                              .data = 0};
  struct fi_ioc result = {.addr = op->local_address, .count = 1};
  struct fi_ioc compare = {.addr = &op->operand[1], .count = 1};
  switch (a->kind) {
    case AMO_PLAIN: return fi_atomicmsg(m->ep, &msg, FI_COMPLETION);
    case AMO_FETCH: return fi_fetch_atomicmsg(m->ep, &msg, &result, NULL, 1, FI_COMPLETION);
    case AMO_CSWAP:
      return fi_compare_atomicmsg(m->ep, &msg, &compare, NULL, 1, &result, NULL, 1, FI_COMPLETION);
  }
  return -FI_EINVAL;
}

static int amo(mca_btl_base_module_t* btl, mca_btl_base_endpoint_t* ep, amo_kind_t kind,
               enum fi_op fop, void* local_address, uint64_t remote_address,
               mca_btl_base_registration_handle_t* local_handle,
               mca_btl_base_registration_handle_t* remote_handle, uint64_t operand,
               uint64_t compare, int flags, mca_btl_base_rdma_completion_fn_t cbfunc,
               void* cbcontext, void* cbdata) {
  mca_btl_iwarpx_module_t* m = (mca_btl_iwarpx_module_t*)btl;
  if ((flags & MCA_BTL_ATOMIC_FLAG_FLOAT) != 0) return OPAL_ERR_NOT_SUPPORTED;
  const enum fi_datatype dt = (flags & MCA_BTL_ATOMIC_FLAG_32BIT) != 0 ? FI_UINT32 : FI_UINT64;
  mca_btl_iwarpx_rdma_op_t* op =
      op_get(m, ep, local_address, local_handle, cbfunc, cbcontext, cbdata);
  if (op == NULL) return OPAL_ERR_OUT_OF_RESOURCE;
  store_operand(op, 0, operand, dt);
  store_operand(op, 1, compare, dt);
  const amo_args_t a = {.kind = kind,
                        .op = fop,
                        .dt = dt,
                        .addr = remote_addr(m, remote_address, remote_handle),
                        .key = remote_handle->key};
  return post_op(m, op, post_amo, &a, "fi_atomic", &m->stats.atomics);
}

int mca_btl_iwarpx_atomic_op(mca_btl_base_module_t* btl, mca_btl_base_endpoint_t* ep,
                             uint64_t remote_address,
                             mca_btl_base_registration_handle_t* remote_handle,
                             mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                             mca_btl_base_rdma_completion_fn_t cbfunc, void* cbcontext,
                             void* cbdata) {
  (void)order;
  enum fi_op fop;
  if (!map_op(op, &fop)) return OPAL_ERR_NOT_SUPPORTED;
  return amo(btl, ep, AMO_PLAIN, fop, NULL, remote_address, NULL, remote_handle, operand, 0, flags,
             cbfunc, cbcontext, cbdata);
}

int mca_btl_iwarpx_atomic_fop(mca_btl_base_module_t* btl, mca_btl_base_endpoint_t* ep,
                              void* local_address, uint64_t remote_address,
                              mca_btl_base_registration_handle_t* local_handle,
                              mca_btl_base_registration_handle_t* remote_handle,
                              mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                              mca_btl_base_rdma_completion_fn_t cbfunc, void* cbcontext,
                              void* cbdata) {
  (void)order;
  enum fi_op fop;
  if (!map_op(op, &fop)) return OPAL_ERR_NOT_SUPPORTED;
  return amo(btl, ep, AMO_FETCH, fop, local_address, remote_address, local_handle, remote_handle,
             operand, 0, flags, cbfunc, cbcontext, cbdata);
}

int mca_btl_iwarpx_atomic_cswap(mca_btl_base_module_t* btl, mca_btl_base_endpoint_t* ep,
                                void* local_address, uint64_t remote_address,
                                mca_btl_base_registration_handle_t* local_handle,
                                mca_btl_base_registration_handle_t* remote_handle, uint64_t compare,
                                uint64_t value, int flags, int order,
                                mca_btl_base_rdma_completion_fn_t cbfunc, void* cbcontext,
                                void* cbdata) {
  (void)order;
  return amo(btl, ep, AMO_CSWAP, FI_CSWAP, local_address, remote_address, local_handle,
             remote_handle, value, compare, flags, cbfunc, cbcontext, cbdata);
}

/* One op in every form the BTL may use it (plain and fetching), for both widths. */
static bool op_supported(mca_btl_iwarpx_module_t* m, enum fi_op op, uint64_t flags, bool wide32) {
  struct fi_atomic_attr attr;
  if (fi_query_atomic(m->domain, FI_UINT64, op, &attr, flags) != 0) return false;
  return !wide32 || fi_query_atomic(m->domain, FI_UINT32, op, &attr, flags) == 0;
}

uint32_t mca_btl_iwarpx_query_atomics(mca_btl_iwarpx_module_t* m) {
  static const struct {
    enum fi_op op;
    uint32_t flag;
    bool plain; /* also used non-fetching (atomic_op) */
  } kOps[] = {
      {FI_SUM, MCA_BTL_ATOMIC_SUPPORTS_ADD, true},
      {FI_BAND, MCA_BTL_ATOMIC_SUPPORTS_AND, true},
      {FI_BOR, MCA_BTL_ATOMIC_SUPPORTS_OR, true},
      {FI_BXOR, MCA_BTL_ATOMIC_SUPPORTS_XOR, true},
      {FI_ATOMIC_WRITE, MCA_BTL_ATOMIC_SUPPORTS_SWAP, false},
  };
  /* 32-bit support must hold for every advertised op: check 64-bit first, then both. */
  uint32_t flags64 = 0;
  uint32_t flags32 = MCA_BTL_ATOMIC_SUPPORTS_32BIT;
  for (size_t i = 0; i < sizeof(kOps) / sizeof(kOps[0]); ++i) {
    const bool ok64 = op_supported(m, kOps[i].op, FI_FETCH_ATOMIC, false) &&
                      (!kOps[i].plain || op_supported(m, kOps[i].op, 0, false));
    if (!ok64) continue;
    flags64 |= kOps[i].flag;
    const bool ok32 = op_supported(m, kOps[i].op, FI_FETCH_ATOMIC, true) &&
                      (!kOps[i].plain || op_supported(m, kOps[i].op, 0, true));
    if (!ok32) flags32 = 0;
  }
  if (op_supported(m, FI_CSWAP, FI_COMPARE_ATOMIC, false)) {
    flags64 |= MCA_BTL_ATOMIC_SUPPORTS_CSWAP;
    if (!op_supported(m, FI_CSWAP, FI_COMPARE_ATOMIC, true)) flags32 = 0;
  }
  return flags64 != 0 ? flags64 | flags32 : 0;
}

int mca_btl_iwarpx_flush(mca_btl_base_module_t* btl, mca_btl_base_endpoint_t* ep) {
  (void)ep; /* all endpoints: one completion queue */
  mca_btl_iwarpx_module_t* m = (mca_btl_iwarpx_module_t*)btl;
  /* From inside an RDMA callback, that callback's own operation (and any it is nested in)
   * is complete but still counted until it returns: wait for the others. drive() reads the
   * CQ itself when this thread already holds the progress lock, so this cannot spin on it. */
  const int64_t mine = mca_btl_iwarpx_rdma_callbacks_here();
  while (m->outstanding > mine) (void)mca_btl_iwarpx_drive(m);
  return OPAL_SUCCESS;
}
