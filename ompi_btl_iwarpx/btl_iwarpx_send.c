/*
 * btl/iwarpx active messages: alloc/free/prepare_src over free-list fragments, send as
 * fi_senddata with the BTL tag in the CQ data, sendi (header + payload packed on the stack and
 * sent with fi_injectdata: no descriptor, no completion) when the message fits the provider's
 * inject_size, and the receive side that hands a bounce buffer to
 * mca_btl_base_active_message_trigger[tag] and reposts it.
 */
// clang-format off
#include "opal_config.h" /* first, see btl_iwarpx.h */
// clang-format on

#include <string.h>

#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "btl_iwarpx.h"
#include "btl_iwarpx_sctp.h"
#include "opal/datatype/opal_convertor.h"
#include "opal/util/output.h"

static mca_btl_iwarpx_frag_t* frag_get(mca_btl_iwarpx_module_t* m, size_t size) {
  opal_free_list_t* list = NULL;
  if (size <= m->super.btl_eager_limit) {
    list = &m->eager_frags;
  } else if (size <= m->super.btl_max_send_size) {
    list = &m->max_frags;
  } else {
    return NULL;
  }
  return (mca_btl_iwarpx_frag_t*)opal_free_list_get(list);
}

mca_btl_base_descriptor_t* mca_btl_iwarpx_alloc(mca_btl_base_module_t* btl,
                                                mca_btl_base_endpoint_t* ep, uint8_t order,
                                                size_t size, uint32_t flags) {
  mca_btl_iwarpx_frag_t* frag = frag_get((mca_btl_iwarpx_module_t*)btl, size);
  if (frag == NULL) return NULL;
  frag->endpoint = ep;
  frag->segment.seg_addr.pval = frag->base.super.ptr;
  frag->segment.seg_len = size;
  frag->base.des_segments = &frag->segment;
  frag->base.des_segment_count = 1;
  frag->base.des_flags = flags;
  frag->base.order = order;
  frag->base.des_cbfunc = NULL;
  frag->base.des_cbdata = NULL;
  frag->base.des_context = NULL;
  return &frag->base;
}

int mca_btl_iwarpx_free(mca_btl_base_module_t* btl, mca_btl_base_descriptor_t* des) {
  (void)btl;
  mca_btl_iwarpx_frag_t* frag = (mca_btl_iwarpx_frag_t*)des;
  opal_free_list_return(frag->list, &des->super);
  return OPAL_SUCCESS;
}

mca_btl_base_descriptor_t* mca_btl_iwarpx_prepare_src(mca_btl_base_module_t* btl,
                                                      mca_btl_base_endpoint_t* ep,
                                                      struct opal_convertor_t* convertor,
                                                      uint8_t order, size_t reserve, size_t* size,
                                                      uint32_t flags) {
  if (reserve > btl->btl_max_send_size) return NULL;
  size_t want = *size;
  if (want > btl->btl_max_send_size - reserve) want = btl->btl_max_send_size - reserve;
  mca_btl_base_descriptor_t* des = mca_btl_iwarpx_alloc(btl, ep, order, reserve + want, flags);
  if (des == NULL) return NULL;
  mca_btl_iwarpx_frag_t* frag = (mca_btl_iwarpx_frag_t*)des;
  struct iovec iov = {.iov_base = (unsigned char*)frag->segment.seg_addr.pval + reserve,
                      .iov_len = want};
  uint32_t iov_count = 1;
  size_t packed = want;
  if (want > 0 && opal_convertor_pack(convertor, &iov, &iov_count, &packed) < 0) {
    mca_btl_iwarpx_free(btl, des);
    return NULL;
  }
  if (want == 0) packed = 0;
  frag->segment.seg_len = reserve + packed;
  *size = packed;
  return des;
}

