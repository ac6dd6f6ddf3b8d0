// EpReporter: what every endpoint type shares to report operations — the
// CQs and counters bound to it (fi_ep_bind), one preallocated slot per
// outstanding operation (tx_attr->size / rx_attr->size), and how a finished
// operation becomes a CQ entry or error entry and a counter increment.
//
// Contract (fi_endpoint(3), fi_cq(3), fi_cntr(3))
// - Bind: a CQ with FI_TRANSMIT and/or FI_RECV (optionally
//   FI_SELECTIVE_COMPLETION), a counter with FI_SEND/FI_RECV/FI_READ/FI_WRITE;
//   both of the endpoint's domain. Rebinding replaces (and unreferences) the
//   previous object. Returns kNotMine for any other fid, so the endpoint can
//   try its own classes (EQ, AV).
// - A transmit slot remembers the application context, the CQ flags, its
//   counter and whether a success writes a CQ entry: not for fi_inject*, and
//   with FI_SELECTIVE_COMPLETION only with FI_COMPLETION. Errors always
//   write one; counters count every success and every failure.
// - Receive completions carry the source fi_addr (FI_ADDR_NOTAVAIL when not
//   known) for fi_cq_readfrom.
// - The caller serialises all calls (the engine lock). A CQ grows rather than
//   drop an entry; only a failed allocation loses one (with a warning).
#pragma once

#include <sys/uio.h>

#include <array>
#include <cstdint>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_eq.h>

#include "ofi/getinfo.h"
#include "qp/work_request.h"

namespace iwarpx::ofi {

class Cntr;
class Cq;
class Domain;

class EpReporter {
 public:
  struct Slot {
    void* context = nullptr;
    void* buf = nullptr;     // receive buffer (CQ buf field)
    uint64_t flags = 0;      // CQ entry flags
    bool report = true;      // write a CQ entry on success
    bool silent = false;     // reports nothing at all (another slot speaks for it)
    bool in_use = false;     // posted and not yet reported
    Cntr* cntr = nullptr;    // counter of this operation
    uint32_t temp_stag = 0;  // MSG: Read sink registered for this Read only
    bool multi = false;      // RDM: a multi-receive buffer (FI_MULTI_RECV)
    std::array<uint8_t, kInjectSize> inject{};
  };

  static constexpr int kNotMine = 1;

  EpReporter(Domain* domain, size_t tx_size, size_t rx_size);
  ~EpReporter();
  EpReporter(const EpReporter&) = delete;
  EpReporter& operator=(const EpReporter&) = delete;

  // fi_ep_bind of a CQ or counter: 0, -FI_E* (logged), or kNotMine.
  int Bind(struct fid* bfid, uint64_t flags, const char* ep_kind);

  Slot* AllocTx(uint32_t* index);
  void FreeTx(uint32_t index);
  Slot& tx(uint32_t index) { return tx_slots_[index]; }
  Slot* AllocRx(uint32_t* index);
  void FreeRx(uint32_t index);
  Slot& rx(uint32_t index) { return rx_slots_[index]; }
  [[nodiscard]] size_t tx_size() const { return tx_slots_.size(); }
  [[nodiscard]] size_t rx_size() const { return rx_slots_.size(); }

  // Context, CQ flags, counter and whether a success completion is written.
  void FillTxSlot(Slot& s, void* context, uint64_t cq_flags, Cntr* cntr, uint64_t flags) const;
  // FI_INJECT: copies the payload into the slot and points `sgl` at it.
  static void CopyInject(Slot& s, const struct iovec* iov, size_t count, qp::Sgl* sgl);
  // iovecs into an SGL: at most kIovLimit, no NULL base with a length, at
  // most `max_bytes` in all. False (logged, naming `call`) otherwise.
  static bool FillSgl(const struct iovec* iov, size_t count, size_t max_bytes, qp::Sgl* sgl,
                      const char* call);

  // A transmit finished: success entry (if wanted) or `err`, counter; frees
  // the slot (a silent slot only frees).
  void CompleteTx(uint32_t index);
  void FailTx(uint32_t index, struct fi_cq_err_entry err);
  // A transmit that finished inside its post call, without a slot: what
  // FillTxSlot + CompleteTx (`err` null) or FailTx would report.
  void ReportTxNow(void* context, uint64_t cq_flags, Cntr* cntr, uint64_t flags,
                   const struct fi_cq_err_entry* err);
  // A receive finished: `c` gets the slot's context (and buf unless set);
  // frees the slot.
  // `keep`: the slot stays posted (a multi-receive buffer not used up yet).
  void CompleteRx(uint32_t index, struct fi_cq_tagged_entry c, fi_addr_t src, bool keep = false);
  void CompleteRx(uint32_t index, const struct fi_cq_data_entry& c, fi_addr_t src);
  void FailRx(uint32_t index, struct fi_cq_err_entry err, bool keep = false);

  Cq* tx_cq() { return tx_cq_; }
  Cq* rx_cq() { return rx_cq_; }
  [[nodiscard]] bool tx_selective() const { return tx_selective_; }
  [[nodiscard]] bool rx_selective() const { return rx_selective_; }
  Cntr* send_cntr() { return send_cntr_; }
  Cntr* recv_cntr() { return recv_cntr_; }
  Cntr* read_cntr() { return read_cntr_; }
  Cntr* write_cntr() { return write_cntr_; }

 private:
  void PostError(Cq* cq, const Slot& s, struct fi_cq_err_entry err);
  // Whether a successful transmit posted with `context` and `flags` writes
  // a CQ entry (FillTxSlot's rule).
  [[nodiscard]] bool ReportsSuccess(const void* context, uint64_t flags) const;

  Domain* domain_;
  Cq* tx_cq_ = nullptr;
  Cq* rx_cq_ = nullptr;
  bool tx_selective_ = false;
  bool rx_selective_ = false;
  Cntr* send_cntr_ = nullptr;
  Cntr* recv_cntr_ = nullptr;
  Cntr* read_cntr_ = nullptr;
  Cntr* write_cntr_ = nullptr;
  std::vector<Slot> tx_slots_;
  std::vector<uint32_t> tx_free_;
  std::vector<Slot> rx_slots_;
  std::vector<uint32_t> rx_free_;
};

}  // namespace iwarpx::ofi
