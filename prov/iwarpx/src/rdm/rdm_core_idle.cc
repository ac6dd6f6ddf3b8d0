// RdmCore's idle connections (FI_IWARPX_RC_IDLE_MS): a connection that
// carried nothing for idle_ms is left with a SWITCH back on it, both ways,
// and dropped without failing the RD session (docs/design.md "Connected
// channels in the RDM endpoint", "Idle connections"; the contract is in
// rdm_core.h).
#include <algorithm>
#include <cerrno>

#include "rdm/rdm_core.h"

namespace iwarpx::rdm {

namespace {

constexpr uint64_t kNsPerMs = 1'000'000;

}  // namespace

std::optional<uint64_t> RdmCore::IdleDeadline() const {
  if (config_.rc.idle_ms == 0 || next_idle_check_ns_ == 0) return std::nullopt;
  return next_idle_check_ns_;
}

void RdmCore::MarkActive(Peer& p) {
  if (config_.rc.idle_ms == 0 || p.link == nullptr) return;
  p.link->last_active_ns = engine_.clock().NowNs();
  if (next_idle_check_ns_ == 0) {
    next_idle_check_ns_ = p.link->last_active_ns + uint64_t{config_.rc.idle_ms} * kNsPerMs;
    if (deferred_added_) engine_.Update(deferred_);
  }
}

bool RdmCore::LinkQuiet(const Peer& p) const {
  const auto rc = static_cast<size_t>(Via::kRc);
  if (!p.held.empty() || !p.fin_wait[rc].empty() || !p.read_wait[rc].empty()) return false;
  if (p.link != nullptr && !p.link->rma.empty()) return false;  // RMA in flight on it
  for (const TxOp& op : tx_) {
    if (op.used && op.peer == p.id && op.via == Via::kRc) return false;
  }
  for (const RndvOp& op : rndv_) {
    if (op.used && op.peer == p.id && op.via == Via::kRc) return false;
  }
  return true;
}

void RdmCore::OnIdleTimer() {
  const uint64_t now = engine_.clock().NowNs();
  const uint64_t idle = uint64_t{config_.rc.idle_ms} * kNsPerMs;
  bool any = false;
  for (auto& [addr, p] : peers_) {
    RcLink* l = p->link.get();
    if (l == nullptr || l->dead) continue;
    any = true;
    if (l->back_sent || l->back_got) {
      MaybeCloseIdle(*p);  // a close that waited for its work to finish
      continue;
    }
    if (!l->up || now - l->last_active_ns < idle || !LinkQuiet(*p)) continue;
    SendBack(*p);
  }
  // Checked at half the idle time: a link is left between idle_ms and 1.5x.
  next_idle_check_ns_ = any ? now + std::max<uint64_t>(idle / 2, 1) : 0;
}

void RdmCore::SendBack(Peer& p) {
  RcLink* l = p.link.get();
  if (l == nullptr || l->dead || l->back_sent || l->qp == nullptr) return;
  // A side that never used the link says SWITCH on RD first: the peer holds
  // the link until then (rdm_core_rma.cc). Full: the next timer tries again.
  // A post can fail the connection inside the call (rdm_core_fp.cc
  // FlushFpCredit): the link is then dead and stays readable, nothing more.
  if (SwitchFirst(p, Via::kRc) != qp::QpStatus::kOk || l->dead) return;
  wire::RdmHeader h;
  h.op = wire::RdmOp::kSwitch;
  if (!wire::EncodeRdmHeader(h, l->back_header).ok()) return;
  qp::SendWr wr;
  wr.sgl.Add(l->back_header.data(), wire::kRdmHeaderSize);
  wr.context = Ctx(Kind::kSwitch, p.id);
  if (l->qp->PostSend(wr) != qp::QpStatus::kOk) return;  // full: the next timer tries again
  if (l->dead) return;
  l->back_sent = true;
  p.tx_on_rc = false;  // later sends take RD
  Kick(p, Via::kRc);
  MaybeCloseIdle(p);
}

void RdmCore::OnSwitchBack(Peer& p) {
  RcLink* l = p.link.get();
  if (l == nullptr || l->back_got) {
    ProtocolError(p, "second SWITCH back on the connection");
    return;
  }
  l->back_got = true;
  // The peer's later messages come on RD; those that overtook this SWITCH
  // were held and are matched now, in their order.
  p.rx_switched = false;
  ReplayRdHeld(p);
  // Our answer (and the close) from the pending pass, outside this QP's
  // receive path.
  if (deferred_added_) {
    flush_.emplace_back(p.id, Via::kRc);
    engine_.Update(deferred_);
  }
}

void RdmCore::ReplayRdHeld(Peer& p) {
  p.rd_replaying = true;
  while (p.rd_replaying && !p.rd_held.empty()) {
    const auto [bounce, bytes] = p.rd_held.front();
    p.rd_held.pop_front();
    auto m = wire::DecodeRdmMessage(ByteSpan(bounces_.Buf(bounce), bytes));
    if (!m.ok()) {  // decoded once already
      FreeBounce(bounce);
      continue;
    }
    Arrived(p, Via::kRd, bounce, *m);
  }
  p.rd_replaying = false;
}

void RdmCore::MaybeCloseIdle(Peer& p) {
  RcLink* l = p.link.get();
  if (l == nullptr || l->dead || !l->back_got) return;
  if (!l->back_sent) {
    SendBack(p);  // calls back here once sent
    return;
  }
  // Again after the link's next completion: our work on it is done and our
  // SWITCH back has left (a close must not cut it off).
  if (!LinkQuiet(p) || l->qp == nullptr || l->qp->wants_write()) return;
  ++counters_.rc_idle_closed;
  DropLink(p, ECONNRESET);  // nothing is pending: nothing fails
}

}  // namespace iwarpx::rdm
