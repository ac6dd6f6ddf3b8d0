// The passive endpoint (fi_passive_ep): listens for MSG connections and turns
// each complete MPA Request into an FI_CONNREQ event whose info->handle names
// the pending connection (fi_endpoint on that info takes it over, fi_accept
// answers it; fi_reject refuses it with private data).
//
// Contract (fi_cm(3), fi_endpoint(3))
// - fi_setname binds a TCP socket to the address at once (SO_REUSEADDR; port
//   0 becomes a real port that fi_getname returns; -FI_EADDRINUSE when a
//   listener holds it). fi_pep_bind an EQ before fi_listen (-FI_ENOEQ
//   otherwise). fi_listen listens on the fi_setname socket, or binds
//   info->src_addr (port 0: ephemeral; read it back with fi_getname).
// - Address lending (fi_endpoint(3), "acquire the properties of a passive
//   endpoint"): fi_getinfo with hints->handle = this pep copies the handle to
//   every fi_info and makes the pep's address its src_addr; fi_endpoint on
//   such an info takes the pep's bound socket (bound then from info->src_addr
//   if fi_setname never ran), and the active endpoint connects from it. The
//   pep may be closed right after: the socket belongs to the endpoint. A
//   listening pep, or one whose address an endpoint already took, refuses
//   (-FI_EINVAL); after lending, fi_listen and fi_setname on the pep fail
//   with -FI_EOPBADSTATE (the man page: it "must no longer be used").
// - FI_CONNREQ: fi_eq_cm_entry.fid is the passive endpoint, .info a new
//   fi_info (the pep's, with src_addr/dest_addr of this connection and
//   handle set; the application frees it with fi_freeinfo) and the data the
//   initiator's private data.
// - A request whose initiator leaves before the decision is dropped; a later
//   fi_endpoint/fi_accept on it fails with -FI_ECONNABORTED.
// - Connection-request handles stay valid until the passive endpoint is
//   closed; using one after that is undefined (as for any closed fid).
// Thread-safe: every entry point takes the fabric's engine lock.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_endpoint.h>

#include "ofi/common.h"
#include "progress/msg_channel.h"
#include "progress/msg_listener.h"
#include "transport/sock_addr.h"
#include "transport/tcp.h"

namespace iwarpx::ofi {

class Eq;
class Fabric;

class PassiveEndpoint final : public progress::ListenerSink {
 public:
  static int Open(struct fid_fabric* fabric, struct fi_info* info, struct fid_pep** pep,
                  void* context);
  // The pending connection behind an FI_CONNREQ handle, now owned by the
  // caller; nullptr if `handle` is not one or the request is gone. Engine
  // lock held.
  static std::unique_ptr<progress::MsgChannel> TakeConnection(struct fid* handle);
  // The iwarpx passive endpoint behind `fid`; nullptr for anything else.
  static PassiveEndpoint* From(struct fid* fid);
  ~PassiveEndpoint() override;

  int Close();
  int Bind(struct fid* bfid, uint64_t flags);
  int Listen();
  int Reject(struct fid* handle, const void* param, size_t paramlen);
  int GetName(void* addr, size_t* addrlen);
  int SetName(const void* addr, size_t addrlen);
  // The address an active endpoint opened from this pep would use (the bound
  // or listening address, else info->src_addr); empty when it has none.
  transport::SockAddr Name();
  // fi_endpoint with info->handle == this pep: moves the pep's bound socket
  // to `*out` (binding the pep's address first if needed; `*out` stays
  // invalid when the pep has no address). 0 or -FI_E* (logged).
  int LendAddress(transport::TcpBoundSocket* out);

  // progress::ListenerSink (engine lock held).
  void OnRequest(progress::MsgChannel& channel) override;
  void OnRequestGone(progress::MsgChannel& channel) override;

 private:
  struct ConnReq {
    struct fid fid;
    PassiveEndpoint* pep;
    progress::MsgChannel* channel;  // nullptr once taken, rejected or gone
  };

  PassiveEndpoint(Fabric* fabric, struct fi_info* info) : fabric_(fabric), info_(info) {}
  static ConnReq* ConnReqFrom(struct fid* handle);

  FidHandle<struct fid_pep, PassiveEndpoint> handle_;
  Fabric* fabric_;
  struct fi_info* info_;  // our copy
  Eq* eq_ = nullptr;
  transport::SockAddr name_;         // fi_setname's bound address or info->src_addr
  transport::TcpBoundSocket bound_;  // from fi_setname until listened on or lent
  bool lent_ = false;                // an active endpoint took the address
  std::unique_ptr<progress::MsgListener> listener_;
  std::vector<std::unique_ptr<ConnReq>> requests_;
};

int PassiveEpOpen(struct fid_fabric* fabric, struct fi_info* info, struct fid_pep** pep,
                  void* context);

}  // namespace iwarpx::ofi
