// bench_ofi: the libfabric pieces every benchmark endpoint needs, whatever
// its type (bench_fabric for FI_EP_MSG, bench_rdm_fabric for FI_EP_RDM):
// error checks, the fi_info summary, memory regions that honour the
// provider's mr_mode, completion-queue error reports and the control message
// format the two sides of a benchmark speak. Public libfabric API only.
//
// Contract:
//   - Check, CqFail and CheckMrMode print what failed (the call and
//     fi_strerror, or the CQ error entry) and exit 1; they never return on
//     failure.
//   - kMrModesHandled are the mr_mode bits the benchmarks accept in hints;
//     RegisterRegion honours the provider's returned mr_mode: descriptors when
//     FI_MR_LOCAL, virtual remote addresses when FI_MR_VIRT_ADDR (else
//     offsets), provider keys when FI_MR_PROV_KEY (else the requested key),
//     fi_mr_bind + fi_mr_enable on `ep` when FI_MR_ENDPOINT (so `ep` must
//     exist). A region is registered only when FI_MR_LOCAL or a FI_REMOTE_*
//     access bit asks for it; the buffer is page-aligned and zeroed.
//   - FreeRegion closes the region's MR and frees its buffer; safe on a
//     region that was not registered.
//   - Ctl travels as raw bytes: little-endian, same-architecture peers only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "bench_args.h"

namespace bench {

inline constexpr uint32_t kFiVersion = FI_VERSION(1, 17);
inline constexpr uint64_t kMrModesHandled =
    FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
// Busy-poll loops read the clock once per this many polls.
inline constexpr unsigned kPollsPerClockRead = 256;

// Exits 1 with "<call> failed: <fi_strerror>" when ret < 0.
void Check(const Options& o, ssize_t ret, const char* call);

// Calls progress() until done() holds; exits 1 with "timed out waiting for
// <what>" after o.timeout seconds.
template <typename Done, typename Progress>
void PollUntil(const Options& o, const Done& done, const Progress& progress, const char* what) {
  const double deadline = NowSeconds() + o.timeout;
  for (unsigned spins = 1; !done(); ++spins) {
    progress();
    if (spins % kPollsPerClockRead == 0 && NowSeconds() > deadline) {
      Fail(o, std::string("timed out waiting for ") + what);
    }
  }
}

// Calls post() (an fi_* posting call) until it succeeds; -FI_EAGAIN means
// the queue is full until completions are read, so progress() runs between
// tries. Any other error, or o.timeout seconds of -FI_EAGAIN, exits 1.
template <typename Post, typename Progress>
void PostRetry(const Options& o, const Post& post, const Progress& progress, const char* name) {
  ssize_t ret = post();
  if (ret == 0) return;
  PollUntil(
      o,
      [&] {
        if (ret != -FI_EAGAIN) Check(o, ret, name);
        return ret == 0;
      },
      [&] {
        progress();
        ret = post();
      },
      name);
}

// Exits 1 when the provider's mr_mode holds bits outside kMrModesHandled.
void CheckMrMode(const Options& o, const fi_info* info);

// Reads the CQ's error entry and exits 1 with it ("<which> completion error").
[[noreturn]] void CqFail(const Options& o, fid_cq* cq, const char* which);

// Completions one fi_cq_read takes at most.
inline constexpr int kCqBatch = 16;

// One fi_cq_read of up to kCqBatch `Entry`s from `cq` ("transmit" or
// "receive" in the messages): each(entry) for every one read. An error entry
// exits 1 through CqFail; -FI_EAGAIN (nothing there) returns.
template <typename Entry, typename Each>
void ReadCq(const Options& o, fid_cq* cq, const char* which, const Each& each) {
  Entry entries[kCqBatch];
  const ssize_t n = fi_cq_read(cq, entries, kCqBatch);
  if (n > 0) {
    for (ssize_t i = 0; i < n; ++i) each(entries[i]);
  } else if (n == -FI_EAVAIL) {
    CqFail(o, cq, which);
  } else if (n != -FI_EAGAIN) {
    Check(o, n, (std::string("fi_cq_read (") + which + ")").c_str());
  }
}

// What OpenEndpointWithCqs made.
struct EndpointParts {
  fid_cq* tx_cq = nullptr;
  fid_cq* rx_cq = nullptr;
  fid_ep* ep = nullptr;
};

// Opens a transmit and a receive CQ of `cq_format` (no wait object, sized
// from info's tx/rx attributes) and an endpoint on `domain`, binds `first`
// (the connected endpoint's EQ or the RDM endpoint's AV) and both CQs, and
// enables it. Any failure exits 1 naming the call.
EndpointParts OpenEndpointWithCqs(const Options& o, fid_domain* domain, fi_info* info,
                                  fi_cq_format cq_format, fid* first, const char* first_name);

// fi_close with a warning on failure; nullptr is ignored.
void Close(fid* f, const char* what);

// The port of fi_getname(f) (an IPv4 or IPv6 socket address, else exit 1).
unsigned BoundPort(const Options& o, fid* f);

// Human-readable one-line summary of the chosen fi_info (for -v), to stderr.
void PrintInfo(const fi_info* info);

// A buffer the benchmark owns; registered when the provider needs it.
struct Region {
  uint8_t* buf = nullptr;
  size_t len = 0;
  fid_mr* mr = nullptr;
  void* desc = nullptr;      // fi_mr_desc when FI_MR_LOCAL, else nullptr
  uint64_t key = 0;          // remote key (registered regions only)
  uint64_t remote_addr = 0;  // what the peer passes for offset 0
};

std::unique_ptr<Region> RegisterRegion(const Options& o, const fi_info* info, fid_domain* domain,
                                       fid_ep* ep, size_t len, uint64_t access,
                                       uint64_t requested_key);
void FreeRegion(Region* r);

// Control message. `addr` and `key` describe a remote region (rma_bw's
// READY); tagged_bw's HELLO carries the sender's endpoint name after the
// struct (name_len bytes).
enum class CtlType : uint32_t { kBegin = 1, kReady, kDone, kAck, kQuit, kHello };
struct Ctl {
  uint32_t magic = 0;
  CtlType type = CtlType::kBegin;
  uint64_t size = 0;
  uint64_t iters = 0;
  uint64_t tag = 0;
  uint64_t flags = 0;     // kCtlWarmup: receiver checks the whole pattern
  uint64_t addr = 0;      // kReady: remote address of the server's data region
  uint64_t key = 0;       // kReady: its remote key
  uint64_t status = 0;    // kAck: 0 = data verified
  uint64_t name_len = 0;  // kHello: bytes of endpoint name following the struct
};
inline constexpr uint64_t kCtlWarmup = 1;
inline constexpr uint32_t kCtlMagic = 0x69775862;  // "iwXb"
inline constexpr size_t kCtlBytes = 256;           // a control buffer: Ctl + a name

}  // namespace bench
