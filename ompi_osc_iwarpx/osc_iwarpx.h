/*
 * iwarpx OSC (one-sided) component for Open MPI 4.1 (OSC API 3.0.0), built outside Open
 * MPI's tree, over the public libfabric API and the iwarpx provider's FI_EP_RDM endpoint.
 *
 * Contract (increments 1 and 2, see README.md for the status table):
 *  - One libfabric endpoint per process (fabric, domain, AV, CQ, RDM endpoint), opened by
 *    the first osc_query and shared by every window; FI_THREAD_SAFE, so MPI_THREAD_MULTIPLE
 *    callers may post concurrently. Completions are reaped by osc_iwarpx_progress (a trylock
 *    serialises readers), which is registered with opal_progress while windows exist.
 *  - Per window (flavors create, allocate and dynamic: osc_iwarpx_dynamic.c): the window memory and
 * a small state region (the lock word) are registered once (FI_REMOTE_READ|FI_REMOTE_WRITE);
 * addresses, keys, bases, sizes and disp_units are exchanged with one allgather over a dup of the
 * communicator.
 *  - Put/Get/Rput/Rget (any datatype; derived ones flattened into segments) are fi_write / fi_read
 * straight into / out of the target window, bounds-checked against the target's size
 * (OMPI_ERR_RMA_RANGE, nothing sent). Writes (MPI_Put, MPI_Rput) complete locally (an Rput
 * request means local completion, as in MPI) and are made remote by one 8-byte read per target
 * when a flush/unlock/fence/complete waits (osc_iwarpx_wait_target/_all): RDMAP answers a read
 * only after the writes before it on the same stream are placed.
 *  - Accumulate family: every predefined op and type; osc_iwarpx_atomic.c picks, from the
 *    element type and target alignment only, native remote atomics, a compare-and-swap loop,
 *    or the target's accumulate lock (the last two in osc_iwarpx_acc_general.c).
 *  - PSCW: monotonic post/complete counters in the state region, bumped by remote atomics
 *    (osc_iwarpx_pscw.c).
 *  - Locks are a 64-bit word in the target's state region changed with fi_atomic only
 *    (FI_CSWAP for exclusive, fetching FI_SUM for shared).
 */
#ifndef IWARPX_OSC_IWARPX_H
#define IWARPX_OSC_IWARPX_H

// clang-format off
/* Must stay the first include: it fixes the struct layouts to those of the installed libmpi. */
#include "ompi_config.h"
// clang-format on

#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include "ompi/communicator/communicator.h"
#include "ompi/mca/osc/osc.h"
#include "ompi/request/request.h"
#include "ompi/win/win.h"
#include "opal/class/opal_hash_table.h"
#include "opal/threads/mutex.h"

#if !defined(OMPI_MAJOR_VERSION) || OMPI_MAJOR_VERSION != 4 || OMPI_MINOR_VERSION != 1
#error "osc/iwarpx targets Open MPI 4.1.x: the installed ompi_config.h is from another version"
#endif
#ifndef OMPI_OSC_BASE_VERSION_3_0_0 /* v5 has OMPI_OSC_BASE_VERSION_4_0_0 instead */
#error "osc/iwarpx implements OSC API 3.0.0; ompi/mca/osc/osc.h differs"
#endif

BEGIN_C_DECLS

#define OSC_IWARPX_MAX_ADDR 128

