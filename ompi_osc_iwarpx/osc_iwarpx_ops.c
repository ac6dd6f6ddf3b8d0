/*
 * osc/iwarpx operation posting and waiting. Every operation (but a small MPI_Put write, below)
 * carries an osc_iwarpx_op_t context and is counted in its window's and its target's
 * `outstanding` until its completion is reaped by osc_iwarpx_progress.
 * Remote completion: reads and atomics complete at their response. Writes complete locally (the
 * provider holds the data; MPI_Put writes of at most inject_size bytes go as fi_writemsg(FI_INJECT
 * | FI_MORE) and have no completion and no context at all; an MPI_Rput request completes with its
 * writes' local completion, which is all MPI promises for it) and count in the target's
 * `unflushed`; whoever waits for a target (flush, unlock, fence, PSCW complete, free) first posts
 * ONE 8-byte read of the target's state region behind them: RDMAP answers a read only after every
 * earlier write on the same stream is placed, so its completion is the remote completion of all of
 * them. One round trip per flush instead of one hidden read per write (FI_DELIVERY_COMPLETE makes
 * the provider post a zero-length read behind every write): W puts + flush send W + 1 requests.
 * Threads: a write counts in `unflushed` only after it is posted, and the waiter repeats until
 * `unflushed` stays 0, so a fence read never overtakes a write it is meant to cover.
 * -FI_EAGAIN (send queue full) is retried after driving progress, without bound: the queue
 * drains as completions are reaped.
 */
// clang-format off
#include "ompi_config.h" /* first, see osc_iwarpx.h */
// clang-format on

#include <stdlib.h>
#include <string.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "osc_iwarpx.h"

/* One turn of a wait for our own operations: our CQ (which also runs the provider, so the
 * data of peers aimed at our windows keeps being placed) every turn, the whole of
 * opal_progress (the pml's BTLs, libevent's poll, nbc) only every OSC_IWX_FULL_TURN-th turn
 * (a thread that holds the CQ makes ours return 0: the full turn still comes). Counted with
 * callgrind: opal_progress with btl self,tcp costs 1,966 instructions and two syscalls a turn,
 * osc_iwarpx_progress alone 1,405 and one, so a reply is noticed sooner. */
#define OSC_IWX_FULL_TURN 8u
static void wait_turn(unsigned* turn) {
  if ((++*turn % OSC_IWX_FULL_TURN) == 0) {
    opal_progress();
  } else {
    (void)osc_iwarpx_progress();
  }
}

static osc_iwarpx_op_t* op_new(osc_iwarpx_module_t* m, osc_iwarpx_target_t* t,
                               osc_iwarpx_request_t* req, volatile int* done) {
  osc_iwarpx_op_t* op = calloc(1, sizeof(*op));
  if (op == NULL) return NULL;
  op->module = m;
  op->target = t;
  op->request = req;
  op->done = done;
  OPAL_THREAD_ADD_FETCH64(&m->outstanding, 1);
  OPAL_THREAD_ADD_FETCH64(&t->outstanding, 1);
  if (req != NULL) OPAL_THREAD_ADD_FETCH32(&req->pending, 1);
  return op;
}

/* Undoes op_new for an operation that was never posted. */
static void op_drop(osc_iwarpx_op_t* op) {
  if (op->request != NULL) OPAL_THREAD_ADD_FETCH32(&op->request->pending, -1);
  OPAL_THREAD_ADD_FETCH64(&op->target->outstanding, -1);
  OPAL_THREAD_ADD_FETCH64(&op->module->outstanding, -1);
  free(op);
}

static int check_post(ssize_t ret, const char* what, osc_iwarpx_op_t* op) {
  if (ret == 0) return OMPI_SUCCESS;
  opal_output_verbose(1, mca_osc_iwarpx_component.output, "osc:iwarpx: %s: %s (%zd)", what,
                      fi_strerror((int)-ret), ret);
  op_drop(op);
  return OMPI_ERROR;
}

