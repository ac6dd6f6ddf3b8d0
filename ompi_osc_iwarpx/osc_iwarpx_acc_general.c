/*
 * osc/iwarpx general accumulate path: the accumulate-family accesses the provider's remote
 * atomics cannot do in one request (osc_iwarpx_atomic.c decides, see there for the rule).
 *
 *  - osc_iwarpx_acc_cas (not MPI_Compare_and_swap: that is one native FI_CSWAP there):
 *    elements of 4 or 8 bytes (extent == size), naturally aligned at the target: per element a
 *    compare-and-swap loop on the target word: guess the old value (runs of several elements:
 *    one RDMA read of them all; one element: what this origin left there last time, else 0),
 *    compute new = origin op guess locally with ompi_op_reduce, FI_CSWAP(guess -> new); if the
 *    word held something else, that value is the next guess. Every swap is a remote atomic on
 *    the target's RDMA engine, so it is element-wise atomic against every other accumulate on
 *    4/8-byte elements (native FI_SUM/FI_BOR/... included). Up to 1024 elements have their CAS
 *    in flight at once: an uncontended run costs one read and one CAS per element, all
 *    pipelined, not a round trip each.
 *  - osc_iwarpx_acc_locked: any other element (1/2-byte types, long double, pair types with
 *    holes such as MPI_DOUBLE_INT, unaligned targets): the target's accumulate lock word
 *    (state region, acc_lock) is taken with FI_CSWAP(0 -> rank + 1) (retried, progressing),
 *    the target range RDMA-read, combined locally, RDMA-written back, then the lock released
 *    (FI_ATOMIC_WRITE 0) behind the writes on the same stream: the target executes the release
 *    only after they are placed, so its completion is their remote completion and the next
 *    holder reads our result (3 round trips: lock, read, write + release; no
 *    remote-completion read of its own). All accesses to elements of such a type take
 *    this path, so they are atomic against each other. Only data bytes are written back, and
 *    only data bytes are copied into `result`: the padding of pair types (e.g. the 4 bytes
 *    after MPI_DOUBLE_INT's int, the 2 inside MPI_SHORT_INT) is never touched at the target
 *    nor in the result buffer (one RDMA write per stretch of data bytes, all in flight at
 *    once).
 * Both are blocking: the call returns after remote completion (request-based calls return an
 * already completed request). Fetching calls get the value before the operation in `result`.
 */
// clang-format off
#include "ompi_config.h" /* first, see osc_iwarpx.h */
// clang-format on

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_atomic.h>

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/op/op.h"
#include "opal/runtime/opal_progress.h"
#include "osc_iwarpx.h"

/* new = origin op old (MPI_REPLACE: origin), count elements of dt in extent layout. */
static void combine(const osc_iwarpx_acc_t* a, const void* origin, void* inout, size_t count,
                    size_t bytes) {
  if (a->op == MPI_REPLACE) {
    memcpy(inout, origin, bytes);
  } else {
    ompi_op_reduce(a->op, (void*)(uintptr_t)origin, inout, count, a->dt);
  }
}

/* One CAS-loop element in flight. */
typedef struct cas_elem_t {
  uint64_t guess, next, fetched;
  volatile int done;
} cas_elem_t;

#define OSC_IWX_CAS_BATCH 1024

/* Elements [first, first + n) of a: every pending element's CAS is posted at once, then all
 * are waited for; the ones that found another value retry with it, until none is left. */