/* The process-wide libfabric objects (osc_iwarpx_fabric.c). */
typedef struct osc_iwarpx_fabric_t {
  struct fi_info* info;
  struct fid_fabric* fabric;
  struct fid_domain* domain;
  struct fid_av* av;
  struct fid_cq* cq;
  struct fid_ep* ep;
  bool virt_addr;      /* FI_MR_VIRT_ADDR: remote addresses are virtual */
  size_t max_msg;      /* ep_attr->max_msg_size: larger transfers are split */
  size_t inject_size;  /* tx_attr->inject_size: MPI_Put writes up to it go as fi_inject_write */
  uint32_t native_ops; /* 1 << FI_SUM/FI_BOR/FI_BAND/FI_BXOR the provider offers (u32+u64) */
  uint8_t addr[OSC_IWARPX_MAX_ADDR];
  size_t addrlen;
  opal_mutex_t lock;          /* av_cache */
  opal_mutex_t cq_lock;       /* trylock: one CQ reader at a time */
  opal_hash_table_t av_cache; /* ompi_proc_t* -> fi_addr_t (one AV entry per peer process) */
  bool progress_registered;
} osc_iwarpx_fabric_t;

/* What every rank publishes about its window (allgather). */
typedef struct osc_iwarpx_peer_t {
  uint64_t base;       /* window base (virtual address) */
  uint64_t size;       /* window bytes */
  uint64_t key;        /* fi_mr_key of the window, 0 if size 0 */
  uint64_t state_base; /* state region (lock word) */
  uint64_t state_key;
  int32_t disp_unit;
  uint32_t addrlen;
  uint8_t addr[OSC_IWARPX_MAX_ADDR];
} osc_iwarpx_peer_t;

/* Per-target remote view kept after the exchange. */
typedef struct osc_iwarpx_target_t {
  uint64_t base, size, key, state_base, state_key;
  int64_t disp_unit;
  fi_addr_t addr;
  volatile int64_t outstanding; /* our operations to it not yet completed */
  volatile int64_t unflushed;   /* MPI_Put writes posted since its last remote-completion read */
  int lock_type;                /* 0, MPI_LOCK_SHARED or MPI_LOCK_EXCLUSIVE held by us */
  bool pscw;                    /* in our MPI_Win_start access group */
  bool nocheck;                 /* locked with MPI_MODE_NOCHECK: no lock word taken */
  uint64_t cas_addr, cas_val;   /* CAS loop: last word we swapped and what we left there (a
                                 * first guess only; races just cost a retry) */
} osc_iwarpx_target_t;

/* The state region every window registers: the remote side of the lock and PSCW protocols,
 * changed only by remote atomics (fi_atomic, the owner's own ones through loopback too). */
typedef struct osc_iwarpx_state_t {
  volatile uint64_t lock;           /* readers in the low bits, OSC_IWARPX_LOCK_EXCL if exclusive */
  volatile uint64_t complete_count; /* MPI_Win_complete calls aimed at this rank, ever */
  volatile uint64_t acc_lock;       /* general accumulate path: 0 free, else holder rank + 1 */
  volatile uint64_t post_count[];   /* [size]: MPI_Win_post calls of rank i including us, ever */
} osc_iwarpx_state_t;
#define OSC_IWARPX_STATE_BYTES(n) \
  ((sizeof(osc_iwarpx_state_t) + (size_t)(n) * sizeof(uint64_t) + 63) & ~(size_t)63)
#define OSC_IWARPX_LOCK_EXCL (UINT64_C(1) << 62)

/* Dynamic windows (osc_iwarpx_dynamic.c): the attached regions of a rank, published right
 * after its state region (same MR, offset OSC_IWARPX_STATE_BYTES(n)) for origins to RDMA-read.
 * `gen` is odd while the owner changes the table; a reader accepts a copy only if an atomic
 * read of `gen` before and after the copy gave the same even value. */
#define OSC_IWARPX_MAX_REGIONS 32
typedef struct osc_iwarpx_region_t {
  uint64_t base, len, key;
} osc_iwarpx_region_t;
typedef struct osc_iwarpx_regions_t {
  volatile uint64_t gen;
  uint64_t count;
  osc_iwarpx_region_t r[OSC_IWARPX_MAX_REGIONS];
} osc_iwarpx_regions_t;
struct osc_iwarpx_dyn_t; /* per-window dynamic state (local MRs, per-target caches) */

