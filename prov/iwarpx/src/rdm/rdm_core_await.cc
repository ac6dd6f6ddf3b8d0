// RdmCore's rendezvous that wait on a peer with nothing in flight on RD, and
// the deferred work's two timers (docs/design.md "RD queue pairs", waiting
// for answers; the contract is in rdm_core.h). Our RTS (or the receiver's
// CTS) is acknowledged by the peer's stream; if the peer then fails our
// session or goes, nothing of ours is unacknowledged, so no retransmission
// would ever notice. The peers such work waits on get their RD QP marked
// (rd::RdQp::SetAwaited): its stream probes, and a RESET or the RD timeout
// fails the session, whose PeerFailed fails the rendezvous.
#include <algorithm>
#include <vector>

#include "rdm/rdm_core.h"

namespace iwarpx::rdm {

namespace {

constexpr uint64_t kMinAwaitCheckNs = 1'000'000;

}  // namespace

std::optional<uint64_t> RdmCore::TimerDeadline() const {
  const std::optional<uint64_t> idle = IdleDeadline();
  if (next_await_check_ns_ == 0) return idle;
  return idle ? std::min(*idle, next_await_check_ns_) : next_await_check_ns_;
}

void RdmCore::OnTimers() {
  const uint64_t now = engine_.clock().NowNs();
  if (const std::optional<uint64_t> idle = IdleDeadline(); idle && *idle <= now) OnIdleTimer();
  if (next_await_check_ns_ != 0 && next_await_check_ns_ <= now) OnAwaitTimer();
}

void RdmCore::ArmAwaitCheck() {
  if (next_await_check_ns_ != 0) return;
  next_await_check_ns_ =
      engine_.clock().NowNs() +
      std::max(config_.channel.qp.stream.send.dead_after_ns / 16, kMinAwaitCheckNs);
  if (deferred_added_) engine_.Update(deferred_);
}

void RdmCore::OnAwaitTimer() {
  next_await_check_ns_ = 0;
  // Work on the connection (or none yet) keeps the check running too: it
  // may move to RD (a fall-back).
  bool open = false;
  std::vector<PeerId> waiting;
  for (const TxOp& op : tx_) {
    if (!op.used || op.kind != Kind::kRts) continue;
    open = true;
    if (op.via == Via::kRd) waiting.push_back(op.peer);
  }
  for (const RndvOp& op : rndv_) {
    if (!op.used) continue;
    open = true;
    if (op.via == Via::kRd) waiting.push_back(op.peer);
  }
  std::sort(waiting.begin(), waiting.end());
  waiting.erase(std::unique(waiting.begin(), waiting.end()), waiting.end());
  auto mark = [&](PeerId id, bool on) {
    const Peer* p = PeerById(id);
    if (rd::RdQp* q = p != nullptr ? channel_->Find({p->addr, kRdmQpn}) : nullptr) {
      q->SetAwaited(on);
    }
  };
  for (const PeerId id : awaited_) {
    if (!std::binary_search(waiting.begin(), waiting.end(), id)) mark(id, false);
  }
  for (const PeerId id : waiting) mark(id, true);
  awaited_ = std::move(waiting);
  if (open) ArmAwaitCheck();
  channel_->AfterPost();  // marked streams have a probe deadline now
}

}  // namespace iwarpx::rdm