void mca_btl_iwarpx_send_complete(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_frag_t* frag,
                                  int status) {
  /* Saved first: the callback may free the descriptor. */
  const uint32_t flags = frag->base.des_flags;
  mca_btl_iwarpx_endpoint_t* ep = frag->endpoint;
  if ((flags & MCA_BTL_DES_SEND_ALWAYS_CALLBACK) != 0 && frag->base.des_cbfunc != NULL) {
    frag->base.des_cbfunc(&m->super, ep, &frag->base, status);
  }
  if ((flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP) != 0) {
    opal_free_list_return(frag->list, &frag->base.super);
  }
  /* After the callback: del_procs/finalize drains wait for it. */
  OPAL_THREAD_ADD_FETCH64(&ep->pending, -1);
  OPAL_THREAD_ADD_FETCH64(&m->sends_pending, -1);
}

int mca_btl_iwarpx_send(mca_btl_base_module_t* btl, mca_btl_base_endpoint_t* ep,
                        mca_btl_base_descriptor_t* des, mca_btl_base_tag_t tag) {
  mca_btl_iwarpx_module_t* m = (mca_btl_iwarpx_module_t*)btl;
  mca_btl_iwarpx_frag_t* frag = (mca_btl_iwarpx_frag_t*)des;
  frag->endpoint = ep;
  /* The completion is reported from progress, never inline: always call back. */
  des->des_flags |= MCA_BTL_DES_SEND_ALWAYS_CALLBACK;
  const size_t len = frag->segment.seg_len;
  /* Counted before posting: the completion may come on another thread at once. */
  OPAL_THREAD_ADD_FETCH64(&ep->pending, 1);
  OPAL_THREAD_ADD_FETCH64(&m->sends_pending, 1);
  int rc = OPAL_ERR_OUT_OF_RESOURCE;
  if (ep->p2p_state != IWX_P2P_RDM) {
    /* Over the peer's SCTP association (queued until it is up). */
    rc = mca_btl_iwarpx_sctp_send(m, ep, frag, tag);
    if (rc == OPAL_SUCCESS) return OPAL_SUCCESS;
    OPAL_THREAD_ADD_FETCH64(&ep->pending, -1);
    OPAL_THREAD_ADD_FETCH64(&m->sends_pending, -1);
    return rc;
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    ssize_t ret = fi_senddata(m->ep, frag->segment.seg_addr.pval, len, NULL, (uint64_t)tag,
                              ep->addr, &frag->ctx);
    if (ret == 0) {
      OPAL_THREAD_ADD_FETCH64(&m->stats.sends, 1);
      OPAL_THREAD_ADD_FETCH64(&m->stats.send_bytes, (int64_t)len);
      return OPAL_SUCCESS;
    }
    if (ret != -FI_EAGAIN) {
      opal_output_verbose(1, mca_btl_iwarpx_component.output, "btl:iwarpx: fi_senddata: %s",
                          fi_strerror((int)-ret));
      rc = OPAL_ERROR;
      break;
    }
    (void)mca_btl_iwarpx_progress();
  }
  if (rc == OPAL_ERR_OUT_OF_RESOURCE) OPAL_THREAD_ADD_FETCH64(&m->stats.busy_sends, 1);
  OPAL_THREAD_ADD_FETCH64(&ep->pending, -1);
  OPAL_THREAD_ADD_FETCH64(&m->sends_pending, -1);
  return rc;
}

