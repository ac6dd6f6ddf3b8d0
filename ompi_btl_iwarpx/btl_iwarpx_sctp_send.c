/*
 * btl/iwarpx point-to-point over SCTP, the data path: a send goes on the peer's association
 * as header + segment (fi_sendv, two iovecs) when it is up and nothing waits before it,
 * otherwise to the tail of the peer's queue; receives check the in-band header and hand the
 * payload to mca_btl_base_active_message_trigger[tag]. Contract: btl_iwarpx_sctp.h.
 */
// clang-format off
#include "opal_config.h" /* first, see btl_iwarpx.h */
// clang-format on

#include <stdlib.h>
#include <string.h>

#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "btl_iwarpx_sctp.h"
#include "opal/util/output.h"

#define IWX_HDR sizeof(mca_btl_iwarpx_sctp_hdr_t)

/* The stream of a message of len bytes to ep (btl_iwarpx_sctp_streams): stream 0 up to the
 * threshold, else round robin over 1..n-1 of the streams the association has; stream 0 while
 * the provider cannot say yet how many. Lock held. */
static uint16_t pick_stream(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_endpoint_t* ep, size_t len) {
  const mca_btl_iwarpx_sctp_t* s = m->sctp;
  if (s->ops == NULL || s->streams <= 1 || len <= s->stream_threshold) return 0;
  if (ep->sctp_streams == 0) {
    uint16_t n = 0;
    if (s->ops->tx_streams(ep->msg_ep, &n) != 0 || n == 0) return 0;
    ep->sctp_streams = n < (uint16_t)s->streams ? n : (uint16_t)s->streams;
    opal_output_verbose(10, mca_btl_iwarpx_component.output,
                        "btl:iwarpx: sctp: %u streams to %s (the association has %u)",
                        ep->sctp_streams, OPAL_NAME_PRINT(ep->proc->proc_name), n);
  }
  if (ep->sctp_streams <= 1) return 0;
  const uint16_t stream = (uint16_t)(1 + ep->sctp_next_stream % (ep->sctp_streams - 1));
  ep->sctp_next_stream = (uint16_t)(ep->sctp_next_stream + 1);
  return stream;
}

/* One fragment on the association: 0, -FI_EAGAIN, or another error. Lock held. */
static ssize_t post(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_endpoint_t* ep,
                    mca_btl_iwarpx_frag_t* frag) {
  struct iovec iov[2] = {
      {.iov_base = &frag->sctp_hdr, .iov_len = IWX_HDR},
      {.iov_base = frag->segment.seg_addr.pval, .iov_len = frag->segment.seg_len},
  };
  const uint16_t stream = pick_stream(m, ep, frag->segment.seg_len);
  ssize_t ret;
  if (stream == 0) {
    ret = fi_sendv(ep->msg_ep, iov, NULL, 2, 0, &frag->ctx);
  } else {
    const struct fi_msg msg = {
        .msg_iov = iov, .desc = NULL, .iov_count = 2, .addr = 0, .context = &frag->ctx};
    ret = m->sctp->ops->sendmsg(ep->msg_ep, &msg, FI_COMPLETION, stream);
    if (ret == -FI_EAGAIN) ep->sctp_next_stream = (uint16_t)(ep->sctp_next_stream - 1);
  }
  if (ret == 0) {
    if (stream != 0) OPAL_THREAD_ADD_FETCH64(&m->stats.sctp_stream_sends, 1);
    OPAL_THREAD_ADD_FETCH64(&m->stats.sends, 1);
    OPAL_THREAD_ADD_FETCH64(&m->stats.sctp_sends, 1);
    OPAL_THREAD_ADD_FETCH64(&m->stats.send_bytes, (int64_t)frag->segment.seg_len);
  }
  return ret;
}

static void enqueue(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_endpoint_t* ep,
                    mca_btl_iwarpx_frag_t* frag) {
  opal_list_append(&ep->queue, (opal_list_item_t*)frag);
  OPAL_THREAD_ADD_FETCH64(&m->sctp->queued, 1);
}

