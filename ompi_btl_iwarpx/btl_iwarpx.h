/*
 * iwarpx BTL for Open MPI 4.1 (BTL API 3.1), built outside Open MPI's tree.
 *
 * A thin C component over the public libfabric API: one module per process drives one
 * FI_EP_RDM endpoint of the iwarpx provider (fi_getinfo prov_name "iwarpx"). Contract:
 *  - btl_init opens fabric/domain/AV/CQ/endpoint, publishes a versioned address blob with
 *    the modex and returns one module, or no module (logged at verbosity 1) if anything
 *    fails, so MPI goes on over the other BTLs.
 *  - add_procs makes every proc reachable, the local one too (loopback through the
 *    provider; osc/rdma needs it).
 *  - Active messages travel as fi_senddata with the BTL tag in the CQ data (sendi: as
 *    fi_injectdata when header + payload fit the provider's inject size); receives land in
 *    posted bounce buffers of max_send_size bytes and are handed to
 *    mca_btl_base_active_message_trigger[tag] during the component's progress.
 *  - register_mem/deregister_mem go through Open MPI's rcache "grdma" (page-aligned ranges,
 *    reference counts, an LRU of unused registrations invalidated by Open MPI's memory hooks
 *    when the memory is freed), fi_mr_reg only on a miss.
 *  - put/get/atomics map to fi_writemsg (FI_DELIVERY_COMPLETE) / fi_readmsg /
 *    fi_(fetch_|compare_)atomicmsg; their callbacks run after remote completion.
 *  - Completions are reaped only in the component's btl_progress (mca_btl_iwarpx_progress),
 *    serialised by a trylock so MPI_THREAD_MULTIPLE callers never enter it concurrently.
 */
#ifndef IWARPX_BTL_IWARPX_H
#define IWARPX_BTL_IWARPX_H

// clang-format off
/* Must stay the first include: it fixes the struct layouts (OPAL_CUDA_SUPPORT, ...)
 * to those of the installed libopen-pal. */
#include "opal_config.h"
// clang-format on

#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_ext_iwarpx.h>

#include "opal/class/opal_free_list.h"
#include "opal/class/opal_hash_table.h"
#include "opal/mca/btl/btl.h"
#include "opal/mca/rcache/rcache.h"
#include "opal/threads/mutex.h"

#if !defined(OPAL_MAJOR_VERSION) || OPAL_MAJOR_VERSION != 4 || OPAL_MINOR_VERSION != 1
#error "btl/iwarpx targets Open MPI 4.1.x: the installed opal_config.h is from another version"
#endif
#if !defined(BTL_VERSION) || BTL_VERSION != 310
#error "btl/iwarpx implements BTL API 3.1 (BTL_VERSION 310); opal/mca/btl/btl.h differs"
#endif

BEGIN_C_DECLS

/* Largest message sendi packs (on the stack) for fi_injectdata. */
#define MCA_BTL_IWARPX_SENDI_MAX 256

/* Modex blob: what a peer needs to fi_av_insert us. */
#define MCA_BTL_IWARPX_MODEX_MAGIC 0x69777870u /* "iwxp" */
/* Version 2 added the SCTP listener's address (msg_addrlen 0: p2p over the RDM endpoint). */
#define MCA_BTL_IWARPX_MODEX_VERSION 2u
#define MCA_BTL_IWARPX_MAX_ADDR 128
typedef struct mca_btl_iwarpx_modex_t {
  uint32_t magic;
  uint16_t version;
  uint16_t addrlen;     /* bytes of addr in use (fi_getname of the RDM endpoint) */
  uint16_t msg_addrlen; /* bytes of msg_addr in use (fi_getname of the SCTP pep), or 0 */
  uint16_t reserved;
  uint8_t addr[MCA_BTL_IWARPX_MAX_ADDR];
  uint8_t msg_addr[MCA_BTL_IWARPX_MAX_ADDR];
} mca_btl_iwarpx_modex_t;

/* Registration handle: the part peers receive (btl_registration_handle_size bytes). */
struct mca_btl_base_registration_handle_t {
  uint64_t key;  /* fi_mr_key */
  uint64_t base; /* registered virtual address */
  uint64_t len;
};

