// RdmCore's RMA and atomics over a peer's connection, and the rule that
// keeps every order across a change of QP: our SWITCH on RD before our first
// FPDU of any kind on a connection, and the receiver holding the peer's
// requests on the connection until that SWITCH arrived (docs/design.md
// "Connected channels in the RDM endpoint", "RMA and atomics follow the
// messages"; the contract is in rdm_core.h).
#include <algorithm>
#include <cerrno>

#include "rdm/rdm_core.h"
#include "wire/error.h"

namespace iwarpx::rdm {

RdmStatus RdmCore::RouteRma(const transport::SockAddr& to, RmaRoute* out) {
  ReapLinks();
  Peer& p = PeerFor(to);
  rd::RdQp* q = channel_->Peer({p.addr, kRdmQpn});
  if (q == nullptr) return RdmStatus::kNoPeer;
  *out = RmaRoute{};
  out->peer = p.id;
  out->ctx_bits = Ctx(Kind::kUser, 0);
  const RcLink* l = p.link != nullptr && !p.link->dead ? p.link.get() : nullptr;
  // Being left: our messages already go on RD (or will once our SWITCH back
  // is out) while the peer may still be processing the connection. An RMA on
  // either QP could pass a message it must follow; it waits until both
  // SWITCHes crossed and the connection is gone.
  if (l != nullptr && (l->back_sent || l->back_got)) return RdmStatus::kAgain;
  if (p.tx_on_rc && l != nullptr && l->qp != nullptr) {
    // Ending (Terminate, lost): RcDown moves the peer back to RD shortly.
    if (l->qp->state() != qp::QpState::kRts) return RdmStatus::kAgain;
    out->qp = l->qp;
    out->on_rc = true;
    return RdmStatus::kOk;
  }
  out->qp = &q->qp();
  out->rd = q;
  return RdmStatus::kOk;
}

void RdmCore::CorkRma(const RmaRoute& route) {
  if (route.on_rc || route.rd == nullptr) return;
  route.rd->stream().Cork();
  if (std::find(corked_.begin(), corked_.end(), route.peer) == corked_.end()) {
    corked_.push_back(route.peer);
  }
}

void RdmCore::UncorkAll() {
  // A peer's QP may have been replaced since (a new session): its new
  // stream was never corked, and Uncork() of it does nothing.
  for (const PeerId id : corked_) {
    const Peer* p = PeerById(id);
    if (p == nullptr) continue;
    if (rd::RdQp* q = channel_->Find({p->addr, kRdmQpn}); q != nullptr) q->stream().Uncork();
  }
  corked_.clear();
}

void RdmCore::RmaPosting(const RmaRoute& route, uint64_t context) {
  if (!route.on_rc) return;  // RD: its QP's failure reports them (PeerFailed)
  Peer* p = PeerById(route.peer);
  if (p == nullptr || p->link == nullptr || p->link->dead) return;
  p->link->rma.push_back(context);
}

void RdmCore::RmaRefused(const RmaRoute& route, uint64_t context) {
  if (Peer* p = PeerById(route.peer); p != nullptr) {
    RmaFinished(*p, route.on_rc ? Via::kRc : Via::kRd, context);
  }
}

void RdmCore::RmaPosted(const RmaRoute& route) {
  ++(route.on_rc ? counters_.rc_rma_ops : counters_.rd_rma_ops);
  Peer* p = PeerById(route.peer);
  if (!route.on_rc || p == nullptr || p->link == nullptr || p->link->dead) return;
  if (p->link->ch != nullptr) p->link->ch->AfterPost();
  MarkActive(*p);
}

void RdmCore::RmaFinished(Peer& p, Via via, uint64_t ctx) {
  if (via != Via::kRc || p.link == nullptr) return;
  std::deque<uint64_t>& rma = p.link->rma;
  // Completions come in post order, so this is nearly always the front.
  const auto it = std::find(rma.begin(), rma.end(), ctx);
  if (it != rma.end()) rma.erase(it);
  // The last one may be what an idle close waits for.
  if (rma.empty() && (p.link->back_sent || p.link->back_got)) ScheduleFlush(p, Via::kRc);
}

void RdmCore::FailLinkRma(RcLink& link, int err) {
  std::deque<uint64_t> rma;
  rma.swap(link.rma);
  qp::WcError e;
  e.origin = err == ECANCELED ? qp::TermOrigin::kLocalClose : qp::TermOrigin::kConnectionLost;
  e.cause = wire::term::kLlpStreamLost;
  for (const uint64_t ctx : rma) {
    ++counters_.rc_rma_failed;
    sink_.RmaFailed(IndexOf(ctx), e);
  }
}

qp::QpStatus RdmCore::SwitchFirst(Peer& p, Via via) {
  if (via != Via::kRc || p.link == nullptr || p.link->dead) return qp::QpStatus::kOk;
  // Sent already: our messages moved (tx_on_rc) or are moving back.
  if (p.tx_on_rc || p.link->back_sent) return qp::QpStatus::kOk;
  switch (SendSwitch(p)) {
    case RdmStatus::kOk: return qp::QpStatus::kOk;
    case RdmStatus::kAgain: return qp::QpStatus::kQueueFull;
    default: return qp::QpStatus::kBadState;
  }
}

void RdmCore::ReleaseLinkHold(Peer& p) {
  RcLink* l = p.link.get();
  if (l == nullptr || l->dead || l->qp == nullptr || !l->qp->requests_held()) return;
  // Processes what waited, from here (as a PostRecv on a blocked QP does);
  // it may end the link, which then waits in the graveyard.
  l->qp->HoldRequests(false);
  if (!l->dead && l->ch != nullptr) l->ch->AfterPost();
}

}  // namespace iwarpx::rdm
