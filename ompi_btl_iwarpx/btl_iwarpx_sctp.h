/*
 * btl/iwarpx point-to-point over SCTP (btl_iwarpx_p2p=sctp, issue 8): one FI_EP_MSG endpoint
 * (ep_attr->protocol FI_PROTO_IWARPX_SCTP) per peer, connected on demand. One-sided operations
 * stay on the RDM endpoint (RDMA); only active messages (btl_send/sendi) move.
 *
 * Contract
 * - sctp_open: fi_getinfo for FI_EP_MSG over SCTP, its own fabric/domain, an EQ, a CQ and a
 *   listening passive endpoint; OPAL_ERR_NOT_AVAILABLE (verbose-1 line saying why) when the
 *   provider offers no SCTP here (e.g. FI_IWARPX_SCTP_BACKEND=kernel on a kernel without SCTP),
 *   so the module declines. sctp_getname: the listener's address for the modex.
 * - Connection order (seed 000 §3.1-3.2, rank ordered): of two procs the one with the lower name
 *   (opal_compare_proc) connects, the other accepts. The higher one, when it sends first, asks
 *   for the connection with a wake-up message on the RDM endpoint (CQ data
 *   MCA_BTL_IWARPX_SCTP_WAKE, payload a mca_btl_iwarpx_sctp_cm_t) and waits; so exactly one
 *   association per pair, and no tie-break. The connect carries the same 16 bytes as private
 *   data; a request from a proc we do not know, from a higher name, or for a pair that already
 *   has an association is rejected (logged).
 * - Sends to an SCTP peer are queued in order until FI_CONNECTED and posted in order after,
 *   every fragment to that peer on its one association. Streams (btl_iwarpx_sctp_streams n,
 *   through the provider's FI_IWARPX_SCTP_OPS): a fragment of up to
 *   btl_iwarpx_sctp_stream_threshold bytes goes on stream 0, a larger one round robin on
 *   streams 1..n-1 (n at most the association's streams, asked at the first such fragment);
 *   the peer completes each stream's messages independently, so ob1 sees messages of
 *   different streams in any order (its sequence numbers reorder matches). n = 1, or a
 *   provider without the extension: stream 0 only, in order. sendi injects on stream 0 of the
 *   association only when it is up and nothing is queued (never on the RDM endpoint, which
 *   would overtake the queue).
 * - Receives: recvs_per_peer buffers of max_send_size + header posted on each association;
 *   the in-band header (mca_btl_iwarpx_sctp_hdr_t) is checked, bad messages are dropped with a
 *   log line.
 * - Errors: a refused or failed connection, or a shutdown while messages to the peer are queued
 *   or in flight, completes those fragments with OPAL_ERR_UNREACH and reports the peer to the
 *   PML's error callback (mca_btl_iwarpx_peer_error); a later send to it fails at once. A quiet
 *   shutdown (nothing pending: the peer finalized) only closes the endpoint.
 * - Liveness: usrsctp reports no ABORT from a dead process and an SCTP send completes once
 *   the association holds it, so a dead peer would go unnoticed (ob1 waits for its rendezvous
 *   answer forever). When we sent to a peer over SCTP, or have operations to it queued or
 *   uncompleted, and have not heard from it for
 *   MCA_BTL_IWARPX_SCTP_PROBE_AFTER s since, a probe (CQ data MCA_BTL_IWARPX_SCTP_PROBE) goes to
 *   it on the RDM endpoint, whose reliable stream declares a silent peer lost after its RD
 *   timeout (FI_IWARPX_RD_TIMEOUT); that error completion reports the peer to the PML. A
 *   delivered probe counts as hearing from the peer. Cost: at most one small RDM message per
 *   peer per MCA_BTL_IWARPX_SCTP_PROBE_AFTER s while we send and it does not.
 * - All endpoint state is under the module's lock; no callback runs with it held.
 */
#ifndef IWARPX_BTL_IWARPX_SCTP_H
#define IWARPX_BTL_IWARPX_SCTP_H

#include "btl_iwarpx.h"

