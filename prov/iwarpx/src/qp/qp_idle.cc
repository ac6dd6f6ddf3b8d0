// QueuePair::ReleaseIdle: an idle QP gives its per-message buffers back
// (queue_pair.h, "Memory"). Each part is released only while it holds
// nothing, and each comes back through the branch that made it first: the
// send ring through GrowSq (kSqInitialSlots), the transmit slot through
// ProcessTx's regrow branch (one slot), the staging through RxRead's grow
// branch (QpConfig::rx_staging_initial), the receive ring in PostRecv, the
// ORQ in PushOrq, the IRQ at the next inbound Read, the FPDU receive state
// at the top of ProcessRx (one pointer test per receive call). None of those branches
// is taken per message on a busy QP, which never gets here.
#include "qp/queue_pair.h"

namespace iwarpx::qp {

namespace {
template <typename V>
size_t Drop(V* v) {
  const size_t bytes = v->capacity() * sizeof(typename V::value_type);
  V().swap(*v);
  return bytes;
}
}  // namespace

size_t QueuePair::ReleaseIdle() {
  if (state_ != QpState::kRts || framing_ || rx_running_) return 0;
  size_t bytes = 0;
  if (sq_head_ == sq_tail_ && !xor_busy_ && !sq_.empty()) {
    bytes += Drop(&sq_);
    sq_head_ = sq_tx_ = sq_tail_;
  }
  if (tx_count_ == 0 && !tx_ring_.empty()) {
    bytes += Drop(&tx_ring_);
    tx_head_ = 0;
    tx_ = nullptr;
    tx_ring_wanted_ = true;  // ProcessTx makes one slot before building
  }
  if (rx_stage_ && rx_stage_head_ == rx_stage_tail_) {
    bytes += rx_stage_size_;
    rx_stage_.reset();
    rx_stage_head_ = rx_stage_tail_ = 0;
    rx_stage_grow_ = true;  // RxRead makes it again, rx_staging_initial bytes
  }
  if (rq_head_ == rq_tail_ && !rq_.empty()) bytes += Drop(&rq_);
  // Between FPDUs nothing of the receive state is needed again: ProcessRx
  // makes a fresh one. With markers the receiver's stream position spans
  // FPDUs, so it stays.
  if (rxf_ && !mpa_.markers_rx && !rx_hdr_done_ && rxf_->rx.at_fpdu_boundary() &&
      rx_stage_head_ == rx_stage_tail_) {
    bytes += sizeof(RxFpdu);
    rxf_.reset();
  }
  if (orq_count_ == 0 && !orq_.empty()) {
    bytes += Drop(&orq_);
    orq_head_ = 0;
  }
  if (irq_count_ == 0 && !irq_.empty()) {
    bytes += Drop(&irq_);
    irq_head_ = 0;
  }
  return bytes;
}

void QueuePair::EnsureStaging() {
  if (rx_stage_) return;
  rx_stage_size_ = config_.rx_staging_initial;
  rx_stage_ = std::make_unique_for_overwrite<uint8_t[]>(rx_stage_size_);
  rx_stage_grow_ = false;
}

}  // namespace iwarpx::qp