/* What a registration is locally: an rcache (grdma) registration, then the handle callers
 * see (register_mem returns &handle; peers receive its bytes), then the MR. */
typedef struct mca_btl_iwarpx_reg_t {
  mca_rcache_base_registration_t base; /* first: grdma allocates sizeof_reg bytes */
  mca_btl_base_registration_handle_t handle;
  struct fid_mr* mr;
} mca_btl_iwarpx_reg_t;

/* Kinds of operation context handed to libfabric (the first member of each). IWX_CTX_PROBE:
 * an SCTP peer's liveness probe on the RDM endpoint (btl_iwarpx_sctp.h). */
typedef enum {
  IWX_CTX_SEND = 1,
  IWX_CTX_RECV,
  IWX_CTX_RDMA,
  IWX_CTX_PROBE
} mca_btl_iwarpx_ctx_kind_t;
typedef struct mca_btl_iwarpx_ctx_t {
  mca_btl_iwarpx_ctx_kind_t kind;
} mca_btl_iwarpx_ctx_t;

/* Where an endpoint's point-to-point messages go (btl_iwarpx_sctp.h has the transitions). */
typedef enum {
  IWX_P2P_RDM = 0,    /* on the RDM endpoint (btl_iwarpx_p2p=datagram, self, or no SCTP peer) */
  IWX_P2P_IDLE,       /* over SCTP, not connected yet */
  IWX_P2P_WAITING,    /* we asked the peer (the initiator) to connect; waiting for it */
  IWX_P2P_CONNECTING, /* fi_connect or fi_accept issued; waiting for FI_CONNECTED */
  IWX_P2P_CONNECTED,  /* sends go on msg_ep */
  IWX_P2P_CLOSED      /* refused, failed or shut down: sends fail */
} mca_btl_iwarpx_p2p_state_t;

struct mca_btl_iwarpx_recv_t;

struct mca_btl_base_endpoint_t {
  opal_proc_t* proc;
  fi_addr_t addr;
  volatile int64_t pending; /* sends and RDMA/atomics posted, callback not yet returned */
  /* SCTP point-to-point (btl_iwarpx_p2p=sctp); all under the module's lock. */
  int p2p_state;         /* mca_btl_iwarpx_p2p_state_t */
  bool p2p_initiator;    /* we connect (our name is the lower); else the peer does */
  struct fid_ep* msg_ep; /* the FI_EP_MSG endpoint of the association, or NULL */
  opal_list_t queue;     /* send fragments waiting for the connection, in order */
  struct mca_btl_iwarpx_recv_t* msg_recvs; /* receive buffers posted on msg_ep */
  int num_msg_recvs;
  uint16_t msg_addrlen;
  uint8_t msg_addr[MCA_BTL_IWARPX_MAX_ADDR]; /* the peer's SCTP listener */
  /* Liveness (usrsctp sees no ABORT from a dead process, and an SCTP send completes when the
   * association takes it): when we last sent to the peer over SCTP, when we last heard from
   * it (a message, the association coming up, a probe delivered), the RDM probe. */
  double sctp_sent_at;
  double sctp_heard_at;
  /* Streams of the association used for sends (btl_iwarpx_sctp_streams, at most what the
   * provider's tx_streams reports): 0 until known (stream 0 only), then 1..16; and the next
   * bulk stream, round robin over 1..sctp_streams-1. */
  uint16_t sctp_streams;
  uint16_t sctp_next_stream;
  bool probe_inflight;
  mca_btl_iwarpx_ctx_t probe_ctx;
};
typedef struct mca_btl_base_endpoint_t mca_btl_base_endpoint_t;
typedef struct mca_btl_base_endpoint_t mca_btl_iwarpx_endpoint_t;

/* In-band header of a message over SCTP (no Send with Immediate Data there): the BTL tag and
 * the payload length, checked on receipt. 8 bytes so the payload stays 8-byte aligned. */
