/*
 * btl/iwarpx component: parameters, open/close and a btl_init that disqualifies the
 * component (placeholder until the iwarpx provider's RDM endpoint lands).
 */
// clang-format off
#include "opal_config.h" /* first, see btl_iwarpx.h */
// clang-format on

#include <stddef.h>

#include "btl_iwarpx.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/util/output.h"

#if !defined(IWARPX_MCA_VERSION_MAJOR) || !defined(IWARPX_MCA_VERSION_MINOR) || \
    !defined(IWARPX_MCA_VERSION_RELEASE)
#error "IWARPX_MCA_VERSION_{MAJOR,MINOR,RELEASE} must be defined (CMake sets them)"
#endif

_Static_assert(offsetof(mca_btl_iwarpx_component_t, super) == 0,
               "the base component must be the first member");

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
                    /* Our own version (ompi_info shows it; later the modex key includes it). */
                    MCA_BASE_MAKE_VERSION(component, IWARPX_MCA_VERSION_MAJOR,
                                          IWARPX_MCA_VERSION_MINOR, IWARPX_MCA_VERSION_RELEASE),
                    .mca_open_component = iwarpx_open,
                    .mca_close_component = iwarpx_close,
                    .mca_register_component_params = iwarpx_register,
                },
            .btl_data = {.param_field = MCA_BASE_METADATA_PARAM_NONE},
            .btl_init = iwarpx_init,
            .btl_progress = NULL,
        },
    .output = -1,
    .verbose = 0,
    .enable = true,
};

/* Also run by ompi_info (without open), so it must not touch anything but the variables. */
static int iwarpx_register(void) {
  mca_btl_iwarpx_component_t* c = &mca_btl_iwarpx_component;
  const mca_base_component_t* v = &c->super.btl_version;

  c->verbose = 0;
  (void)mca_base_component_var_register(
      v, "verbose",
      "Verbosity of the iwarpx BTL's output stream (0 = silent, 1 = component decisions, "
      "100 = everything)",
      MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY, &c->verbose);

  c->enable = true;
  (void)mca_base_component_var_register(
      v, "enable",
      "Whether the iwarpx BTL (software iWARP over the iwarpx libfabric provider) may create "
      "modules. PLACEHOLDER: in this version btl_init always disqualifies the component (no "
      "modules) until the provider's RDM endpoint lands; MPI traffic uses the other BTLs",
      MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY, &c->enable);
  return OPAL_SUCCESS;
}

static int iwarpx_open(void) {
  mca_btl_iwarpx_component_t* c = &mca_btl_iwarpx_component;
  c->output = opal_output_open(NULL);
  opal_output_set_verbosity(c->output, c->verbose);
  opal_output_verbose(20, c->output, "btl:iwarpx: component open (version %d.%d.%d)",
                      IWARPX_MCA_VERSION_MAJOR, IWARPX_MCA_VERSION_MINOR,
                      IWARPX_MCA_VERSION_RELEASE);
  return OPAL_SUCCESS;
}

static int iwarpx_close(void) {
  mca_btl_iwarpx_component_t* c = &mca_btl_iwarpx_component;
  opal_output_verbose(20, c->output, "btl:iwarpx: component close");
  if (c->output >= 0) {
    opal_output_close(c->output);
    c->output = -1;
  }
  return OPAL_SUCCESS;
}

static mca_btl_base_module_t** iwarpx_init(int* num_btls, bool enable_progress_threads,
                                           bool enable_mpi_threads) {
  mca_btl_iwarpx_component_t* c = &mca_btl_iwarpx_component;
  *num_btls = 0;
  if (!c->enable) {
    opal_output_verbose(1, c->output, "btl:iwarpx: disabled by btl_iwarpx_enable=0");
    return NULL;
  }
  opal_output_verbose(1, c->output,
                      "btl:iwarpx: placeholder component, disqualifying itself (no modules) "
                      "until the iwarpx provider's RDM endpoint lands; MPI continues over the "
                      "other BTLs (progress_threads=%d mpi_threads=%d)",
                      (int)enable_progress_threads, (int)enable_mpi_threads);
  return NULL;
}
