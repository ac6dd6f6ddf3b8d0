// RdmCore's lossless fall-back of a broken connection: numbered messages
// kept until reported taken, the BROKEN exchange on RD, the resends and the
// hold of the peer's later RD messages until its RESENT (docs/design.md
// "Connected channels in the RDM endpoint", Failure; TAKEN in docs/wire.md
// §3.10; the state is rc_fallback.h, the contract rdm_core.h).
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "rdm/rdm_core.h"

namespace iwarpx::rdm {

namespace {

// The messages both ends number: EAGER, and RTS/FIN of the read protocol
// (not the write handshake's or the copy rendezvous' RTS: those transfers
// stay on the connection and fail with it on both sides).
bool Numbered(const wire::RdmHeader& h) {
  return h.op == wire::RdmOp::kEager ||
         ((h.op == wire::RdmOp::kRts || h.op == wire::RdmOp::kFin) && !h.write && !h.copy);
}

}  // namespace

bool RdmCore::BreakRcSocketForTest(const transport::SockAddr& to) {
  const auto it = peers_.find(to.HostLocal());
  if (it == peers_.end()) return false;
  const RcLink* l = it->second->link.get();
  if (l == nullptr || l->dead || !l->up || l->ch == nullptr || l->ch->fd() < 0) return false;
  return ::shutdown(l->ch->fd(), SHUT_RDWR) == 0;
}

void RdmCore::FbNewLink(Peer& p) {
  FbState& fb = Fb(p);
  fb.tx_seq = 0;
  fb.rx_taken = 0;
  fb.rx_reported = 0;
  fb.rx_unreported_bytes = 0;
  fb.report_wanted = false;
  fb.report_in_flight = false;
  fb.kept.clear();  // a previous connection closed cleanly: the peer took them
  fb.kept_bytes = 0;
}

FbState& RdmCore::Fb(Peer& p) {
  if (p.fb == nullptr) p.fb = std::make_unique<FbState>();
  return *p.fb;
}

bool RdmCore::FbBlocksSends(const Peer& p) {
  return p.fb != nullptr && p.fb->broken;
}

bool RdmCore::FbBusy(const Peer& p) {
  return p.fb != nullptr && (p.fb->broken || p.fb->rx_wait);
}

bool RdmCore::FbFull(const Peer& p) {
  return p.fb != nullptr && (p.fb->kept_bytes >= kFbKeepBytes || p.fb->kept.size() >= kFbKeepMsgs);
}

bool RdmCore::FbHolds(const Peer& p) {
  return p.fb != nullptr && p.fb->rx_wait && p.fb->rx_hold;
}

void RdmCore::FbKeep(Peer& p, ByteSpan header, const iovec* iov, size_t count) {
  FbKept k;
  FbState& fb = Fb(p);
  k.seq = ++fb.tx_seq;
  size_t n = header.size();
  for (size_t i = 0; i < count; ++i) n += iov[i].iov_len;
  k.bytes.resize(n);
  std::memcpy(k.bytes.data(), header.data(), header.size());
  size_t at = header.size();
  for (size_t i = 0; i < count; ++i) {
    if (iov[i].iov_len > 0) std::memcpy(k.bytes.data() + at, iov[i].iov_base, iov[i].iov_len);
    at += iov[i].iov_len;
  }
  fb.kept_bytes += n;
  fb.kept.push_back(std::move(k));
}

void RdmCore::FbTook(Peer& p, const wire::RdmHeader& h) {
  if (!Numbered(h)) return;
  FbState& fb = Fb(p);
  ++fb.rx_taken;
  fb.rx_unreported_bytes +=
      wire::kRdmHeaderSize + (h.op == wire::RdmOp::kEager ? h.size : uint64_t{0});
  if (fb.report_wanted ||
      (fb.rx_taken - fb.rx_reported < kFbReportMsgs && fb.rx_unreported_bytes < kFbReportBytes)) {
    return;
  }
  fb.report_wanted = true;
  if (!deferred_added_) return;
  flush_.emplace_back(p.id, Via::kRc);
  engine_.Update(deferred_);
}

bool RdmCore::FallBack(Peer& p) {
  rd::RdQp* rdq = channel_->Find({p.addr, kRdmQpn});
  if (rdq == nullptr || rdq->qp().state() != qp::QpState::kRts) return false;
  FbState& fb = Fb(p);
  ++counters_.rc_failed;
  if (p.link != nullptr) {
    const bool was_switched = p.rx_switched;
    const auto rc = static_cast<size_t>(Via::kRc);
    // Our sends on the connection: an EAGER is carried by its kept copy, an
    // RTS waits for its FIN on RD (resent if the peer did not take it). The
    // write handshake and the copy rendezvous stay on the connection and fail
    // with it (DropLink): their DATA/Writes in flight are not kept.
    for (uint32_t i = 0; i < tx_.size(); ++i) {
      TxOp& op = tx_[i];
      if (!op.used || op.peer != p.id || op.via != Via::kRc) continue;
      if (i == posting_tx_) {  // Send finishes it when its post returns
        op.via = Via::kRd;
        continue;
      }
      if (op.write || op.copy) continue;  // fails with the link (DropLink), both sides
      if (op.kind == Kind::kRts) {
        op.via = Via::kRd;
        op.sent = true;
        if (!op.fin_seen) continue;
      }
      const uint64_t context = op.context;
      op.used = false;
      tx_free_.push_back(i);
      sink_.SendDone(context);
    }
    // Our rendezvous receives: Reads start again on RD; a FIN waiting for
    // room goes on RD; a FIN already posted is kept (resent if not taken),
    // so its op is done (its completion will not come from the dead link).
    std::deque<uint32_t> fins;
    for (const uint32_t i : p.fin_wait[rc]) {
      // (A copy CTS is not moved: its sender's copy fails with the link.)
      if (rndv_[i].used && !rndv_[i].write_waiting && !rndv_[i].copy) fins.push_back(i);
    }
    for (const uint32_t i : fins) p.fin_wait[rc].remove(i);
    p.read_wait[rc].clear();
    std::vector<uint32_t> restart;
    for (uint32_t i = 0; i < rndv_.size(); ++i) {
      RndvOp& op = rndv_[i];
      if (!op.used || op.peer != p.id || op.via != Via::kRc || op.write_waiting) continue;
      op.via = Via::kRd;
      if (op.reads_left > 0 || op.todo > 0) {
        op.reads_left = 0;
        op.si = op.di = 0;
        op.s_off = op.d_off = 0;
        op.todo = op.failed ? 0 : op.result.len;
        restart.push_back(i);
      } else if (std::find(fins.begin(), fins.end(), i) == fins.end()) {
        FreeRndv(i);
      }
    }
    for (Unexp& u : unexp_) {
      // A read RTS is read again on RD; one of the write handshake or the
      // copy rendezvous dies with the link (its sender's send fails there).
      if (u.used && u.src == p.id && u.via == Via::kRc && !u.header.write && !u.header.copy) {
        u.via = Via::kRd;
      }
    }
    DropLink(p, ECONNRESET);  // held messages go (not taken); the write handshake fails
    fb.rx_hold = was_switched;
    for (const uint32_t i : restart) {
      if (rndv_[i].todo == 0) {
        FinishRendezvous(i);
      } else if (!ContinueReads(p, i)) {
        p.read_wait[static_cast<size_t>(Via::kRd)].push_back(i);
      }
    }
    for (const uint32_t i : fins) p.fin_wait[static_cast<size_t>(Via::kRd)].push_back(i);
    if (!fins.empty()) FlushFins(p, Via::kRd);
  }
  fb.broken = true;
  fb.broken_pending = true;
  fb.rx_wait = true;
  fb.peer_broken = false;
  fb.resent_pending = false;
  FbRun(p, Via::kRd);
  channel_->AfterPost();
  return true;
}

bool RdmCore::FbSwitch(Peer& p) {
  // A SWITCH for a connection we no longer have (it broke here before it was
  // up): the peer's BROKEN follows, and its connection messages are resent.
  if (p.fb == nullptr || !p.fb->rx_wait) return p.link == nullptr || p.link->dead;
  // The peer's SWITCH for the connection that broke: its later RD messages
  // come after its connection messages, so they wait for the resent ones.
  if (!p.fb->peer_broken) p.fb->rx_hold = true;
  return true;
}

void RdmCore::OnTaken(Peer& p, Via via, const wire::RdmHeader& h) {
  FbState& fb = Fb(p);
  switch (h.msg_id) {
    case kTakenReport: {
      if (via != Via::kRc) return ProtocolError(p, "TAKEN report on RD");
      // Counts going backwards or beyond what we sent are ignored.
      while (!fb.kept.empty() && fb.kept.front().seq <= h.size) {
        fb.kept_bytes -= fb.kept.front().bytes.size();
        fb.kept.pop_front();
      }
      return;
    }
    case kTakenBroken: {
      if (via != Via::kRd) return ProtocolError(p, "BROKEN on the connection");
      if (fb.rx_wait && fb.peer_broken) return ProtocolError(p, "second BROKEN");
      // Ours goes first (if not yet): the connection, if we still had it,
      // ends here, and our count of the peer's is final.
      if (!fb.broken && !FallBack(p)) return;
      if (h.size > fb.tx_seq) return ProtocolError(p, "BROKEN counts more than we sent");
      while (!fb.kept.empty() && fb.kept.front().seq <= h.size) {
        fb.kept_bytes -= fb.kept.front().bytes.size();
        fb.kept.pop_front();
      }
      fb.peer_broken = true;
      fb.rx_hold = false;  // what follows is the peer's resent messages
      fb.resent_pending = true;
      ++counters_.rc_fallbacks;
      FbRun(p, Via::kRd);
      channel_->AfterPost();
      return;
    }
    case kTakenResent: {
      if (via != Via::kRd || !fb.rx_wait || !fb.peer_broken) {
        return ProtocolError(p, "RESENT out of turn");
      }
      // Every message of the peer's that was on the connection is matched:
      // the RD messages it sent after them follow, in order.
      fb.rx_wait = false;
      fb.rx_hold = false;
      fb.peer_broken = false;  // this break is over (our RESENT went before theirs came)
      ReplayRdHeld(p);
      return;
    }
    default: return ProtocolError(p, "TAKEN with an unknown kind");
  }
}

bool RdmCore::FbWantsRun(const Peer& p, Via via) {
  if (p.fb == nullptr) return false;
  if (via == Via::kRc) return p.fb->report_wanted;
  return p.fb->broken_pending || p.fb->resent_pending;
}

void RdmCore::FbRun(Peer& p, Via via) {
  // Run for every peer with deferred work (FINs, Reads...): one without
  // fall-back state has nothing of it pending, and gets none made here.
  if (p.fb == nullptr) return;
  FbState& fb = *p.fb;
  auto post = [&](qp::QueuePair* q, uint8_t* bytes, size_t len, Kind kind) {
    qp::SendWr wr;
    wr.sgl.Add(bytes, len);
    wr.context = Ctx(kind, p.id);
    return q != nullptr ? q->PostSend(wr) : qp::QpStatus::kBadState;
  };
  auto taken = [&](std::array<uint8_t, wire::kRdmHeaderSize>& out, uint32_t kind, uint64_t count) {
    wire::RdmHeader h;
    h.op = wire::RdmOp::kTaken;
    h.msg_id = kind;
    h.size = count;
    (void)wire::EncodeRdmHeader(h, out);
  };
  if (via == Via::kRc) {
    RcLink* l = p.link.get();
    if (!fb.report_wanted || fb.report_in_flight || l == nullptr || l->dead || !l->up ||
        l->qp == nullptr) {
      return;
    }
    // Like every first FPDU of ours on a link, after our SWITCH on RD: the
    // peer's link QP holds our requests until it arrived (rdm_core_rma.cc).
    if (SwitchFirst(p, Via::kRc) != qp::QpStatus::kOk) return;  // again when RD has room
    if (p.link.get() != l || l->dead) return;
    const uint64_t count = fb.rx_taken;
    taken(fb.report, kTakenReport, count);
    // Marked first: a post may complete at once (the completion clears it).
    fb.report_in_flight = true;
    if (post(l->qp, fb.report.data(), fb.report.size(), Kind::kTaken) != qp::QpStatus::kOk) {
      fb.report_in_flight = false;
      return;  // again after the connection's next completion
    }
    fb.report_wanted = false;
    fb.rx_reported = count;
    fb.rx_unreported_bytes = 0;
    Kick(p, Via::kRc);
    return;
  }
  qp::QueuePair* q = QpOf(p, Via::kRd);
  if (fb.broken_pending) {
    taken(fb.broken_msg, kTakenBroken, fb.rx_taken);
    if (post(q, fb.broken_msg.data(), fb.broken_msg.size(), Kind::kTaken) != qp::QpStatus::kOk) {
      return;  // again after RD's next completion (a failed QP resets all)
    }
    fb.broken_pending = false;
  }
  if (!fb.resent_pending) return;
  while (!fb.kept.empty()) {
    FbKept& k = fb.kept.front();
    if (post(q, k.bytes.data(), k.bytes.size(), Kind::kResend) != qp::QpStatus::kOk) return;
    fb.kept_bytes -= k.bytes.size();
    fb.in_flight.push_back(std::move(k.bytes));
    fb.kept.pop_front();
    ++counters_.rc_resent;
  }
  taken(fb.resent_msg, kTakenResent, 0);
  if (post(q, fb.resent_msg.data(), fb.resent_msg.size(), Kind::kTaken) != qp::QpStatus::kOk) {
    return;
  }
  fb.resent_pending = false;
  fb.broken = false;  // our new sends may follow
}

void RdmCore::FbSent(Peer& p, Via via, uint64_t ctx, bool ok) {
  (void)ok;
  if (KindOf(ctx) == Kind::kResend) {
    if (p.fb != nullptr && !p.fb->in_flight.empty()) p.fb->in_flight.pop_front();
    return;
  }
  if (via == Via::kRc && p.fb != nullptr) p.fb->report_in_flight = false;
}

void RdmCore::FbReset(Peer& p) {
  p.fb.reset();
}

}  // namespace iwarpx::rdm
