/*
 * fi_ext_iwarpx.h - public extension interface of the iwarpx libfabric provider.
 *
 * Applications and the iwarpx Open MPI components include this header to reach
 * provider-specific features through fi_open_ops(): channel statistics and
 * send rules of the RDM endpoint, counters that tests assert on. The version
 * below changes whenever a structure here changes size or meaning.
 *
 * Nothing beyond the identification macros is defined yet; the operations are
 * added by the issues that implement them.
 */
#ifndef FI_EXT_IWARPX_H
#define FI_EXT_IWARPX_H

#ifdef __cplusplus
extern "C" {
#endif

/* Provider name as reported by fi_info (fi_info->fabric_attr->prov_name). */
#define FI_IWARPX_PROV_NAME "iwarpx"

/* Version of this extension interface (major << 16 | minor). */
#define FI_IWARPX_EXT_VERSION ((0 << 16) | 1)

#ifdef __cplusplus
}
#endif

#endif /* FI_EXT_IWARPX_H */
