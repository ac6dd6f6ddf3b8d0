/*
 * btl/iwarpx point-to-point over SCTP: the listener, the rank-ordered connection setup (connect,
 * accept, wake-up) and the EQ. The contract is btl_iwarpx_sctp.h's; the data path is
 * btl_iwarpx_sctp_send.c.
 */
// clang-format off
#include "opal_config.h" /* first, see btl_iwarpx.h */
// clang-format on

#include "btl_iwarpx_sctp.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_ext_iwarpx.h>
#include <rdma/fi_rma.h>

#include "iwx_ofi.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

#define IWX_CM_DATA_MAX 512

static int fail(const char* call, int ret) {
  opal_output_verbose(1, mca_btl_iwarpx_component.output, "btl:iwarpx: sctp: %s failed: %s (%d)",
                      call, fi_strerror(ret < 0 ? -ret : ret), ret);
  return OPAL_ERROR;
}

static void log_fail(void* arg, const char* call, int ret) {
  (void)arg;
  (void)fail(call, ret);
}

static struct fi_info* getinfo(void) {
  struct fi_info* hints = fi_allocinfo();
  if (hints == NULL) return NULL;
  hints->fabric_attr->prov_name = strdup(FI_IWARPX_PROV_NAME);
  hints->ep_attr->type = FI_EP_MSG;
  hints->ep_attr->protocol = FI_PROTO_IWARPX_SCTP;
  hints->caps = FI_MSG;
  hints->mode = 0;
  hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  hints->domain_attr->threading = FI_THREAD_SAFE;
  /* The listener's address: if_include's, else the wildcard (as the RDM endpoint's: peers on
   * this node reach it at 127.0.0.1, see endpoint_init). */
  struct sockaddr_in* src = calloc(1, sizeof(*src)); /* fi_freeinfo frees it */
  if (src == NULL) {
    fi_freeinfo(hints);
    return NULL;
  }
  src->sin_family = AF_INET;
  src->sin_addr.s_addr = htonl(INADDR_ANY);
  const char* if_include = mca_btl_iwarpx_component.if_include;
  if (if_include != NULL && if_include[0] != '\0' &&
      mca_btl_iwarpx_pick_source(if_include, src) != OPAL_SUCCESS) {
    free(src);
    fi_freeinfo(hints);
    return NULL;
  }
  hints->addr_format = FI_SOCKADDR_IN;
  hints->src_addr = src;
  hints->src_addrlen = sizeof(*src);
  return iwx_ofi_getinfo(hints, "fi_getinfo(prov_name iwarpx, FI_EP_MSG, FI_PROTO_IWARPX_SCTP)",
                         log_fail, NULL);
}

/* btl_iwarpx_sctp_streams: the provider's stream extension, or every message on stream 0. */
static void open_streams(mca_btl_iwarpx_sctp_t* s, const mca_btl_iwarpx_component_t* c) {
  s->streams = c->sctp_streams;
  if (s->streams < 1 || s->streams > 16) {
    opal_output_verbose(1, c->output,
                        "btl:iwarpx: btl_iwarpx_sctp_streams=%d is not in 1..16: using %d",
                        s->streams, s->streams < 1 ? 1 : 16);
    s->streams = s->streams < 1 ? 1 : 16;
  }
  s->stream_threshold = c->sctp_stream_threshold;
  s->ops = NULL;
  if (s->streams > 1) {
    const int ret = fi_open_ops(&s->domain->fid, FI_IWARPX_SCTP_OPS, 0, (void**)&s->ops, NULL);
    if (ret != 0 || s->ops == NULL || s->ops->size < sizeof(struct fi_iwarpx_sctp_ops)) {
      opal_output_verbose(1, c->output,
                          "btl:iwarpx: the provider has no %s (%s): every message on stream 0",
                          FI_IWARPX_SCTP_OPS, ret != 0 ? fi_strerror(-ret) : "old table");
      s->ops = NULL;
      s->streams = 1;
    }
  }
  opal_output_verbose(1, c->output,
                      "btl:iwarpx: sctp: up to %d streams per association, messages over %zu "
                      "bytes on streams 1..%d",
                      s->streams, s->stream_threshold, s->streams - 1);
}

