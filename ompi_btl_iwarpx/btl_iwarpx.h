/*
 * iwarpx BTL for Open MPI 4.1 (BTL API 3.1), built outside Open MPI's tree.
 *
 * Placeholder: the component registers its MCA parameters and loads, but btl_init
 * disqualifies it (no modules) until the iwarpx provider's RDM endpoint lands.
 */
#ifndef IWARPX_BTL_IWARPX_H
#define IWARPX_BTL_IWARPX_H

// clang-format off
/* Must stay the first include: it fixes the struct layouts (OPAL_CUDA_SUPPORT, ...)
 * to those of the installed libopen-pal. */
#include "opal_config.h"
// clang-format on

#include "opal/mca/btl/btl.h"

#if !defined(OPAL_MAJOR_VERSION) || OPAL_MAJOR_VERSION != 4 || OPAL_MINOR_VERSION != 1
#error "btl/iwarpx targets Open MPI 4.1.x: the installed opal_config.h is from another version"
#endif
#if !defined(BTL_VERSION) || BTL_VERSION != 310
#error "btl/iwarpx implements BTL API 3.1 (BTL_VERSION 310); opal/mca/btl/btl.h differs"
#endif

BEGIN_C_DECLS

typedef struct mca_btl_iwarpx_component_t {
  mca_btl_base_component_3_0_0_t super; /* must be first: the loader casts the symbol */
  int output;                           /* opal_output stream, -1 while closed */
  int verbose;                          /* btl_iwarpx_verbose */
  bool enable;                          /* btl_iwarpx_enable */
} mca_btl_iwarpx_component_t;

/* The only symbol the DSO exports (checked by tests/mca/mca_exports.sh). */
OPAL_MODULE_DECLSPEC extern mca_btl_iwarpx_component_t mca_btl_iwarpx_component;

END_C_DECLS

#endif /* IWARPX_BTL_IWARPX_H */
