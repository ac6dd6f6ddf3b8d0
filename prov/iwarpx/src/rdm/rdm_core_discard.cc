// RdmCore: the answer to a discarded unexpected rendezvous (FI_DISCARD,
// docs/wire.md §3.10 "Discard"; the contract is in rdm_core.h). The sender
// of an RTS holds its send (and, for a read rendezvous, its registration)
// until the receiver answers; a receiver that drops the message unread
// still answers, with the header the protocol already has for "taken,
// nothing to transfer":
//
// * read rendezvous (RTS with segments): FIN, size 0 (what a receive of 0
//   bytes sends after reading nothing; every version of the protocol knows
//   it). It releases the sender's regions and completes its send.
// * write handshake (RTS with W) and copy rendezvous (RTS with C): CTS with
//   C, size 0 (extension 0.7): the sender turns copy, has nothing to send
//   and completes. A plain CTS would cost the sender a FIN (W) and the
//   receiver a rendezvous waiting for it; CTS (C) needs no state here.
//
// Either goes on the QP the RTS came on, through the FIN queue (fin_wait)
// when the send queue is full, and the rendezvous slot that holds the header
// is freed by its completion (Kind::kFin). An RTS whose peer failed (dead)
// gets no answer: its send failed with the peer.
#include <cerrno>

#include "rdm/rdm_core.h"

namespace iwarpx::rdm {

void RdmCore::AnswerDiscarded(uint32_t index, const Unexp& e) {
  Peer* p = e.dead || e.header.op != wire::RdmOp::kRts ? nullptr : PeerById(e.src);
  if (p == nullptr || QpOf(*p, e.via) == nullptr) {
    FreeRndv(index);  // an EAGER (nothing owed), or the sender's send failed already
    return;
  }
  RndvOp& op = rndv_[index];
  op.peer = e.src;
  op.via = e.via;
  op.msg_id = e.header.msg_id;
  wire::RdmHeader answer;
  answer.msg_id = e.header.msg_id;
  answer.size = 0;
  if (e.header.write || e.header.copy) {
    answer.op = wire::RdmOp::kCts;
    answer.copy = true;
    answer.offset = eager_limit();
    op.copy = true;  // not a FIN: never numbered nor resent after a break
  } else {
    answer.op = wire::RdmOp::kFin;
  }
  auto n = wire::EncodeRdmHeader(answer, op.fin);
  if (!n.ok()) {  // cannot happen: header only
    FreeRndv(index);
    return;
  }
  op.fin_len = static_cast<uint8_t>(*n);
  ++counters_.discard_answers;
  auto& wait = p->fin_wait[static_cast<size_t>(op.via)];
  const qp::QpStatus st = wait.empty() ? PostFin(*p, op.via, index) : qp::QpStatus::kQueueFull;
  if (st == qp::QpStatus::kQueueFull) {
    wait.push_back(index);
  } else if (st != qp::QpStatus::kOk && rndv_[index].used) {
    FreeRndv(index);  // the QP is failing: the sender's send fails with it
  }
}

}  // namespace iwarpx::rdm
