/*
 * osc/iwarpx accumulate family with non-contiguous derived datatypes (vector, indexed,
 * struct, resized, ... built of one predefined type) at origin, target or result, pair types
 * with holes (MPI_DOUBLE_INT, MPI_SHORT_INT, MPI_LONG_DOUBLE_INT, ...) included.
 *
 * Every side is cut into ELEMENTS of the predefined type, not into the raw segments the
 * convertor reports (those end at every hole, so for a pair type they can split an element,
 * or hold several elements of a resized type): the byte stream of each side's segments is
 * walked against the element's own data pieces (the predefined type flattened once; e.g.
 * MPI_SHORT_INT: 2 bytes at 0, 4 at 4, extent 8), so element i's start address is known and a
 * layout that does not consist of whole elements is refused (MPI_ERR_UNSUPPORTED_OPERATION).
 * The origin is gathered into, and the result scattered from, a staging buffer in EXTENT
 * layout (element i at i * extent, padding bytes never copied), which is what ompi_op_reduce
 * and the general path expect. Target elements that follow each other at the extent form one
 * run; each run is served by osc_iwarpx_acc_run — the same per-type path choice as a
 * contiguous access of the same elements (native, CAS loop, or the accumulate lock for pair
 * types with holes), so MPI's per-element atomicity against every other accumulate holds. The
 * general path writes back data pieces only: padding bytes at the target are never written.
 * Every run is range-checked (window or attached region) before anything is sent
 * (MPI_ERR_RMA_RANGE). Blocking: the call returns after remote completion.
 */
// clang-format off
#include "ompi_config.h" /* first, see osc_iwarpx.h */
// clang-format on

#include <stdlib.h>
#include <string.h>

#include "ompi/datatype/ompi_datatype.h"
#include "opal/util/output.h"
#include "osc_iwarpx.h"

static int reject(osc_iwarpx_module_t* m, int rc, int target, const char* why) {
  opal_output_verbose(1, mca_osc_iwarpx_component.output,
                      "osc:iwarpx: rank %d -> %d: accumulate with derived datatypes: %s", m->rank,
                      target, why);
  return rc;
}

/* One element of the predefined type: its data pieces (offset from the element's start,
 * length; adjacent pieces merged) and its extent. */
typedef struct elem_shape_t {
  osc_iwarpx_segs_t piece;
  size_t size, extent;
} elem_shape_t;

static int shape_of(struct ompi_datatype_t* basic, elem_shape_t* s) {
  ptrdiff_t lb = 0, ext = 0;
  (void)ompi_datatype_type_size(basic, &s->size);
  (void)ompi_datatype_get_extent(basic, &lb, &ext);
  s->extent = (size_t)ext;
  /* Laid out from a made-up address (never dereferenced), then made offsets. */
  const uintptr_t base = 4096;
  osc_iwarpx_segs_t raw = {0};
  int rc = osc_iwarpx_flatten(basic, 1, (const void*)base, &raw);
  s->piece = raw;
  if (rc != OMPI_SUCCESS) return rc;
  size_t n = 0;
  for (size_t i = 0; i < raw.n; ++i) {
    raw.v[i].iov_base = (void*)((uintptr_t)raw.v[i].iov_base - base);
    struct iovec* last = n > 0 ? &s->piece.v[n - 1] : NULL;
    if (last != NULL && (uintptr_t)last->iov_base + last->iov_len == (uintptr_t)raw.v[i].iov_base) {
      last->iov_len += raw.v[i].iov_len;
    } else {
      s->piece.v[n++] = raw.v[i];
    }
  }
  s->piece.n = n;
  /* Predefined types start at their lower bound 0 and hold their data inside the extent. */
  if (n == 0 || lb != 0 || (uintptr_t)s->piece.v[0].iov_base != 0 || s->piece.bytes != s->size ||
      (size_t)(uintptr_t)s->piece.v[n - 1].iov_base + s->piece.v[n - 1].iov_len > s->extent) {
    return OMPI_ERR_NOT_SUPPORTED;
  }
  return OMPI_SUCCESS;
}

/* What walk() does with each stretch of data bytes: element idx, offset inside it. */
typedef void (*elem_fn)(void* ctx, size_t idx, size_t off, char* p, size_t len);

/* Walks the data bytes of l (type-map order) as consecutive elements of shape s, calling fn
 * for every stretch of element idx < max; *n gets the element count. OMPI_ERR_NOT_SUPPORTED
 * if the bytes are not whole elements laid out as s says, or more than max (then fn may have
 * been called for a prefix). */
