/*
 * iwarpx OSC (one-sided) component for Open MPI 4.1 (OSC API 3.0.0), built outside Open
 * MPI's tree.
 *
 * Placeholder: the component registers its MCA parameters and loads, but declines every
 * window (osc_query returns -1) until the iwarpx RDMA path lands.
 */
#ifndef IWARPX_OSC_IWARPX_H
#define IWARPX_OSC_IWARPX_H

// clang-format off
/* Must stay the first include: it fixes the struct layouts to those of the installed libmpi. */
#include "ompi_config.h"
// clang-format on

#include "ompi/mca/osc/osc.h"

#if !defined(OMPI_MAJOR_VERSION) || OMPI_MAJOR_VERSION != 4 || OMPI_MINOR_VERSION != 1
#error "osc/iwarpx targets Open MPI 4.1.x: the installed ompi_config.h is from another version"
#endif
#ifndef OMPI_OSC_BASE_VERSION_3_0_0 /* v5 has OMPI_OSC_BASE_VERSION_4_0_0 instead */
#error "osc/iwarpx implements OSC API 3.0.0; ompi/mca/osc/osc.h differs"
#endif

BEGIN_C_DECLS

typedef struct mca_osc_iwarpx_component_t {
  ompi_osc_base_component_t super; /* must be first: the loader casts the symbol */
  int output;                      /* opal_output stream, -1 while closed */
  int verbose;                     /* osc_iwarpx_verbose */
  int priority;                    /* osc_iwarpx_priority */
} mca_osc_iwarpx_component_t;

/* The only symbol the DSO exports (checked by tests/mca/mca_exports.sh). */
OMPI_MODULE_DECLSPEC extern mca_osc_iwarpx_component_t mca_osc_iwarpx_component;

END_C_DECLS

#endif /* IWARPX_OSC_IWARPX_H */
