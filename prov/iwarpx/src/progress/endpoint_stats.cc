#include "progress/endpoint_stats.h"

namespace iwarpx::progress {

void Add(const EndpointStats& from, EndpointStats* to) {
#define IWARPX_STAT_ADD(name) to->name += from.name;
  IWARPX_ENDPOINT_STATS(IWARPX_STAT_ADD)
#undef IWARPX_STAT_ADD
}

void AddPort(const rd::PortCounters& c, EndpointStats* s) {
  s->rx_datagrams += c.delivered;
  s->rx_truncated += c.truncated;
  s->rx_no_crc += c.no_crc;
  s->rx_bad_crc += c.bad_crc;
  s->rx_malformed += c.malformed;
  s->rx_unknown_qpn += c.unknown_qpn;
  s->tx_errors += c.send_errors;
  s->rd_placed += c.placed;
  s->rd_place_misses += c.place_misses;
  s->rd_bundles_received += c.bundles;
}

void AddUd(const rd::UdCounters& c, EndpointStats* s) {
  s->ud_no_receive += c.no_receive;
  s->ud_invalid += c.not_ud + c.malformed + c.not_send;
}

void AddRdStream(const rd::RdStream& stream, EndpointStats* s) {
  const rd::RdStreamStats& c = stream.stats();
  s->rd_data_sent += c.data_sent;
  s->rd_retransmitted += c.retransmitted;
  s->rd_acks_sent += c.acks_sent;
  s->rd_probes_sent += c.probes_sent;
  s->rd_resets_sent += c.resets_sent;
  s->rd_data_received += c.data_received;
  s->rd_duplicates += c.duplicates;
  s->rd_stale += c.stale;
  s->rd_bundles_sent += c.bundles_sent;
  s->rd_bundled_records += c.bundled_records;
  s->rd_outside_window += stream.recv_window().outside_window();
}

void AddQp(const qp::QueuePair& qp, EndpointStats* s) {
  s->terminates_sent += qp.term_stats().sent;
  s->terminates_received += qp.term_stats().received;
}

void AddFaults(const transport::FaultCounters& c, EndpointStats* s) {
  s->fault_dropped += c.dropped;
  s->fault_duplicated += c.duplicated;
  s->fault_reordered += c.reordered;
  s->fault_corrupted += c.corrupted;
}

void AddMpaQp(const qp::QueuePair& qp, EndpointStats* s) {
  AddQp(qp, s);
  ++s->mpa_connections;
  s->mpa_crc += qp.mpa().crc ? uint64_t{1} : uint64_t{0};
  s->mpa_markers += qp.mpa().markers_tx || qp.mpa().markers_rx ? uint64_t{1} : uint64_t{0};
  s->mpa_fpdus_sent += qp.tx_stats().fpdus;
  s->mpa_bytes_sent += qp.tx_stats().payload_bytes;
  s->mpa_fpdus_received += qp.rx_stats().fpdus;
  s->mpa_bytes_received += qp.rx_stats().direct_bytes + qp.rx_stats().staged_copies;
  s->mpa_bad_crc += qp.rx_stats().bad_crc;
}

}  // namespace iwarpx::progress