/* The remote memory one access goes to: a target's window, or one of its attached regions. */
typedef struct osc_iwarpx_rwin_t {
  uint64_t base, size, key;
} osc_iwarpx_rwin_t;

typedef struct osc_iwarpx_module_t {
  ompi_osc_base_module_t super; /* must be first: the MPI layer casts w_osc_module */
  ompi_communicator_t* comm;    /* dup of the window's communicator */
  int rank, size;
  int flavor;
  void* base;
  size_t win_size;
  bool free_base;            /* allocate flavor: we own base */
  struct fid_mr* win_mr;     /* NULL for a 0-byte window */
  osc_iwarpx_state_t* state; /* registered, 64-byte aligned */
  struct fid_mr* state_mr;
  osc_iwarpx_target_t* targets; /* [size] */
  volatile int64_t outstanding; /* all our operations not yet completed */
  opal_mutex_t lock;            /* epoch state below */
  bool fence_epoch;             /* a fence opened an access epoch */
  bool lock_all;                /* inside lock_all */
  bool lock_all_nocheck;        /* lock_all with MPI_MODE_NOCHECK: no lock words taken */
  int passive_count;            /* targets locked with MPI_Win_lock */
  int* access_group;            /* MPI_Win_start group as window ranks, NULL outside */
  int access_n;
  int* exposure_group; /* MPI_Win_post group as window ranks, NULL outside */
  int exposure_n;
  struct osc_iwarpx_dyn_t* dyn; /* dynamic flavor only, else NULL */
  bool no_locks;                /* info no_locks=true: lock/lock_all are MPI_ERR_RMA_SYNC */
  bool acc_unordered;           /* info accumulate_ordering=none */
  volatile uint64_t epoch_id;   /* bumped when an access epoch opens (dynamic cache checks) */
  uint64_t* post_seen;          /* [size]: posts of rank i consumed by our starts */
  uint64_t complete_seen;       /* completes consumed by our waits */
  uint64_t puts, gets, put_bytes, get_bytes, atomics; /* counters printed at free */
  uint64_t completion_reads; /* remote-completion reads posted behind MPI_Put writes */
  uint64_t wait_turns;       /* progress turns spent waiting in flush/unlock/fence/complete */
} osc_iwarpx_module_t;

/* A request of MPI_Rput/MPI_Rget. */
typedef struct osc_iwarpx_request_t {
  ompi_request_t super;
  volatile int32_t pending; /* chunks not yet completed */
} osc_iwarpx_request_t;
OBJ_CLASS_DECLARATION(osc_iwarpx_request_t);

/* Context of one posted libfabric operation (heap, freed at completion). */
typedef struct osc_iwarpx_op_t {
  osc_iwarpx_module_t* module;
  osc_iwarpx_target_t* target;
  osc_iwarpx_request_t* request; /* NULL unless Rput/Rget */
  volatile int* done;            /* set to 1 (or -1 on error) at completion, may be NULL */
  uint64_t operand[2];           /* atomic operand / compare, valid until completion */
} osc_iwarpx_op_t;

typedef struct mca_osc_iwarpx_component_t {
  ompi_osc_base_component_t super; /* must be first: the loader casts the symbol */
  int output;                      /* opal_output stream, -1 while closed */
  int verbose;                     /* osc_iwarpx_verbose */
  int priority;                    /* osc_iwarpx_priority */
  bool mpi_threads;                /* MPI_THREAD_MULTIPLE requested */
  osc_iwarpx_fabric_t* fabric;     /* NULL until the first query opened it */
  bool fabric_failed;              /* opening failed once: decline every window */
  volatile int32_t windows;        /* live windows */
  volatile int64_t errors;         /* completion errors seen */
} mca_osc_iwarpx_component_t;

/* The only symbol the DSO exports (checked by tests/mca/mca_exports.sh). */
OMPI_MODULE_DECLSPEC extern mca_osc_iwarpx_component_t mca_osc_iwarpx_component;