int osc_iwarpx_post_rma(osc_iwarpx_module_t* m, osc_iwarpx_target_t* t, bool write, void* local,
                        uint64_t remote, size_t len, osc_iwarpx_request_t* req) {
  const osc_iwarpx_rwin_t w = {.base = t->base, .size = t->size, .key = t->key};
  return osc_iwarpx_post_rma_key(m, t, write, local, remote, len, &w, req);
}

/* One fi_writemsg (write) or fi_readmsg of `len` bytes between `local` and the target's
 * `addr` under `key`, with `flags` and `context`, retried while the provider says
 * -FI_EAGAIN (progressing meanwhile). Returns what the post finally returned. */
static ssize_t post_rma(osc_iwarpx_fabric_t* f, osc_iwarpx_target_t* t, bool write, void* local,
                        uint64_t addr, size_t len, uint64_t key, void* context, uint64_t flags) {
  struct iovec iov = {.iov_base = local, .iov_len = len};
  struct fi_rma_iov rma = {.addr = addr, .len = len, .key = key};
  struct fi_msg_rma msg = {.msg_iov = &iov,
                           .desc = NULL,
                           .iov_count = 1,
                           .addr = t->addr,
                           .rma_iov = &rma,
                           .rma_iov_count = 1,
                           .context = context,
                           .data = 0};
  ssize_t ret;
  while ((ret = write ? fi_writemsg(f->ep, &msg, flags) : fi_readmsg(f->ep, &msg, flags)) ==
         -FI_EAGAIN) {
    opal_progress();
  }
  return ret;
}

/* A small MPI_Put write: fi_writemsg(FI_INJECT | FI_MORE) without a context or FI_COMPLETION
 * copies the bytes at the call and writes no completion (as fi_inject_write), so there is no
 * context to allocate, nothing counted in `outstanding` and no CQ entry to reap; like every
 * MPI_Put write it counts in `unflushed`, and the remote-completion read that
 * flush/unlock/fence/complete post behind it completes it (the QP sends the read after the
 * write, and RDMAP answers it only after the write is placed). FI_MORE lets the provider hold
 * the write until the next post without FI_MORE (that read, or the next operation) or its next
 * progress pass, and send what it held in one datagram (docs/wire.md §3.6.1): Put + flush is
 * one datagram out, as a Get. An error of the write comes back as a CQ error entry without a
 * context (counted in osc_iwarpx_fabric.c). */
static int post_put_inject(osc_iwarpx_fabric_t* f, osc_iwarpx_target_t* t, const void* local,
                           uint64_t addr, size_t len, uint64_t key) {
  const ssize_t ret = post_rma(f, t, true, (void*)local, addr, len, key, NULL, FI_INJECT | FI_MORE);
  if (ret != 0) {
    opal_output_verbose(1, mca_osc_iwarpx_component.output,
                        "osc:iwarpx: fi_writemsg (FI_INJECT | FI_MORE): %s (%zd)",
                        fi_strerror((int)-ret), ret);
    return OMPI_ERROR;
  }
  OPAL_THREAD_ADD_FETCH64(&t->unflushed, 1); /* after the post */
  return OMPI_SUCCESS;
}

int osc_iwarpx_post_rma_key(osc_iwarpx_module_t* m, osc_iwarpx_target_t* t, bool write, void* local,
                            uint64_t remote, size_t len, const osc_iwarpx_rwin_t* w,
                            osc_iwarpx_request_t* req) {
  osc_iwarpx_fabric_t* f = mca_osc_iwarpx_component.fabric;
  if (write && req == NULL && len > 0 && len <= f->inject_size) {
    return post_put_inject(f, t, local, f->virt_addr ? remote : remote - w->base, len, w->key);
  }
  char* p = local;
  while (len > 0) {
    const size_t chunk = len < f->max_msg ? len : f->max_msg;
    osc_iwarpx_op_t* op = op_new(m, t, req, NULL);
    if (op == NULL) return OMPI_ERR_OUT_OF_RESOURCE;
    const ssize_t ret = post_rma(f, t, write, p, f->virt_addr ? remote : remote - w->base, chunk,
                                 w->key, op, FI_COMPLETION);
    const int rc = check_post(ret, write ? "fi_writemsg" : "fi_readmsg", op);
    if (rc != OMPI_SUCCESS) return rc;
    if (write) OPAL_THREAD_ADD_FETCH64(&t->unflushed, 1); /* after the post */
    p += chunk;
    remote += chunk;
    len -= chunk;
  }
  return OMPI_SUCCESS;
}

