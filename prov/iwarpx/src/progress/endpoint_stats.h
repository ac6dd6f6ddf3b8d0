// EndpointStats: the counters of one endpoint's channels, summed over its
// socket, its datagram port and every queue pair it has had (peers that
// failed and were destroyed still count). The libfabric layer copies them
// into struct fi_iwarpx_ep_stats (include/rdma/fi_ext_iwarpx.h: the same
// fields in the same order, each documented there) and prints them at close
// with FI_IWARPX_STATS=1.
//
// Contract: plain data; Add and the Add* helpers only add, so a caller sums
// several sources into one value. Every count only grows during an
// endpoint's life.
#pragma once

#include <cstdint>

#include "qp/queue_pair.h"
#include "rd/dgram_port.h"
#include "rd/rd_stream.h"
#include "rd/ud_qp.h"
#include "transport/fault.h"

namespace iwarpx::progress {

// X(name) for every counter, in the order of struct fi_iwarpx_ep_stats.
#define IWARPX_ENDPOINT_STATS(X)                                                  \
  /* Datagram port (FI_EP_DGRAM, FI_EP_RDM): what arrived, why it was dropped. */ \
  X(rx_datagrams)                                                                 \
  X(rx_truncated)                                                                 \
  X(rx_no_crc)                                                                    \
  X(rx_bad_crc)                                                                   \
  X(rx_malformed)                                                                 \
  X(rx_unknown_qpn)                                                               \
  X(tx_errors)                                                                    \
  /* Unreliable datagrams (FI_EP_DGRAM). */                                       \
  X(ud_no_receive)                                                                \
  X(ud_invalid)                                                                   \
  /* Reliable datagrams (FI_EP_RDM). */                                           \
  X(rd_peers)                                                                     \
  X(rd_peers_failed)                                                              \
  X(rd_data_sent)                                                                 \
  X(rd_retransmitted)                                                             \
  X(rd_acks_sent)                                                                 \
  X(rd_probes_sent)                                                               \
  X(rd_resets_sent)                                                               \
  X(rd_data_received)                                                             \
  X(rd_duplicates)                                                                \
  X(rd_outside_window)                                                            \
  X(rd_stale)                                                                     \
  /* RDMAP (FI_EP_MSG, FI_EP_RDM). */                                             \
  X(terminates_sent)                                                              \
  X(terminates_received)                                                          \
  /* RDM channels and on-demand connections (rdm::RdmCore). */                    \
  X(rdm_ud_sr_msgs)                                                               \
  X(rdm_ud_zcopy_msgs)                                                            \
  X(rdm_rc_sr_msgs)                                                               \
  X(rdm_rc_rdma_msgs)                                                             \
  X(rc_opened)                                                                    \
  X(rc_accepted)                                                                  \
  X(rc_rejected)                                                                  \
  X(rc_failed)                                                                    \
  /* Faults injected into sent datagrams (FI_IWARPX_FAULT, transport/fault.h). */ \
  X(fault_dropped)                                                                \
  X(fault_duplicated)                                                             \
  X(fault_reordered)                                                              \
  X(fault_corrupted)                                                              \
  /* MPA connections (FI_EP_MSG; an RDM endpoint's on-demand connections). */     \
  X(mpa_connections)                                                              \
  X(mpa_crc)                                                                      \
  X(mpa_markers)                                                                  \
  X(mpa_fpdus_sent)                                                               \
  X(mpa_bytes_sent)                                                               \
  X(mpa_fpdus_received)                                                           \
  X(mpa_bytes_received)                                                           \
  X(mpa_bad_crc)                                                                  \
  /* RDM messages by RDMA Write into the peer's RC-FP ring. */                    \
  X(rdm_rc_fp_msgs)                                                               \
  /* RDM rendezvous messages sent by the RDMA-write handshake. */                 \
  X(rdm_rndv_write_msgs)                                                          \
  /* RDM RMA/atomic operations per QP kind; connection RMA failed by its end. */  \
  X(rdm_rd_rma_ops)                                                               \
  X(rdm_rc_rma_ops)                                                               \
  X(rdm_rc_rma_failed)                                                            \
  /* RDM messages sent by the copy rendezvous, and fallbacks to it. */            \
  X(rdm_copy_msgs)                                                                \
  X(rdm_copy_fallbacks)                                                           \
  /* RDM connections that broke and fell back to RD losslessly; resent msgs. */   \
  X(rdm_rc_fallbacks)                                                             \
  X(rdm_rc_resent)                                                                \
  /* Read Responses received in place (rd/dgram_port.h). */                       \
  X(rd_placed)                                                                    \
  X(rd_place_misses)                                                              \
  /* Bundles: several segments in one RD data datagram (docs/wire.md 3.6.1). */   \
  X(rd_bundles_sent)                                                              \
  X(rd_bundled_records)                                                           \
  X(rd_bundles_received)                                                          \
  /* RDM eager messages delivered from the datagram, no bounce (rdm_core.h). */   \
  X(rdm_rd_direct)

struct EndpointStats {
#define IWARPX_STAT_FIELD(name) uint64_t name = 0;
  IWARPX_ENDPOINT_STATS(IWARPX_STAT_FIELD)
#undef IWARPX_STAT_FIELD
};

// Adds every field of `from` to `to`.
void Add(const EndpointStats& from, EndpointStats* to);
void AddPort(const rd::PortCounters& c, EndpointStats* s);
void AddUd(const rd::UdCounters& c, EndpointStats* s);
// One RD stream and the QP above it.
void AddRdStream(const rd::RdStream& stream, EndpointStats* s);
void AddQp(const qp::QueuePair& qp, EndpointStats* s);
// What a FaultInjector did to the datagrams it was handed.
void AddFaults(const transport::FaultCounters& c, EndpointStats* s);
// A connected (MPA over TCP) QP: the mpa_* counters, besides AddQp's.
void AddMpaQp(const qp::QueuePair& qp, EndpointStats* s);

}  // namespace iwarpx::progress