int mca_btl_iwarpx_sendi(mca_btl_base_module_t* btl, mca_btl_base_endpoint_t* ep,
                         struct opal_convertor_t* convertor, void* header, size_t header_size,
                         size_t payload_size, uint8_t order, uint32_t flags, mca_btl_base_tag_t tag,
                         mca_btl_base_descriptor_t** descriptor) {
  mca_btl_iwarpx_module_t* m = (mca_btl_iwarpx_module_t*)btl;
  const size_t len = header_size + payload_size;
  /* To an SCTP peer: an inject on its association behind the in-band header (never on the
   * RDM endpoint, which would overtake its queue). */
  const bool sctp = ep->p2p_state != IWX_P2P_RDM;
  const size_t lead = sctp ? sizeof(mca_btl_iwarpx_sctp_hdr_t) : 0;
  const size_t limit = sctp ? m->sctp->sendi_limit : m->sendi_limit;
  if (len <= limit && header_size <= len) {
    unsigned char buf[MCA_BTL_IWARPX_SENDI_MAX];
    unsigned char* body = buf + lead;
    if (header_size > 0) memcpy(body, header, header_size);
    /* Packing advances the convertor: put it back if the message does not go now, the
     * caller packs again into the descriptor (or later, when it retries). */
    size_t position = convertor != NULL ? convertor->bConverted : 0;
    bool packed_ok = true;
    if (payload_size > 0) {
      struct iovec iov = {.iov_base = body + header_size, .iov_len = payload_size};
      uint32_t iov_count = 1;
      size_t packed = payload_size;
      packed_ok = convertor != NULL &&
                  opal_convertor_pack(convertor, &iov, &iov_count, &packed) >= 0 &&
                  packed == payload_size;
    }
    bool refused = false;
    for (int attempt = 0; packed_ok && attempt < 2; ++attempt) {
      ssize_t ret = sctp ? mca_btl_iwarpx_sctp_inject(m, ep, tag, buf, len)
                         : fi_injectdata(m->ep, buf, len, (uint64_t)tag, ep->addr);
      if (ret == -FI_ENOTCONN) break; /* not connected yet, or sends queued: descriptor */
      if (ret == 0) {
        OPAL_THREAD_ADD_FETCH64(&m->stats.sendi, 1);
        OPAL_THREAD_ADD_FETCH64(&m->stats.sends, 1);
        OPAL_THREAD_ADD_FETCH64(&m->stats.send_bytes, (int64_t)len);
        return OPAL_SUCCESS;
      }
      if (ret != -FI_EAGAIN) {
        opal_output_verbose(1, mca_btl_iwarpx_component.output,
                            "btl:iwarpx: fi_injectdata(%zu bytes): %s", len,
                            fi_strerror((int)-ret));
        break;
      }
      refused = attempt == 1;
      (void)mca_btl_iwarpx_progress();
    }
    if (refused) OPAL_THREAD_ADD_FETCH64(&m->stats.busy_sends, 1);
    if (payload_size > 0 && convertor != NULL) {
      (void)opal_convertor_set_position(convertor, &position);
    }
  }
  /* Not sent: a descriptor of header + payload bytes for the caller's regular send. */
  if (descriptor != NULL) *descriptor = mca_btl_iwarpx_alloc(btl, ep, order, len, flags);
  return OPAL_ERR_OUT_OF_RESOURCE;
}

void mca_btl_iwarpx_deliver(mca_btl_iwarpx_module_t* m, mca_btl_base_tag_t tag, void* buf,
                            size_t len) {
  OPAL_THREAD_ADD_FETCH64(&m->stats.recvs, 1);
  OPAL_THREAD_ADD_FETCH64(&m->stats.recv_bytes, (int64_t)len);
  mca_btl_active_message_callback_t* reg = &mca_btl_base_active_message_trigger[tag];
  if (reg->cbfunc != NULL) {
    mca_btl_base_segment_t segment = {.seg_addr.pval = buf, .seg_len = len};
    mca_btl_base_descriptor_t des;
    memset(&des, 0, sizeof(des));
    des.des_segments = &segment;
    des.des_segment_count = 1;
    reg->cbfunc(&m->super, tag, &des, reg->cbdata);
  } else {
    opal_output_verbose(1, mca_btl_iwarpx_component.output,
                        "btl:iwarpx: message with tag 0x%x and no receiver dropped", tag);
  }
}

void mca_btl_iwarpx_recv_complete(mca_btl_iwarpx_module_t* m, mca_btl_iwarpx_recv_t* r, size_t len,
                                  uint64_t data) {
  if (data == MCA_BTL_IWARPX_SCTP_WAKE) {
    mca_btl_iwarpx_sctp_wake_received(m, r->buf, len);
  } else if (data == MCA_BTL_IWARPX_SCTP_PROBE) {
    /* An SCTP peer's liveness probe: its delivery (the RDM stream's ack) is the answer. */
  } else if (data > 0xff) {
    opal_output_verbose(1, mca_btl_iwarpx_component.output,
                        "btl:iwarpx: message with CQ data 0x%llx (not a tag) dropped",
                        (unsigned long long)data);
  } else {
    mca_btl_iwarpx_deliver(m, (mca_btl_base_tag_t)data, r->buf, len);
  }
  r->repost_next = m->repost;
  m->repost = r;
}