#define MCA_BTL_IWARPX_SCTP_MAGIC 0x5cu
typedef struct mca_btl_iwarpx_sctp_hdr_t {
  uint8_t tag;
  uint8_t magic;
  uint16_t reserved; /* 0 */
  uint32_t len;      /* payload bytes after the header */
} mca_btl_iwarpx_sctp_hdr_t;

/* Send fragment: descriptor + one segment over a payload buffer of the free list. */
typedef struct mca_btl_iwarpx_frag_t {
  mca_btl_base_descriptor_t base;
  mca_btl_base_segment_t segment;
  mca_btl_iwarpx_sctp_hdr_t sctp_hdr; /* sent in front of the segment over SCTP */
  mca_btl_iwarpx_ctx_t ctx;
  mca_btl_iwarpx_endpoint_t* endpoint;
  opal_free_list_t* list;
  size_t capacity; /* payload bytes */
} mca_btl_iwarpx_frag_t;
OBJ_CLASS_DECLARATION(mca_btl_iwarpx_frag_t);

/* One posted receive buffer: on the RDM endpoint (endpoint NULL), or on endpoint->msg_ep. */
typedef struct mca_btl_iwarpx_recv_t {
  mca_btl_iwarpx_ctx_t ctx;
  void* buf;
  struct mca_btl_base_endpoint_t* endpoint;
  struct mca_btl_iwarpx_recv_t* repost_next; /* in the module's repost list */
} mca_btl_iwarpx_recv_t;

/* One outstanding RDMA or atomic operation. */
typedef struct mca_btl_iwarpx_rdma_op_t {
  opal_free_list_item_t super;
  mca_btl_iwarpx_ctx_t ctx;
  mca_btl_iwarpx_endpoint_t* endpoint;
  void* local_address;
  mca_btl_base_registration_handle_t* local_handle;
  mca_btl_base_rdma_completion_fn_t cbfunc;
  void* cbcontext;
  void* cbdata;
  uint64_t operand[2]; /* atomic operand / compare value, valid until completion */
} mca_btl_iwarpx_rdma_op_t;
OBJ_CLASS_DECLARATION(mca_btl_iwarpx_rdma_op_t);

typedef struct mca_btl_iwarpx_stats_t {
  volatile int64_t sends, send_bytes, recvs, recv_bytes, puts, gets, atomics;
  volatile int64_t sendi;         /* messages sent by sendi (also counted in sends) */
  volatile int64_t registrations; /* register_mem calls */
  volatile int64_t mr_regs;       /* fi_mr_reg calls (cache misses) */
  volatile int64_t mr_live;       /* MRs open now (cached + in use) */
  /* SCTP point-to-point: messages (also counted above), associations up, wake-ups sent. */
  volatile int64_t sctp_sends, sctp_recvs, sctp_connections, sctp_wakes, sctp_probes;
  volatile int64_t sctp_stream_sends; /* of sctp_sends, on a stream other than 0 */
  /* Posts the provider refused (-FI_EAGAIN twice, OPAL_ERR_OUT_OF_RESOURCE to the PML, which
   * queues and retries them): sends (send and sendi) and RDMA/atomics. */
  volatile int64_t busy_sends, busy_rdma;
} mca_btl_iwarpx_stats_t;

/* The FI_EP_MSG side of btl_iwarpx_p2p=sctp (btl_iwarpx_sctp.c): its own fabric/domain (the
 * MSG info), a listening passive endpoint, one EQ for it and every association, one CQ. */
typedef struct mca_btl_iwarpx_sctp_t {
  struct fi_info* info;
  struct fid_fabric* fabric;
  struct fid_domain* domain;
  struct fid_eq* eq;
  struct fid_cq* cq;
  struct fid_pep* pep;
  int recvs_per_peer;
  volatile int64_t queued; /* fragments in endpoint queues */
  size_t sendi_limit;      /* largest sendi message: MSG inject_size - header, <= SENDI_MAX */
  /* Streams (btl_iwarpx_sctp_streams, _stream_threshold): the provider's FI_IWARPX_SCTP_OPS
   * (NULL: every message on stream 0), streams wanted per association, and the size above
   * which a message goes on a stream other than 0. */
  struct fi_iwarpx_sctp_ops* ops;
  int streams;
  size_t stream_threshold;
  double next_liveness_check;
} mca_btl_iwarpx_sctp_t;

