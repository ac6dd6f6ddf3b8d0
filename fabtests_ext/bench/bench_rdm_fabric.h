// bench_rdm_fabric: one reliable datagram (FI_EP_RDM) libfabric endpoint
// talking to one peer, for the benchmarks, through the public API only:
// tagged data transfers plus untagged control messages (bench_ofi.h's Ctl).
//
// Contract:
//   - RdmEndpoint(o, caps) opens fabric, domain, AV (o.av: FI_AV_TABLE or
//     FI_AV_MAP), one transmit and one receive CQ (FI_CQ_FORMAT_TAGGED) and
//     the endpoint. Hints: FI_EP_RDM, `caps` (FI_MSG is always added for the
//     control messages), mode FI_CONTEXT|FI_CONTEXT2 accepted, mr_mode
//     kMrModesHandled accepted and honoured by RegisterRegion.
//   - Addressing assumes no FI_SOURCE support from the provider: the server
//     (o.server empty) calls fi_getinfo with FI_SOURCE on o.src_addr:o.port,
//     writes its bound port (fi_getname) to o.port_file and waits for a HELLO
//     carrying the client's fi_getname, which it inserts into its AV and
//     answers with an ACK. The client calls fi_getinfo on o.server:o.port,
//     inserts info->dest_addr, sends HELLO and waits for that ACK. The
//     constructor returns with peer() valid and one control receive posted.
//   - WaitCtl consumes the posted control receive and posts the next one
//     before returning, so one control receive is always posted. Control
//     messages use fi_send/fi_recv, data fi_tsend/fi_trecv with real tags:
//     the two never match each other.
//   - Posting retries -FI_EAGAIN while driving progress. Progress is driven
//     only by fi_cq_read busy polling; every wait is bounded by o.timeout.
//   - Any libfabric failure prints the call and fi_strerror (or the CQ error
//     entry) and exits 1. The destructor closes everything.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include "bench_args.h"
#include "bench_ofi.h"

namespace bench {

// A receive completion: a control message, or a tagged data message landed
// in the caller's `slot` (whatever number it passed when posting).
struct RdmRxDone {
  bool control = false;
  size_t len = 0;
  uint64_t tag = 0;
  size_t slot = 0;
};

class RdmEndpoint {
 public:
  RdmEndpoint(const Options& o, uint64_t caps);
  ~RdmEndpoint();
  RdmEndpoint(const RdmEndpoint&) = delete;
  RdmEndpoint& operator=(const RdmEndpoint&) = delete;

  const fi_info* info() const { return info_; }
  fi_addr_t peer() const { return peer_; }
  // Largest number of data operations in flight the endpoint queues accept
  // (two slots stay free for the control messages).
  size_t max_window() const;

  // Page-aligned, zeroed; registered when the provider needs it. Owned here.
  Region* Register(size_t len, uint64_t access);

  // Tagged data: `len` bytes at r->buf + offset; `slot` comes back in the
  // receive completion. Receives accept any source (FI_ADDR_UNSPEC).
  void PostTRecv(Region* r, size_t offset, size_t len, uint64_t tag, size_t slot);
  void PostTSend(Region* r, size_t offset, size_t len, uint64_t tag);

  // One fi_cq_read pass over the transmit and receive queues.
  void Progress();
  uint64_t tx_posted() const { return tx_posted_; }
  uint64_t tx_done() const { return tx_done_; }
  void WaitTx(uint64_t count);  // until tx_done() >= count
  RdmRxDone WaitRx();           // oldest receive completion

  // SendCtl waits for its own send completion. WaitCtl fails on data or a
  // malformed message; `name`, when given, receives a HELLO's endpoint name.
  void SendCtl(Ctl ctl, const void* name = nullptr, size_t name_len = 0);
  Ctl WaitCtl(std::vector<uint8_t>* name = nullptr);

 private:
  struct OpContext {
    fi_context2 fi;  // first: the provider may use it (FI_CONTEXT/FI_CONTEXT2)
    bool control;
    size_t slot;
  };

  void Open(fi_info* hints);
  void Hello();  // the address exchange, both sides
  fi_addr_t InsertPeer(const void* addr);
  OpContext* TakeContext(bool control, size_t slot);
  void PostCtlRecv();

  const Options& o_;
  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_av* av_ = nullptr;
  fid_ep* ep_ = nullptr;
  fid_cq* tx_cq_ = nullptr;
  fid_cq* rx_cq_ = nullptr;
  fi_addr_t peer_ = FI_ADDR_UNSPEC;
  std::vector<std::unique_ptr<Region>> regions_;
  std::vector<OpContext> contexts_;
  std::vector<OpContext*> free_contexts_;
  std::deque<RdmRxDone> rx_done_;
  uint64_t tx_posted_ = 0;
  uint64_t tx_done_ = 0;
  Region* ctl_tx_ = nullptr;
  Region* ctl_rx_ = nullptr;
};

}  // namespace bench