static int cas_batch(osc_iwarpx_module_t* m, osc_iwarpx_target_t* t, const osc_iwarpx_acc_t* a,
                     size_t first, size_t n, size_t es, cas_elem_t* e, size_t* pending) {
  const enum fi_datatype fdt = es == 4 ? FI_UINT32 : FI_UINT64;
  size_t np = n;
  /* First guesses: for several elements, one RDMA read of them all (not atomic per element:
   * a torn or stale value is just a wrong guess); for one element, what we left in that word
   * last time (else 0). A wrong guess costs one retry. */
  char* seen = n > 1 ? malloc(n * es) : NULL;
  if (seen != NULL && osc_iwarpx_rma_sync(m, t, false, seen, a->remote + first * es, n * es,
                                          &a->rw) != OMPI_SUCCESS) {
    free(seen);
    seen = NULL;
  }
  for (size_t k = 0; k < n; ++k) {
    const uint64_t addr = a->remote + (first + k) * es;
    e[k].guess = 0;
    if (seen != NULL) {
      memcpy(&e[k].guess, seen + k * es, es);
    } else if (t->cas_addr == addr) {
      e[k].guess = t->cas_val;
    }
    pending[k] = k;
  }
  free(seen);
  int rc = OMPI_SUCCESS;
  while (rc == OMPI_SUCCESS && np > 0) {
    size_t posted = 0;
    for (; rc == OMPI_SUCCESS && posted < np; ++posted) {
      cas_elem_t* x = &e[pending[posted]];
      const size_t idx = first + pending[posted];
      x->next = x->guess;
      x->fetched = 0;
      x->done = 0;
      if (a->origin != NULL) combine(a, (const char*)a->origin + idx * es, &x->next, 1, es);
      const osc_iwarpx_amo_t amo = {.op = FI_CSWAP,
                                    .datatype = fdt,
                                    .remote = a->remote + idx * es,
                                    .region_base = a->rw.base,
                                    .key = a->rw.key,
                                    .operand = &x->next,
                                    .compare = &x->guess,
                                    .result = &x->fetched};
      rc = osc_iwarpx_post_atomic(m, t, &amo, NULL, &x->done);
      if (rc != OMPI_SUCCESS) break;
    }
    /* Wait for everything posted (its completion writes into e[]) even after an error. */
    size_t left = 0;
    for (size_t k = 0; k < posted; ++k) {
      cas_elem_t* x = &e[pending[k]];
      while (x->done == 0) opal_progress();
      if (x->done < 0) {
        rc = OMPI_ERROR;
      } else if (memcmp(&x->fetched, &x->guess, es) == 0) {
        if (a->result != NULL) {
          memcpy((char*)a->result + (first + pending[k]) * es, &x->fetched, es);
        }
        t->cas_addr = a->remote + (first + pending[k]) * es;
        t->cas_val = x->next;
      } else {
        x->guess = x->fetched; /* someone changed it: try again from what it holds */
        pending[left++] = pending[k];
      }
    }
    np = left;
  }
  return rc;
}

int osc_iwarpx_acc_cas(osc_iwarpx_module_t* m, osc_iwarpx_target_t* t, const osc_iwarpx_acc_t* a) {
  size_t es = 0;
  (void)ompi_datatype_type_size(a->dt, &es);
  const size_t batch = a->count < OSC_IWX_CAS_BATCH ? a->count : OSC_IWX_CAS_BATCH;
  if (batch == 0) return OMPI_SUCCESS;
  cas_elem_t* e = calloc(batch, sizeof(*e));
  size_t* pending = calloc(batch, sizeof(*pending));
  int rc = e != NULL && pending != NULL ? OMPI_SUCCESS : OMPI_ERR_OUT_OF_RESOURCE;
  for (size_t first = 0; rc == OMPI_SUCCESS && first < a->count; first += batch) {
    const size_t n = a->count - first < batch ? a->count - first : batch;
    rc = cas_batch(m, t, a, first, n, es, e, pending);
  }
  free(e);
  free(pending);
  return rc;
}

static int lock_word(osc_iwarpx_module_t* m, osc_iwarpx_target_t* t, enum fi_op op,
                     uint64_t operand, uint64_t compare, uint64_t* fetched) {
  const osc_iwarpx_amo_t amo = {.op = op,
                                .datatype = FI_UINT64,
                                .remote = t->state_base + offsetof(osc_iwarpx_state_t, acc_lock),
                                .region_base = t->state_base,
                                .key = t->state_key,
                                .operand = &operand,
                                .compare = op == FI_CSWAP ? &compare : NULL,
                                .result = fetched};
  return osc_iwarpx_amo_sync(m, t, &amo);
}

