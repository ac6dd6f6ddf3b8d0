/*
 * osc/iwarpx component: parameters, open/close, init/finalize, and an osc_query that
 * declines every window (placeholder until the iwarpx RDMA path lands).
 */
// clang-format off
#include "ompi_config.h" /* first, see osc_iwarpx.h */
// clang-format on

#include <stddef.h>

#include "ompi/constants.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/util/output.h"
#include "osc_iwarpx.h"

#if !defined(IWARPX_MCA_VERSION_MAJOR) || !defined(IWARPX_MCA_VERSION_MINOR) || \
    !defined(IWARPX_MCA_VERSION_RELEASE)
#error "IWARPX_MCA_VERSION_{MAJOR,MINOR,RELEASE} must be defined (CMake sets them)"
#endif

_Static_assert(offsetof(mca_osc_iwarpx_component_t, super) == 0,
               "the base component must be the first member");

static int iwarpx_register(void);
static int iwarpx_open(void);
static int iwarpx_close(void);
static int iwarpx_init(bool enable_progress_threads, bool enable_mpi_threads);
static int iwarpx_finalize(void);
static int iwarpx_query(struct ompi_win_t* win, void** base, size_t size, int disp_unit,
                        struct ompi_communicator_t* comm, struct opal_info_t* info, int flavor);
static int iwarpx_select(struct ompi_win_t* win, void** base, size_t size, int disp_unit,
                         struct ompi_communicator_t* comm, struct opal_info_t* info, int flavor,
                         int* model);

mca_osc_iwarpx_component_t mca_osc_iwarpx_component = {
    .super =
        {
            .osc_version =
                {
                    OMPI_OSC_BASE_VERSION_3_0_0,
                    .mca_component_name = "iwarpx",
                    MCA_BASE_MAKE_VERSION(component, IWARPX_MCA_VERSION_MAJOR,
                                          IWARPX_MCA_VERSION_MINOR, IWARPX_MCA_VERSION_RELEASE),
                    .mca_open_component = iwarpx_open,
                    .mca_close_component = iwarpx_close,
                    .mca_register_component_params = iwarpx_register,
                },
            .osc_data = {.param_field = MCA_BASE_METADATA_PARAM_NONE},
            .osc_init = iwarpx_init,
            .osc_query = iwarpx_query,
            .osc_select = iwarpx_select,
            .osc_finalize = iwarpx_finalize,
        },
    .output = -1,
    .verbose = 0,
    .priority = 0,
};

/* Also run by ompi_info (without open), so it must not touch anything but the variables. */
static int iwarpx_register(void) {
  mca_osc_iwarpx_component_t* c = &mca_osc_iwarpx_component;
  const mca_base_component_t* v = &c->super.osc_version;

  c->verbose = 0;
  (void)mca_base_component_var_register(
      v, "verbose",
      "Verbosity of the iwarpx OSC component's output stream (0 = silent, 1 = component "
      "decisions, 100 = everything)",
      MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY, &c->verbose);

  c->priority = 0;
  (void)mca_base_component_var_register(
      v, "priority",
      "Selection priority of the iwarpx one-sided component (reference: rdma 101, sm 100, "
      "ucx 60, pt2pt 10). PLACEHOLDER: in this version osc_query declines every window (-1) "
      "whatever the priority, so windows use the other osc components",
      MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
      &c->priority);
  return OMPI_SUCCESS;
}

static int iwarpx_open(void) {
  mca_osc_iwarpx_component_t* c = &mca_osc_iwarpx_component;
  c->output = opal_output_open(NULL);
  opal_output_set_verbosity(c->output, c->verbose);
  opal_output_verbose(20, c->output, "osc:iwarpx: component open (version %d.%d.%d)",
                      IWARPX_MCA_VERSION_MAJOR, IWARPX_MCA_VERSION_MINOR,
                      IWARPX_MCA_VERSION_RELEASE);
  return OMPI_SUCCESS;
}

static int iwarpx_close(void) {
  mca_osc_iwarpx_component_t* c = &mca_osc_iwarpx_component;
  opal_output_verbose(20, c->output, "osc:iwarpx: component close");
  if (c->output >= 0) {
    opal_output_close(c->output);
    c->output = -1;
  }
  return OMPI_SUCCESS;
}

static int iwarpx_init(bool enable_progress_threads, bool enable_mpi_threads) {
  opal_output_verbose(1, mca_osc_iwarpx_component.output,
                      "osc:iwarpx: placeholder component initialised; it declines every window "
                      "until the iwarpx RDMA path lands (progress_threads=%d mpi_threads=%d)",
                      (int)enable_progress_threads, (int)enable_mpi_threads);
  return OMPI_SUCCESS;
}

static int iwarpx_finalize(void) {
  opal_output_verbose(20, mca_osc_iwarpx_component.output, "osc:iwarpx: component finalize");
  return OMPI_SUCCESS;
}

static int iwarpx_query(struct ompi_win_t* win, void** base, size_t size, int disp_unit,
                        struct ompi_communicator_t* comm, struct opal_info_t* info, int flavor) {
  (void)win;
  (void)base;
  (void)disp_unit;
  (void)comm;
  (void)info;
  opal_output_verbose(1, mca_osc_iwarpx_component.output,
                      "osc:iwarpx: placeholder declines window (flavor %d, size %zu); "
                      "osc_query returns -1",
                      flavor, size);
  return -1;
}

/* Never reached while query declines; fail cleanly should a future change get here. */
static int iwarpx_select(struct ompi_win_t* win, void** base, size_t size, int disp_unit,
                         struct ompi_communicator_t* comm, struct opal_info_t* info, int flavor,
                         int* model) {
  (void)win;
  (void)base;
  (void)size;
  (void)disp_unit;
  (void)comm;
  (void)info;
  (void)model;
  opal_output_verbose(1, mca_osc_iwarpx_component.output,
                      "osc:iwarpx: osc_select called (flavor %d) but the component is a "
                      "placeholder: OMPI_ERR_NOT_SUPPORTED",
                      flavor);
  return OMPI_ERR_NOT_SUPPORTED;
}
