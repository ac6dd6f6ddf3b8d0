/*
 * fi_ext_iwarpx.h - public extension interface of the iwarpx libfabric provider.
 *
 * Applications and the iwarpx Open MPI components include this header to reach
 * provider-specific features through fi_open_ops(): channel statistics and
 * send rules of the RDM endpoint, counters that tests assert on. The version
 * below changes whenever a structure here changes size or meaning.
 *
 * Operations (open them with fi_open_ops on an iwarpx domain):
 *   FI_IWARPX_STATS_OPS  struct fi_iwarpx_stats_ops: an endpoint's counters
 *                        and (v3) its RDM peers' per-channel counters.
 *   FI_IWARPX_SCTP_OPS   struct fi_iwarpx_sctp_ops: the SCTP stream of each
 *                        send on an FI_EP_MSG endpoint over SCTP (0.4).
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
#define FI_IWARPX_EXT_VERSION ((0 << 16) | 11)

/*
 * Provider-specific protocol (fi_ep_attr.protocol, FI_PROV_SPECIFIC range of
 * fabric.h): an FI_EP_MSG endpoint whose connections run iWARP over SCTP
 * (RFC 5043: one DDP segment per SCTP message, session setup with private
 * data and RFC 6581 IRD/ORD instead of MPA). Ask for it in
 * hints->ep_attr->protocol, or make it the default of FI_EP_MSG with
 * FI_IWARPX_LLP=sctp; FI_PROTO_IWARP keeps TCP. Addresses are the same
 * sockaddr_in/sockaddr_in6 as over TCP (the SCTP port is the listener's).
 */
#define FI_PROTO_IWARPX_SCTP (FI_PROV_SPECIFIC | 1U)

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
#define FI_IWARPX_STATS_OPS "iwarpx_stats_v3"
/* Older names still open the same table: a v1/v2 caller reads only the
 * members its structure has (size, ep_stats), and its len stops each copy at
 * the end of its shorter structure (v1's ended at terminates_received, v2's
 * at rc_failed; v3 appended the mpa_* counters). */
#define FI_IWARPX_STATS_OPS_V2 "iwarpx_stats_v2"
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
  uint64_t rd_peers_failed;   /* of those, failed: timeout, RESET, Terminate (a peer's
                                 orderly fi_close is not a failure, 0.8) */
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
  uint64_t rc_failed;   /* connections that never came up or broke; one left
                           cleanly (FI_IWARPX_RC_IDLE_MS, or the peer's fi_close
                           since 0.8) is not counted here */
  /* Faults injected on purpose into the datagrams this endpoint sent
   * (FI_IWARPX_FAULT; all 0 without it), so a test can tell the drops and
   * retransmissions it caused from real ones. Added in version 0.3, after
   * the fields above: a shorter len still gets the prefix. */
  uint64_t fault_dropped;
  uint64_t fault_duplicated; /* extra copies sent */
  uint64_t fault_reordered;  /* held back and sent late */
  uint64_t fault_corrupted;  /* one byte damaged (the receiver's CRC drops it) */
  /* v3: MPA connections (FI_EP_MSG: its one connection; FI_EP_RDM: every
   * on-demand connection it has had). Payload bytes are the data after the
   * DDP/RDMAP headers (sends, writes, read responses). */
  uint64_t mpa_connections;    /* connections counted below */
  uint64_t mpa_crc;            /* of those, with MPA CRC32c (FI_IWARPX_MPA_CRC) */
  uint64_t mpa_markers;        /* of those, with markers either way (FI_IWARPX_MPA_MARKERS) */
  uint64_t mpa_fpdus_sent;     /* FPDUs framed */
  uint64_t mpa_bytes_sent;     /* payload bytes in them */
  uint64_t mpa_fpdus_received; /* FPDUs received whole (CRC verified when on) */
  uint64_t mpa_bytes_received; /* payload bytes placed */
  uint64_t mpa_bad_crc;        /* FPDUs with a bad CRC: each ends its connection
                                  with a Terminate (terminates_sent) */
  /* RDM messages sent by RDMA Write into the peer's RC-FP ring
   * (FI_IWARPX_MAX_FASTPATH). */
  uint64_t rdm_rc_fp_msgs;
  /* RDM rendezvous messages sent by the RDMA-write handshake
   * (FI_IWARPX_RNDV=write: RTS, the receiver's CTS, Writes, FIN). Added in
   * version 0.5, after the fields above: a shorter len still gets the prefix. */
  uint64_t rdm_rndv_write_msgs;
  /* RDM RMA and atomic operations (fi_write/fi_read/fi_atomic and their
   * variants) posted on the peers' reliable-datagram QPs, and on their
   * on-demand connections (once the peer's messages moved there, so RMA and
   * messages stay in one order); of the latter, those that completed with an
   * error because their connection ended. Added in version 0.6, after the
   * fields above: a shorter len still gets the prefix. */
  uint64_t rdm_rd_rma_ops;
  uint64_t rdm_rc_rma_ops;
  uint64_t rdm_rc_rma_failed;
  /* RDM messages whose data went by the copy-based rendezvous (RTS, the
   * receiver's CTS, eager-sized DATA Sends copied into its buffer): chosen by
   * a "copy" send rule or fallen back to (next counter). Added in version
   * 0.7, after the fields above: a shorter len still gets the prefix. */
  uint64_t rdm_copy_msgs;
  /* Zero-copy rendezvous that fell back to copying because a buffer could
   * not be registered: the sender's for the receiver's Reads, or the
   * receiver's for Reads or the sender's Writes (counted on the side that
   * could not register). */
  uint64_t rdm_copy_fallbacks;
  /* RDM on-demand connections that broke while the reliable-datagram
   * session lived and were recovered without loss (docs/design.md
   * "Connected channels in the RDM endpoint", Failure: both sides said on
   * RD how many messages they took, BROKEN), and the numbered messages this
   * endpoint sent again on RD because the peer had not taken them. A broken
   * connection counts in rc_failed too. Added in version 0.8, after the
   * fields above: a shorter len still gets the prefix. */
  uint64_t rdm_rc_fallbacks;
  uint64_t rdm_rc_resent;
  /* RDMA Read Response datagrams received in place, straight into the
   * Read's buffer (FI_IWARPX_RD_PLACE), and datagrams received into a
   * guessed place that turned out to be other ones and were copied out
   * (docs/design.md "RD queue pairs"). Added in version 0.9, after the fields
   * above: a shorter len still gets the prefix. */
  uint64_t rd_placed;
  uint64_t rd_place_misses;
  /* RD data datagrams that carried several segments (a bundle, docs/wire.md
   * §3.6.1: FI_MORE RMA, or several segments ready at once), the segments
   * that left in them (rd_data_sent counts each segment), and bundles
   * received. Added in version 0.10, after the fields above: a shorter len
   * still gets the prefix. */
  uint64_t rd_bundles_sent;
  uint64_t rd_bundled_records;
  uint64_t rd_bundles_received;
  /* RDM eager messages received over the reliable datagrams and delivered
   * straight from the datagram into a posted receive, without a bounce
   * buffer (docs/design.md, "RD queue pairs"). Added in version 0.11, after
   * the fields above: a shorter len still gets the prefix. */
  uint64_t rdm_rd_direct;
};

