/*
 * btl/iwarpx component: MCA parameters, open/close, and btl_init, which opens the iwarpx
 * provider's RDM endpoint, publishes its address with the modex and returns one module (or
 * none, logged at verbosity 1, when anything fails).
 */
// clang-format off
#include "opal_config.h" /* first, see btl_iwarpx.h */
// clang-format on

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "btl_iwarpx.h"
#include "btl_iwarpx_sctp.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_var_enum.h"
#include "opal/mca/btl/base/base.h"
#include "opal/mca/pmix/pmix.h"
#include "opal/util/output.h"

#if !defined(IWARPX_MCA_VERSION_MAJOR) || !defined(IWARPX_MCA_VERSION_MINOR) || \
    !defined(IWARPX_MCA_VERSION_RELEASE)
#error "IWARPX_MCA_VERSION_{MAJOR,MINOR,RELEASE} must be defined (CMake sets them)"
#endif

_Static_assert(offsetof(mca_btl_iwarpx_component_t, super) == 0,
               "the base component must be the first member");
_Static_assert(offsetof(mca_btl_iwarpx_module_t, super) == 0,
               "the base module must be the first member");

static int iwarpx_register(void);
static int iwarpx_open(void);
static int iwarpx_close(void);

static mca_btl_base_module_t** iwarpx_init(int* num_btls, bool enable_progress_threads,
                                           bool enable_mpi_threads);

mca_btl_iwarpx_component_t mca_btl_iwarpx_component = {
    .super =
        {
            .btl_version =
                {
                    MCA_BTL_BASE_VERSION_3_1_0,
                    .mca_component_name = "iwarpx",
                    /* Our own version: ompi_info shows it and the modex key includes it. */
                    MCA_BASE_MAKE_VERSION(component, IWARPX_MCA_VERSION_MAJOR,
                                          IWARPX_MCA_VERSION_MINOR, IWARPX_MCA_VERSION_RELEASE),
                    .mca_open_component = iwarpx_open,
                    .mca_close_component = iwarpx_close,
                    .mca_register_component_params = iwarpx_register,
                },
            .btl_data = {.param_field = MCA_BASE_METADATA_PARAM_NONE},
            .btl_init = iwarpx_init,
            .btl_progress = mca_btl_iwarpx_progress,
        },
    .output = -1,
    .verbose = 0,
    .enable = true,
    .num_recvs = 64,
    .p2p = MCA_BTL_IWARPX_P2P_DATAGRAM,
    .send_rules = NULL,
    .mr_cache = true,
    .mr_cache_max = 4096,
    .local_reg_threshold = SIZE_MAX,
    .sctp_streams = 4,
    .sctp_stream_threshold = 4096,
    .module = NULL,
};

