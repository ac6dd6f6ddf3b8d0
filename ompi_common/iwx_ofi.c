#include "iwx_ofi.h"

#include <string.h>

#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

struct fi_info* iwx_ofi_hints(uint64_t caps) {
  struct fi_info* hints = fi_allocinfo();
  if (hints == NULL) return NULL;
  hints->caps = caps;
  hints->mode = 0;
  hints->ep_attr->type = FI_EP_RDM;
  hints->fabric_attr->prov_name = strdup("iwarpx");
  if (hints->fabric_attr->prov_name == NULL) {
    fi_freeinfo(hints);
    return NULL;
  }
  hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  hints->domain_attr->threading = FI_THREAD_SAFE;
  hints->domain_attr->av_type = FI_AV_TABLE;
  return hints;
}

struct fi_info* iwx_ofi_getinfo(struct fi_info* hints, const char* what, iwx_ofi_log_fn log,
                                void* arg) {
  struct fi_info* info = NULL;
  if (hints == NULL) return NULL;
  const int ret = fi_getinfo(IWX_OFI_VERSION, NULL, NULL, 0, hints, &info);
  fi_freeinfo(hints);
  if (ret != 0) {
    log(arg, what, ret);
    return NULL;
  }
  return info;
}

int iwx_ofi_open_domain(struct iwx_ofi* o, iwx_ofi_log_fn log, void* arg) {
  int ret = fi_fabric(o->info->fabric_attr, &o->fabric, NULL);
  if (ret != 0) {
    log(arg, "fi_fabric", ret);
    return -1;
  }
  ret = fi_domain(o->fabric, o->info, &o->domain, NULL);
  if (ret != 0) {
    log(arg, "fi_domain", ret);
    return -1;
  }
  return 0;
}

int iwx_ofi_open_ep(struct iwx_ofi* o, enum fi_cq_format format, iwx_ofi_log_fn log, void* arg) {
  struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
  int ret = fi_av_open(o->domain, &av_attr, &o->av, NULL);
  if (ret != 0) {
    log(arg, "fi_av_open", ret);
    return -1;
  }
  struct fi_cq_attr cq_attr = {.format = format, .wait_obj = FI_WAIT_NONE};
  ret = fi_cq_open(o->domain, &cq_attr, &o->cq, NULL);
  if (ret != 0) {
    log(arg, "fi_cq_open", ret);
    return -1;
  }
  ret = fi_endpoint(o->domain, o->info, &o->ep, NULL);
  if (ret != 0) {
    log(arg, "fi_endpoint", ret);
    return -1;
  }
  ret = fi_ep_bind(o->ep, &o->av->fid, 0);
  if (ret != 0) {
    log(arg, "fi_ep_bind(av)", ret);
    return -1;
  }
  ret = fi_ep_bind(o->ep, &o->cq->fid, FI_TRANSMIT | FI_RECV);
  if (ret != 0) {
    log(arg, "fi_ep_bind(cq)", ret);
    return -1;
  }
  ret = fi_enable(o->ep);
  if (ret != 0) {
    log(arg, "fi_enable", ret);
    return -1;
  }
  return 0;
}

static void close_fid(struct fid* f, const char* what, iwx_ofi_log_fn log, void* arg) {
  if (f == NULL) return;
  const int ret = fi_close(f);
  if (ret != 0) log(arg, what, ret);
}

void iwx_ofi_close(struct iwx_ofi* o, iwx_ofi_log_fn log, void* arg) {
  close_fid(o->ep != NULL ? &o->ep->fid : NULL, "fi_close(ep)", log, arg);
  close_fid(o->cq != NULL ? &o->cq->fid : NULL, "fi_close(cq)", log, arg);
  close_fid(o->av != NULL ? &o->av->fid : NULL, "fi_close(av)", log, arg);
  close_fid(o->domain != NULL ? &o->domain->fid : NULL, "fi_close(domain)", log, arg);
  close_fid(o->fabric != NULL ? &o->fabric->fid : NULL, "fi_close(fabric)", log, arg);
  if (o->info != NULL) fi_freeinfo(o->info);
  memset(o, 0, sizeof(*o));
}
