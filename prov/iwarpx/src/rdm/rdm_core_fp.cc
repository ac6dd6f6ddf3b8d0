// RdmCore's RC-FP channel: rings offered in the connection hellos, EAGER
// messages as RDMA Writes into the peer's ring, arrival from the QP's
// placement report, credits piggybacked or written back (docs/design.md
// "RC-FP: the RDMA-write ring"; the contract is in rdm_core.h, the ring
// logic in rc_fastpath.h).
#include <algorithm>
#include <cstring>

#include "rdm/rdm_core.h"

namespace iwarpx::rdm {

bool RdmCore::FpWanted() const {
  return config_.rc.max_fastpath > 0 && config_.send_rules.named().Has(Channel::kRcFp);
}

bool RdmCore::HasFastPath(const transport::SockAddr& to) const {
  const auto it = peers_.find(to.HostLocal());
  if (it == peers_.end()) return false;
  const RcLink* l = it->second->link.get();
  return l != nullptr && !l->dead && l->fp != nullptr && l->fp->tx.has_value();
}

std::unique_ptr<RdmCore::FpLink> RdmCore::MakeFpLink() {
  if (!FpWanted() || fp_links_ >= config_.rc.max_fastpath) return nullptr;
  // A slot takes the RDM header and the payload; a copy must fit a bounce.
  const size_t max_message = std::min<size_t>(
      size_t{config_.rc.fp_max_payload} + wire::kRdmHeaderSize, config_.bounce_size);
  const uint32_t slot_bytes = FpSlotBytes(max_message);
  const uint32_t slots = std::clamp(config_.rc.fp_slots, kFpMinSlots, kFpMaxSlots);
  if (slot_bytes < kFpMinSlotBytes || slot_bytes > kFpMaxSlotBytes) return nullptr;
  auto fp = std::make_unique<FpLink>();
  const size_t bytes = FpRx::RegionBytes(slots, slot_bytes);
  fp->mem = std::make_unique<uint8_t[]>(bytes);  // zeroed: every slot empty
  mem::RegionSpec spec;
  spec.host = fp->mem.get();
  spec.length = bytes;
  spec.base_to = reinterpret_cast<uintptr_t>(fp->mem.get());
  spec.access = mem::kRemoteWrite;
  spec.pd = config_.channel.pd;
  auto stag = stags_.Register(spec);
  if (!stag.ok()) return nullptr;
  fp->stags = &stags_;
  fp->own = {*stag, spec.base_to, slots, slot_bytes};
  fp->rx.emplace(fp->mem.get(), slots, slot_bytes);
  ++fp_links_;
  return fp;
}

void RdmCore::DropFpLink(RcLink& link) {
  if (link.fp == nullptr) return;
  link.fp.reset();  // deregisters the ring: a Write into it now fails the link
  --fp_links_;
}

size_t RdmCore::RcHelloFor(const RcLink& link, std::array<uint8_t, kRcHelloMaxSize>& out) const {
  std::optional<FpRingDesc> ring;
  if (link.fp != nullptr) ring = link.fp->own;
  return EncodeRcHello(channel_->local_address().port(), ring, out);
}

void RdmCore::FpTakePeerRing(RcLink& link, const std::optional<FpRingDesc>& ring) {
  if (link.fp == nullptr) return;
  // Both rings or none: the side that names none never writes.
  if (!ring) {
    DropFpLink(link);
    return;
  }
  link.fp->tx.emplace(*ring);
}

uint64_t RdmCore::FpRoom(const Peer& p) const {
  const RcLink* l = p.link.get();
  if (l == nullptr || !l->up || l->fp == nullptr || !l->fp->tx || !l->fp->tx->HasCredit()) {
    return 0;
  }
  return l->fp->tx->max_message() - wire::kRdmHeaderSize;
}

uint32_t RdmCore::FpCreditsNow(const FpLink& fp) {
  if (unexpected_bytes_ > config_.unexpected_limit) {
    fp_withheld_ = true;
    return fp.rx->consumed() - fp.rx->unreported();  // what the peer knows already
  }
  return fp.rx->consumed();
}

qp::QpStatus RdmCore::SendFp(Peer& p, uint32_t index, const iovec* iov, size_t count) {
  TxOp& op = tx_[index];
  RcLink* l = p.link.get();
  FpLink& fp = *l->fp;
  FpTx& tx = *fp.tx;
  size_t len = wire::kRdmHeaderSize;
  for (size_t i = 0; i < count; ++i) len += iov[i].iov_len;
  const FpTx::Slot slot = tx.Take();
  const uint32_t credits = FpCreditsNow(fp);
  EncodeFpSlotHeader(slot.seq, static_cast<uint32_t>(len), credits, op.header.data());
  qp::WriteWr wr;
  wr.context = Ctx(Kind::kFp, index);
  wr.remote_stag = tx.ring().stag;
  wr.remote_to = slot.to;
  wr.sgl.Add(op.header.data(), kFpSlotHeaderSize + wire::kRdmHeaderSize);
  for (size_t i = 0; i < count; ++i) wr.sgl.Add(iov[i].iov_base, iov[i].iov_len);
  const qp::QpStatus st = l->qp->PostWrite(wr);
  // A post that fails the connection has dropped the link and freed `fp`
  // (see FlushFpCredit); the fall-back resends what the link did not deliver.
  if (l->dead) return st;
  if (st == qp::QpStatus::kOk) {
    fp.rx->Reported(credits);
  } else {
    tx.Untake();
  }
  return st;
}

void RdmCore::OnFpWrite(RcLink& link, uint32_t stag) {
  if (link.fp == nullptr || stag != link.fp->own.stag) return;
  Peer& p = *link.peer;
  FpLink& fp = *link.fp;
  // The credit word: complete now (this report comes after whole Writes).
  if (fp.tx) (void)fp.tx->AcceptCredits(fp.rx->credit_word());
  bool took = false;
  for (;;) {
    FpRx::Message m;
    const FpRx::Status st = fp.rx->Next(&m);
    if (st == FpRx::Status::kEmpty) break;
    if (st == FpRx::Status::kMalformed || m.rdm.size() > config_.bounce_size) {
      ProtocolError(p, "malformed RC-FP slot");
      return;
    }
    // In order and a receive waits for it: straight from the slot into the
    // receive buffer (one copy, as the ring is meant to give).
    if (p.rx_switched && !p.replaying && p.held.empty()) {
      auto direct = wire::DecodeRdmMessage(m.rdm);
      if (direct.ok() && direct->header.op == wire::RdmOp::kEager &&
          DeliverIfPosted(p, Via::kRc, *direct)) {
        p.stats.CountReceived(Channel::kRcFp, direct->header.size);
        FbTook(p, direct->header);
        if (fp.tx) (void)fp.tx->AcceptCredits(m.credits);
        fp.rx->Consume();
        took = true;
        ++counters_.rc_fp_received;
        ++counters_.rc_fp_direct;
        MarkActive(p);
        if (link.dead || link.fp == nullptr) return;
        continue;
      }
    }
    // Otherwise copied out so the slot can be written again: the message
    // then takes the path of a Send that arrived on the connection.
    const uint32_t b = AllocBounce();
    std::memcpy(bounces_.Buf(b), m.rdm.data(), m.rdm.size());
    const size_t bytes = m.rdm.size();
    if (fp.tx) (void)fp.tx->AcceptCredits(m.credits);
    fp.rx->Consume();
    took = true;
    auto msg = wire::DecodeRdmMessage(ByteSpan(bounces_.Buf(b), bytes));
    if (!msg.ok() || msg->header.op != wire::RdmOp::kEager) {
      FreeBounce(b);
      ProtocolError(p, "RC-FP slot without an EAGER message");
      return;
    }
    ++counters_.rc_fp_received;
    fp_arriving_ = true;
    Incoming(p, Via::kRc, b, bytes, *msg);
    fp_arriving_ = false;
    if (link.dead || link.fp == nullptr) return;  // the message failed the peer
  }
  if (took && fp.rx->UpdateDue()) ScheduleFpCredit(p);
}

void RdmCore::ScheduleFpCredit(Peer& p) {
  if (p.link == nullptr || p.link->fp == nullptr || p.link->fp->credit_wanted) return;
  p.link->fp->credit_wanted = true;
  if (!deferred_added_) return;
  flush_.emplace_back(p.id, Via::kRc);
  engine_.Update(deferred_);
}

void RdmCore::FlushFpCredit(Peer& p) {
  RcLink* l = p.link.get();
  if (l == nullptr || l->dead || !l->up || l->fp == nullptr || !l->fp->credit_wanted ||
      l->qp == nullptr || l->back_sent) {
    return;
  }
  FpLink& fp = *l->fp;
  if (!fp.tx || fp.rx->unreported() == 0) {
    fp.credit_wanted = false;
    return;
  }
  const uint32_t count = FpCreditsNow(fp);
  if (count == fp.rx->consumed() - fp.rx->unreported()) {  // withheld: ReleaseFpCredits asks again
    fp.credit_wanted = false;
    return;
  }
  StoreBe32(fp.credit_out.data(), count);
  StoreBe32(fp.credit_out.data() + 4, 0);
  qp::WriteWr wr;
  wr.context = Ctx(Kind::kCredit, p.id);
  wr.remote_stag = fp.tx->ring().stag;
  wr.remote_to = fp.tx->ring().credit_word();
  wr.sgl.Add(fp.credit_out.data(), kFpCreditWordSize);
  // Our first use of the link may be this credit: SWITCH first (rdm_core_rma.cc).
  if (SwitchFirst(p, Via::kRc) != qp::QpStatus::kOk || l->dead) return;
  const qp::QpStatus st = l->qp->PostWrite(wr);
  // A post that fails the connection (Terminate -> RcDown -> FallBack ->
  // DropLink) has freed `fp`; the link itself stays readable (graveyard).
  if (l->dead) return;
  if (st == qp::QpStatus::kQueueFull) return;  // again after the link's next completion
  fp.credit_wanted = false;
  if (st == qp::QpStatus::kOk) {
    fp.rx->Reported(count);
    ++counters_.fp_credit_writes;
    Kick(p, Via::kRc);
  }
}

void RdmCore::ReleaseFpCredits() {
  fp_withheld_ = false;
  for (auto& [addr, p] : peers_) {
    const RcLink* l = p->link.get();
    if (l != nullptr && l->fp != nullptr && l->fp->rx->unreported() > 0) ScheduleFpCredit(*p);
  }
}

}  // namespace iwarpx::rdm