int osc_iwarpx_post_atomic(osc_iwarpx_module_t* m, osc_iwarpx_target_t* t,
                           const osc_iwarpx_amo_t* a, osc_iwarpx_request_t* req,
                           volatile int* done) {
  osc_iwarpx_fabric_t* f = mca_osc_iwarpx_component.fabric;
  osc_iwarpx_op_t* op = op_new(m, t, req, done);
  if (op == NULL) return OMPI_ERR_OUT_OF_RESOURCE;
  /* Operands live in the context until completion (the caller's may go away). */
  const size_t size = a->datatype == FI_UINT32 || a->datatype == FI_INT32 ? 4 : 8;
  memcpy(&op->operand[0], a->operand, size);
  if (a->compare != NULL) memcpy(&op->operand[1], a->compare, size);
  struct fi_ioc ioc = {.addr = &op->operand[0], .count = 1};
  struct fi_rma_ioc rma = {
      .addr = f->virt_addr ? a->remote : a->remote - a->region_base, .count = 1, .key = a->key};
  struct fi_msg_atomic msg = {.msg_iov = &ioc,
                              .desc = NULL,
                              .iov_count = 1,
                              .addr = t->addr,
                              .rma_iov = &rma,
                              .rma_iov_count = 1,
                              .datatype = a->datatype,
                              .op = a->op,
                              .context = op,
                              .data = 0};
  struct fi_ioc res = {.addr = a->result, .count = 1};
  struct fi_ioc cmp = {.addr = &op->operand[1], .count = 1};
  ssize_t ret;
  const char* what;
  for (;;) {
    if (a->compare != NULL) {
      what = "fi_compare_atomicmsg";
      ret = fi_compare_atomicmsg(f->ep, &msg, &cmp, NULL, 1, &res, NULL, 1, FI_COMPLETION);
    } else if (a->result != NULL) {
      what = "fi_fetch_atomicmsg";
      ret = fi_fetch_atomicmsg(f->ep, &msg, &res, NULL, 1, FI_COMPLETION);
    } else {
      what = "fi_atomicmsg";
      ret = fi_atomicmsg(f->ep, &msg, FI_COMPLETION); /* completes at the response */
    }
    if (ret != -FI_EAGAIN) break;
    opal_progress();
  }
  const int rc = check_post(ret, what, op);
  if (rc == OMPI_SUCCESS) m->atomics++;
  return rc;
}

int osc_iwarpx_atomic_sync(osc_iwarpx_module_t* m, osc_iwarpx_target_t* t, enum fi_op op_code,
                           uint64_t operand, uint64_t compare, uint64_t* fetched) {
  volatile int done = 0;
  uint64_t result = 0;
  const osc_iwarpx_amo_t a = {.op = op_code,
                              .datatype = FI_UINT64,
                              .remote = t->state_base,
                              .region_base = t->state_base,
                              .key = t->state_key,
                              .operand = &operand,
                              .compare = op_code == FI_CSWAP ? &compare : NULL,
                              .result = &result};
  const int rc = osc_iwarpx_post_atomic(m, t, &a, NULL, &done);
  if (rc != OMPI_SUCCESS) return rc;
  for (unsigned turn = 0; done == 0;) wait_turn(&turn);
  if (done < 0) return OMPI_ERROR;
  if (fetched != NULL) *fetched = result;
  return OMPI_SUCCESS;
}

int osc_iwarpx_state_add(osc_iwarpx_module_t* m, osc_iwarpx_target_t* t, size_t offset,
                         uint64_t delta) {
  const osc_iwarpx_amo_t a = {.op = FI_SUM,
                              .datatype = FI_UINT64,
                              .remote = t->state_base + offset,
                              .region_base = t->state_base,
                              .key = t->state_key,
                              .operand = &delta,
                              .compare = NULL,
                              .result = NULL};
  return osc_iwarpx_post_atomic(m, t, &a, NULL, NULL);
}