/* osc_iwarpx_fabric.c */
int osc_iwarpx_fabric_get(osc_iwarpx_fabric_t** out); /* opens on first use */
void osc_iwarpx_fabric_close(void);
int osc_iwarpx_fabric_lookup(osc_iwarpx_fabric_t* f, ompi_proc_t* proc, const void* addr,
                             size_t addrlen, fi_addr_t* out);
int osc_iwarpx_progress(void);            /* completions handled */
void osc_iwarpx_progress_enable(bool on); /* (un)register with opal_progress */

/* osc_iwarpx_ops.c: posting (retries -FI_EAGAIN with progress) and waiting. */
int osc_iwarpx_post_rma(osc_iwarpx_module_t* m, osc_iwarpx_target_t* t, bool write, void* local,
                        uint64_t remote, size_t len, osc_iwarpx_request_t* req);
/* The same into/out of the remote memory w (post_rma is this with the target's window). */
int osc_iwarpx_post_rma_key(osc_iwarpx_module_t* m, osc_iwarpx_target_t* t, bool write, void* local,
                            uint64_t remote, size_t len, const osc_iwarpx_rwin_t* w,
                            osc_iwarpx_request_t* req);
/* One remote atomic on one 32/64-bit integer: plain (result NULL), fetching (result set) or
 * compare-and-swap (compare set). Operands are copied; result is written at completion. */
typedef struct osc_iwarpx_amo_t {
  enum fi_op op;
  enum fi_datatype datatype; /* FI_INT32/FI_UINT32/FI_INT64/FI_UINT64 */
  uint64_t remote;           /* target virtual address */
  uint64_t region_base;      /* base of the target's MR (offset addressing) */
  uint64_t key;
  const void* operand;
  const void* compare;
  void* result;
} osc_iwarpx_amo_t;
int osc_iwarpx_post_atomic(osc_iwarpx_module_t* m, osc_iwarpx_target_t* t,
                           const osc_iwarpx_amo_t* a, osc_iwarpx_request_t* req,
                           volatile int* done);
/* Blocking 64-bit atomic on the target's lock word (state region). */
int osc_iwarpx_atomic_sync(osc_iwarpx_module_t* m, osc_iwarpx_target_t* t, enum fi_op op,
                           uint64_t operand, uint64_t compare, uint64_t* fetched);
/* Remote completion of every operation posted to t (to every target) before the call: the
 * remote-completion read for pending MPI_Put writes, then wait for all of them. */
void osc_iwarpx_wait_target(osc_iwarpx_module_t* m, osc_iwarpx_target_t* t);
void osc_iwarpx_wait_all(osc_iwarpx_module_t* m);
/* Releases what osc_iwarpx_ops.c registered on the domain (before the domain closes). */
void osc_iwarpx_ops_close(void);

/* osc_iwarpx_info.c: reads the creation info and subscribes to the keys (win->w_osc_module
 * set). */
int osc_iwarpx_info_init(struct ompi_win_t* win, struct opal_info_t* info);

/* osc_iwarpx_window.c */
int osc_iwarpx_window_create(struct ompi_win_t* win, void** base, size_t size, int disp_unit,
                             struct ompi_communicator_t* comm, int flavor);
int osc_iwarpx_free(struct ompi_win_t* win);

/* osc_iwarpx_request.c: a new active request (guard held), and the end of the posting call:
 * drops the guard; on success stores the request in *out, on failure frees it (after its
 * posted operations) and returns rc. req may be NULL (then just rc). */
osc_iwarpx_request_t* osc_iwarpx_request_new(void);
int osc_iwarpx_request_finish(osc_iwarpx_request_t* req, int rc, struct ompi_request_t** out);

