// QueuePair::NextReadResponse: the QP's side of the in-place receive guess
// (rd::DgramPort, queue_pair.h).
#include "qp/queue_pair.h"

namespace iwarpx::qp {

bool QueuePair::NextReadResponse(ReadResponseGuess* out) const {
  if (state_ != QpState::kRts || framing_ || orq_count_ == 0 || rx_held_ || rx_hdr_done_ ||
      (rxf_ && !rxf_->rx.at_fpdu_boundary()) || rx_stage_head_ != rx_stage_tail_) {
    return false;
  }
  const SqEntry& e = Sq(orq_[orq_head_]);
  if (e.op != SqOp::kRead || e.rx_done >= e.length) return false;
  const uint64_t to = e.local_to + e.rx_done;
  const size_t remaining = e.length - e.rx_done;
  auto where = stags_.Resolve(e.local_stag, to, remaining, mem::kLocalWrite, pd_);
  if (!where.ok()) return false;
  *out = ReadResponseGuess{.stag = e.local_stag,
                           .to = to,
                           .dest = *where,
                           .remaining = remaining,
                           .segment = rx_read_segment_};
  return true;
}

}  // namespace iwarpx::qp