/* Also run by ompi_info (without open), so it must not touch anything but the variables. */
static int iwarpx_register(void) {
  mca_btl_iwarpx_component_t* c = &mca_btl_iwarpx_component;
  const mca_base_component_t* v = &c->super.btl_version;

  c->verbose = 0;
  (void)mca_base_component_var_register(
      v, "verbose",
      "Verbosity of the iwarpx BTL's output stream (0 = silent, 1 = component decisions and "
      "per-rank traffic counters at finalize, 100 = everything)",
      MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY, &c->verbose);

  c->enable = true;
  (void)mca_base_component_var_register(
      v, "enable",
      "Whether the iwarpx BTL (software iWARP over the iwarpx libfabric provider's FI_EP_RDM "
      "endpoint) may create its module; false disqualifies it in btl_init",
      MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY, &c->enable);

  c->num_recvs = 64;
  (void)mca_base_component_var_register(
      v, "num_recvs",
      "Number of receive buffers of btl_iwarpx_max_send_size bytes kept posted on the RDM "
      "endpoint (the provider buffers unexpected messages beyond them)",
      MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
      &c->num_recvs);

  static const mca_base_var_enum_value_t kP2pValues[] = {
      {MCA_BTL_IWARPX_P2P_DATAGRAM, "datagram"}, {MCA_BTL_IWARPX_P2P_SCTP, "sctp"}, {0, NULL}};
  mca_base_var_enum_t* p2p_enum = NULL;
  c->p2p = MCA_BTL_IWARPX_P2P_DATAGRAM;
  if (mca_base_var_enum_create("btl_iwarpx_p2p", kP2pValues, &p2p_enum) == OPAL_SUCCESS) {
    (void)mca_base_component_var_register(
        v, "p2p",
        "Channel for point-to-point messages: datagram (the iwarpx RDM endpoint: reliable "
        "datagrams over UDP) or sctp (one iWARP-over-SCTP association per peer, FI_EP_MSG with "
        "FI_PROTO_IWARPX_SCTP, connected at the first send; the module declines where the "
        "provider offers no SCTP). One-sided operations use RDMA on the RDM endpoint either way",
        MCA_BASE_VAR_TYPE_INT, p2p_enum, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY,
        &c->p2p);
    OBJ_RELEASE(p2p_enum);
  }

  c->send_rules = NULL;
  (void)mca_base_component_var_register(
      v, "send_rules",
      "Send-rule chain for the iwarpx provider, exported as FI_IWARPX_SEND_RULES before "
      "fi_getinfo when set (unset: the provider's own default or the environment). Syntax in "
      "the provider's docs (docs/design.md, send-rule chains; channels arrive with issue 5), "
      "e.g. \"size<=2048:rc_fp,size<=8192:ud_sr,any:ud_zcopy\"; a chain the provider refuses "
      "makes its endpoint, and so this module, fail to open",
      MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
      &c->send_rules);

  c->mr_cache = true;
  (void)mca_base_component_var_register(
      v, "mr_cache",
      "Whether memory registrations (register_mem) go through Open MPI's registration cache "
      "(rcache grdma: a range registered again reuses its MR; unused MRs stay cached while "
      "mpi_leave_pinned is on and are dropped when the memory is freed); false = one fi_mr_reg "
      "per register_mem, closed at deregister_mem",
      MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
      &c->mr_cache);

  c->mr_cache_max = 4096;
  (void)mca_base_component_var_register(
      v, "mr_cache_max",
      "Most memory registrations (MRs) kept open; at this number a new registration first "
      "closes unused cached ones, least recently used first (0 = no limit; registrations in "
      "use are never closed, so the limit may be exceeded by them)",
      MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
      &c->mr_cache_max);

  c->local_reg_threshold = SIZE_MAX;
  (void)mca_base_component_var_register(
      v, "local_registration_threshold",
      "Put/get/atomic local buffers larger than this many bytes are registered by the caller "
      "(osc rdma, ob1) before use. The iwarpx provider needs no local registration, so the "
      "default (SIZE_MAX) never asks for it; a smaller value costs registrations (cached, see "
      "btl_iwarpx_mr_cache) and is meant for tests",
      MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
      &c->local_reg_threshold);

  c->if_include = NULL;
  (void)mca_base_component_var_register(
      v, "if_include",
      "Comma-separated interface names and/or IPv4 subnets (a.b.c.d/n): the RDM endpoint binds "
      "to the first address of an up interface that matches. Empty: the wildcard address, "
      "which only processes on the same host can reach (peers on other hosts then count as "
      "unreachable); set it for runs across hosts",
      MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_1, MCA_BASE_VAR_SCOPE_READONLY,
      &c->if_include);

  c->sctp_streams = 4;
  (void)mca_base_component_var_register(
      v, "sctp_streams",
      "With btl_iwarpx_p2p=sctp: SCTP streams used per association (1-16, at most what the "
      "association negotiated). Messages up to btl_iwarpx_sctp_stream_threshold bytes (ob1's "
      "control and small messages) go on stream 0; larger ones round robin on streams 1..n-1, "
      "so a large message does not hold up a small one. Streams are ordered each on its own, "
      "not with each other (ob1 reorders by its sequence numbers). 1: every message on stream "
      "0, in order",
      MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
      &c->sctp_streams);

  c->sctp_stream_threshold = 4096;
  (void)mca_base_component_var_register(
      v, "sctp_stream_threshold",
      "With btl_iwarpx_p2p=sctp and btl_iwarpx_sctp_streams > 1: messages of more than this "
      "many bytes go on streams 1..n-1, the others on stream 0",
      MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
      &c->sctp_stream_threshold);

  /* btl_iwarpx_{exclusivity,flags,atomic_flags,eager_limit,...}, bound to the template. */
  return mca_btl_base_param_register(&c->super.btl_version, &mca_btl_iwarpx_module_template.super);
}

