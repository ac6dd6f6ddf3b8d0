/*
 * fi_ext_iwarpx.h - public extension interface of the iwarpx libfabric provider.
 *
 * Applications and the iwarpx Open MPI components include this header to reach
 * provider-specific features through fi_open_ops(): channel statistics and
 * send rules of the RDM endpoint, counters that tests assert on. The version
 * below changes whenever a structure here changes size or meaning.
 *
 * Operations (open them with fi_open_ops on an iwarpx domain):
 *   FI_IWARPX_STATS_OPS  struct fi_iwarpx_stats_ops: an endpoint's counters.
 */
#ifndef FI_EXT_IWARPX_H
#define FI_EXT_IWARPX_H

#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_endpoint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Provider name as reported by fi_info (fi_info->fabric_attr->prov_name). */
#define FI_IWARPX_PROV_NAME "iwarpx"

/* Version of this extension interface (major << 16 | minor). */
#define FI_IWARPX_EXT_VERSION ((0 << 16) | 2)

/*
 * Endpoint statistics.
 *
 *   struct fi_iwarpx_stats_ops *ops;
 *   fi_open_ops(&domain->fid, FI_IWARPX_STATS_OPS, 0, (void **)&ops, NULL);
 *   struct fi_iwarpx_ep_stats st;
 *   ops->ep_stats(ep, &st, sizeof(st));
 *
 * ep_stats fills at most `len` bytes of *stats with the counters of `ep`, an
 * endpoint opened from any iwarpx domain (FI_EP_MSG, FI_EP_DGRAM, FI_EP_RDM),
 * and returns 0; -FI_EINVAL (logged) if `ep` is not an iwarpx endpoint or
 * stats is NULL. A caller built against an older, shorter structure gets its
 * prefix; fields the endpoint type does not have stay 0. Counts only grow
 * while the endpoint is open; it is safe from any thread. With
 * FI_IWARPX_STATS=1 every endpoint prints the non-zero counters to stderr
 * when it closes.
 */
#define FI_IWARPX_STATS_OPS "iwarpx_stats_v2"
/* v1 ended at terminates_received; the provider still opens it (a v1 caller's
 * len stops the copy there). */
#define FI_IWARPX_STATS_OPS_V1 "iwarpx_stats_v1"

struct fi_iwarpx_ep_stats {
  /* Datagrams received on the endpoint's UDP socket (DGRAM, RDM). */
  uint64_t rx_datagrams;   /* decoded and handed to a queue pair */
  uint64_t rx_truncated;   /* dropped: larger than the largest datagram */
  uint64_t rx_no_crc;      /* dropped: no CRC while one is required */
  uint64_t rx_bad_crc;     /* dropped: CRC32c mismatch */
  uint64_t rx_malformed;   /* dropped: any other header/length error */
  uint64_t rx_unknown_qpn; /* dropped: for a QP number nobody here has */
  uint64_t tx_errors;      /* sends the socket failed (not EAGAIN) */
  /* Unreliable datagrams (DGRAM). */
  uint64_t ud_no_receive; /* dropped: no receive posted */
  uint64_t ud_invalid;    /* dropped: not a UD Send, or its segment is malformed */
  /* Reliable datagrams (RDM). */
  uint64_t rd_peers;          /* peer streams opened (one per session) */
  uint64_t rd_peers_failed;   /* of those, failed: timeout, RESET, Terminate */
  uint64_t rd_data_sent;      /* data datagrams, first transmissions */
  uint64_t rd_retransmitted;  /* data datagrams sent again */
  uint64_t rd_acks_sent;      /* standalone acks (most ride on data) */
  uint64_t rd_probes_sent;    /* zero-window and liveness probes */
  uint64_t rd_resets_sent;    /* RESETs: a session nobody here knows */
  uint64_t rd_data_received;  /* data datagrams of a known session, duplicates and
                                 out-of-window ones included */
  uint64_t rd_duplicates;     /* dropped: already received */
  uint64_t rd_outside_window; /* dropped: beyond the advertised window */
  uint64_t rd_stale;          /* dropped: a retired session, or a stray RESET */
  /* RDMAP (MSG, RDM): protocol and protection errors. */
  uint64_t terminates_sent;
  uint64_t terminates_received;
  /* RDM messages sent, per channel (docs/design.md "Connected channels in
   * the RDM endpoint"): eager and rendezvous over reliable datagrams, eager
   * and rendezvous over an on-demand connection. */
  uint64_t rdm_ud_sr_msgs;
  uint64_t rdm_ud_zcopy_msgs;
  uint64_t rdm_rc_sr_msgs;
  uint64_t rdm_rc_rdma_msgs;
  /* RDM on-demand connections (FI_IWARPX_MAX_RC, FI_IWARPX_RC_THRESHOLD_*). */
  uint64_t rc_opened;   /* connects started */
  uint64_t rc_accepted; /* peers' connects accepted */
  uint64_t rc_rejected; /* peers' connects refused: tie-break, cap, bad hello */
  uint64_t rc_failed;   /* connections that never came up or broke */
  /* RDM messages sent by RDMA Write into the peer's RC-FP ring
   * (FI_IWARPX_MAX_FASTPATH). */
  uint64_t rdm_rc_fp_msgs;
};

struct fi_iwarpx_stats_ops {
  size_t size; /* sizeof(struct fi_iwarpx_stats_ops) */
  int (*ep_stats)(struct fid_ep* ep, struct fi_iwarpx_ep_stats* stats, size_t len);
};

#ifdef __cplusplus
}
#endif

#endif /* FI_EXT_IWARPX_H */
