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
//     inserts info->dest_addr, sends HELLO and waits for that ACK (with
//     o.src_addr set, the client's endpoint binds that IPv4 address). The
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
#include <string>
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
  // receive completion. Receives accept any source (FI_ADDR_UNSPEC) and the
  // tags that equal `tag` outside the `ignore` bits.
  void PostTRecv(Region* r, size_t offset, size_t len, uint64_t tag, size_t slot,
                 uint64_t ignore = 0);
  void PostTSend(Region* r, size_t offset, size_t len, uint64_t tag);

  // One-sided operations on the peer's region (remote_addr and key as its
  // RegisterRegion reported them); the endpoint needs FI_RMA / FI_ATOMIC in
  // `caps`. Each is one transmit operation (tx_posted / tx_done). Atomics are
  // FI_SUM on one FI_UINT64 at remote_addr; the operand is 8 bytes at
  // src->buf + offset, the fetched old value lands at res->buf + res_offset.
  void PostWrite(Region* r, size_t offset, size_t len, uint64_t remote_addr, uint64_t key);
  void PostRead(Region* r, size_t offset, size_t len, uint64_t remote_addr, uint64_t key);
  void PostAtomicAdd(Region* src, size_t offset, uint64_t remote_addr, uint64_t key);
  void PostFetchAdd(Region* src, size_t offset, Region* res, size_t res_offset,
                    uint64_t remote_addr, uint64_t key);

  // One fi_cq_read pass over the transmit and receive queues.
  void Progress();
  uint64_t tx_posted() const { return tx_posted_; }
  uint64_t tx_done() const { return tx_done_; }
  void WaitTx(uint64_t count);  // until tx_done() >= count
  RdmRxDone WaitRx();           // oldest receive completion
  // Receive completions Progress() has read and WaitRx not yet returned.
  size_t rx_pending() const { return rx_done_.size(); }

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
  void BindClientTo(const std::string& addr);
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