static int iwarpx_open(void) {
  mca_btl_iwarpx_component_t* c = &mca_btl_iwarpx_component;
  c->output = opal_output_open(NULL);
  opal_output_set_verbosity(c->output, c->verbose);
  OBJ_CONSTRUCT(&c->progress_lock, opal_mutex_t);
  c->module = NULL;
  opal_output_verbose(20, c->output, "btl:iwarpx: component open (version %d.%d.%d)",
                      IWARPX_MCA_VERSION_MAJOR, IWARPX_MCA_VERSION_MINOR,
                      IWARPX_MCA_VERSION_RELEASE);
  return OPAL_SUCCESS;
}

static int iwarpx_close(void) {
  mca_btl_iwarpx_component_t* c = &mca_btl_iwarpx_component;
  opal_output_verbose(20, c->output, "btl:iwarpx: component close");
  OBJ_DESTRUCT(&c->progress_lock);
  if (c->output >= 0) {
    opal_output_close(c->output);
    c->output = -1;
  }
  return OPAL_SUCCESS;
}

/* The modex blob for our endpoint; OPAL_SUCCESS once published. */
static int publish_address(mca_btl_iwarpx_module_t* m) {
  mca_btl_iwarpx_component_t* c = &mca_btl_iwarpx_component;
  mca_btl_iwarpx_modex_t blob;
  memset(&blob, 0, sizeof(blob));
  blob.magic = MCA_BTL_IWARPX_MODEX_MAGIC;
  blob.version = MCA_BTL_IWARPX_MODEX_VERSION;
  size_t len = sizeof(blob.addr);
  int ret = fi_getname(&m->ep->fid, blob.addr, &len);
  if (ret != 0) {
    opal_output_verbose(1, c->output, "btl:iwarpx: fi_getname failed: %s", fi_strerror(-ret));
    return OPAL_ERROR;
  }
  blob.addrlen = (uint16_t)len;
  if (m->sctp != NULL) {
    size_t msg_len = sizeof(blob.msg_addr);
    if (mca_btl_iwarpx_sctp_getname(m, blob.msg_addr, &msg_len) != OPAL_SUCCESS) return OPAL_ERROR;
    blob.msg_addrlen = (uint16_t)msg_len;
  }
  int rc = OPAL_SUCCESS;
  const int32_t blob_len = (int32_t)sizeof(blob);
  OPAL_MODEX_SEND(rc, OPAL_PMIX_GLOBAL, &c->super.btl_version, &blob, blob_len);
  if (rc != OPAL_SUCCESS) {
    opal_output_verbose(1, c->output, "btl:iwarpx: modex send failed (%d)", rc);
  }
  return rc;
}

/* btl_iwarpx_send_rules, when set, reaches the provider as FI_IWARPX_SEND_RULES (read when
 * its endpoint is created). Unset: the environment is left alone. */
static int export_send_rules(void) {
  mca_btl_iwarpx_component_t* c = &mca_btl_iwarpx_component;
  if (c->send_rules == NULL || c->send_rules[0] == '\0') return OPAL_SUCCESS;
  const char* before = getenv("FI_IWARPX_SEND_RULES");
  if (before != NULL && strcmp(before, c->send_rules) != 0) {
    opal_output_verbose(1, c->output,
                        "btl:iwarpx: btl_iwarpx_send_rules replaces FI_IWARPX_SEND_RULES=\"%s\"",
                        before);
  }
  if (setenv("FI_IWARPX_SEND_RULES", c->send_rules, 1) != 0) {
    opal_output_verbose(1, c->output, "btl:iwarpx: setenv(FI_IWARPX_SEND_RULES) failed; no module");
    return OPAL_ERROR;
  }
  opal_output_verbose(1, c->output, "btl:iwarpx: FI_IWARPX_SEND_RULES=\"%s\" for the provider",
                      getenv("FI_IWARPX_SEND_RULES"));
  return OPAL_SUCCESS;
}

/* btl_iwarpx_p2p=sctp turns the provider's lending of Read Responses off (FI_IWARPX_RD_LEND=0,
 * unless the environment sets it): a lent response points into the responder's registered
 * memory until the requester acknowledges it on the RDM stream. With point-to-point on the
 * RDM endpoint ob1's FIN travels on that stream behind the acknowledgement; over SCTP the FIN
 * can overtake it, the sender frees its buffer, and the registration cache closes the region
 * only later (lazily), so a resend or the reclaim at close would read unmapped memory. */