int mca_btl_iwarpx_sctp_open(mca_btl_iwarpx_module_t* m) {
  mca_btl_iwarpx_component_t* c = &mca_btl_iwarpx_component;
  m->sctp = calloc(1, sizeof(*m->sctp));
  if (m->sctp == NULL) return fail("calloc", FI_ENOMEM);
  mca_btl_iwarpx_sctp_t* s = m->sctp;
  s->info = getinfo();
  if (s->info == NULL) {
    const char* backend = getenv("FI_IWARPX_SCTP_BACKEND");
    opal_output_verbose(1, c->output,
                        "btl:iwarpx: btl_iwarpx_p2p=sctp but the provider offers no FI_EP_MSG "
                        "over SCTP here (FI_IWARPX_SCTP_BACKEND=%s; the kernel backend needs "
                        "kernel SCTP): no module",
                        backend != NULL ? backend : "unset");
    return OPAL_ERR_NOT_AVAILABLE;
  }
  int ret = fi_fabric(s->info->fabric_attr, &s->fabric, NULL);
  if (ret != 0) return fail("fi_fabric", ret);
  ret = fi_domain(s->fabric, s->info, &s->domain, NULL);
  if (ret != 0) return fail("fi_domain", ret);
  struct fi_eq_attr eq_attr = {.size = 256, .wait_obj = FI_WAIT_NONE};
  ret = fi_eq_open(s->fabric, &eq_attr, &s->eq, NULL);
  if (ret != 0) return fail("fi_eq_open", ret);
  struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_NONE};
  ret = fi_cq_open(s->domain, &cq_attr, &s->cq, NULL);
  if (ret != 0) return fail("fi_cq_open", ret);
  ret = fi_passive_ep(s->fabric, s->info, &s->pep, NULL);
  if (ret != 0) return fail("fi_passive_ep", ret);
  ret = fi_pep_bind(s->pep, &s->eq->fid, 0);
  if (ret != 0) return fail("fi_pep_bind", ret);
  ret = fi_listen(s->pep);
  if (ret != 0) return fail("fi_listen", ret);
  /* sendi to an SCTP peer: what fits the MSG endpoint's inject size behind the header. */
  s->sendi_limit = s->info->tx_attr->inject_size;
  if (s->sendi_limit > MCA_BTL_IWARPX_SENDI_MAX) s->sendi_limit = MCA_BTL_IWARPX_SENDI_MAX;
  s->sendi_limit = s->sendi_limit > sizeof(mca_btl_iwarpx_sctp_hdr_t)
                       ? s->sendi_limit - sizeof(mca_btl_iwarpx_sctp_hdr_t)
                       : 0;
  if (s->sendi_limit > m->super.btl_eager_limit) s->sendi_limit = m->super.btl_eager_limit;
  s->recvs_per_peer = c->num_recvs > 0 ? c->num_recvs : 1;
  if (s->info->rx_attr->size > 0 && (size_t)s->recvs_per_peer > s->info->rx_attr->size) {
    s->recvs_per_peer = (int)s->info->rx_attr->size;
  }
  open_streams(s, c);
  return OPAL_SUCCESS;
}

void mca_btl_iwarpx_sctp_close(mca_btl_iwarpx_module_t* m) {
  mca_btl_iwarpx_sctp_t* s = m->sctp;
  if (s == NULL) return;
  struct fid* fids[] = {s->pep != NULL ? &s->pep->fid : NULL, s->cq != NULL ? &s->cq->fid : NULL,
                        s->eq != NULL ? &s->eq->fid : NULL,
                        s->domain != NULL ? &s->domain->fid : NULL,
                        s->fabric != NULL ? &s->fabric->fid : NULL};
  for (size_t i = 0; i < sizeof(fids) / sizeof(fids[0]); ++i) {
    if (fids[i] == NULL) continue;
    const int ret = fi_close(fids[i]);
    if (ret != 0) (void)fail("fi_close", ret);
  }
  if (s->info != NULL) fi_freeinfo(s->info);
  free(s);
  m->sctp = NULL;
}

