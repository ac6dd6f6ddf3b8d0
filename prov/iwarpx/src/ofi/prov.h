// The provider's tunables (FI_IWARPX_*), read once when libfabric loads the
// provider (fi_prov_ini) and constant afterwards, so any thread may read them
// without locking.
#pragma once

#include <cstddef>
#include <string>

#include <rdma/fabric.h>

#include "progress/msg_channel.h"
#include "transport/fault.h"
#include "transport/sctp.h"
#include "wire/mpa_negotiate.h"

namespace iwarpx::ofi {

struct Params {
  bool mpa_crc = true;               // FI_IWARPX_MPA_CRC
  int mpa_rev = 2;                   // FI_IWARPX_MPA_REV (1 or 2)
  bool mpa_markers = false;          // FI_IWARPX_MPA_MARKERS
  int ird = 16;                      // FI_IWARPX_IRD
  int ord = 16;                      // FI_IWARPX_ORD
  bool progress_thread = false;      // FI_IWARPX_PROGRESS_THREAD (lands with the progress engine)
  size_t max_mr = 65536;             // FI_IWARPX_MAX_MR
  int mulpdu = 65532;                // FI_IWARPX_MULPDU
  bool dgram_crc = true;             // FI_IWARPX_DGRAM_CRC
  bool busy_poll = true;             // FI_IWARPX_BUSY_POLL
  bool busy_poll_park = true;        // FI_IWARPX_BUSY_POLL_PARK
  int rd_timeout_ms = 10000;         // FI_IWARPX_RD_TIMEOUT
  int rd_linger_ms = 2000;           // FI_IWARPX_RD_LINGER
  int rd_idle_release_ms = 10;       // FI_IWARPX_RD_IDLE_RELEASE (0: never)
  bool rd_lend = true;               // FI_IWARPX_RD_LEND: Read Responses sent zero-copy
  bool rd_place = true;              // FI_IWARPX_RD_PLACE: Read Responses received in place
  bool rd_hot_socket = true;         // FI_IWARPX_RD_HOT_SOCKET: connected socket, first peer
  int rdm_eager = 65536;             // FI_IWARPX_RDM_EAGER (bounce receive size)
  bool rndv_write = false;           // FI_IWARPX_RNDV=write: RDMA-write rendezvous handshake
  int rd_segment = 0;                // FI_IWARPX_RD_SEGMENT (0: by path)
  transport::FaultSpec fault;        // FI_IWARPX_FAULT (datagram endpoints; parsed)
  bool fault_invalid = false;        // FI_IWARPX_FAULT did not parse: endpoints refuse to open
  bool stats = false;                // FI_IWARPX_STATS: print endpoint counters at close
  std::string send_rules;            // FI_IWARPX_SEND_RULES as given ("": the default chain)
  int rc_threshold_msgs = 64;        // FI_IWARPX_RC_THRESHOLD_MSGS
  int rc_threshold_bytes = 1 << 20;  // FI_IWARPX_RC_THRESHOLD_BYTES
  int max_rc = 16;                   // FI_IWARPX_MAX_RC
  // FI_IWARPX_LLP: the protocol FI_EP_MSG endpoints get when the hints do not
  // name one (tcp -> FI_PROTO_IWARP, sctp -> FI_PROTO_IWARPX_SCTP).
  progress::Llp msg_llp = progress::Llp::kTcp;
  // FI_IWARPX_SCTP_BACKEND (auto, kernel, usrsctp).
  transport::SctpBackend sctp_backend = transport::SctpBackend::kAuto;
  // FI_IWARPX_SCTP_UNORDERED: offer unordered Read Responses in SCTP session
  // setup (docs/wire.md §2.2); used only when the peer offers it too.
  bool sctp_unordered = false;
  int max_fastpath = 8;           // FI_IWARPX_MAX_FASTPATH
  int fastpath_slots = 32;        // FI_IWARPX_FASTPATH_SLOTS
  int fastpath_slot_size = 2048;  // FI_IWARPX_FASTPATH_SLOT_SIZE (payload bytes)
  int rc_idle_ms = 0;             // FI_IWARPX_RC_IDLE_MS (0: connections stay)
};

// The values in effect (defaults until fi_prov_ini has run).
const Params& GetParams();

// The MPA negotiation policy the parameters describe (revision, CRC, markers
// asked for; a peer that asks for markers always gets them; IRD/ORD).
wire::MpaPolicy MpaPolicyFromParams();

// The LLP of an FI_EP_MSG endpoint or passive endpoint opened from `info`:
// SCTP when info->ep_attr->protocol is FI_PROTO_IWARPX_SCTP, else TCP.
progress::Llp LlpOf(const struct fi_info* info);
// The channel configuration of connections made from `info` (policy from the
// parameters, LLP and SCTP backend); the caller adds what is per endpoint.
progress::ChannelConfig ChannelConfigFor(const struct fi_info* info);

}  // namespace iwarpx::ofi