static void export_rd_lend(void) {
  mca_btl_iwarpx_component_t* c = &mca_btl_iwarpx_component;
  if (c->p2p != MCA_BTL_IWARPX_P2P_SCTP) return;
  const char* before = getenv("FI_IWARPX_RD_LEND");
  if (before != NULL) {
    opal_output_verbose(1, c->output,
                        "btl:iwarpx: btl_iwarpx_p2p=sctp keeps FI_IWARPX_RD_LEND=%s from the "
                        "environment (1 is unsafe with a lazy registration cache)",
                        before);
    return;
  }
  if (setenv("FI_IWARPX_RD_LEND", "0", 1) == 0) {
    opal_output_verbose(1, c->output,
                        "btl:iwarpx: btl_iwarpx_p2p=sctp: FI_IWARPX_RD_LEND=0 for the provider "
                        "(Read Responses copied, see README)");
  }
}

static mca_btl_base_module_t** iwarpx_init(int* num_btls, bool enable_progress_threads,
                                           bool enable_mpi_threads) {
  mca_btl_iwarpx_component_t* c = &mca_btl_iwarpx_component;
  *num_btls = 0;
  if (!c->enable) {
    opal_output_verbose(1, c->output, "btl:iwarpx: disabled by btl_iwarpx_enable=0");
    return NULL;
  }
  if (export_send_rules() != OPAL_SUCCESS) return NULL;
  export_rd_lend();
  mca_btl_iwarpx_module_t* m = malloc(sizeof(*m));
  mca_btl_base_module_t** modules = malloc(sizeof(*modules));
  if (m == NULL || modules == NULL) {
    free(m);
    free(modules);
    return NULL;
  }
  memcpy(m, &mca_btl_iwarpx_module_template, sizeof(*m));
  if (mca_btl_iwarpx_fabric_open(m, enable_mpi_threads) != OPAL_SUCCESS ||
      publish_address(m) != OPAL_SUCCESS) {
    opal_output_verbose(1, c->output,
                        "btl:iwarpx: no module (see above); MPI continues over the other BTLs");
    mca_btl_iwarpx_fabric_close(m);
    free(m);
    free(modules);
    return NULL;
  }
  /* sendi: what fits the provider's inject size (tx_attr->inject_size) and the eager limit. */
  m->sendi_limit = m->info->tx_attr->inject_size;
  if (m->sendi_limit > MCA_BTL_IWARPX_SENDI_MAX) m->sendi_limit = MCA_BTL_IWARPX_SENDI_MAX;
  if (m->sendi_limit > m->super.btl_eager_limit) m->sendi_limit = m->super.btl_eager_limit;
  if (m->sendi_limit == 0) m->super.btl_sendi = NULL;
  m->super.btl_get_local_registration_threshold = c->local_reg_threshold;
  m->super.btl_put_local_registration_threshold = c->local_reg_threshold;
  m->super.btl_atomic_flags &= mca_btl_iwarpx_query_atomics(m);
  if (m->super.btl_atomic_flags == 0) {
    m->super.btl_flags &= ~(uint32_t)(MCA_BTL_FLAGS_ATOMIC_OPS | MCA_BTL_FLAGS_ATOMIC_FOPS);
  }
  c->module = m;
  modules[0] = &m->super;
  *num_btls = 1;
  opal_output_verbose(
      1, c->output,
      "btl:iwarpx: module ready on the iwarpx RDM endpoint (point-to-point %s, eager %zu, max send "
      "%zu, put/get limit %zu, flags 0x%x, atomic flags 0x%x, %d receives, sendi up to "
      "%zu bytes, registration cache %s, progress_threads=%d mpi_threads=%d)",
      m->sctp != NULL ? "over SCTP associations" : "on the RDM endpoint", m->super.btl_eager_limit,
      m->super.btl_max_send_size, m->super.btl_put_limit, m->super.btl_flags,
      m->super.btl_atomic_flags, m->num_recvs, m->sendi_limit,
      !c->mr_cache                       ? "off"
      : mca_btl_iwarpx_mr_keeps_unused() ? "grdma, keeps unused MRs"
                                         : "grdma, in-use MRs only (leave-pinned off)",
      (int)enable_progress_threads, (int)enable_mpi_threads);
  return modules;
}