int mca_btl_iwarpx_sctp_getname(mca_btl_iwarpx_module_t* m, void* addr, size_t* len) {
  const int ret = fi_getname(&m->sctp->pep->fid, addr, len);
  return ret == 0 ? OPAL_SUCCESS : fail("fi_getname(pep)", ret);
}

void mca_btl_iwarpx_sctp_endpoint_init(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_endpoint_t* ep,
                                       const uint8_t* addr, size_t len) {
  OBJ_CONSTRUCT(&ep->queue, opal_list_t);
  ep->p2p_state = IWX_P2P_RDM;
  ep->msg_ep = NULL;
  ep->msg_recvs = NULL;
  ep->num_msg_recvs = 0;
  ep->msg_addrlen = 0;
  ep->sctp_sent_at = 0.0;
  ep->sctp_heard_at = 0.0;
  ep->probe_inflight = false;
  ep->probe_ctx.kind = IWX_CTX_PROBE;
  if (m->sctp == NULL || opal_compare_proc(ep->proc->proc_name, OPAL_PROC_MY_NAME) == 0) {
    return; /* self: RDM loopback */
  }
  if (len == 0 || len > sizeof(ep->msg_addr)) {
    opal_output_verbose(1, mca_btl_iwarpx_component.output,
                        "btl:iwarpx: %s published no SCTP address (btl_iwarpx_p2p=datagram "
                        "there?): point-to-point to it stays on the RDM endpoint",
                        OPAL_NAME_PRINT(ep->proc->proc_name));
    return;
  }
  memcpy(ep->msg_addr, addr, len);
  ep->msg_addrlen = (uint16_t)len;
  /* Loopback runs publish the wildcard: a peer on this node is reached at 127.0.0.1. */
  if (mca_btl_iwarpx_addr_is_wildcard(ep->msg_addr, len) && len >= sizeof(struct sockaddr_in)) {
    struct sockaddr_in* sin = (struct sockaddr_in*)(void*)ep->msg_addr;
    if (sin->sin_family == AF_INET) sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  }
  ep->p2p_initiator = opal_compare_proc(OPAL_PROC_MY_NAME, ep->proc->proc_name) < 0;
  ep->p2p_state = IWX_P2P_IDLE;
}

/* Opens an FI_EP_MSG endpoint on `info` for ep, bound to the EQ and CQ, enabled, with its
 * receives posted. Lock held. */
static int open_msg_ep(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_endpoint_t* ep,
                       struct fi_info* info) {
  mca_btl_iwarpx_sctp_t* s = m->sctp;
  int ret = fi_endpoint(s->domain, info, &ep->msg_ep, ep);
  if (ret != 0) {
    ep->msg_ep = NULL;
    return fail("fi_endpoint(FI_EP_MSG)", ret);
  }
  ret = fi_ep_bind(ep->msg_ep, &s->eq->fid, 0);
  if (ret == 0) ret = fi_ep_bind(ep->msg_ep, &s->cq->fid, FI_TRANSMIT | FI_RECV);
  if (ret == 0) ret = fi_enable(ep->msg_ep);
  if (ret != 0) return fail("fi_ep_bind/fi_enable(FI_EP_MSG)", ret);
  return mca_btl_iwarpx_sctp_post_recvs(m, ep);
}

static mca_btl_iwarpx_sctp_cm_t my_cm(void) {
  mca_btl_iwarpx_sctp_cm_t cm = {
      .magic = MCA_BTL_IWARPX_SCTP_CM_MAGIC, .reserved = 0, .name = OPAL_PROC_MY_NAME};
  return cm;
}