/*
 * Per-peer, per-channel statistics of an RDM endpoint (v3).
 *
 *   size_t n;
 *   ops->peer_count(ep, &n);
 *   for (size_t i = 0; i < n; i++) {
 *     struct fi_iwarpx_peer_stats ps;
 *     ops->peer_stats(ep, i, &ps, sizeof(ps));
 *     ... ps.channel[FI_IWARPX_CH_RC_SR].msgs_sent ...
 *   }
 *
 * Check ops->size >= offsetof(struct fi_iwarpx_stats_ops, peer_stats) +
 * sizeof(ops->peer_stats) before calling them (a v2 provider lacks them).
 *
 * peer_count sets *count to the number of peers the endpoint has known: every
 * address it sent to or heard from, in the order it first did, including
 * peers whose session failed (they stay listed while the endpoint is open, so
 * an index keeps naming the same peer). Endpoints other than FI_EP_RDM have
 * no peers here: 0. peer_stats fills at most `len` bytes of *stats for peer
 * `index` (0..count-1): -FI_ENOENT when there is no such peer, -FI_EINVAL
 * (logged) for a NULL argument or an endpoint that is not iwarpx's. Like
 * ep_stats, a caller built against a shorter structure gets its prefix, and
 * fields are only appended. Both take the endpoint's lock; safe from any
 * thread.
 *
 * Channels are counted in channel[] at these indices (entries past the last
 * channel stay 0). A message counts once, on the channel that carried it; the
 * sender counts it when posted, the receiver when it arrives in order (an
 * eager message as the eager channel, a rendezvous as the rendezvous one of
 * the datagram stream or connection it came on). Bytes are message sizes.
 */
enum fi_iwarpx_channel {
  FI_IWARPX_CH_UD_SR = 0,    /* eager over reliable datagrams */
  FI_IWARPX_CH_UD_ZCOPY = 1, /* rendezvous (RDMA Read) over reliable datagrams */
  FI_IWARPX_CH_RC_SR = 2,    /* eager over an on-demand connection */
  FI_IWARPX_CH_RC_FP = 3,    /* RDMA-write fast path over a connection */
  FI_IWARPX_CH_RC_RDMA = 4,  /* rendezvous over a connection */
  FI_IWARPX_CH_COPY = 5,     /* copy-based rendezvous (eager-sized fragments), 0.7 */
};
#define FI_IWARPX_MAX_CHANNELS 8

struct fi_iwarpx_channel_stats {
  uint64_t msgs_sent;
  uint64_t bytes_sent;
  uint64_t msgs_received;
  uint64_t bytes_received;
};

