// Event queues (fi_eq_open): a bounded ring of events: the connection
// manager's FI_CONNREQ/FI_CONNECTED/FI_SHUTDOWN and error events (Post,
// PostError) and the application's own (fi_eq_write, which needs FI_WRITE at
// open). Manual progress: every read runs an engine pass; fi_eq_sread drives
// the engine while it waits.
//
// Contract
// - Events and error events are read in posting order: fi_eq_read returns
//   -FI_EAVAIL while an error is at the head, fi_eq_readerr takes it.
// - An event holds at most kMaxEqEntrySize bytes (an fi_eq_cm_entry with the
//   largest MPA private data, 512 bytes); fi_eq_read with a smaller buffer
//   than the head event returns -FI_ETOOSMALL and leaves it queued.
// - fi_eq_sread blocks (FI_WAIT_FD or FI_WAIT_UNSPEC) until an event or the
//   timeout (-FI_EAGAIN). FI_PEEK leaves the event queued.
// All ops are thread-safe (one mutex per EQ).
#pragma once

#include <atomic>
#include <cstdint>

#include <rdma/fi_eq.h>

#include "ofi/common.h"
#include "ofi/waitq.h"

namespace iwarpx::ofi {

class Fabric;

inline constexpr size_t kMaxMpaPrivateData = 512;
inline constexpr size_t kMaxEqEntrySize = sizeof(struct fi_eq_cm_entry) + kMaxMpaPrivateData;

class Eq {
 public:
  static int Open(struct fid_fabric* fabric, struct fi_eq_attr* attr, struct fid_eq** eq,
                  void* context);
  static Eq* From(struct fid* fid);

  // Endpoints bound to the EQ hold a reference (fi_close: -FI_EBUSY).
  void Ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Unref() { refs_.fetch_sub(1, std::memory_order_acq_rel); }

  // Engine side (any thread, never blocks): false when full or too large.
  bool Post(uint32_t event, const void* buf, size_t len);
  // An fi_eq_cm_entry {fid, info} followed by `data` (at most
  // kMaxMpaPrivateData bytes).
  bool PostCm(uint32_t event, struct fid* fid, struct fi_info* info, const void* data, size_t len);
  // `err_data` (e.g. the peer's reject private data) is copied; the entry's
  // own err_data/err_data_size are ignored.
  bool PostError(const struct fi_eq_err_entry& e, const void* err_data = nullptr,
                 size_t err_data_size = 0);

  ssize_t Read(uint32_t* event, void* buf, size_t len, uint64_t flags, int timeout, bool block);
  ssize_t ReadErr(struct fi_eq_err_entry* buf, uint64_t flags);
  ssize_t Write(uint32_t event, const void* buf, size_t len, uint64_t flags);
  int Control(int command, void* arg);
  int TryWait();
  int Close();

 private:
  struct Slot {
    uint32_t event;
    bool error;
    size_t len;
    struct fi_eq_err_entry err;
    uint8_t bytes[kMaxEqEntrySize];
  };

  Eq(Fabric* fabric, bool writable) : fabric_(fabric), writable_(writable) {}
  bool PostLocked(uint32_t event, const void* buf, size_t len);

  FidHandle<struct fid_eq, Eq> handle_;
  Fabric* fabric_;
  bool writable_;
  Waiter waiter_;
  Ring<Slot> ring_;  // waiter_.mu
  uint8_t last_err_data_[kMaxEqEntrySize] = {};
  std::atomic<int> refs_{0};  // err_data handed out by fi_eq_readerr
};

int EqOpen(struct fid_fabric* fabric, struct fi_eq_attr* attr, struct fid_eq** eq, void* context);

}  // namespace iwarpx::ofi