static bool connect_peer(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_endpoint_t* ep) {
  struct fi_info* info = fi_dupinfo(m->sctp->info);
  if (info == NULL) return fail("fi_dupinfo", FI_ENOMEM) == OPAL_SUCCESS;
  /* The listener's source address (and port) is not the connection's: bind anew. */
  free(info->src_addr);
  info->src_addr = NULL;
  info->src_addrlen = 0;
  const int opened = open_msg_ep(m, ep, info);
  fi_freeinfo(info);
  if (opened != OPAL_SUCCESS) return false;
  const mca_btl_iwarpx_sctp_cm_t cm = my_cm();
  const int ret = fi_connect(ep->msg_ep, ep->msg_addr, &cm, sizeof(cm));
  if (ret != 0) return fail("fi_connect", ret) == OPAL_SUCCESS;
  ep->p2p_state = IWX_P2P_CONNECTING;
  opal_output_verbose(10, mca_btl_iwarpx_component.output, "btl:iwarpx: sctp: connecting to %s",
                      OPAL_NAME_PRINT(ep->proc->proc_name));
  return true;
}

static bool wake_peer(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_endpoint_t* ep) {
  const mca_btl_iwarpx_sctp_cm_t cm = my_cm();
  const ssize_t ret = fi_injectdata(m->ep, &cm, sizeof(cm), MCA_BTL_IWARPX_SCTP_WAKE, ep->addr);
  if (ret == -FI_EAGAIN) return true; /* stays IDLE with a queue: progress kicks again */
  if (ret != 0) return fail("fi_injectdata(wake-up)", (int)ret) == OPAL_SUCCESS;
  OPAL_THREAD_ADD_FETCH64(&m->stats.sctp_wakes, 1);
  ep->p2p_state = IWX_P2P_WAITING;
  opal_output_verbose(10, mca_btl_iwarpx_component.output,
                      "btl:iwarpx: sctp: asked %s (the lower name) to connect",
                      OPAL_NAME_PRINT(ep->proc->proc_name));
  return true;
}

bool mca_btl_iwarpx_sctp_kick(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_endpoint_t* ep) {
  if (ep->p2p_state != IWX_P2P_IDLE) return true;
  const bool ok = ep->p2p_initiator ? connect_peer(m, ep) : wake_peer(m, ep);
  if (!ok) ep->p2p_state = IWX_P2P_CLOSED;
  return ok;
}

/* The endpoint of the proc named `name`, or NULL. Lock held. */
static mca_btl_iwarpx_endpoint_t* find_by_name(mca_btl_iwarpx_module_t* m,
                                               opal_process_name_t name) {
  void* node = NULL;
  mca_btl_iwarpx_endpoint_t* ep = NULL;
  while (mca_btl_iwarpx_endpoint_next(m, &node, &ep)) {
    if (opal_compare_proc(ep->proc->proc_name, name) == 0) return ep;
  }
  return NULL;
}

static bool cm_valid(const void* data, size_t len, mca_btl_iwarpx_sctp_cm_t* out) {
  if (len < sizeof(*out)) return false;
  memcpy(out, data, sizeof(*out));
  return out->magic == MCA_BTL_IWARPX_SCTP_CM_MAGIC;
}

void mca_btl_iwarpx_sctp_wake_received(mca_btl_iwarpx_module_t* m, const void* buf, size_t len) {
  mca_btl_iwarpx_component_t* c = &mca_btl_iwarpx_component;
  mca_btl_iwarpx_sctp_cm_t cm;
  if (m->sctp == NULL || !cm_valid(buf, len, &cm)) {
    opal_output_verbose(1, c->output, "btl:iwarpx: sctp: malformed wake-up (%zu bytes) dropped",
                        len);
    return;
  }
  opal_list_t failed;
  OBJ_CONSTRUCT(&failed, opal_list_t);
  OPAL_THREAD_LOCK(&m->lock);
  mca_btl_iwarpx_endpoint_t* ep = find_by_name(m, cm.name);
  if (ep == NULL || !ep->p2p_initiator) {
    opal_output_verbose(1, c->output, "btl:iwarpx: sctp: wake-up from %s ignored (%s)",
                        OPAL_NAME_PRINT(cm.name),
                        ep == NULL ? "unknown proc" : "it is the one that connects");
  } else if (!mca_btl_iwarpx_sctp_kick(m, ep)) {
    mca_btl_iwarpx_sctp_take_queue(m, ep, &failed);
  }
  OPAL_THREAD_UNLOCK(&m->lock);
  if (!opal_list_is_empty(&failed)) {
    mca_btl_iwarpx_sctp_fail_all(m, &failed);
    mca_btl_iwarpx_peer_error(m, ep, FI_ECONNREFUSED);
  }
  OBJ_DESTRUCT(&failed);
}

