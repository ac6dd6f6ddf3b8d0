/*
 * btl/iwarpx progress: reads the module's completion queue (which also drives the provider's
 * manual progress) and dispatches send, receive and RDMA completions. One thread at a time
 * (trylock); a nested mca_btl_iwarpx_progress from inside a callback returns 0 (the PML's
 * opal_progress must not recurse into its own callbacks). Callers that wait for completions
 * (flush, del_procs, finalize) use mca_btl_iwarpx_drive instead: from inside a callback on
 * the thread that holds the progress lock it reads the CQ itself, so a flush called from a
 * completion callback completes instead of spinning on a lock its own thread holds.
 */
// clang-format off
#include "opal_config.h" /* first, see btl_iwarpx.h */
// clang-format on

#include <stddef.h>
#include <time.h>

#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "btl_iwarpx.h"
#include "btl_iwarpx_sctp.h"
#include "opal/util/output.h"

#define IWX_CQ_BATCH 32

#define IWX_CONTAINER(ptr, type, member) ((type*)((char*)(ptr)-offsetof(type, member)))

/* This thread holds the component's progress lock (depth of reaping on this thread). */
static __thread int tl_reaping;
/* RDMA/atomic callbacks running on this thread. */
static __thread int tl_rdma_callbacks;

static void dispatch(mca_btl_iwarpx_module_t* m, void* context, size_t len, uint64_t data,
                     uint64_t flags, int status) {
  mca_btl_iwarpx_ctx_t* ctx = context;
  switch (ctx->kind) {
    case IWX_CTX_SEND: {
      mca_btl_iwarpx_frag_t* frag = IWX_CONTAINER(ctx, mca_btl_iwarpx_frag_t, ctx);
      mca_btl_iwarpx_send_complete(m, frag, status);
      break;
    }
    case IWX_CTX_RECV: {
      mca_btl_iwarpx_recv_t* r = IWX_CONTAINER(ctx, mca_btl_iwarpx_recv_t, ctx);
      if (r->endpoint != NULL) {
        /* On an SCTP association: tag in the in-band header; failures end with it. */
        if (status == OPAL_SUCCESS) mca_btl_iwarpx_sctp_recv_complete(m, r, len);
        break;
      }
      if (status != OPAL_SUCCESS) {
        /* Canceled at close, or failed: repost unless the endpoint is going away. */
        if (status != OPAL_ERR_UNREACH) (void)mca_btl_iwarpx_post_recv(m, r);
      } else if ((flags & FI_REMOTE_CQ_DATA) == 0) {
        opal_output_verbose(1, mca_btl_iwarpx_component.output,
                            "btl:iwarpx: message of %zu bytes without a tag dropped", len);
        (void)mca_btl_iwarpx_post_recv(m, r);
      } else {
        mca_btl_iwarpx_recv_complete(m, r, len, data);
      }
      break;
    }
    case IWX_CTX_PROBE: {
      mca_btl_iwarpx_endpoint_t* ep = IWX_CONTAINER(ctx, mca_btl_iwarpx_endpoint_t, probe_ctx);
      mca_btl_iwarpx_sctp_probe_done(m, ep, status);
      break;
    }
    case IWX_CTX_RDMA: {
      mca_btl_iwarpx_rdma_op_t* op = IWX_CONTAINER(ctx, mca_btl_iwarpx_rdma_op_t, ctx);
      ++tl_rdma_callbacks;
      mca_btl_iwarpx_rdma_complete(m, op, status);
      --tl_rdma_callbacks;
      break;
    }
  }
}

