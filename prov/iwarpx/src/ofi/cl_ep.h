// ClEndpoint: what the connectionless endpoint types (FI_EP_DGRAM and
// FI_EP_RDM, each on its own UDP socket) share — the fid and its fi_ops,
// fi_ops_ep and fi_ops_cm tables (of the CM calls only fi_getname works; the
// others are -FI_ENOSYS with a log line), binding an address vector and the
// CQs and counters (EpReporter), fi_enable's checks, FI_GETOPSFLAG /
// FI_SETOPSFLAG, and the arguments of fi_endpoint: queue sizes and the local
// address (info->src_addr, else the wildcard address of the format).
//
// Contract (fi_endpoint(3))
// - A subclass opens its channel in its own Open() after ParseOpen(), then
//   calls Install() with its data-call tables. fi_close runs Close() (the
//   subclass stops its channel, then calls Destroy()).
// - fi_enable needs an AV, a transmit CQ and a receive CQ (-FI_ENOAV /
//   -FI_ENOCQ, logged). Data calls before it are -FI_EOPBADSTATE.
// - fi_getname returns the bound socket's address (a sockaddr_in/_in6 that a
//   peer inserts into its AV as is): -FI_ETOOSMALL with the size needed.
// - The fid's class is FI_CLASS_EP, or FI_CLASS_TX_CTX / FI_CLASS_RX_CTX for
//   a scalable endpoint's contexts (which refine binding and enabling
//   through CheckBind/CheckEnable).
// Thread-safe: every entry point takes the engine lock.
#pragma once

#include <cstddef>
#include <cstdint>

#include <rdma/fabric.h>
#include <rdma/fi_endpoint.h>

#include "ofi/common.h"
#include "ofi/ep_reporter.h"
#include "progress/endpoint_stats.h"
#include "transport/sock_addr.h"

namespace iwarpx::ofi {

class Av;
class Domain;
class Fabric;

// The fi_ops_cm table of connectionless endpoints (only fi_getname works),
// for objects that refine it (a scalable endpoint's fi_getname).
extern const struct fi_ops_cm kClCmOps;

// fi_getname's copy-out of `a` (also the scalable endpoint's): *addrlen
// becomes its size; -FI_ETOOSMALL when addr is NULL or too small.
int CopyName(const transport::SockAddr& a, void* addr, size_t* addrlen);

class ClEndpoint {
 public:
  struct OpenArgs {
    Domain* domain = nullptr;
    size_t tx_size = 0;
    size_t rx_size = 0;
    transport::SockAddr local;
    uint64_t tx_op_flags = 0;
    uint64_t rx_op_flags = 0;
  };

  virtual ~ClEndpoint();
  ClEndpoint(const ClEndpoint&) = delete;
  ClEndpoint& operator=(const ClEndpoint&) = delete;

  // The endpoint behind a fid, or nullptr if it is not a connectionless one.
  static ClEndpoint* From(struct fid* fid);
  // Checks fi_endpoint's arguments: 0 or -FI_E* (logged).
  static int ParseOpen(struct fid_domain* domain, struct fi_info* info, struct fid_ep** ep,
                       OpenArgs* out);
  static ClEndpoint* FromEp(struct fid_ep* ep) { return OwnerOf<ClEndpoint>(ep); }
  struct fid_ep* fid() {
    return &handle_.fid;
  }

  virtual int Close() = 0;
  virtual ssize_t Cancel(void* context) = 0;
  int Bind(struct fid* bfid, uint64_t flags);
  int Control(int command, void* arg);
  int GetName(void* addr, size_t* addrlen);
  // fi_getopt/fi_setopt: -FI_ENOPROTOOPT (logged) unless a subclass knows the option.
  virtual int GetOpt(int level, int optname, void* optval, size_t* optlen);
  virtual int SetOpt(int level, int optname, const void* optval, size_t optlen);
  // FI_IWARPX_STATS_OPS ep_stats: the channel's counters (takes the engine lock).
  void Stats(progress::EndpointStats* out);
  [[nodiscard]] uint64_t tx_op_flags() const { return tx_op_flags_; }
  [[nodiscard]] uint64_t rx_op_flags() const { return rx_op_flags_; }

 protected:
  // `kind` names the endpoint in log lines ("a DGRAM endpoint").
  ClEndpoint(const OpenArgs& args, const char* kind);
  // Fills the fid (of class `fclass`) and hands it to the application.
  void Install(void* context, const struct fi_ops_msg* msg, const struct fi_ops_tagged* tagged,
               const struct fi_ops_rma* rma, const struct fi_ops_atomic* atomic, struct fid_ep** ep,
               size_t fclass = FI_CLASS_EP);
  // fi_ep_bind of `bfid` with `flags` before the generic checks: 0 to go on,
  // or -FI_E* (logged). Engine lock held.
  virtual int CheckBind(struct fid* /*bfid*/, uint64_t /*flags*/) { return 0; }
  // fi_enable: 0 when the endpoint may be enabled, or -FI_E* (logged). The
  // default needs an AV and a transmit and a receive CQ. Engine lock held.
  virtual int CheckEnable();
  // The bound socket's address (engine lock held).
  [[nodiscard]] virtual transport::SockAddr LocalAddress() const = 0;
  // Adds the channel's counters (engine lock held, channel open).
  virtual void CollectStats(progress::EndpointStats* out) const = 0;
  // FI_IWARPX_STATS=1: prints the counters; a subclass's Close calls it,
  // engine lock held, before it closes the channel.
  void ReportStatsAtClose() const;
  // Deletes the endpoint and releases the domain (the last step of Close).
  void Destroy();

  FidHandle<struct fid_ep, ClEndpoint> handle_;
  Domain* domain_;
  Fabric* fabric_;
  const char* kind_;
  EpReporter reporter_;
  Av* av_ = nullptr;
  uint64_t tx_op_flags_ = 0;
  uint64_t rx_op_flags_ = 0;
  bool enabled_ = false;
};

}  // namespace iwarpx::ofi
