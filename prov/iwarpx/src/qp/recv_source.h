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
// * Over SCTP framing the source is not consulted (receives are claimed by
//   message order across streams there; the RD and TCP paths use it).
// * The source must outlive the QPs it is set on (or be unset first).
#pragma once

namespace iwarpx::qp {

class QueuePair;

class RecvSource {
 public:
  virtual ~RecvSource() = default;
  virtual bool Supply(QueuePair& qp) = 0;
};

}  // namespace iwarpx::qp
