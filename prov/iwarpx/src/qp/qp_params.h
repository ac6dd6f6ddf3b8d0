// QpParams: the negotiated outcome and the (effective) configuration a
// QueuePair runs with, immutable once made, and shared by the QPs that have
// equal ones: every RD QP of an endpoint (rd::RdOutcome() and the channel's
// config), and most TCP QPs of one (the same negotiation). A QueuePair used to
// copy both (88 bytes per QP, one QP per RDM peer; issue 5 item 6).
//
// Contract
// - ShareQpParams returns an immutable copy of (mpa, config); an earlier one
//   made on the same thread is returned again while some QP still holds it
//   and its values are equal (a per-thread cache of the last kQpParamsCache
//   made; no lock, no sharing between threads' caches, safe to use from any
//   thread as the copy is never written).
// - The copy has `mpa.peer_private_data` empty: a QP never reads the peer's
//   private data, and the view would outlive the buffer it points into.
// - Every field of MpaOutcome and QpConfig takes part in the comparison
//   (qp_params.cc fails to compile when either struct changes size, so a new
//   field is not forgotten).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "wire/mpa_negotiate.h"

namespace iwarpx::qp {

// A QueuePair's configuration (qp/queue_pair.h; QueuePair::Create checks it).
struct QpConfig {
  uint32_t sq_size = 64;
  uint32_t rq_size = 64;
  // Largest ULPDU (DDP segment: header + payload) we send in one FPDU, the
  // MULPDU (wire::MaxUlpduLength). At least kMinFpduPayload.
  size_t max_fpdu_payload = 1448;
  wire::MpaRole role = wire::MpaRole::kInitiator;
  // Receive budget of one OnReadable() call (queue_pair.h's file comment); >= 1.
  size_t rx_budget_fpdus = 64;
  size_t rx_budget_bytes = size_t{256} * 1024;
  // Receive staging bytes to start with (a power of two, at most
  // qp::kRxStagingSize): the buffer doubles while RecvV fills it. The default
  // is the full size; a QP of a mostly quiet peer (rd::RdQp) starts small.
  size_t rx_staging_initial = size_t{16} * 1024;
};

struct QpParams {
  wire::MpaOutcome mpa;
  QpConfig config;
};

// At most this many distinct QpParams per thread are found again.
inline constexpr size_t kQpParamsCache = 4;

std::shared_ptr<const QpParams> ShareQpParams(const wire::MpaOutcome& mpa, const QpConfig& config);

}  // namespace iwarpx::qp
