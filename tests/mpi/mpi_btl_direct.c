/* mpi_btl_direct: drives the iwarpx BTL module directly through Open MPI's BTL 3.1 interface
 * (as osc rdma and ob1 do), inside a 1-rank MPI job started with btl self,iwarpx, against the
 * local process's loopback endpoint. One scenario per run (argv[1]):
 *  flush_in_cb      a put's completion callback posts a second put and calls btl_flush; the
 *                   flush must return (not spin on the progress lock its own thread holds)
 *                   with the second put's callback run; both puts' bytes are checked.
 *  drain_del_procs  64 puts and 64 sends posted, then btl_del_procs of the endpoint: when it
 *                   returns every callback must have run (an endpoint is not freed under
 *                   pending operations); add_procs then makes a fresh endpoint that works.
 *  drain_finalize   64 puts and 64 sends posted, then MPI_Finalize: when it returns every
 *                   callback must have run (none can come after the module is gone). Open MPI
 *                   progresses during MPI_Finalize before the BTL's finalize, so this one
 *                   also passed before finalize drained sends: a guard, not a reproducer.
 * Every wait is bounded; prints "mpi_btl_direct: OK <scenario>" and exits 0, or says what
 * failed and exits 1. */
// clang-format off
#include "opal_config.h" /* first: struct layouts of the installed Open MPI */
// clang-format on

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opal/mca/btl/base/base.h"
#include "opal/mca/btl/btl.h"
#include "opal/util/proc.h"

enum { kOps = 64, kSendBytes = 48 + 1000 };
#define kPutBytes ((size_t)64 * 1024)

static mca_btl_base_module_t* btl;
static mca_btl_base_component_t* component;
static struct mca_btl_base_endpoint_t* ep;
static mca_btl_base_registration_handle_t* dst_handle;
static unsigned char *src, *dst;
static volatile int put_cbs, put_errors, send_cbs, recvs;
static volatile int cb1_done, cb1_saw_second;