BEGIN_C_DECLS

/* CQ data of the wake-up and the liveness probe on the RDM endpoint (outside the tag range). */
#define MCA_BTL_IWARPX_SCTP_WAKE 0x1c7a0000ull
#define MCA_BTL_IWARPX_SCTP_PROBE 0x1c7a0001ull
/* Seconds an SCTP peer may leave our sends uncompleted before we probe it. */
#define MCA_BTL_IWARPX_SCTP_PROBE_AFTER 1.0
#define MCA_BTL_IWARPX_SCTP_CM_MAGIC 0x69777873u /* "iwxs" */

/* Private data of fi_connect and payload of the wake-up: who is asking. */
typedef struct mca_btl_iwarpx_sctp_cm_t {
  uint32_t magic;
  uint32_t reserved;
  opal_process_name_t name;
} mca_btl_iwarpx_sctp_cm_t;

/* btl_iwarpx_sctp.c: listener, connections, EQ. */
int mca_btl_iwarpx_sctp_open(mca_btl_iwarpx_module_t* m);
void mca_btl_iwarpx_sctp_close(mca_btl_iwarpx_module_t* m);
int mca_btl_iwarpx_sctp_getname(mca_btl_iwarpx_module_t* m, void* addr, size_t* len);
/* Sets ep's p2p state from the peer's published SCTP address (len 0: RDM). Lock held. */
void mca_btl_iwarpx_sctp_endpoint_init(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_endpoint_t* ep,
                                       const uint8_t* addr, size_t len);
/* Closes ep's association and frees its buffers; queued fragments fail. Lock not held. */
void mca_btl_iwarpx_sctp_endpoint_fini(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_endpoint_t* ep);
/* Starts the connection (initiator) or the wake-up (acceptor) of an IDLE endpoint; false if
 * that failed at once (ep is CLOSED then). Lock held. */
bool mca_btl_iwarpx_sctp_kick(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_endpoint_t* ep);
/* EQ events and queued sends; progress lock held. */
int mca_btl_iwarpx_sctp_progress(mca_btl_iwarpx_module_t* m);
/* ep's liveness probe completed (status OPAL_SUCCESS: the peer is there). */
void mca_btl_iwarpx_sctp_probe_done(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_endpoint_t* ep,
                                    int status);
/* A wake-up received on the RDM endpoint. */
void mca_btl_iwarpx_sctp_wake_received(mca_btl_iwarpx_module_t* m, const void* buf, size_t len);

/* btl_iwarpx_sctp_send.c: the data path. */
int mca_btl_iwarpx_sctp_send(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_endpoint_t* ep,
                             mca_btl_iwarpx_frag_t* frag, mca_btl_base_tag_t tag);
/* sendi: buf holds an mca_btl_iwarpx_sctp_hdr_t's room, then len bytes of message; fi_inject
 * of header + message on ep's association when it is up and nothing waits before it. 0 sent;
 * -FI_ENOTCONN not now (the caller takes a descriptor); -FI_EAGAIN; another error. */
ssize_t mca_btl_iwarpx_sctp_inject(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_endpoint_t* ep,
                                   mca_btl_base_tag_t tag, void* buf, size_t len);
/* Posts ep's queued fragments while the association takes them. Lock held. */
void mca_btl_iwarpx_sctp_flush_queue(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_endpoint_t* ep);
/* Moves ep's queued fragments to *failed (ep CLOSED); complete them with
 * mca_btl_iwarpx_sctp_fail_all after unlocking. Lock held. */
void mca_btl_iwarpx_sctp_take_queue(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_endpoint_t* ep,
                                    opal_list_t* failed);
void mca_btl_iwarpx_sctp_fail_all(mca_btl_iwarpx_module_t* m, opal_list_t* failed);
int mca_btl_iwarpx_sctp_post_recvs(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_endpoint_t* ep);
void mca_btl_iwarpx_sctp_recv_complete(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_recv_t* r,
                                       size_t len);

END_C_DECLS

#endif /* IWARPX_BTL_IWARPX_SCTP_H */