typedef struct mca_btl_iwarpx_module_t {
  mca_btl_base_module_t super;
  struct fi_info* info;
  struct fid_fabric* fabric;
  struct fid_domain* domain;
  struct fid_av* av;
  struct fid_cq* cq;
  struct fid_ep* ep;
  mca_rcache_base_module_t* rcache; /* grdma: registration cache */
  size_t sendi_limit; /* largest sendi message: min(inject_size, eager, SENDI_MAX); 0 = none */
  bool virt_addr;     /* FI_MR_VIRT_ADDR: remote addresses are virtual */
  opal_mutex_t lock;  /* endpoints table */
  opal_hash_table_t endpoints;             /* opal_proc_t* -> endpoint */
  opal_free_list_t eager_frags, max_frags; /* send fragments */
  opal_free_list_t rdma_ops;               /* mca_btl_iwarpx_rdma_op_t */
  mca_btl_iwarpx_recv_t* recvs;            /* posted receive buffers */
  int num_recvs;
  /* Receives delivered and not yet posted again: reposted when the CQ is next read
   * (mca_btl_iwarpx_reap_cq), so a message's repost is not between its delivery and the
   * caller's return from progress. Under the progress lock. */
  mca_btl_iwarpx_recv_t* repost;
  volatile int64_t outstanding;   /* RDMA/atomics not yet completed */
  volatile int64_t sends_pending; /* fi_senddata sends not yet completed */
  mca_btl_base_module_error_cb_fn_t error_cb;
  mca_btl_iwarpx_stats_t stats;
  mca_btl_iwarpx_sctp_t* sctp; /* NULL unless btl_iwarpx_p2p=sctp */
} mca_btl_iwarpx_module_t;

/* btl_iwarpx_p2p: the channel point-to-point messages travel on. */
typedef enum { MCA_BTL_IWARPX_P2P_DATAGRAM = 0, MCA_BTL_IWARPX_P2P_SCTP = 1 } mca_btl_iwarpx_p2p_t;

typedef struct mca_btl_iwarpx_component_t {
  mca_btl_base_component_3_0_0_t super; /* must be first: the loader casts the symbol */
  int output;                           /* opal_output stream, -1 while closed */
  int verbose;                          /* btl_iwarpx_verbose */
  bool enable;                          /* btl_iwarpx_enable */
  int num_recvs;                        /* btl_iwarpx_num_recvs */
  int p2p;                              /* btl_iwarpx_p2p (mca_btl_iwarpx_p2p_t) */
  char* send_rules;                     /* btl_iwarpx_send_rules, NULL unless set */
  bool mr_cache;                        /* btl_iwarpx_mr_cache */
  int mr_cache_max;                     /* btl_iwarpx_mr_cache_max: MRs before evicting */
  size_t local_reg_threshold;           /* btl_iwarpx_local_registration_threshold */
  char* if_include;                     /* btl_iwarpx_if_include, NULL/empty = wildcard */
  int sctp_streams;                     /* btl_iwarpx_sctp_streams */
  size_t sctp_stream_threshold;         /* btl_iwarpx_sctp_stream_threshold */
  mca_btl_iwarpx_module_t* module;      /* the one module, NULL when disqualified */
  opal_mutex_t progress_lock;           /* btl_progress trylock */
} mca_btl_iwarpx_component_t;

/* The only symbol the DSO exports (checked by tests/mca/mca_exports.sh). */
OPAL_MODULE_DECLSPEC extern mca_btl_iwarpx_component_t mca_btl_iwarpx_component;

/* The template the MCA parameters are bound to; btl_init copies it (btl_iwarpx_module.c). */
extern mca_btl_iwarpx_module_t mca_btl_iwarpx_module_template;

/* btl_iwarpx_fabric.c: open/close the libfabric objects of a module; post receives. */
int mca_btl_iwarpx_fabric_open(mca_btl_iwarpx_module_t* m, bool mpi_threads);
void mca_btl_iwarpx_fabric_close(mca_btl_iwarpx_module_t* m);
int mca_btl_iwarpx_post_recv(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_recv_t* r);