/* FI_CONNREQ: accept it when it comes from a known proc with the lower name and the pair has
 * no association yet; otherwise reject (logged). */
static void on_connreq(mca_btl_iwarpx_module_t* m, struct fi_info* info, const void* data,
                       size_t len) {
  mca_btl_iwarpx_component_t* c = &mca_btl_iwarpx_component;
  mca_btl_iwarpx_sctp_cm_t cm;
  const char* why = NULL;
  OPAL_THREAD_LOCK(&m->lock);
  mca_btl_iwarpx_endpoint_t* ep = NULL;
  if (!cm_valid(data, len, &cm)) {
    why = "its private data is not an iwarpx BTL request";
  } else if ((ep = find_by_name(m, cm.name)) == NULL) {
    why = "unknown proc";
  } else if (ep->p2p_initiator) {
    why = "its name is the higher: we connect to it";
  } else if (ep->p2p_state != IWX_P2P_IDLE && ep->p2p_state != IWX_P2P_WAITING) {
    why = "the pair already has an association";
  } else if (open_msg_ep(m, ep, info) != OPAL_SUCCESS) {
    why = "no endpoint for it";
  } else {
    const int ret = fi_accept(ep->msg_ep, NULL, 0);
    if (ret == 0) {
      ep->p2p_state = IWX_P2P_CONNECTING;
    } else {
      (void)fail("fi_accept", ret);
      why = "fi_accept failed";
    }
  }
  OPAL_THREAD_UNLOCK(&m->lock);
  if (why != NULL) {
    opal_output_verbose(1, c->output, "btl:iwarpx: sctp: connection request from %s rejected: %s",
                        len >= sizeof(cm) ? OPAL_NAME_PRINT(cm.name) : "?", why);
    const int ret = fi_reject(m->sctp->pep, info->handle, NULL, 0);
    if (ret != 0) (void)fail("fi_reject", ret);
  }
  fi_freeinfo(info);
}

static void on_connected(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_endpoint_t* ep) {
  OPAL_THREAD_LOCK(&m->lock);
  ep->p2p_state = IWX_P2P_CONNECTED;
  ep->sctp_heard_at = mca_btl_iwarpx_now();
  OPAL_THREAD_ADD_FETCH64(&m->stats.sctp_connections, 1);
  opal_output_verbose(
      10, mca_btl_iwarpx_component.output, "btl:iwarpx: sctp: association with %s up (%s)",
      OPAL_NAME_PRINT(ep->proc->proc_name), ep->p2p_initiator ? "we connected" : "we accepted");
  mca_btl_iwarpx_sctp_flush_queue(m, ep);
  OPAL_THREAD_UNLOCK(&m->lock);
}

/* Refused, failed or shut down. An error for the PML when messages were queued or in flight. */
static void on_closed(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_endpoint_t* ep, int fi_err,
                      const char* what) {
  opal_list_t failed;
  OBJ_CONSTRUCT(&failed, opal_list_t);
  OPAL_THREAD_LOCK(&m->lock);
  mca_btl_iwarpx_sctp_take_queue(m, ep, &failed);
  OPAL_THREAD_UNLOCK(&m->lock);
  const bool busy = !opal_list_is_empty(&failed) || ep->pending > 0;
  opal_output_verbose(busy ? 1 : 10, mca_btl_iwarpx_component.output,
                      "btl:iwarpx: sctp: association with %s %s (%ld operations pending)",
                      OPAL_NAME_PRINT(ep->proc->proc_name), what, (long)ep->pending);
  mca_btl_iwarpx_sctp_fail_all(m, &failed);
  if (busy) mca_btl_iwarpx_peer_error(m, ep, fi_err);
  OBJ_DESTRUCT(&failed);
}