/* osc_iwarpx_comm.c */
/* Target rank valid, an access epoch covers it, counts not negative (logged error code). */
int osc_iwarpx_check_access(osc_iwarpx_module_t* m, int target, int ocount, int tcount);
/* Validates an access (target, epoch, contiguous datatypes, equal byte counts, range in the
 * target's window) and computes the local pointer, remote address and byte count; an error
 * code (logged) if it is not allowed. */
int osc_iwarpx_resolve(osc_iwarpx_module_t* m, const void* origin, int ocount,
                       struct ompi_datatype_t* odt, int target, ptrdiff_t disp, int tcount,
                       struct ompi_datatype_t* tdt, char** local, uint64_t* remote, size_t* bytes,
                       osc_iwarpx_rwin_t* rw);
int osc_iwarpx_put(const void* origin_addr, int origin_count, struct ompi_datatype_t* origin_dt,
                   int target, ptrdiff_t target_disp, int target_count,
                   struct ompi_datatype_t* target_dt, struct ompi_win_t* win);
int osc_iwarpx_get(void* origin_addr, int origin_count, struct ompi_datatype_t* origin_dt,
                   int target, ptrdiff_t target_disp, int target_count,
                   struct ompi_datatype_t* target_dt, struct ompi_win_t* win);
int osc_iwarpx_rput(const void* origin_addr, int origin_count, struct ompi_datatype_t* origin_dt,
                    int target, ptrdiff_t target_disp, int target_count,
                    struct ompi_datatype_t* target_dt, struct ompi_win_t* win,
                    struct ompi_request_t** request);
int osc_iwarpx_rget(void* origin_addr, int origin_count, struct ompi_datatype_t* origin_dt,
                    int target, ptrdiff_t target_disp, int target_count,
                    struct ompi_datatype_t* target_dt, struct ompi_win_t* win,
                    struct ompi_request_t** request);

/* osc_iwarpx_atomic.c */
int osc_iwarpx_accumulate(const void* origin_addr, int origin_count,
                          struct ompi_datatype_t* origin_dt, int target, ptrdiff_t target_disp,
                          int target_count, struct ompi_datatype_t* target_dt, struct ompi_op_t* op,
                          struct ompi_win_t* win);
int osc_iwarpx_raccumulate(const void* origin_addr, int origin_count,
                           struct ompi_datatype_t* origin_dt, int target, ptrdiff_t target_disp,
                           int target_count, struct ompi_datatype_t* target_dt,
                           struct ompi_op_t* op, struct ompi_win_t* win,
                           struct ompi_request_t** request);
int osc_iwarpx_get_accumulate(const void* origin_addr, int origin_count,
                              struct ompi_datatype_t* origin_dt, void* result_addr,
                              int result_count, struct ompi_datatype_t* result_dt, int target,
                              ptrdiff_t target_disp, int target_count,
                              struct ompi_datatype_t* target_dt, struct ompi_op_t* op,
                              struct ompi_win_t* win);
int osc_iwarpx_rget_accumulate(const void* origin_addr, int origin_count,
                               struct ompi_datatype_t* origin_dt, void* result_addr,
                               int result_count, struct ompi_datatype_t* result_dt, int target,
                               ptrdiff_t target_disp, int target_count,
                               struct ompi_datatype_t* target_dt, struct ompi_op_t* op,
                               struct ompi_win_t* win, struct ompi_request_t** request);
int osc_iwarpx_fetch_and_op(const void* origin_addr, void* result_addr, struct ompi_datatype_t* dt,
                            int target, ptrdiff_t target_disp, struct ompi_op_t* op,
                            struct ompi_win_t* win);
int osc_iwarpx_compare_and_swap(const void* origin_addr, const void* compare_addr,
                                void* result_addr, struct ompi_datatype_t* dt, int target,
                                ptrdiff_t target_disp, struct ompi_win_t* win);

/* osc_iwarpx_acc_general.c: the general accumulate path (blocking). `count` elements of the
 * predefined type dt laid out by extent over `span` bytes at `remote` (inside rw); origin NULL
 * for MPI_NO_OP; compare set only for MPI_Compare_and_swap (locked path); result (same layout)
 * receives the old contents when set. */
