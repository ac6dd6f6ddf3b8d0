/*
 * osc/iwarpx general accumulate path: the accumulate-family accesses the provider's remote
 * atomics cannot do in one request (osc_iwarpx_atomic.c decides, see there for the rule).
 *
 *  - osc_iwarpx_acc_cas: (not MPI_Compare_and_swap, which is one native FI_CSWAP there) elements of
 * 4 or 8 bytes (extent == size), naturally aligned at the target: per element a compare-and-swap
 * loop on the target word: guess the old value (what this origin left there last time, else 0),
 * compute new = origin op guess locally with ompi_op_reduce, FI_CSWAP(guess -> new); if the word
 * held something else, that value is the next guess. Every step is a remote atomic on the target's
 * RDMA engine, so it is element-wise atomic against every other accumulate on 4/8-byte elements
 * (native FI_SUM/FI_BOR/... included).
 *  - osc_iwarpx_acc_locked: any other element (1/2-byte types, long double, pair types with
 *    holes such as MPI_DOUBLE_INT, unaligned targets): the target's accumulate lock word
 *    (state region, acc_lock) is taken with FI_CSWAP(0 -> rank + 1) (retried, progressing),
 *    the target range RDMA-read, combined locally, RDMA-written back with remote completion,
 *    then the lock released (FI_ATOMIC_WRITE 0). All accesses to elements of such a type take
 *    this path, so they are atomic against each other. The write-back covers the whole span,
 *    padding bytes of pair types included (written with the value read under the lock, or,
 *    for MPI_REPLACE, the origin's padding).
 * Both are blocking: the call returns after remote completion (request-based calls return an
 * already completed request). Fetching calls get the value before the operation in `result`.
 */
// clang-format off
#include "ompi_config.h" /* first, see osc_iwarpx.h */
// clang-format on

#include <stddef.h>
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

int osc_iwarpx_acc_cas(osc_iwarpx_module_t* m, osc_iwarpx_target_t* t, const osc_iwarpx_acc_t* a) {
  size_t es = 0;
  (void)ompi_datatype_type_size(a->dt, &es);
  const enum fi_datatype fdt = es == 4 ? FI_UINT32 : FI_UINT64;
  for (size_t i = 0; i < a->count; ++i) {
    const char* src = a->origin != NULL ? (const char*)a->origin + i * es : NULL;
    const uint64_t addr = a->remote + i * es;
    /* First guess: what we left in this word last time (0 otherwise); wrong only costs the
     * retry a fixed 0 guess would cost anyway. */
    uint64_t guess = t->cas_addr == addr ? t->cas_val : 0;
    for (;;) {
      uint64_t next = guess, fetched = 0;
      if (src != NULL) combine(a, src, &next, 1, es);
      const osc_iwarpx_amo_t amo = {.op = FI_CSWAP,
                                    .datatype = fdt,
                                    .remote = addr,
                                    .region_base = a->rw.base,
                                    .key = a->rw.key,
                                    .operand = &next,
                                    .compare = &guess,
                                    .result = &fetched};
      const int rc = osc_iwarpx_amo_sync(m, t, &amo);
      if (rc != OMPI_SUCCESS) return rc;
      const bool swapped = memcmp(&fetched, &guess, es) == 0;
      if (swapped) {
        if (a->result != NULL) memcpy((char*)a->result + i * es, &fetched, es);
        t->cas_addr = addr;
        t->cas_val = next;
        break;
      }
      guess = fetched; /* someone changed it: try again from what it holds */
    }
  }
  return OMPI_SUCCESS;
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

int osc_iwarpx_acc_locked(osc_iwarpx_module_t* m, osc_iwarpx_target_t* t,
                          const osc_iwarpx_acc_t* a) {
  if (a->span == 0) return OMPI_SUCCESS;
  char* buf = malloc(a->span);
  if (buf == NULL) return OMPI_ERR_OUT_OF_RESOURCE;
  const uint64_t me = (uint64_t)m->rank + 1;
  int rc;
  for (;;) {
    uint64_t holder = 0;
    rc = lock_word(m, t, FI_CSWAP, me, 0, &holder);
    if (rc != OMPI_SUCCESS || holder == 0) break;
    opal_progress(); /* held by rank holder - 1: try again */
  }
  if (rc != OMPI_SUCCESS) {
    free(buf);
    return rc; /* not taken: nothing to release */
  }
  rc = osc_iwarpx_rma_sync(m, t, false, buf, a->remote, a->span, &a->rw);
  if (rc == OMPI_SUCCESS && a->result != NULL) memcpy(a->result, buf, a->span);
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
  if (rc == OMPI_SUCCESS && write) {
    rc = osc_iwarpx_rma_sync(m, t, true, buf, a->remote, a->span, &a->rw);
  }
  /* Release even after a failed transfer, or the target's accumulates would stop for good. */
  const int rel = lock_word(m, t, FI_ATOMIC_WRITE, 0, 0, NULL);
  free(buf);
  return rc != OMPI_SUCCESS ? rc : rel;
}
