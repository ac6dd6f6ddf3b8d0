// Logging through libfabric (FI_LOG_LEVEL, FI_LOG_PROV, FI_LOG_SUBSYS), one
// wrapper per provider subsystem:
//
//   IWX_WARN(mr, "requested_key %#lx is in use\n", key);
//
// The first argument names the subsystem: core, fabric, domain, mr, cq, eq,
// cntr, ep_ctrl or ep_data. WARN is for misuse and failures (each one says
// why), INFO for hint mismatches and object life, DBG for per-call detail (it
// compiles to nothing unless libfabric's ENABLE_DEBUG is defined). Any thread
// may log.
#pragma once

#include <errno.h>

#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

namespace iwarpx::ofi {

// The provider struct handed to libfabric by fi_prov_ini (prov.cc).
extern struct fi_provider g_provider;

}  // namespace iwarpx::ofi

#define IWX_SUBSYS_core FI_LOG_CORE
#define IWX_SUBSYS_fabric FI_LOG_FABRIC
#define IWX_SUBSYS_domain FI_LOG_DOMAIN
#define IWX_SUBSYS_av FI_LOG_AV
#define IWX_SUBSYS_mr FI_LOG_MR
#define IWX_SUBSYS_cq FI_LOG_CQ
#define IWX_SUBSYS_eq FI_LOG_EQ
#define IWX_SUBSYS_cntr FI_LOG_CNTR
#define IWX_SUBSYS_ep_ctrl FI_LOG_EP_CTRL
#define IWX_SUBSYS_ep_data FI_LOG_EP_DATA

#define IWX_WARN(subsys, ...) FI_WARN(&::iwarpx::ofi::g_provider, IWX_SUBSYS_##subsys, __VA_ARGS__)
#define IWX_INFO(subsys, ...) FI_INFO(&::iwarpx::ofi::g_provider, IWX_SUBSYS_##subsys, __VA_ARGS__)
#define IWX_DBG(subsys, ...) FI_DBG(&::iwarpx::ofi::g_provider, IWX_SUBSYS_##subsys, __VA_ARGS__)