static void die(const char* what, long a) {
  fprintf(stderr, "mpi_btl_direct: FAIL: %s (%ld)\n", what, a);
  exit(1);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Calls the component's progress until *flag >= want or 20 s pass. */
static void wait_for(volatile int* flag, int want, const char* what) {
  const double deadline = now() + 20.0;
  while (*flag < want) {
    (void)component->btl_progress();
    if (now() > deadline) die(what, *flag);
  }
}

static void find_module(void) {
  mca_btl_base_selected_module_t* sel;
  OPAL_LIST_FOREACH(sel, &mca_btl_base_modules_initialized, mca_btl_base_selected_module_t) {
    if (strcmp(sel->btl_component->btl_version.mca_component_name, "iwarpx") == 0) {
      btl = sel->btl_module;
      component = sel->btl_component;
    }
  }
  if (btl == NULL) die("no iwarpx BTL module in this process", 0);
}

static void add_self(void) {
  opal_proc_t* self = opal_proc_local_get();
  ep = NULL;
  if (btl->btl_add_procs(btl, 1, &self, &ep, NULL) != OPAL_SUCCESS || ep == NULL) {
    die("add_procs(self) gave no endpoint", 0);
  }
}

static void on_put(mca_btl_base_module_t* b, struct mca_btl_base_endpoint_t* e, void* local,
                   mca_btl_base_registration_handle_t* lh, void* ctx, void* data, int status) {
  (void)b, (void)e, (void)local, (void)lh, (void)ctx, (void)data;
  if (status != OPAL_SUCCESS) ++put_errors;
  ++put_cbs;
}

static int put(size_t slot, mca_btl_base_rdma_completion_fn_t cb) {
  unsigned char* to = dst + slot * kPutBytes;
  int rc;
  while ((rc = btl->btl_put(btl, ep, src + slot * kPutBytes, (uint64_t)(uintptr_t)to, NULL,
                            dst_handle, kPutBytes, 0, MCA_BTL_NO_ORDER, cb, NULL, NULL)) ==
         OPAL_ERR_OUT_OF_RESOURCE) {
    (void)component->btl_progress();
  }
  return rc;
}

static void check_slot(size_t slot) {
  if (memcmp(src + slot * kPutBytes, dst + slot * kPutBytes, kPutBytes) != 0) {
    die("put bytes differ at the target, slot", (long)slot);
  }
}

/* The first put's callback: a second put, then a flush from inside the callback. */
static void on_first_put(mca_btl_base_module_t* b, struct mca_btl_base_endpoint_t* e, void* local,
                         mca_btl_base_registration_handle_t* lh, void* ctx, void* data,
                         int status) {
  on_put(b, e, local, lh, ctx, data, status);
  if (put(1, on_put) != OPAL_SUCCESS) die("second put (inside a callback) refused", 1);
  if (btl->btl_flush(btl, NULL) != OPAL_SUCCESS) die("btl_flush inside a callback failed", 1);
  cb1_saw_second = put_cbs; /* 2 if the flush completed the second put */
  cb1_done = 1;
}

static void on_send(mca_btl_base_module_t* b, struct mca_btl_base_endpoint_t* e,
                    mca_btl_base_descriptor_t* d, int status) {
  (void)b, (void)e, (void)d;
  if (status != OPAL_SUCCESS) die("send completed with an error", status);
  ++send_cbs;
}

static void on_recv(mca_btl_base_module_t* b, mca_btl_base_tag_t tag, mca_btl_base_descriptor_t* d,
                    void* cbdata) {
  (void)b, (void)tag, (void)cbdata;
  if (d->des_segment_count != 1 || d->des_segments[0].seg_len != kSendBytes) {
    die("received message of the wrong length", (long)d->des_segments[0].seg_len);
  }
  ++recvs;
}

/* kOps puts, then kOps sends (to self), none completed yet. */
static void post_many(void) {
  for (size_t i = 0; i < kOps; ++i) {
    if (put(i, on_put) != OPAL_SUCCESS) die("put refused", (long)i);
  }
  for (size_t i = 0; i < kOps; ++i) {
    mca_btl_base_descriptor_t* d = NULL;
    while ((d = btl->btl_alloc(
                btl, ep, MCA_BTL_NO_ORDER, kSendBytes,
                MCA_BTL_DES_FLAGS_BTL_OWNERSHIP | MCA_BTL_DES_SEND_ALWAYS_CALLBACK)) == NULL) {
      (void)component->btl_progress();
    }
    memset(d->des_segments[0].seg_addr.pval, (int)i, kSendBytes);
    d->des_cbfunc = on_send;
    int rc;
    while ((rc = btl->btl_send(btl, ep, d, MCA_BTL_TAG_USR)) == OPAL_ERR_OUT_OF_RESOURCE) {
      (void)component->btl_progress();
    }
    if (rc != OPAL_SUCCESS) die("send refused", rc);
  }
}

int main(int argc, char** argv) {
  const char* scenario = argc > 1 ? argv[1] : "";
  MPI_Init(&argc, &argv);
  find_module();
  add_self();
  mca_btl_base_active_message_trigger[MCA_BTL_TAG_USR].cbfunc = on_recv;
  mca_btl_base_active_message_trigger[MCA_BTL_TAG_USR].cbdata = NULL;
  src = malloc(kOps * kPutBytes);
  dst = calloc(kOps, kPutBytes);
  if (src == NULL || dst == NULL) die("malloc", 0);
  for (size_t i = 0; i < kOps * kPutBytes; ++i) src[i] = (unsigned char)(i * 7u + (i >> 12));
  dst_handle = btl->btl_register_mem(btl, NULL, dst, kOps * kPutBytes, MCA_BTL_REG_FLAG_ACCESS_ANY);
  if (dst_handle == NULL) die("register_mem", 0);

  if (strcmp(scenario, "flush_in_cb") == 0) {
    if (put(0, on_first_put) != OPAL_SUCCESS) die("first put refused", 0);
    wait_for(&cb1_done, 1, "the first put's callback (with its inner flush) did not finish");
    if (cb1_saw_second != 2)
      die("the inner flush returned before the second put completed", cb1_saw_second);
    if (put_errors != 0) die("puts completed with errors", put_errors);
    check_slot(0);
    check_slot(1);
  } else if (strcmp(scenario, "drain_del_procs") == 0) {
    post_many();
    opal_proc_t* self = opal_proc_local_get();
    if (btl->btl_del_procs(btl, 1, &self, &ep) != OPAL_SUCCESS) die("del_procs", 0);
    if (put_cbs != kOps)
      die("puts whose callback had not run when del_procs returned", kOps - put_cbs);
    if (send_cbs != kOps)
      die("sends whose callback had not run when del_procs returned", kOps - send_cbs);
    for (size_t i = 0; i < kOps; ++i) check_slot(i);
    add_self(); /* a fresh endpoint for the same proc */
    memset(dst, 0, kPutBytes);
    if (put(0, on_put) != OPAL_SUCCESS) die("put after re-adding the proc refused", 0);
    wait_for(&put_cbs, kOps + 1, "put after re-adding the proc did not complete");
    check_slot(0);
  } else if (strcmp(scenario, "drain_finalize") == 0) {
    post_many();
    /* No progress here: MPI_Finalize must complete everything before the module goes. */
  } else {
    die("unknown scenario (flush_in_cb, drain_del_procs, drain_finalize)", 0);
  }
  if (strcmp(scenario, "drain_finalize") != 0) {
    wait_for(&recvs, strcmp(scenario, "drain_del_procs") == 0 ? kOps : 0, "messages not received");
    (void)btl->btl_deregister_mem(btl, dst_handle);
  }
  MPI_Finalize();
  if (strcmp(scenario, "drain_finalize") == 0) {
    if (put_cbs != kOps) die("put callbacks missing after MPI_Finalize", kOps - put_cbs);
    if (send_cbs != kOps) die("send callbacks missing after MPI_Finalize", kOps - send_cbs);
    if (put_errors != 0) die("puts completed with errors", put_errors);
    for (size_t i = 0; i < kOps; ++i) check_slot(i);
  }
  printf("mpi_btl_direct: OK %s (%d put callbacks, %d send callbacks, %d messages received)\n",
         scenario, put_cbs, send_cbs, recvs);
  free(src);
  free(dst);
  return 0;
}