typedef struct osc_iwarpx_acc_t {
  struct ompi_op_t* op;
  struct ompi_datatype_t* dt;
  size_t count, span;
  const void* origin;
  const void* compare;
  void* result;
  uint64_t remote;
  osc_iwarpx_rwin_t rw;
} osc_iwarpx_acc_t;
/* 4/8-byte elements (extent == size), aligned: a compare-and-swap loop per element. */
int osc_iwarpx_acc_cas(osc_iwarpx_module_t* m, osc_iwarpx_target_t* t, const osc_iwarpx_acc_t* a);
/* Anything else: under the target's accumulate lock, read, combine, write back. */
int osc_iwarpx_acc_locked(osc_iwarpx_module_t* m, osc_iwarpx_target_t* t,
                          const osc_iwarpx_acc_t* a);

/* osc_iwarpx_atomic.c: one run of elements on the path its type and address choose: native
 * atomics are posted (counted in req if set), the CAS and locked paths block. packed: the run
 * is contiguous at origin, target and result (else a.dt is a predefined type with holes). */
int osc_iwarpx_acc_run(osc_iwarpx_module_t* m, osc_iwarpx_target_t* t, const osc_iwarpx_acc_t* a,
                       bool packed, osc_iwarpx_request_t* req);

/* osc_iwarpx_acc_dtype.c: an accumulate whose origin, target or result type is a
 * non-contiguous derived type built of one predefined type, pair types with holes included
 * (access and op already checked): blocking; cut into elements of the predefined type, runs of
 * elements adjacent at the target served by osc_iwarpx_acc_run. */
typedef struct osc_iwarpx_acc_args_t {
  const void* origin; /* NULL for MPI_NO_OP */
  int ocount;
  struct ompi_datatype_t* odt;
  void* result; /* NULL unless fetching */
  int rcount;
  struct ompi_datatype_t* rdt;
  int target;
  ptrdiff_t disp;
  int tcount;
  struct ompi_datatype_t* tdt;
  struct ompi_op_t* op;
  struct ompi_datatype_t* basic;
} osc_iwarpx_acc_args_t;
int osc_iwarpx_acc_noncontig(osc_iwarpx_module_t* m, const osc_iwarpx_acc_args_t* a);

/* osc_iwarpx_dtype.c: count x dt laid out from base as (address, length) segments in type-map
 * order (addresses only computed, never read); the caller frees v. */
typedef struct osc_iwarpx_segs_t {
  struct iovec* v;
  size_t n, cap;
  size_t bytes;
} osc_iwarpx_segs_t;
int osc_iwarpx_flatten(struct ompi_datatype_t* dt, int count, const void* base,
                       osc_iwarpx_segs_t* out);

/* osc_iwarpx_dtype.c: Put/Get when either datatype is non-contiguous (access already checked);
 * *bytes gets the transfer size. */
int osc_iwarpx_rma_noncontig(osc_iwarpx_module_t* m, bool write, const void* origin, int ocount,
                             struct ompi_datatype_t* odt, int target, ptrdiff_t disp, int tcount,
                             struct ompi_datatype_t* tdt, osc_iwarpx_request_t* req, size_t* bytes);