/* The data bytes of the run a (count elements of a->dt in extent layout at a->remote) as
 * target segments: the whole span for types without holes, else one per stretch of data. */
static int data_segs(const osc_iwarpx_acc_t* a, osc_iwarpx_segs_t* out) {
  if (a->count > (size_t)INT32_MAX) return OMPI_ERR_NOT_SUPPORTED;
  if (ompi_datatype_is_contiguous_memory_layout(a->dt, (int32_t)a->count)) {
    out->v = malloc(sizeof(*out->v));
    if (out->v == NULL) return OMPI_ERR_OUT_OF_RESOURCE;
    out->v[0] = (struct iovec){.iov_base = (void*)(uintptr_t)a->remote, .iov_len = a->span};
    out->n = out->cap = 1;
    out->bytes = a->span;
    return OMPI_SUCCESS;
  }
  return osc_iwarpx_flatten(a->dt, (int)a->count, (const void*)(uintptr_t)a->remote, out);
}

/* result (laid out like the run at `remote`) gets the data bytes of buf, padding untouched. */
static void copy_data(const osc_iwarpx_segs_t* data, uint64_t remote, void* result,
                      const char* buf) {
  for (size_t i = 0; i < data->n; ++i) {
    const size_t off = (size_t)((uint64_t)(uintptr_t)data->v[i].iov_base - remote);
    memcpy((char*)result + off, buf + off, data->v[i].iov_len);
  }
}

int osc_iwarpx_acc_locked(osc_iwarpx_module_t* m, osc_iwarpx_target_t* t,
                          const osc_iwarpx_acc_t* a) {
  if (a->span == 0) return OMPI_SUCCESS;
  osc_iwarpx_segs_t data = {0}; /* the data bytes of the span at the target */
  char* buf = malloc(a->span);
  int rc = buf != NULL ? data_segs(a, &data) : OMPI_ERR_OUT_OF_RESOURCE;
  if (rc != OMPI_SUCCESS) {
    free(data.v);
    free(buf);
    return rc;
  }
  const uint64_t me = (uint64_t)m->rank + 1;
  for (;;) {
    uint64_t holder = 0;
    rc = lock_word(m, t, FI_CSWAP, me, 0, &holder);
    if (rc != OMPI_SUCCESS || holder == 0) break;
    opal_progress(); /* held by rank holder - 1: try again */
  }
  if (rc != OMPI_SUCCESS) {
    free(data.v);
    free(buf);
    return rc; /* not taken: nothing to release */
  }
  rc = osc_iwarpx_rma_sync(m, t, false, buf, a->remote, a->span, &a->rw);
  if (rc == OMPI_SUCCESS && a->result != NULL) copy_data(&data, a->remote, a->result, buf);
  bool write = false;
  if (rc == OMPI_SUCCESS && a->compare != NULL) {
    size_t es = 0;
    (void)ompi_datatype_type_size(a->dt, &es);
    write = memcmp(buf, a->compare, es) == 0;
    if (write) memcpy(buf, a->origin, es);
  } else if (rc == OMPI_SUCCESS && a->origin != NULL) {
    combine(a, a->origin, buf, a->count, a->span);
    write = true;
  }
  /* The write-back completes locally only: the release below travels the same ordered stream,
   * and the target executes an Atomic Request only after the writes before it are placed
   * (RDMAP queues it like a Read Request), so whoever takes the lock next reads our result. */
  if (rc == OMPI_SUCCESS && write) {
    rc = osc_iwarpx_rma_segs_sync(m, t, true, buf, a->remote, &data, &a->rw);
  }
  /* Release even after a failed transfer, or the target's accumulates would stop for good. */
  const int rel = lock_word(m, t, FI_ATOMIC_WRITE, 0, 0, NULL);
  free(data.v);
  free(buf);
  return rc != OMPI_SUCCESS ? rc : rel;
}
