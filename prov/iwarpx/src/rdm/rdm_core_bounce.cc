// Bounces on demand for RD QPs (rdm_core.h, "Receives"): an RD QP keeps no
// bounce posted; when a message arrives and it has none, the QP asks its
// peer (qp::RecvSource) and gets the most recently freed bounce of the pool.
// A matched message frees its bounce at once (Repost with BounceTarget 0),
// so one peer after another reuses the same few resident buffers instead of
// each keeping its own pages.
//
// Backpressure stays bounded per peer: a bounce is refused while unexpected
// messages hold more than unexpected_limit, unless the peer itself holds
// fewer than bounces_per_peer of them (as when every peer kept that many
// posted: a message that would match a posted receive is not blocked by
// other peers' pile). A refused peer waits in starved_; FeedStarved, after an
// unexpected message is taken, posts one bounce to every starved peer that
// may have one again, which resumes its QP (QueuePair::PostRecv).
#include <utility>
#include <vector>

#include "rdm/rdm_core.h"

namespace iwarpx::rdm {

bool RdmCore::MayTakeBounce(const Peer& p) const {
  return unexpected_bytes_ <= config_.unexpected_limit ||
         p.rd_unexpected < config_.bounces_per_peer;
}

bool RdmCore::SupplyBounce(Peer& p, qp::QueuePair& q) {
  if (!MayTakeBounce(p)) {
    if (!p.starved) {
      p.starved = true;
      starved_.push_back(p.id);
    }
    return false;
  }
  const uint32_t b = AllocBounce();
  qp::RecvWr r;
  r.context = Ctx(Kind::kBounce, b);
  r.sgl.Add(bounces_.Buf(b), config_.bounce_size);
  ++p.bounces_posted;
  if (q.PostRecv(r) != qp::QpStatus::kOk) {
    --p.bounces_posted;
    FreeBounce(b);
    return false;
  }
  return true;
}

void RdmCore::FeedStarved() {
  std::vector<PeerId> waiting;
  waiting.swap(starved_);
  for (size_t i = 0; i < waiting.size(); ++i) {
    Peer* p = PeerById(waiting[i]);
    if (p == nullptr || !p->starved) continue;
    if (!MayTakeBounce(*p)) {
      starved_.push_back(waiting[i]);  // still over; keeps its place
      continue;
    }
    p->starved = false;
    // The post resumes the QP at once (it may take more bounces, or be
    // refused again and rejoin starved_).
    (void)PostBounce(*p, Via::kRd, AllocBounce());
  }
}

}  // namespace iwarpx::rdm
