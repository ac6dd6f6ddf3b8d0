// RdmCore's orderly close (docs/design.md "Connected channels in the RDM
// endpoint", "Closing"; the contract is in rdm_core.h, CloseStep). The
// endpoint's fi_close leaves every established connection the way an idle
// one is left: once nothing of ours is pending on it, a SWITCH back on it,
// the peer's SWITCH back in answer, and both ends drop it once both crossed
// and nothing is pending (rdm_core_idle.cc). The survivor then counts a clean close
// (rc_idle_closed, the peer's rc_closed), not a broken connection: no
// fall-back, no BROKEN sent on RD to an endpoint that is going away, so no
// RD session failing at the survivor after the RD timeout either. A peer
// that does not answer within the close's linger (FI_IWARPX_RD_LINGER) sees
// the connection end as before (rc_failed, the fall-back).
#include "rdm/rdm_core.h"

namespace iwarpx::rdm {

bool RdmCore::CloseStep() {
  closing_ = true;
  bool left = true;
  for (auto& [addr, p] : peers_) {
    const RcLink* l = p->link.get();
    if (l == nullptr || l->dead || l->qp == nullptr || l->qp->state() != qp::QpState::kRts) {
      continue;
    }
    if (!l->up) continue;  // a connect still in flight: it ends with the close
    // As the idle close: only once nothing of ours waits on the link (sends
    // waiting for the peer's FIN or CTS, its rendezvous we read): the peer
    // drops the link as soon as both SWITCHes crossed and it is quiet itself.
    // A full send queue: again at the next step.
    if (!l->back_sent && LinkQuiet(*p)) SendBack(*p);
    // Up until both SWITCHes back crossed (MaybeCloseIdle drops it then).
    left = left && p->link == nullptr;
  }
  channel_->AfterPost();
  return left && Settled();
}

}  // namespace iwarpx::rdm