/* The sink of every remote-completion read, registered once for local write (FI_READ) so the
 * provider does not register and release a temporary sink STag per read (callgrind: ~450
 * instructions per read, mem::StagTable::Register at the post and Deregister at completion). Nobody
 * looks at what lands in it, so concurrent reads may share it. Registered at the first read, closed
 * with the endpoint. */
static uint64_t fence_sink[8] __attribute__((aligned(64)));
static struct fid_mr* fence_mr;
static volatile bool fence_mr_tried;

static void* fence_desc(osc_iwarpx_fabric_t* f) {
  if (!fence_mr_tried) {
    opal_mutex_lock(&f->lock);
    if (!fence_mr_tried) {
      const int ret =
          fi_mr_reg(f->domain, fence_sink, sizeof(fence_sink), FI_READ, 0, 0, 0, &fence_mr, NULL);
      if (ret != 0) {
        fence_mr = NULL; /* reads go without a descriptor: the provider registers per read */
        opal_output_verbose(1, mca_osc_iwarpx_component.output,
                            "osc:iwarpx: fi_mr_reg of the remote-completion sink: %s (%d)",
                            fi_strerror(-ret), ret);
      }
      opal_atomic_wmb();
      fence_mr_tried = true;
    }
    opal_mutex_unlock(&f->lock);
  }
  return fence_mr != NULL ? fi_mr_desc(fence_mr) : NULL;
}

void osc_iwarpx_ops_close(void) {
  if (fence_mr != NULL) (void)fi_close(&fence_mr->fid);
  fence_mr = NULL;
  fence_mr_tried = false;
}

/* The remote-completion read for t's unflushed writes, if it has any (8 bytes of its state
 * region: every window has one, whatever its size). */
static void post_fence(osc_iwarpx_module_t* m, osc_iwarpx_target_t* t) {
  if (t->unflushed == 0 || opal_atomic_swap_64(&t->unflushed, 0) == 0) return;
  osc_iwarpx_fabric_t* f = mca_osc_iwarpx_component.fabric;
  void* desc = fence_desc(f);
  osc_iwarpx_op_t* op = op_new(m, t, NULL, NULL);
  if (op == NULL) {
    opal_output_verbose(1, mca_osc_iwarpx_component.output,
                        "osc:iwarpx: no memory for a remote-completion read");
    OPAL_THREAD_ADD_FETCH64(&mca_osc_iwarpx_component.errors, 1);
    return;
  }
  struct iovec iov = {.iov_base = fence_sink, .iov_len = sizeof(fence_sink[0])};
  struct fi_rma_iov rma = {
      .addr = f->virt_addr ? t->state_base : 0, .len = iov.iov_len, .key = t->state_key};
  struct fi_msg_rma msg = {.msg_iov = &iov,
                           .desc = desc != NULL ? &desc : NULL,
                           .iov_count = 1,
                           .addr = t->addr,
                           .rma_iov = &rma,
                           .rma_iov_count = 1,
                           .context = op,
                           .data = 0};
  ssize_t ret;
  while ((ret = fi_readmsg(f->ep, &msg, FI_COMPLETION)) == -FI_EAGAIN) opal_progress();
  if (check_post(ret, "fi_readmsg (remote-completion read)", op) != OMPI_SUCCESS) {
    OPAL_THREAD_ADD_FETCH64(&mca_osc_iwarpx_component.errors, 1);
  } else {
    m->completion_reads++;
  }
}

void osc_iwarpx_wait_target(osc_iwarpx_module_t* m, osc_iwarpx_target_t* t) {
  do {
    post_fence(m, t);
    for (unsigned turn = 0; t->outstanding > 0; ++m->wait_turns) wait_turn(&turn);
  } while (t->unflushed > 0); /* a write another thread posted meanwhile */
}

void osc_iwarpx_wait_all(osc_iwarpx_module_t* m) {
  bool again;
  do {
    for (int i = 0; i < m->size; ++i) post_fence(m, &m->targets[i]);
    for (unsigned turn = 0; m->outstanding > 0; ++m->wait_turns) wait_turn(&turn);
    again = false;
    for (int i = 0; i < m->size && !again; ++i) again = m->targets[i].unflushed > 0;
  } while (again);
}