/* One error entry: report it to its operation (and the PML when the peer is gone). */
static int read_error(mca_btl_iwarpx_module_t* m, struct fid_cq* cq) {
  struct fi_cq_err_entry e = {0};
  ssize_t n = fi_cq_readerr(cq, &e, 0);
  if (n != 1) return 0;
  if (e.err == FI_ECANCELED) {
    /* A receive canceled while the endpoint closes: nothing to repost. */
    return 1;
  }
  mca_btl_iwarpx_ctx_t* ctx = e.op_context;
  if (ctx != NULL && ctx->kind == IWX_CTX_RECV &&
      IWX_CONTAINER(ctx, mca_btl_iwarpx_recv_t, ctx)->endpoint != NULL) {
    /* A receive of an SCTP association flushed as it ends (the peer finalized, or died):
     * nothing was lost here; the association's end is judged from the EQ, where a shutdown
     * with messages pending reports the peer. */
    opal_output_verbose(10, mca_btl_iwarpx_component.output,
                        "btl:iwarpx: sctp: receive flushed: %s (%d)", fi_strerror(e.err), e.err);
    return 1;
  }
  mca_btl_iwarpx_endpoint_t* ep = NULL;
  if (ctx != NULL && ctx->kind == IWX_CTX_SEND) {
    ep = IWX_CONTAINER(ctx, mca_btl_iwarpx_frag_t, ctx)->endpoint;
  } else if (ctx != NULL && ctx->kind == IWX_CTX_PROBE) {
    ep = IWX_CONTAINER(ctx, mca_btl_iwarpx_endpoint_t, probe_ctx);
  } else if (ctx != NULL && ctx->kind == IWX_CTX_RDMA) {
    ep = IWX_CONTAINER(ctx, mca_btl_iwarpx_rdma_op_t, ctx)->endpoint;
  }
  mca_btl_iwarpx_peer_error(m, ep, e.err);
  if (ctx != NULL) dispatch(m, ctx, e.len, e.data, e.flags, OPAL_ERROR);
  return 1;
}

/* Posts again the receives delivered since the last read of the CQ (btl_iwarpx.h, repost). */
static void repost(mca_btl_iwarpx_module_t* m) {
  while (m->repost != NULL) {
    mca_btl_iwarpx_recv_t* r = m->repost;
    m->repost = r->repost_next;
    r->repost_next = NULL;
    (void)mca_btl_iwarpx_post_recv(m, r);
  }
}

int mca_btl_iwarpx_reap_cq(mca_btl_iwarpx_module_t* m, struct fid_cq* cq) {
  int count = 0;
  if (cq == NULL) return 0;
  if (cq == m->cq) repost(m);
  struct fi_cq_data_entry entries[IWX_CQ_BATCH];
  for (;;) {
    ssize_t n = fi_cq_read(cq, entries, IWX_CQ_BATCH);
    if (n == -FI_EAVAIL) {
      const int e = read_error(m, cq);
      if (e == 0) break;
      count += e;
      continue;
    }
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      dispatch(m, entries[i].op_context, entries[i].len, entries[i].data, entries[i].flags,
               OPAL_SUCCESS);
    }
    count += (int)n;
    if (n < IWX_CQ_BATCH) break;
  }
  return count;
}

/* Reads the CQs (and the SCTP EQ) until empty; the caller holds the progress lock
 * (tl_reaping > 0). */
static int reap(mca_btl_iwarpx_module_t* m) {
  if (m == NULL) return 0;
  return mca_btl_iwarpx_reap_cq(m, m->cq) + mca_btl_iwarpx_sctp_progress(m);
}

int mca_btl_iwarpx_progress(void) {
  mca_btl_iwarpx_component_t* c = &mca_btl_iwarpx_component;
  if (opal_mutex_trylock(&c->progress_lock) != 0) return 0;
  ++tl_reaping;
  const int count = reap(c->module);
  --tl_reaping;
  opal_mutex_unlock(&c->progress_lock);
  return count;
}

int mca_btl_iwarpx_drive(mca_btl_iwarpx_module_t* m) {
  /* Inside a callback of our own progress: the lock is ours, read the CQ directly. */
  if (tl_reaping > 0) return reap(m);
  return mca_btl_iwarpx_progress();
}

int mca_btl_iwarpx_rdma_callbacks_here(void) {
  return tl_rdma_callbacks;
}

double mca_btl_iwarpx_now(void) {
  struct timespec ts;
  (void)clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

bool mca_btl_iwarpx_drain(mca_btl_iwarpx_module_t* m, volatile int64_t* count, int64_t floor,
                          double seconds) {
  const double deadline = mca_btl_iwarpx_now() + seconds;
  unsigned spins = 0;
  while (*count > floor) {
    if (mca_btl_iwarpx_drive(m) == 0 && (++spins & 1023u) == 0 && mca_btl_iwarpx_now() > deadline) {
      return *count <= floor;
    }
  }
  return true;
}
