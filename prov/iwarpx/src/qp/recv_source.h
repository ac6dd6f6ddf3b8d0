// RecvSource: receives supplied on demand, the way a shared receive queue
// feeds many QPs from one pool. A QP given a source
// (QueuePair::SetRecvSource) that finds no receive posted when an untagged
// Send or Immediate Data arrives asks the source once, before it stops for
// lack of a receive; an endpoint with many quiet peers then keeps no receive
// buffers posted per peer, only what is in use (rdm::RdmCore: its bounces).
//
// Contract
// * Supply(qp) is called from inside that QP's receive path; it may call
//   qp.PostRecv (and nothing else on that QP) and returns true if it posted
//   at least one receive. Returning false is backpressure: the QP stops as
//   it does with no receive posted (queue_pair.h, "No receive posted") and
//   resumes when a receive is posted to it later.
// * TakeSend(qp, payload): a whole Send (one segment, the last, MO 0, no
//   Invalidate, no Immediate Data to follow, its MSN the next one) arrived
//   over a whole-FPDU connection (queue_pair.h TakeWholeFpdu) while no
//   receive is posted. The source may consume the payload at once, from the
//   connection's buffer (valid during the call only), instead of supplying a
//   receive it would be copied into. True: taken; the QP counts the message
//   as received (its MSN is used) and completes no receive for it. False,
//   with nothing changed: the QP goes on as before (Supply, placement,
//   completion). The default takes nothing. Called from inside the QP's
//   receive path; it must not call into that QP.
// * Over SCTP framing the source is not consulted (receives are claimed by
//   message order across streams there; the RD and TCP paths use it).
// * The source must outlive the QPs it is set on (or be unset first).
#pragma once

#include "base/bytes.h"

namespace iwarpx::qp {

class QueuePair;

class RecvSource {
 public:
  virtual ~RecvSource() = default;
  virtual bool Supply(QueuePair& qp) = 0;
  virtual bool TakeSend(QueuePair& /*qp*/, ByteSpan /*payload*/) { return false; }
};

}  // namespace iwarpx::qp
