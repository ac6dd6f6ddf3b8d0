/*
 * iwx_ofi: what the two Open MPI components (btl/iwarpx, osc/iwarpx) share — finding the iwarpx
 * provider's FI_EP_RDM endpoint and opening its libfabric objects through the public API.
 * Plain C11 over libfabric, no Open MPI types: each component compiles this file into its own
 * .so (hidden visibility), and reports failures through its own output stream via `log`.
 *
 * Contract
 * - iwx_ofi_hints(caps) returns fi_getinfo hints (caller frees with fi_freeinfo, and may adjust
 *   them first): prov_name "iwarpx", FI_EP_RDM, `caps`, mode 0, mr_mode FI_MR_VIRT_ADDR |
 *   FI_MR_ALLOCATED | FI_MR_PROV_KEY (what is granted is the caller's to honour), FI_THREAD_SAFE
 *   (MPI_THREAD_MULTIPLE callers post concurrently), FI_AV_TABLE. NULL on allocation failure.
 * - iwx_ofi_getinfo(hints, what, log, arg) runs fi_getinfo at API 1.17 and frees `hints`;
 *   NULL (logged with `what`) when nothing matches.
 * - iwx_ofi_open_domain opens fabric and domain for o->info; iwx_ofi_open_ep then the AV
 *   (FI_AV_TABLE), one CQ of `format` (FI_WAIT_NONE: the components poll), the endpoint, its
 *   bindings (AV; CQ for FI_TRANSMIT | FI_RECV) and fi_enable. Both return 0, or -1 after
 *   calling log(arg, call, ret) for the libfabric call that failed; what was opened stays in *o
 *   for iwx_ofi_close.
 * - iwx_ofi_close closes whatever *o holds (endpoint, CQ, AV, domain, fabric, info), logging
 *   close failures, and leaves *o zeroed. Safe on a zeroed or partly opened *o.
 */
#ifndef IWX_OFI_H
#define IWX_OFI_H

#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#define IWX_OFI_VERSION FI_VERSION(1, 17)

typedef void (*iwx_ofi_log_fn)(void* arg, const char* call, int ret);

struct iwx_ofi {
  struct fi_info* info;
  struct fid_fabric* fabric;
  struct fid_domain* domain;
  struct fid_av* av;
  struct fid_cq* cq;
  struct fid_ep* ep;
};

struct fi_info* iwx_ofi_hints(uint64_t caps);
struct fi_info* iwx_ofi_getinfo(struct fi_info* hints, const char* what, iwx_ofi_log_fn log,
                                void* arg);
int iwx_ofi_open_domain(struct iwx_ofi* o, iwx_ofi_log_fn log, void* arg);
int iwx_ofi_open_ep(struct iwx_ofi* o, enum fi_cq_format format, iwx_ofi_log_fn log, void* arg);
void iwx_ofi_close(struct iwx_ofi* o, iwx_ofi_log_fn log, void* arg);

#endif /* IWX_OFI_H */