enum fi_iwarpx_peer_state {
  FI_IWARPX_PEER_DATAGRAM = 0,   /* no connection: datagram channels only */
  FI_IWARPX_PEER_CONNECTING = 1, /* a connection is being set up */
  FI_IWARPX_PEER_CONNECTED = 2,  /* the connection is established */
};

struct fi_iwarpx_peer_stats {
  fi_addr_t fi_addr; /* the peer in the endpoint's AV, or FI_ADDR_NOTAVAIL */
  uint8_t addr[32];  /* its address: a struct sockaddr_in or sockaddr_in6 */
  uint32_t addrlen;  /* bytes of addr used */
  uint32_t state;    /* enum fi_iwarpx_peer_state */
  /* On-demand connections (FI_IWARPX_MAX_RC, FI_IWARPX_RC_THRESHOLD_*). */
  uint64_t rc_opened;   /* connects this endpoint started to the peer */
  uint64_t rc_accepted; /* the peer's connects accepted */
  uint64_t rc_closed;   /* connections that ended, failed or lost a tie-break */
  /* Reliable-datagram sessions with the peer (FI_IWARPX_RD_TIMEOUT). */
  uint64_t rd_sessions;      /* sessions (RD queue pairs) made */
  uint64_t rd_failed;        /* of those, failed: timeout, RESET, protocol error */
  uint64_t rd_retransmitted; /* data datagrams sent again, every session */
  uint64_t rd_probes_sent;   /* zero-window and liveness probes (window stalls) */
  struct fi_iwarpx_channel_stats channel[FI_IWARPX_MAX_CHANNELS];
};

struct fi_iwarpx_stats_ops {
  size_t size; /* sizeof(struct fi_iwarpx_stats_ops) of the provider */
  int (*ep_stats)(struct fid_ep* ep, struct fi_iwarpx_ep_stats* stats, size_t len);
  /* v3 */
  int (*peer_count)(struct fid_ep* ep, size_t* count);
  int (*peer_stats)(struct fid_ep* ep, size_t index, struct fi_iwarpx_peer_stats* stats,
                    size_t len);
};

/*
 * SCTP streams of an FI_EP_MSG endpoint over SCTP (FI_PROTO_IWARPX_SCTP),
 * extension version 0.4.
 *
 *   struct fi_iwarpx_sctp_ops *ops;
 *   fi_open_ops(&domain->fid, FI_IWARPX_SCTP_OPS, 0, (void **)&ops, NULL);
 *   uint16_t n;
 *   ops->tx_streams(ep, &n);                 once connected: n >= 1
 *   ops->sendmsg(ep, &msg, flags, stream);   stream < n
 *
 * An association has several SCTP streams, each ordered on its own. Every
 * iwarpx message normally travels on stream 0 and keeps the full RDMAP
 * ordering. sendmsg is fi_sendmsg (same msg, flags and completions; no
 * FI_REMOTE_CQ_DATA, which SCTP endpoints do not have) with the segments of
 * this one send on `stream`. A send on stream k != 0 is ordered only with the
 * other sends on stream k: the peer may place and complete it before or after
 * any message on another stream (no FI_ORDER_SAS, RAW, WAW, ... across
 * streams), so a message on one stream is never held up by a large or
 * delayed message on another. The peer consumes its posted receives in the
 * order messages *begin* to arrive, and completes each when it is whole:
 * receive completions can come in another order than the receives were
 * posted. Streams are only for sends: writes, read requests, atomics and
 * everything else stay on stream 0, so a send that must follow a write is
 * sent on stream 0. (The provider itself sends RMA read responses on the
 * stream of their sink buffer's key; fi_read completions still come in the
 * order the reads were posted. Not selectable: docs/wire.md §2.2.)
 *
 * tx_streams sets *count to the streams sendmsg may use on `ep`: 1..16
 * (min(the association's outbound streams, 16)) once connected, 1 on an
 * endpoint over TCP, and returns 0; -FI_EOPBADSTATE before the endpoint is
 * connected; -FI_EINVAL (logged) for a NULL argument or an endpoint that is
 * not an iwarpx FI_EP_MSG endpoint. sendmsg returns what fi_sendmsg returns,
 * and -FI_EINVAL (logged) for a stream >= tx_streams or a non-zero stream on
 * a TCP endpoint. Both take the endpoint's lock; safe from any thread.
 */
#define FI_IWARPX_SCTP_OPS "iwarpx_sctp_v1"

struct fi_iwarpx_sctp_ops {
  size_t size; /* sizeof(struct fi_iwarpx_sctp_ops) of the provider */
  int (*tx_streams)(struct fid_ep* ep, uint16_t* count);
  ssize_t (*sendmsg)(struct fid_ep* ep, const struct fi_msg* msg, uint64_t flags, uint16_t stream);
};

#ifdef __cplusplus
}
#endif

#endif /* FI_EXT_IWARPX_H */