static int read_eq(mca_btl_iwarpx_module_t* m) {
  struct {
    struct fi_eq_cm_entry entry;
    uint8_t data[IWX_CM_DATA_MAX];
  } buf;
  uint32_t event = 0;
  const ssize_t n = fi_eq_read(m->sctp->eq, &event, &buf, sizeof(buf), 0);
  if (n == -FI_EAGAIN) return 0;
  if (n == -FI_EAVAIL) {
    struct fi_eq_err_entry e;
    memset(&e, 0, sizeof(e));
    if (fi_eq_readerr(m->sctp->eq, &e, 0) < 0) return 0;
    mca_btl_iwarpx_endpoint_t* ep = e.fid != NULL ? e.fid->context : NULL;
    if (ep == NULL) {
      opal_output_verbose(1, mca_btl_iwarpx_component.output,
                          "btl:iwarpx: sctp: EQ error %s (%d) on the listener", fi_strerror(e.err),
                          e.err);
      return 1;
    }
    on_closed(m, ep, e.err, e.err == FI_ECONNREFUSED ? "refused" : fi_strerror(e.err));
    return 1;
  }
  if (n < 0) return fail("fi_eq_read", (int)n) == OPAL_SUCCESS;
  const size_t data_len = (size_t)n > sizeof(buf.entry) ? (size_t)n - sizeof(buf.entry) : 0;
  switch (event) {
    case FI_CONNREQ: on_connreq(m, buf.entry.info, buf.data, data_len); break;
    case FI_CONNECTED: on_connected(m, buf.entry.fid->context); break;
    case FI_SHUTDOWN: on_closed(m, buf.entry.fid->context, FI_ECONNRESET, "shut down"); break;
    default:
      opal_output_verbose(1, mca_btl_iwarpx_component.output,
                          "btl:iwarpx: sctp: unexpected EQ event %u ignored", event);
      if (buf.entry.info != NULL && (size_t)n >= sizeof(buf.entry)) fi_freeinfo(buf.entry.info);
      break;
  }
  return 1;
}

void mca_btl_iwarpx_sctp_probe_done(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_endpoint_t* ep,
                                    int status) {
  /* A failed probe was reported to the PML with its error entry (read_error). */
  ep->probe_inflight = false;
  if (status == OPAL_SUCCESS) ep->sctp_heard_at = mca_btl_iwarpx_now();
  /* Last: del_procs/finalize wait for it (the probe's context is the endpoint). */
  OPAL_THREAD_ADD_FETCH64(&ep->pending, -1);
  OPAL_THREAD_ADD_FETCH64(&m->sends_pending, -1);
}

/* Probes, over the RDM endpoint, each SCTP peer we sent to (or still have sends or RDMA
 * queued or uncompleted for) and have not heard from for MCA_BTL_IWARPX_SCTP_PROBE_AFTER s
 * (checked at most every half second). Lock held. */
