/*
 * osc/iwarpx component: parameters, open/close, init/finalize, and query/select: windows of
 * flavor create, allocate and dynamic are accepted (priority osc_iwarpx_priority) when the iwarpx
 * provider opens; shared is declined with a log line.
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
    .priority = 20,
    .mpi_threads = false,
    .fabric = NULL,
    .fabric_failed = false,
    .windows = 0,
    .errors = 0,
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

  c->priority = 20;
  (void)mca_base_component_var_register(
      v, "priority",
      "Selection priority of the iwarpx one-sided component for windows of flavor create, "
      "allocate and dynamic (reference: rdma 101, sm 100, ucx 60, pt2pt 10). The default, 20, is "
      "above "
      "pt2pt and below rdma/sm, so `--mca osc iwarpx` (or this parameter above 101) selects it",
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
  mca_osc_iwarpx_component.mpi_threads = enable_mpi_threads;
  opal_output_verbose(1, mca_osc_iwarpx_component.output,
                      "osc:iwarpx: component initialised (progress_threads=%d mpi_threads=%d); "
                      "the endpoint opens at the first window",
                      (int)enable_progress_threads, (int)enable_mpi_threads);
  return OMPI_SUCCESS;
}

static int iwarpx_finalize(void) {
  mca_osc_iwarpx_component_t* c = &mca_osc_iwarpx_component;
  opal_output_verbose(20, c->output,
                      "osc:iwarpx: component finalize (%d windows left, %lld "
                      "completion errors)",
                      (int)c->windows, (long long)c->errors);
  osc_iwarpx_fabric_close();
  return OMPI_SUCCESS;
}

static const char* flavor_name(int flavor) {
  switch (flavor) {
    case MPI_WIN_FLAVOR_CREATE: return "create";
    case MPI_WIN_FLAVOR_ALLOCATE: return "allocate";
    case MPI_WIN_FLAVOR_DYNAMIC: return "dynamic";
    case MPI_WIN_FLAVOR_SHARED: return "shared";
    default: return "unknown";
  }
}

/* Runs on every rank for every window. The answer must be the same on all ranks: flavors are
 * collective arguments, and an endpoint that fails to open fails the same way everywhere on
 * one host type (a mixed answer would make ranks pick different components). */
static int iwarpx_query(struct ompi_win_t* win, void** base, size_t size, int disp_unit,
                        struct ompi_communicator_t* comm, struct opal_info_t* info, int flavor) {
  mca_osc_iwarpx_component_t* c = &mca_osc_iwarpx_component;
  (void)win;
  (void)base;
  (void)disp_unit;
  (void)comm;
  (void)info;
  if (flavor != MPI_WIN_FLAVOR_CREATE && flavor != MPI_WIN_FLAVOR_ALLOCATE &&
      flavor != MPI_WIN_FLAVOR_DYNAMIC) {
    opal_output_verbose(1, c->output,
                        "osc:iwarpx: declines %s window (shared windows belong to osc sm)",
                        flavor_name(flavor));
    return -1;
  }
  osc_iwarpx_fabric_t* f = NULL;
  if (osc_iwarpx_fabric_get(&f) != OMPI_SUCCESS) {
    opal_output_verbose(1, c->output,
                        "osc:iwarpx: declines %s window: the iwarpx provider is not usable "
                        "(see the fi_getinfo/fi_* line above)",
                        flavor_name(flavor));
    return -1;
  }
  opal_output_verbose(20, c->output, "osc:iwarpx: query %s window of %zu bytes: priority %d",
                      flavor_name(flavor), size, c->priority);
  return c->priority;
}

static int iwarpx_select(struct ompi_win_t* win, void** base, size_t size, int disp_unit,
                         struct ompi_communicator_t* comm, struct opal_info_t* info, int flavor,
                         int* model) {
  int rc = osc_iwarpx_window_create(win, base, size, disp_unit, comm, flavor);
  if (rc == OMPI_SUCCESS) rc = osc_iwarpx_info_init(win, info);
  if (rc != OMPI_SUCCESS) {
    opal_output_verbose(1, mca_osc_iwarpx_component.output,
                        "osc:iwarpx: %s window setup failed (%d)", flavor_name(flavor), rc);
    return rc;
  }
  *model = MPI_WIN_UNIFIED;
  return OMPI_SUCCESS;
}
