/*
 * osc/iwarpx target address resolution, shared by every communication call:
 *  - osc_iwarpx_target_addr: the remote virtual address a (target, displacement) names:
 *    window base + disp * disp_unit for create/allocate windows, the displacement itself (an
 *    absolute address, MPI_Get_address) for dynamic windows. Negative or overflowing
 *    displacements are OMPI_ERR_RMA_RANGE.
 *  - osc_iwarpx_remote_range: which remote memory holds all of [addr, addr + len): the
 *    target's window, or (dynamic) the attached region found in the target's region table.
 *    Anything else is OMPI_ERR_RMA_RANGE with a log line, and the caller sends nothing.
 *  - osc_iwarpx_span: how many target bytes count x dt covers (range checks, accumulate paths).
 */
// clang-format off
#include "ompi_config.h" /* first, see osc_iwarpx.h */
// clang-format on

#include "ompi/datatype/ompi_datatype.h"
#include "opal/util/output.h"
#include "osc_iwarpx.h"

int osc_iwarpx_target_addr(osc_iwarpx_module_t* m, int target, ptrdiff_t disp, uint64_t* addr) {
  const osc_iwarpx_target_t* t = &m->targets[target];
  if (m->flavor == MPI_WIN_FLAVOR_DYNAMIC) {
    if (disp <= 0) return OMPI_ERR_RMA_RANGE; /* MPI_BOTTOM + 0 is never attached memory */
    *addr = (uint64_t)disp;
    return OMPI_SUCCESS;
  }
  int64_t off = 0;
  if (disp < 0 || __builtin_mul_overflow((int64_t)disp, t->disp_unit, &off) ||
      __builtin_add_overflow(t->base, (uint64_t)off, addr)) {
    return OMPI_ERR_RMA_RANGE;
  }
  return OMPI_SUCCESS;
}

int osc_iwarpx_remote_range(osc_iwarpx_module_t* m, int target, uint64_t addr, uint64_t len,
                            osc_iwarpx_rwin_t* out) {
  if (m->flavor == MPI_WIN_FLAVOR_DYNAMIC) {
    const int rc = osc_iwarpx_dyn_lookup(m, target, addr, len, out);
    if (rc != OMPI_SUCCESS) {
      opal_output_verbose(1, mca_osc_iwarpx_component.output,
                          "osc:iwarpx: rank %d -> %d: access of %llu bytes at address 0x%llx "
                          "not inside one region attached to the target's dynamic window",
                          m->rank, target, (unsigned long long)len, (unsigned long long)addr);
    }
    return rc;
  }
  const osc_iwarpx_target_t* t = &m->targets[target];
  if (addr < t->base || addr - t->base > t->size || len > t->size - (addr - t->base)) {
    opal_output_verbose(1, mca_osc_iwarpx_component.output,
                        "osc:iwarpx: rank %d -> %d: access of %llu bytes at window offset %lld "
                        "outside the target's %llu-byte window",
                        m->rank, target, (unsigned long long)len, (long long)(addr - t->base),
                        (unsigned long long)t->size);
    return OMPI_ERR_RMA_RANGE;
  }
  out->base = t->base;
  out->size = t->size;
  out->key = t->key;
  return OMPI_SUCCESS;
}

uint64_t osc_iwarpx_span(struct ompi_datatype_t* dt, int count) {
  if (count <= 0) return 0;
  size_t size = 0;
  (void)ompi_datatype_type_size(dt, &size);
  if (ompi_datatype_is_contiguous_memory_layout(dt, count)) return (uint64_t)size * (uint64_t)count;
  ptrdiff_t lb = 0, extent = 0, tlb = 0, textent = 0;
  (void)ompi_datatype_get_extent(dt, &lb, &extent);
  (void)ompi_datatype_get_true_extent(dt, &tlb, &textent);
  return (uint64_t)(count - 1) * (uint64_t)extent + (uint64_t)textent;
}
