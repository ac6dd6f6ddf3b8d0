// bench_fabric: one connected (FI_EP_MSG) libfabric endpoint for the
// benchmarks, through the public API only, plus the small control protocol
// both sides speak over send/recv.
//
// Contract:
//   - Connection(o, caps, msg_order) is the server when o.server is empty
//     (fi_getinfo with FI_SOURCE on o.src_addr:o.port, passive endpoint,
//     fi_listen, port written to o.port_file, waits for FI_CONNREQ, opens the
//     domain and endpoint from the request's fi_info, fi_accept) and the
//     client otherwise (fi_getinfo on o.server:o.port, fi_connect). It returns
//     connected, with one control receive already posted on each side.
//   - Hints: FI_EP_MSG, `caps`, tx/rx msg_order `msg_order` (preferred: a
//     provider without it is used anyway, with a note on stderr), mode
//     FI_CONTEXT|FI_CONTEXT2 accepted, mr_mode kMrModesHandled accepted; the
//     provider's returned mr_mode is honoured by RegisterRegion (bench_ofi.h),
//     with unique requested keys.
//   - Progress is driven only by fi_cq_read busy polling (and fi_eq_read while
//     connecting); every wait is bounded by o.timeout.
//   - Any libfabric failure prints the call and fi_strerror (or the CQ/EQ
//     error entry) and exits 1. The destructor shuts down and closes all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include "bench_args.h"
#include "bench_ofi.h"

namespace bench {

// What a receive completion carries back to the program.
enum class OpKind : uint32_t { kControl, kData };
struct RxDone {
  OpKind kind = OpKind::kData;
  size_t len = 0;
};

class Connection {
 public:
  Connection(const Options& o, uint64_t caps, uint64_t msg_order);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  const fi_info* info() const { return info_; }
  // Largest number of our operations in flight the endpoint queues accept.
  size_t max_window() const;

  // Page-aligned, zeroed, registered with `access` when the provider needs
  // it (FI_MR_LOCAL, or any FI_REMOTE_* bit). Owned by the connection.
  Region* Register(size_t len, uint64_t access);

  // Posting retries -FI_EAGAIN while driving progress.
  void PostRecv(Region* r, size_t len, OpKind kind);
  void PostSend(Region* r, size_t len);
  void PostWrite(Region* r, size_t len, uint64_t remote_addr, uint64_t key);
  void PostRead(Region* r, size_t len, uint64_t remote_addr, uint64_t key);

  // One fi_cq_read pass over the transmit and receive queues.
  void Progress();
  uint64_t tx_posted() const { return tx_posted_; }
  uint64_t tx_done() const { return tx_done_; }
  void WaitTx(uint64_t count);  // until tx_done() >= count
  RxDone WaitRx();              // oldest receive completion
  // Receive completions Progress() has read and WaitRx not yet returned.
  size_t rx_pending() const { return rx_done_.size(); }

  // Control messages: SendCtl waits for its own send completion; WaitCtl
  // consumes the posted control receive (fails on data or a bad message);
  // PostCtlRecv posts the next one when the protocol expects it.
  void SendCtl(Ctl ctl);
  Ctl WaitCtl();
  void PostCtlRecv();

 private:
  struct OpContext {
    fi_context2 fi;  // first: the provider may use it (FI_CONTEXT/FI_CONTEXT2)
    OpKind kind;
  };

  int GetInfo(fi_info* hints, const char* node, uint64_t flags, fi_info** out);
  void OpenServer(fi_info* hints);
  void OpenClient(fi_info* hints);
  void OpenEndpoint();
  void WaitConnected();
  void WaitPeerShutdown();
  uint32_t ReadEq(fi_eq_cm_entry* entry, double deadline);
  OpContext* TakeContext(OpKind kind);

  const Options& o_;
  fi_info* info_ = nullptr;  // of the endpoint (server: from FI_CONNREQ)
  fid_fabric* fabric_ = nullptr;
  fid_eq* eq_ = nullptr;
  fid_pep* pep_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_ep* ep_ = nullptr;
  fid_cq* tx_cq_ = nullptr;
  fid_cq* rx_cq_ = nullptr;
  std::vector<std::unique_ptr<Region>> regions_;
  std::vector<OpContext> contexts_;
  std::vector<OpContext*> free_contexts_;
  std::deque<RxDone> rx_done_;
  uint64_t tx_posted_ = 0;
  uint64_t tx_done_ = 0;
  uint64_t next_key_ = 1;
  Region* ctl_tx_ = nullptr;
  Region* ctl_rx_ = nullptr;
};

}  // namespace bench