static int walk(const osc_iwarpx_segs_t* l, const elem_shape_t* s, size_t max, elem_fn fn,
                void* ctx, size_t* n) {
  size_t idx = 0, j = 0, in = 0; /* element, its piece, bytes of that piece done */
  uintptr_t start = 0;
  for (size_t k = 0; k < l->n; ++k) {
    char* p = l->v[k].iov_base;
    size_t len = l->v[k].iov_len;
    while (len > 0) {
      const size_t off = (size_t)(uintptr_t)s->piece.v[j].iov_base + in;
      if (idx >= max) return OMPI_ERR_NOT_SUPPORTED;
      if (j == 0 && in == 0) {
        start = (uintptr_t)p;
      } else if ((uintptr_t)p != start + off) {
        return OMPI_ERR_NOT_SUPPORTED;
      }
      const size_t left = s->piece.v[j].iov_len - in;
      const size_t take = len < left ? len : left;
      fn(ctx, idx, off, p, take);
      p += take;
      len -= take;
      in += take;
      if (in == s->piece.v[j].iov_len) {
        in = 0;
        if (++j == s->piece.n) j = 0, ++idx;
      }
    }
  }
  *n = idx;
  return j == 0 && in == 0 ? OMPI_SUCCESS : OMPI_ERR_NOT_SUPPORTED;
}

/* walk() callbacks. */
typedef struct stage_ctx_t {
  char* stage;  /* extent layout */
  uint64_t* at; /* element start addresses (target side) */
  size_t extent;
} stage_ctx_t;
static void nothing(void* c, size_t idx, size_t off, char* p, size_t len) {
  (void)c, (void)idx, (void)off, (void)p, (void)len;
}
static void note_start(void* c, size_t idx, size_t off, char* p, size_t len) {
  (void)len;
  stage_ctx_t* x = c;
  x->at[idx] = (uint64_t)(uintptr_t)p - off;
}
static void gather(void* c, size_t idx, size_t off, char* p, size_t len) {
  stage_ctx_t* x = c;
  memcpy(x->stage + idx * x->extent + off, p, len);
}
static void scatter(void* c, size_t idx, size_t off, char* p, size_t len) {
  stage_ctx_t* x = c;
  memcpy(p, x->stage + idx * x->extent + off, len);
}

/* Target elements [i, i + k) follow each other at the extent: one run. Runs are checked
 * against the target's memory before the first one is posted. */
typedef struct run_t {
  size_t first, count;
  uint64_t span;
  osc_iwarpx_rwin_t rw;
} run_t;

static int make_runs(osc_iwarpx_module_t* m, const osc_iwarpx_acc_args_t* a, const uint64_t* at,
                     size_t n, size_t extent, run_t* runs, size_t* nruns) {
  size_t r = 0;
  for (size_t i = 0; i < n;) {
    size_t k = 1;
    while (i + k < n && at[i + k] == at[i + k - 1] + extent) ++k;
    runs[r] = (run_t){.first = i, .count = k, .span = osc_iwarpx_span(a->basic, (int)k)};
    const int rc = osc_iwarpx_remote_range(m, a->target, at[i], runs[r].span, &runs[r].rw);
    if (rc != OMPI_SUCCESS) return reject(m, rc, a->target, "target range outside the window");
    ++r;
    i += k;
  }
  *nruns = r;
  return OMPI_SUCCESS;
}

/* Posts every run (native ones counted in req), blocking ones done in place. */
static int run_all(osc_iwarpx_module_t* m, const osc_iwarpx_acc_args_t* a, const run_t* runs,
                   size_t nruns, const uint64_t* at, const char* po, char* pr,
                   const elem_shape_t* s, osc_iwarpx_request_t* req) {
  /* A predefined type without holes: a run is contiguous everywhere (`packed`). */
  const bool packed = s->piece.n == 1 && s->size == s->extent;
  int rc = OMPI_SUCCESS;
  for (size_t i = 0; rc == OMPI_SUCCESS && i < nruns; ++i) {
    const size_t off = runs[i].first * s->extent;
    const osc_iwarpx_acc_t run = {.op = a->op,
                                  .dt = a->basic,
                                  .count = runs[i].count,
                                  .span = runs[i].span,
                                  .origin = po != NULL ? po + off : NULL,
                                  .compare = NULL,
                                  .result = pr != NULL ? pr + off : NULL,
                                  .remote = at[runs[i].first],
                                  .rw = runs[i].rw};
    rc = osc_iwarpx_acc_run(m, &m->targets[a->target], &run, packed, req);
  }
  return rc;
}