/* btl_iwarpx_progress.c: reap completions; number handled. */
int mca_btl_iwarpx_progress(void);
/* Progress for a caller that waits (flush, drains): the component's progress, or, when this
 * thread is already inside it (a completion callback waits), the CQ read directly (nested). */
int mca_btl_iwarpx_drive(mca_btl_iwarpx_module_t* m);
/* RDMA/atomic callbacks running on this thread now (their operations count as outstanding
 * until they return, so a flush inside one waits for the others only). */
int mca_btl_iwarpx_rdma_callbacks_here(void);
/* CLOCK_MONOTONIC in seconds. */
double mca_btl_iwarpx_now(void);
/* Drives progress until *count <= floor or `seconds` pass; true when drained. */
bool mca_btl_iwarpx_drain(mca_btl_iwarpx_module_t* m, volatile int64_t* count, int64_t floor,
                          double seconds);

/* btl_iwarpx_send.c: active messages. */
mca_btl_base_descriptor_t* mca_btl_iwarpx_alloc(mca_btl_base_module_t* btl,
                                                mca_btl_base_endpoint_t* ep, uint8_t order,
                                                size_t size, uint32_t flags);
int mca_btl_iwarpx_free(mca_btl_base_module_t* btl, mca_btl_base_descriptor_t* des);
mca_btl_base_descriptor_t* mca_btl_iwarpx_prepare_src(mca_btl_base_module_t* btl,
                                                      mca_btl_base_endpoint_t* ep,
                                                      struct opal_convertor_t* convertor,
                                                      uint8_t order, size_t reserve, size_t* size,
                                                      uint32_t flags);
int mca_btl_iwarpx_send(mca_btl_base_module_t* btl, mca_btl_base_endpoint_t* ep,
                        mca_btl_base_descriptor_t* des, mca_btl_base_tag_t tag);
/* Immediate send: fi_injectdata of header + payload when they fit sendi_limit (OPAL_SUCCESS,
 * nothing to complete); otherwise OPAL_ERR_OUT_OF_RESOURCE with *descriptor (if not NULL) a
 * fresh descriptor of header_size + payload_size bytes, or NULL, and the convertor where it
 * was. */
int mca_btl_iwarpx_sendi(mca_btl_base_module_t* btl, mca_btl_base_endpoint_t* ep,
                         struct opal_convertor_t* convertor, void* header, size_t header_size,
                         size_t payload_size, uint8_t order, uint32_t flags, mca_btl_base_tag_t tag,
                         mca_btl_base_descriptor_t** descriptor);
void mca_btl_iwarpx_send_complete(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_frag_t* frag,
                                  int status);
/* A message received on the RDM endpoint (CQ data: the tag, or an SCTP wake-up); r joins
 * the repost list (posted again by the next mca_btl_iwarpx_reap_cq). */
void mca_btl_iwarpx_recv_complete(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_recv_t* r, size_t len,
                                  uint64_t data);
/* Hands len bytes at buf with `tag` to the registered active-message callback (counted). */
void mca_btl_iwarpx_deliver(mca_btl_iwarpx_module_t* m, mca_btl_base_tag_t tag, void* buf,
                            size_t len);

/* btl_iwarpx_mr.c: memory registration through the rcache (grdma) registration cache. */
int mca_btl_iwarpx_mr_open(mca_btl_iwarpx_module_t* m);
void mca_btl_iwarpx_mr_close(mca_btl_iwarpx_module_t* m);
/* Whether unused registrations stay cached (leave-pinned on and btl_iwarpx_mr_cache). */
bool mca_btl_iwarpx_mr_keeps_unused(void);
mca_btl_base_registration_handle_t* mca_btl_iwarpx_register_mem(mca_btl_base_module_t* btl,
                                                                mca_btl_base_endpoint_t* ep,
                                                                void* base, size_t size,
                                                                uint32_t flags);
int mca_btl_iwarpx_deregister_mem(mca_btl_base_module_t* btl,
                                  mca_btl_base_registration_handle_t* handle);