int mca_btl_iwarpx_sctp_send(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_endpoint_t* ep,
                             mca_btl_iwarpx_frag_t* frag, mca_btl_base_tag_t tag) {
  frag->sctp_hdr.tag = tag;
  frag->sctp_hdr.magic = MCA_BTL_IWARPX_SCTP_MAGIC;
  frag->sctp_hdr.reserved = 0;
  frag->sctp_hdr.len = (uint32_t)frag->segment.seg_len;
  ep->sctp_sent_at = mca_btl_iwarpx_now();
  int rc = OPAL_SUCCESS;
  OPAL_THREAD_LOCK(&m->lock);
  switch (ep->p2p_state) {
    case IWX_P2P_CONNECTED:
      if (opal_list_is_empty(&ep->queue)) {
        const ssize_t ret = post(m, ep, frag);
        if (ret == -FI_EAGAIN) {
          enqueue(m, ep, frag); /* progress posts it when the association has room */
        } else if (ret != 0) {
          opal_output_verbose(1, mca_btl_iwarpx_component.output,
                              "btl:iwarpx: sctp: fi_sendv to %s: %s",
                              OPAL_NAME_PRINT(ep->proc->proc_name), fi_strerror((int)-ret));
          rc = OPAL_ERROR;
        }
      } else {
        enqueue(m, ep, frag);
      }
      break;
    case IWX_P2P_IDLE:
      enqueue(m, ep, frag);
      if (!mca_btl_iwarpx_sctp_kick(m, ep)) {
        /* Not queued after all: the caller gets the error. */
        opal_list_remove_item(&ep->queue, (opal_list_item_t*)frag);
        OPAL_THREAD_ADD_FETCH64(&m->sctp->queued, -1);
        rc = OPAL_ERR_UNREACH;
      }
      break;
    case IWX_P2P_WAITING:
    case IWX_P2P_CONNECTING: enqueue(m, ep, frag); break;
    default:
      opal_output_verbose(1, mca_btl_iwarpx_component.output,
                          "btl:iwarpx: sctp: send to %s refused: its association is closed",
                          OPAL_NAME_PRINT(ep->proc->proc_name));
      rc = OPAL_ERR_UNREACH;
      break;
  }
  OPAL_THREAD_UNLOCK(&m->lock);
  return rc;
}

ssize_t mca_btl_iwarpx_sctp_inject(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_endpoint_t* ep,
                                   mca_btl_base_tag_t tag, void* buf, size_t len) {
  const mca_btl_iwarpx_sctp_hdr_t hdr = {
      .tag = tag, .magic = MCA_BTL_IWARPX_SCTP_MAGIC, .reserved = 0, .len = (uint32_t)len};
  memcpy(buf, &hdr, IWX_HDR);
  ssize_t ret = -FI_ENOTCONN;
  OPAL_THREAD_LOCK(&m->lock);
  if (ep->p2p_state == IWX_P2P_CONNECTED && opal_list_is_empty(&ep->queue)) {
    ret = fi_inject(ep->msg_ep, buf, len + IWX_HDR, 0);
    if (ret == 0) {
      ep->sctp_sent_at = mca_btl_iwarpx_now();
      OPAL_THREAD_ADD_FETCH64(&m->stats.sctp_sends, 1);
    }
  }
  OPAL_THREAD_UNLOCK(&m->lock);
  return ret;
}