static void check_liveness(mca_btl_iwarpx_module_t* m) {
  const double now = mca_btl_iwarpx_now();
  if (now < m->sctp->next_liveness_check) return;
  m->sctp->next_liveness_check = now + 0.5;
  void* node = NULL;
  mca_btl_iwarpx_endpoint_t* ep = NULL;
  while (mca_btl_iwarpx_endpoint_next(m, &node, &ep)) {
    if (ep->p2p_state != IWX_P2P_RDM && ep->p2p_state != IWX_P2P_CLOSED && !ep->probe_inflight &&
        (ep->sctp_sent_at > ep->sctp_heard_at || ep->pending > 0 ||
         !opal_list_is_empty(&ep->queue)) &&
        now - ep->sctp_heard_at > MCA_BTL_IWARPX_SCTP_PROBE_AFTER) {
      /* A zero-length RDMA Read: it completes only with the peer's Read Response (a send may
       * complete locally), and needs no STag (RFC 5040 6.4: nothing is read). */
      OPAL_THREAD_ADD_FETCH64(&ep->pending, 1);
      OPAL_THREAD_ADD_FETCH64(&m->sends_pending, 1);
      const ssize_t ret = fi_read(m->ep, NULL, 0, NULL, ep->addr, 0, 0, &ep->probe_ctx);
      if (ret == 0) {
        ep->probe_inflight = true;
        OPAL_THREAD_ADD_FETCH64(&m->stats.sctp_probes, 1);
        opal_output_verbose(10, mca_btl_iwarpx_component.output,
                            "btl:iwarpx: sctp: nothing from %s for %.1f s since we sent: "
                            "probing it on the RDM endpoint",
                            OPAL_NAME_PRINT(ep->proc->proc_name), now - ep->sctp_heard_at);
      } else {
        OPAL_THREAD_ADD_FETCH64(&ep->pending, -1);
        OPAL_THREAD_ADD_FETCH64(&m->sends_pending, -1);
        if (ret != -FI_EAGAIN) (void)fail("fi_read(probe)", (int)ret);
      }
    }
  }
}

int mca_btl_iwarpx_sctp_progress(mca_btl_iwarpx_module_t* m) {
  if (m->sctp == NULL) return 0;
  int count = mca_btl_iwarpx_reap_cq(m, m->sctp->cq);
  for (int i = 0; i < 16; ++i) {
    const int n = read_eq(m);
    if (n == 0) break;
    count += n;
  }
  OPAL_THREAD_LOCK(&m->lock);
  check_liveness(m);
  OPAL_THREAD_UNLOCK(&m->lock);
  if (m->sctp->queued > 0) {
    /* Queues of endpoints whose send met a full association, or whose kick must be retried. */
    OPAL_THREAD_LOCK(&m->lock);
    void* node = NULL;
    mca_btl_iwarpx_endpoint_t* ep = NULL;
    while (mca_btl_iwarpx_endpoint_next(m, &node, &ep)) {
      if (!opal_list_is_empty(&ep->queue)) {
        if (ep->p2p_state == IWX_P2P_CONNECTED) mca_btl_iwarpx_sctp_flush_queue(m, ep);
        if (ep->p2p_state == IWX_P2P_IDLE) (void)mca_btl_iwarpx_sctp_kick(m, ep);
      }
    }
    OPAL_THREAD_UNLOCK(&m->lock);
  }
  return count;
}

void mca_btl_iwarpx_sctp_endpoint_fini(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_endpoint_t* ep) {
  opal_list_t failed;
  OBJ_CONSTRUCT(&failed, opal_list_t);
  OPAL_THREAD_LOCK(&m->lock);
  mca_btl_iwarpx_sctp_take_queue(m, ep, &failed);
  struct fid_ep* msg_ep = ep->msg_ep;
  ep->msg_ep = NULL;
  OPAL_THREAD_UNLOCK(&m->lock);
  mca_btl_iwarpx_sctp_fail_all(m, &failed);
  OBJ_DESTRUCT(&failed);
  /* Closing the endpoint cancels its receives before their buffers go. */
  if (msg_ep != NULL) {
    const int ret = fi_close(&msg_ep->fid);
    if (ret != 0) (void)fail("fi_close(FI_EP_MSG)", ret);
  }
  for (int i = 0; i < ep->num_msg_recvs; ++i) free(ep->msg_recvs[i].buf);
  free(ep->msg_recvs);
  ep->msg_recvs = NULL;
  ep->num_msg_recvs = 0;
  OBJ_DESTRUCT(&ep->queue);
}