/* btl_iwarpx_rdma.c: put/get/atomics/flush. */
int mca_btl_iwarpx_put(mca_btl_base_module_t* btl, mca_btl_base_endpoint_t* ep, void* local_address,
                       uint64_t remote_address, mca_btl_base_registration_handle_t* local_handle,
                       mca_btl_base_registration_handle_t* remote_handle, size_t size, int flags,
                       int order, mca_btl_base_rdma_completion_fn_t cbfunc, void* cbcontext,
                       void* cbdata);
int mca_btl_iwarpx_get(mca_btl_base_module_t* btl, mca_btl_base_endpoint_t* ep, void* local_address,
                       uint64_t remote_address, mca_btl_base_registration_handle_t* local_handle,
                       mca_btl_base_registration_handle_t* remote_handle, size_t size, int flags,
                       int order, mca_btl_base_rdma_completion_fn_t cbfunc, void* cbcontext,
                       void* cbdata);
int mca_btl_iwarpx_atomic_op(mca_btl_base_module_t* btl, mca_btl_base_endpoint_t* ep,
                             uint64_t remote_address,
                             mca_btl_base_registration_handle_t* remote_handle,
                             mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                             mca_btl_base_rdma_completion_fn_t cbfunc, void* cbcontext,
                             void* cbdata);
int mca_btl_iwarpx_atomic_fop(mca_btl_base_module_t* btl, mca_btl_base_endpoint_t* ep,
                              void* local_address, uint64_t remote_address,
                              mca_btl_base_registration_handle_t* local_handle,
                              mca_btl_base_registration_handle_t* remote_handle,
                              mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                              mca_btl_base_rdma_completion_fn_t cbfunc, void* cbcontext,
                              void* cbdata);
int mca_btl_iwarpx_atomic_cswap(mca_btl_base_module_t* btl, mca_btl_base_endpoint_t* ep,
                                void* local_address, uint64_t remote_address,
                                mca_btl_base_registration_handle_t* local_handle,
                                mca_btl_base_registration_handle_t* remote_handle, uint64_t compare,
                                uint64_t value, int flags, int order,
                                mca_btl_base_rdma_completion_fn_t cbfunc, void* cbcontext,
                                void* cbdata);
int mca_btl_iwarpx_flush(mca_btl_base_module_t* btl, mca_btl_base_endpoint_t* ep);
void mca_btl_iwarpx_rdma_complete(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_rdma_op_t* op,
                                  int status);
/* The atomic capabilities fi_query_atomic reports, as MCA_BTL_ATOMIC_SUPPORTS_* flags. */
uint32_t mca_btl_iwarpx_query_atomics(mca_btl_iwarpx_module_t* m);

/* btl_iwarpx_ifaddr.c: the first up IPv4 address selected by if_include (interface names and
 * a.b.c.d/n subnets, comma-separated) into *out with port 0; OPAL_ERR_NOT_FOUND /
 * OPAL_ERR_BAD_PARAM (logged) otherwise. And: is a published sockaddr the wildcard address? */
struct sockaddr_in;
int mca_btl_iwarpx_pick_source(const char* if_include, struct sockaddr_in* out);

/* Walks the module's endpoint table: start with *node == NULL; each call sets *ep to the next
 * endpoint and returns true, or returns false after the last. The current endpoint may be freed
 * before the next call (the walk follows the table's node, not the value). Lock held. */
bool mca_btl_iwarpx_endpoint_next(mca_btl_iwarpx_module_t* m, void** node,
                                  mca_btl_iwarpx_endpoint_t** ep);
bool mca_btl_iwarpx_addr_is_wildcard(const void* addr, size_t len);

/* Report a peer lost (completion error) to the PML's error callback, if one is registered. */
void mca_btl_iwarpx_peer_error(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_endpoint_t* ep,
                               int fi_err);
/* Reads one CQ until empty, dispatching to send/receive/RDMA completion (progress.c); the
 * caller holds the progress lock. */
int mca_btl_iwarpx_reap_cq(mca_btl_iwarpx_module_t* m, struct fid_cq* cq);

END_C_DECLS

#endif /* IWARPX_BTL_IWARPX_H */