/* osc_iwarpx_sync.c */
int osc_iwarpx_fence(int assert, struct ompi_win_t* win);
int osc_iwarpx_lock(int lock_type, int target, int assert, struct ompi_win_t* win);
int osc_iwarpx_unlock(int target, struct ompi_win_t* win);
int osc_iwarpx_lock_all(int assert, struct ompi_win_t* win);
int osc_iwarpx_unlock_all(struct ompi_win_t* win);
int osc_iwarpx_sync(struct ompi_win_t* win);
int osc_iwarpx_flush(int target, struct ompi_win_t* win);
int osc_iwarpx_flush_all(struct ompi_win_t* win);
/* osc_iwarpx_pscw.c */
int osc_iwarpx_start(struct ompi_group_t* group, int mode, struct ompi_win_t* win);
int osc_iwarpx_complete(struct ompi_win_t* win);
int osc_iwarpx_post(struct ompi_group_t* group, int mode, struct ompi_win_t* win);
int osc_iwarpx_wait(struct ompi_win_t* win);
int osc_iwarpx_test(struct ompi_win_t* win, int* flag);
/* A non-blocking remote atomic on the state region of target t (offset into it). */
int osc_iwarpx_state_add(osc_iwarpx_module_t* m, osc_iwarpx_target_t* t, size_t offset,
                         uint64_t delta);

/* May origin rank access target now? (an access epoch covers it) */
bool osc_iwarpx_epoch_covers(osc_iwarpx_module_t* m, int target);

/* osc_iwarpx_blocking.c: one remote atomic / one RMA transfer, posted and waited for. */
int osc_iwarpx_amo_sync(osc_iwarpx_module_t* m, osc_iwarpx_target_t* t, const osc_iwarpx_amo_t* a);
int osc_iwarpx_rma_sync(osc_iwarpx_module_t* m, osc_iwarpx_target_t* t, bool write, void* local,
                        uint64_t remote, size_t len, const osc_iwarpx_rwin_t* w);
/* The same for every segment of segs (remote addresses inside w): segment [x, x + len) moves
 * to/from local + (x - remote); all in flight at once, one wait. */
int osc_iwarpx_rma_segs_sync(osc_iwarpx_module_t* m, osc_iwarpx_target_t* t, bool write,
                             char* local, uint64_t remote, const osc_iwarpx_segs_t* segs,
                             const osc_iwarpx_rwin_t* w);

/* osc_iwarpx_range.c: where a target displacement points and which remote memory holds it.
 * target_addr: window base + disp * disp_unit (dynamic windows: disp is the absolute address);
 * OMPI_ERR_RMA_RANGE on negative/overflowing displacements. remote_range: the window or the
 * attached region that holds all of [addr, addr + len), else OMPI_ERR_RMA_RANGE (logged). */
int osc_iwarpx_target_addr(osc_iwarpx_module_t* m, int target, ptrdiff_t disp, uint64_t* addr);
int osc_iwarpx_remote_range(osc_iwarpx_module_t* m, int target, uint64_t addr, uint64_t len,
                            osc_iwarpx_rwin_t* out);
/* Bytes from the true lower bound of the first of count elements of dt to the true upper
 * bound of the last (the byte count for contiguous layouts; non-negative extents assumed). */
uint64_t osc_iwarpx_span(struct ompi_datatype_t* dt, int count);

/* osc_iwarpx_dynamic.c */
#define OSC_IWARPX_DYN_BYTES ((sizeof(osc_iwarpx_regions_t) + 63) & ~(size_t)63)
int osc_iwarpx_dyn_init(osc_iwarpx_module_t* m); /* after m->state is allocated */
void osc_iwarpx_dyn_fini(osc_iwarpx_module_t* m);
int osc_iwarpx_dyn_attach(struct ompi_win_t* win, void* base, size_t size);
int osc_iwarpx_dyn_detach(struct ompi_win_t* win, const void* base);
/* The attached region of target holding [addr, addr + len): OMPI_SUCCESS, or
 * OMPI_ERR_RMA_RANGE when none does even after re-reading the target's table. */
int osc_iwarpx_dyn_lookup(osc_iwarpx_module_t* m, int target, uint64_t addr, uint64_t len,
                          osc_iwarpx_rwin_t* out);

/* osc_iwarpx_unsupported.c: the module slots not implemented in this increment. */
extern const ompi_osc_base_module_t osc_iwarpx_module_template;

END_C_DECLS

#endif /* IWARPX_OSC_IWARPX_H */
