// The passive endpoint (fi_passive_ep): listens for MSG connections and turns
// each complete MPA Request into an FI_CONNREQ event whose info->handle names
// the pending connection (fi_endpoint on that info takes it over, fi_accept
// answers it; fi_reject refuses it with private data).
//
// Contract (fi_cm(3), fi_endpoint(3))
// - fi_pep_bind an EQ before fi_listen (-FI_ENOEQ otherwise). fi_listen binds
//   info->src_addr or the fi_setname address (port 0: ephemeral; read it back
//   with fi_getname).
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
  ~PassiveEndpoint() override;

  int Close();
  int Bind(struct fid* bfid, uint64_t flags);
  int Listen();
  int Reject(struct fid* handle, const void* param, size_t paramlen);
  int GetName(void* addr, size_t* addrlen);
  int SetName(const void* addr, size_t addrlen);

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
  transport::SockAddr name_;
  std::unique_ptr<progress::MsgListener> listener_;
  std::vector<std::unique_ptr<ConnReq>> requests_;
};

int PassiveEpOpen(struct fid_fabric* fabric, struct fi_info* info, struct fid_pep** pep,
                  void* context);

}  // namespace iwarpx::ofi