void mca_btl_iwarpx_sctp_flush_queue(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_endpoint_t* ep) {
  while (ep->p2p_state == IWX_P2P_CONNECTED && !opal_list_is_empty(&ep->queue)) {
    mca_btl_iwarpx_frag_t* frag = (mca_btl_iwarpx_frag_t*)opal_list_get_first(&ep->queue);
    const ssize_t ret = post(m, ep, frag);
    if (ret == -FI_EAGAIN) return;
    (void)opal_list_remove_first(&ep->queue);
    OPAL_THREAD_ADD_FETCH64(&m->sctp->queued, -1);
    if (ret != 0) {
      /* Keep the order: this and everything after it fail together. */
      opal_output_verbose(1, mca_btl_iwarpx_component.output,
                          "btl:iwarpx: sctp: fi_sendv to %s: %s; association closed",
                          OPAL_NAME_PRINT(ep->proc->proc_name), fi_strerror((int)-ret));
      opal_list_prepend(&ep->queue, (opal_list_item_t*)frag);
      OPAL_THREAD_ADD_FETCH64(&m->sctp->queued, 1);
      ep->p2p_state = IWX_P2P_CLOSED; /* progress skips it; del_procs/finalize fail the queue */
      return;
    }
  }
}

void mca_btl_iwarpx_sctp_take_queue(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_endpoint_t* ep,
                                    opal_list_t* failed) {
  if (ep->p2p_state != IWX_P2P_RDM) ep->p2p_state = IWX_P2P_CLOSED;
  opal_list_item_t* item;
  while ((item = opal_list_remove_first(&ep->queue)) != NULL) {
    opal_list_append(failed, item);
    OPAL_THREAD_ADD_FETCH64(&m->sctp->queued, -1);
  }
}

void mca_btl_iwarpx_sctp_fail_all(mca_btl_iwarpx_module_t* m, opal_list_t* failed) {
  opal_list_item_t* item;
  while ((item = opal_list_remove_first(failed)) != NULL) {
    mca_btl_iwarpx_send_complete(m, (mca_btl_iwarpx_frag_t*)item, OPAL_ERR_UNREACH);
  }
}

int mca_btl_iwarpx_sctp_post_recvs(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_endpoint_t* ep) {
  const int n = m->sctp->recvs_per_peer;
  ep->msg_recvs = calloc((size_t)n, sizeof(*ep->msg_recvs));
  if (ep->msg_recvs == NULL) return OPAL_ERR_OUT_OF_RESOURCE;
  for (int i = 0; i < n; ++i) {
    mca_btl_iwarpx_recv_t* r = &ep->msg_recvs[i];
    r->ctx.kind = IWX_CTX_RECV;
    r->endpoint = ep;
    r->buf = malloc(m->super.btl_max_send_size + IWX_HDR);
    if (r->buf == NULL) return OPAL_ERR_OUT_OF_RESOURCE;
    ep->num_msg_recvs = i + 1;
    if (mca_btl_iwarpx_post_recv(m, r) != OPAL_SUCCESS) return OPAL_ERROR;
  }
  return OPAL_SUCCESS;
}

void mca_btl_iwarpx_sctp_recv_complete(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_recv_t* r,
                                       size_t len) {
  mca_btl_iwarpx_component_t* c = &mca_btl_iwarpx_component;
  mca_btl_iwarpx_sctp_hdr_t hdr;
  if (len < IWX_HDR) {
    opal_output_verbose(1, c->output, "btl:iwarpx: sctp: %zu-byte message (no header) dropped",
                        len);
  } else {
    memcpy(&hdr, r->buf, IWX_HDR);
    if (hdr.magic != MCA_BTL_IWARPX_SCTP_MAGIC || hdr.reserved != 0 ||
        (size_t)hdr.len != len - IWX_HDR) {
      opal_output_verbose(1, c->output,
                          "btl:iwarpx: sctp: message of %zu bytes with a bad header (magic "
                          "0x%x, length %u) dropped",
                          len, hdr.magic, hdr.len);
    } else {
      r->endpoint->sctp_heard_at = mca_btl_iwarpx_now();
      OPAL_THREAD_ADD_FETCH64(&m->stats.sctp_recvs, 1);
      mca_btl_iwarpx_deliver(m, hdr.tag, (unsigned char*)r->buf + IWX_HDR, len - IWX_HDR);
    }
  }
  /* The association's receives are reposted while it is open. */
  if (r->endpoint->msg_ep != NULL) (void)mca_btl_iwarpx_post_recv(m, r);
}