/* Runs the staged access and waits for it (native atomics complete through req). */
static int run_and_wait(osc_iwarpx_module_t* m, const osc_iwarpx_acc_args_t* a, const run_t* runs,
                        size_t nruns, const uint64_t* at, const char* po, char* pr,
                        const elem_shape_t* s) {
  osc_iwarpx_request_t* req = osc_iwarpx_request_new();
  if (req == NULL) return OMPI_ERR_OUT_OF_RESOURCE;
  int rc = run_all(m, a, runs, nruns, at, po, pr, s, req);
  struct ompi_request_t* done = NULL;
  rc = osc_iwarpx_request_finish(req, rc, &done);
  if (rc == OMPI_SUCCESS) rc = ompi_request_wait(&done, MPI_STATUS_IGNORE);
  return rc;
}

int osc_iwarpx_acc_noncontig(osc_iwarpx_module_t* m, const osc_iwarpx_acc_args_t* a) {
  elem_shape_t s = {0};
  uint64_t start = 0;
  int rc = shape_of(a->basic, &s);
  if (rc != OMPI_SUCCESS) {
    free(s.piece.v);
    return reject(m, MPI_ERR_UNSUPPORTED_OPERATION, a->target, "unexpected predefined layout");
  }
  if (osc_iwarpx_target_addr(m, a->target, a->disp, &start) != OMPI_SUCCESS) {
    free(s.piece.v);
    return reject(m, OMPI_ERR_RMA_RANGE, a->target, "displacement out of range");
  }
  osc_iwarpx_segs_t t = {0}, o = {0}, r = {0};
  uint64_t* at = NULL;
  run_t* runs = NULL;
  char *po = NULL, *pr = NULL;
  rc = osc_iwarpx_flatten(a->tdt, a->tcount, (const void*)(uintptr_t)start, &t);
  if (rc == OMPI_SUCCESS && a->origin != NULL)
    rc = osc_iwarpx_flatten(a->odt, a->ocount, a->origin, &o);
  if (rc == OMPI_SUCCESS && a->result != NULL)
    rc = osc_iwarpx_flatten(a->rdt, a->rcount, a->result, &r);
  if (rc == OMPI_SUCCESS &&
      ((a->origin != NULL && o.bytes != t.bytes) || (a->result != NULL && r.bytes != t.bytes))) {
    rc = reject(m, OMPI_ERR_BAD_PARAM, a->target, "origin, target and result sizes differ");
  }
  const size_t n = t.bytes / s.size; /* whole elements: checked by walk() */
  const size_t stage = n > 0 ? n * s.extent : 1;
  if (rc == OMPI_SUCCESS) {
    at = calloc(n > 0 ? n : 1, sizeof(*at));
    runs = calloc(n > 0 ? n : 1, sizeof(*runs));
    po = calloc(1, stage);
    pr = calloc(1, stage);
    if (at == NULL || runs == NULL || po == NULL || pr == NULL) rc = OMPI_ERR_OUT_OF_RESOURCE;
  }
  stage_ctx_t tx = {.stage = NULL, .at = at, .extent = s.extent};
  stage_ctx_t ox = {.stage = po, .at = NULL, .extent = s.extent};
  stage_ctx_t rx = {.stage = pr, .at = NULL, .extent = s.extent};
  size_t nt = 0, no = n, nr = n, nruns = 0;
  if (rc == OMPI_SUCCESS) {
    rc = walk(&t, &s, n, note_start, &tx, &nt);
    /* The origin is gathered now, the result only checked (scattered after the runs). */
    if (rc == OMPI_SUCCESS && a->origin != NULL) rc = walk(&o, &s, n, gather, &ox, &no);
    if (rc == OMPI_SUCCESS && a->result != NULL) rc = walk(&r, &s, n, nothing, NULL, &nr);
    if (rc != OMPI_SUCCESS || nt != n || no != n || nr != n) {
      rc = reject(m, MPI_ERR_UNSUPPORTED_OPERATION, a->target,
                  "a datatype does not consist of whole elements of its predefined type");
    }
  }
  if (rc == OMPI_SUCCESS) rc = make_runs(m, a, at, n, s.extent, runs, &nruns);
  if (rc == OMPI_SUCCESS) {
    rc = run_and_wait(m, a, runs, nruns, at, a->origin != NULL ? po : NULL,
                      a->result != NULL ? pr : NULL, &s);
  }
  if (rc == OMPI_SUCCESS && a->result != NULL) rc = walk(&r, &s, n, scatter, &rx, &nr);
  free(at);
  free(runs);
  free(po);
  free(pr);
  free(t.v);
  free(o.v);
  free(r.v);
  free(s.piece.v);
  return rc;
}
