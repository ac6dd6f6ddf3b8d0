#include "qp/qp_params.h"

#include <array>

namespace iwarpx::qp {

namespace {

// Field by field: both structs have padding, so no memcmp. A field added to
// either struct must be compared here; the size checks make that a compile
// error rather than a silently shared copy.
static_assert(sizeof(wire::MpaOutcome) == 40, "MpaOutcome changed: update SameOutcome");
static_assert(sizeof(QpConfig) == 48, "QpConfig changed: update SameConfig");

bool SameOutcome(const wire::MpaOutcome& a, const wire::MpaOutcome& b) {
  return a.role == b.role && a.revision == b.revision && a.enhanced == b.enhanced &&
         a.crc == b.crc && a.markers_tx == b.markers_tx && a.markers_rx == b.markers_rx &&
         a.ird == b.ird && a.ord == b.ord && a.peer_ird == b.peer_ird && a.peer_ord == b.peer_ord &&
         a.p2p == b.p2p && a.rtr == b.rtr && a.send_rtr == b.send_rtr &&
         a.initiator_ulp_sends_first == b.initiator_ulp_sends_first &&
         a.hold_tx_until_first_fpdu == b.hold_tx_until_first_fpdu &&
         a.established_after_rtr == b.established_after_rtr && a.send_imm == b.send_imm &&
         a.sctp_unordered_read_resp == b.sctp_unordered_read_resp;
}

bool SameConfig(const QpConfig& a, const QpConfig& b) {
  return a.sq_size == b.sq_size && a.rq_size == b.rq_size &&
         a.max_fpdu_payload == b.max_fpdu_payload && a.role == b.role &&
         a.rx_budget_fpdus == b.rx_budget_fpdus && a.rx_budget_bytes == b.rx_budget_bytes &&
         a.rx_staging_initial == b.rx_staging_initial;
}

struct Cache {
  std::array<std::weak_ptr<const QpParams>, kQpParamsCache> slot;
  size_t next = 0;  // the slot the next new copy replaces
};

}  // namespace

std::shared_ptr<const QpParams> ShareQpParams(const wire::MpaOutcome& mpa, const QpConfig& config) {
  thread_local Cache cache;
  for (const std::weak_ptr<const QpParams>& w : cache.slot) {
    std::shared_ptr<const QpParams> p = w.lock();
    if (p != nullptr && SameOutcome(p->mpa, mpa) && SameConfig(p->config, config)) return p;
  }
  auto made = std::make_shared<QpParams>();
  made->mpa = mpa;
  made->mpa.peer_private_data = {};
  made->config = config;
  cache.slot[cache.next] = made;
  cache.next = (cache.next + 1) % kQpParamsCache;
  return made;
}

}  // namespace iwarpx::qp
