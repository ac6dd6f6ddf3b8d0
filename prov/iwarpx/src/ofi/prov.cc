// The provider entry point: libfabric dlopen()s libiwarpx-fi.so, calls
// fi_prov_ini() once (under its init lock) and then only uses the returned
// struct. fi_prov_ini defines every FI_IWARPX_* parameter (listed by
// `fi_info -e`) and reads them into Params.
#include "ofi/prov.h"

#include <cstdint>
#include <cstring>

#include <rdma/fabric.h>
#include <rdma/fi_ext_iwarpx.h>
#include <rdma/providers/fi_prov.h>

#include "ofi/fabric.h"
#include "ofi/getinfo.h"
#include "ofi/log.h"

namespace iwarpx::ofi {
namespace {

Params g_params;

// RFC 6581 carries IRD/ORD in 14-bit fields.
constexpr int kMaxIrdOrd = 0x3fff;

void DefineParams() {
  fi_param_define(&g_provider, "mpa_crc", FI_PARAM_BOOL,
                  "Ask for MPA CRC32c on connected (TCP) endpoints. The CRC is used when either "
                  "side asks for it; turning it off only helps when both peers agree. "
                  "(default: true)");
  fi_param_define(&g_provider, "mpa_rev", FI_PARAM_INT,
                  "MPA revision offered when connecting: 2 (RFC 6581, enhanced connection "
                  "setup with IRD/ORD and the RTR message) or 1 (RFC 5044). Revision 1 peers "
                  "are accepted either way. (default: 2)");
  fi_param_define(&g_provider, "mpa_markers", FI_PARAM_BOOL,
                  "Ask for MPA markers (RFC 5044 section 6) on connected endpoints. Markers "
                  "are always honoured when the peer asks for them. (default: false)");
  fi_param_define(&g_provider, "ird", FI_PARAM_INT,
                  "Inbound RDMA Read queue depth (IRD) offered in MPA v2 negotiation, "
                  "1..16383: how many RDMA Reads a peer may have outstanding against this "
                  "endpoint. (default: 16)");
  fi_param_define(&g_provider, "ord", FI_PARAM_INT,
                  "Outbound RDMA Read queue depth (ORD) offered in MPA v2 negotiation, "
                  "1..16383: how many RDMA Reads this endpoint may have outstanding. "
                  "(default: 16)");
  fi_param_define(&g_provider, "progress_thread", FI_PARAM_BOOL,
                  "Run the provider's progress thread (one per fabric, bound with hwloc to "
                  "the last CPU the process may use) for every domain, and report "
                  "FI_PROGRESS_AUTO. Without it progress is manual unless the application "
                  "asks for FI_PROGRESS_AUTO. (default: false)");
  fi_param_define(&g_provider, "mulpdu", FI_PARAM_INT,
                  "Largest DDP segment (MULPDU, header included) sent in one MPA FPDU on "
                  "connected endpoints, 128..65532. Larger FPDUs mean fewer system calls per "
                  "message (measured: 1 MiB writes 2.2 GB/s at 16384, 4.2 GB/s at 65532); "
                  "a peer that wants FPDUs aligned to TCP segments needs about the path's "
                  "MSS. (default: 65532)");
  fi_param_define(&g_provider, "busy_poll", FI_PARAM_BOOL,
                  "Manual progress (fi_cq_read and friends) first reads the socket that last "
                  "had input directly instead of asking epoll, saving a system call per message "
                  "on request/response traffic; epoll still runs at least every 16 passes and "
                  "whenever a socket waits to write. (default: true)");
  fi_param_define(
      &g_provider, "busy_poll_park", FI_PARAM_BOOL,
      "With busy_poll, a socket whose direct reads found input 4 times since it became the "
      "busy one leaves the epoll set while it stays busy, so the kernel does not run the "
      "epoll callback for every datagram (about 0.25 us per small message on loopback); "
      "it goes back before any thread sleeps, and for good once a wait object "
      "(FI_GETWAIT) is handed out or a progress thread starts. (default: true)");
  fi_param_define(&g_provider, "dgram_crc", FI_PARAM_BOOL,
                  "CRC32c over every datagram (header and segment) sent by datagram (UDP) "
                  "endpoints. Received datagrams are checked whenever they carry one and a "
                  "bad one is dropped and counted; off sends a zero CRC field with the C "
                  "flag clear (docs/wire.md section 3.4). (default: true)");
  fi_param_define(&g_provider, "fault", FI_PARAM_STRING,
                  "Fault injection for tests, on datagram (UDP) endpoints only: "
                  "comma-separated per-mille chances drop=N,dup=N,reorder=N,corrupt=N (0..1000), "
                  "gap=K (reorder distance 1..64, default 3) and seed=S (default 1), e.g. "
                  "\"drop=50,dup=10,reorder=20,seed=7\". Applied to every datagram sent; the "
                  "sequence of faults depends only on the seed. A spec that does not parse "
                  "makes datagram endpoints refuse to open. (default: none)");
  fi_param_define(&g_provider, "rd_timeout", FI_PARAM_INT,
                  "Milliseconds a reliable-datagram (FI_EP_RDM) peer may leave sent data "
                  "unacknowledged, or leave probes of a closed window unanswered, before its "
                  "pending operations complete with errors (FI_ECONNRESET/FI_ECONNABORTED), "
                  "100..3600000. (default: 10000)");
  fi_param_define(&g_provider, "rd_linger", FI_PARAM_INT,
                  "Milliseconds fi_close of a reliable-datagram (FI_EP_RDM) endpoint keeps "
                  "driving progress until the peers have acknowledged everything it sent "
                  "(sends already completed live only in its resend buffer until then), "
                  "0..3600000; 0 closes at once and may lose the last messages. "
                  "(default: 2000)");
  fi_param_define(&g_provider, "rd_idle_release", FI_PARAM_INT,
                  "Milliseconds a reliable-datagram (FI_EP_RDM) peer with nothing in flight "
                  "stays idle before its queue pair gives its per-message buffers back (send "
                  "and receive rings, staging, resend buffer: ~1.5 KiB per quiet peer; the next "
                  "message makes them again), 0..3600000; released after one to two periods of "
                  "idleness; 0 never releases. (default: 10)");
  fi_param_define(&g_provider, "rd_lend", FI_PARAM_BOOL,
                  "Zero copy for RDMA Read Responses on reliable-datagram (FI_EP_RDM) "
                  "endpoints: a response's payload is sent from the registered region and "
                  "kept by reference until acknowledged (a region closed before that is copied "
                  "first); off copies it into the resend buffer like other data. (default: true)");
  fi_param_define(&g_provider, "rd_place", FI_PARAM_BOOL,
                  "Zero copy for received RDMA Read Responses on reliable-datagram (FI_EP_RDM) "
                  "endpoints: while a Read is outstanding, its next response datagrams are "
                  "received straight into the Read's buffer (a datagram that turns out to be "
                  "another one is copied out, as without this); off receives every datagram "
                  "into the endpoint's buffers and copies. (default: true)");
  fi_param_define(&g_provider, "rd_hot_socket", FI_PARAM_BOOL,
                  "A second UDP socket for the first peer of a reliable-datagram (FI_EP_RDM) "
                  "endpoint: bound to the same address and port and connected to that peer, so "
                  "its datagrams skip the kernel's per-datagram route lookup (~0.5 us less per "
                  "datagram on loopback); the endpoint's socket then allows SO_REUSEPORT "
                  "sharing with sockets of the same user. (default: true)");
  fi_param_define(&g_provider, "rdm_eager", FI_PARAM_INT,
                  "Bytes of the bounce receives of RDM endpoints, 256..1048576: messages up to "
                  "this minus the 32-byte RDM header are sent eagerly (copied); larger ones by "
                  "rendezvous (the receiver pulls them with RDMA Read). (default: 65536)");
  fi_param_define(&g_provider, "rndv", FI_PARAM_STRING,
                  "Rendezvous protocol of FI_EP_RDM messages above the eager size (UD-ZCopy "
                  "and RC-RDMA): read (the receiver pulls the data with RDMA Read into the "
                  "matched buffer, then answers FIN) or write (the receiver answers CTS "
                  "naming its registered buffer, the sender RDMA Writes the data and sends "
                  "FIN). The sender's setting decides; a receiver follows either. "
                  "(default: read)");
  fi_param_define(&g_provider, "rd_segment", FI_PARAM_INT,
                  "Largest DDP segment per datagram on RDM endpoints, 128..65460; 0 chooses by "
                  "path: 65460 to loopback addresses, 1428 (a 1500-byte MTU) otherwise. A "
                  "datagram larger than the path MTU is fragmented by IP, and losing one "
                  "fragment loses it (docs/wire.md section 3.7). (default: 0)");
  fi_param_define(&g_provider, "rc_threshold_msgs", FI_PARAM_INT,
                  "RDM endpoints whose send rules name rc_sr or rc_rdma open an on-demand "
                  "connection (TCP iWARP, to the peer's UDP address and port number on TCP) "
                  "to a peer once this many messages were sent to it, counting only those "
                  "the rules would put on a connection, 1..2^31-1; the peer stays on "
                  "datagrams until it is up. (default: 64)");
  fi_param_define(&g_provider, "rc_threshold_bytes", FI_PARAM_INT,
                  "The same trigger in bytes sent to the peer (of the messages counted "
                  "there), 1..2^31-1; whichever comes first. (default: 1048576)");
  fi_param_define(&g_provider, "max_rc", FI_PARAM_INT,
                  "Most on-demand connections an RDM endpoint holds (opened, accepted and "
                  "pending), 0..4096; 0 keeps every peer on datagrams. (default: 16)");
  fi_param_define(&g_provider, "max_fastpath", FI_PARAM_INT,
                  "Most on-demand connections of an RDM endpoint with an RC-FP ring (the "
                  "rc_fp channel: small messages by RDMA Write into the peer's ring), "
                  "0..4096; a connection has the fast path when both ends are under it, "
                  "others use the chain's next rule. (default: 8)");
  fi_param_define(&g_provider, "rc_idle_ms", FI_PARAM_INT,
                  "An RDM endpoint's on-demand connection that carried nothing for this many "
                  "milliseconds is left by both ends (a SWITCH back to datagrams each way) and "
                  "closed without any error; traffic opens a new one after the thresholds. "
                  "0..2^31-1; 0 keeps connections until the endpoint closes. (default: 0)");
  fi_param_define(&g_provider, "fastpath_slots", FI_PARAM_INT,
                  "Slots of each RC-FP ring (messages in flight to one peer on it), "
                  "2..4096. (default: 32)");
  fi_param_define(&g_provider, "fastpath_slot_size", FI_PARAM_INT,
                  "Largest message payload an RC-FP ring slot carries, 16..65472 (at most "
                  "FI_IWARPX_RDM_EAGER minus the 32-byte RDM header); each slot also holds a "
                  "48-byte header. (default: 2048)");
  fi_param_define(&g_provider, "send_rules", FI_PARAM_STRING,
                  "Send-rule chain of RDM endpoints: which channel carries each message, "
                  "first matching rule whose channel the peer has, e.g. "
                  "\"size<=2048:rc_fp,size<=8192:ud_sr,any:rc_rdma,any:ud_zcopy\". Rules are "
                  "COND:CHANNEL separated by commas; COND is any or terms joined by & of "
                  "size|peers <=|<|>=|>|== N[k|m|g]; channels ud_sr (eager datagrams), ud_zcopy "
                  "(rendezvous over datagrams), rc_sr (eager over an on-demand TCP iWARP "
                  "connection), rc_rdma (rendezvous over it), rc_fp (eager by RDMA Write into "
                  "the peer's ring on that connection, FI_IWARPX_MAX_FASTPATH). The last rule "
                  "must be any:ud_zcopy. "
                  "A chain that does not parse makes RDM endpoints refuse to open with a "
                  "warning saying why. (default: any:ud_sr,any:ud_zcopy)");
  fi_param_define(&g_provider, "stats", FI_PARAM_BOOL,
                  "Print every endpoint's non-zero counters (datagrams dropped and why, "
                  "retransmissions, RESETs, Terminates; struct fi_iwarpx_ep_stats in "
                  "rdma/fi_ext_iwarpx.h) to stderr when it closes. (default: false)");
  fi_param_define(&g_provider, "llp", FI_PARAM_STRING,
                  "Lower-layer protocol of FI_EP_MSG endpoints whose hints leave "
                  "ep_attr->protocol unspecified: tcp (iWARP over MPA/TCP, FI_PROTO_IWARP) or "
                  "sctp (iWARP over SCTP, RFC 5043, FI_PROTO_IWARPX_SCTP of "
                  "rdma/fi_ext_iwarpx.h). Hints naming either protocol get it whatever this "
                  "says. (default: tcp)");
  fi_param_define(&g_provider, "sctp_backend", FI_PARAM_STRING,
                  "SCTP implementation of FI_PROTO_IWARPX_SCTP endpoints: kernel (the "
                  "kernel's SCTP sockets), usrsctp (SCTP in user space over UDP "
                  "encapsulation, RFC 6951; a listener's UDP port is its SCTP port when it "
                  "is the process's first) or auto (kernel when it has SCTP, else usrsctp). "
                  "SCTP is not offered when the chosen backend cannot run. (default: auto)");
  fi_param_define(&g_provider, "sctp_unordered", FI_PARAM_BOOL,
                  "Offer, in FI_PROTO_IWARPX_SCTP session setup, to receive RDMA Read "
                  "Responses with SCTP unordered delivery (an iwarpx extension bit, "
                  "docs/wire.md); they are sent and accepted unordered only when both ends "
                  "offer it. 0: never offer it, every segment stays ordered. Off by default: "
                  "older iwarpx builds refuse the bit, and usrsctp stalls ~0.5 s more often "
                  "with it (docs/design.md). (default: false)");
  fi_param_define(&g_provider, "max_mr", FI_PARAM_INT,
                  "Maximum number of live memory registrations per domain (domain_attr "
                  "mr_cnt), 1..16777216. (default: 65536)");
}

void ReadBool(const char* name, bool* out) {
  int v = 0;
  if (fi_param_get_bool(&g_provider, name, &v) == FI_SUCCESS) *out = v != 0;
}

void ReadInt(const char* name, int lo, int hi, int* out) {
  int v = 0;
  if (fi_param_get_int(&g_provider, name, &v) != FI_SUCCESS) return;
  if (v < lo || v > hi) {
    IWX_WARN(core, "FI_IWARPX_%s=%d is outside %d..%d; using %d\n", name, v, lo, hi, *out);
    return;
  }
  *out = v;
}

void ReadLlpParams() {
  char* llp = nullptr;
  if (fi_param_get_str(&g_provider, "llp", &llp) == FI_SUCCESS && llp != nullptr) {
    if (std::strcmp(llp, "tcp") == 0) {
      g_params.msg_llp = progress::Llp::kTcp;
    } else if (std::strcmp(llp, "sctp") == 0) {
      g_params.msg_llp = progress::Llp::kSctp;
    } else {
      IWX_WARN(core, "FI_IWARPX_LLP=%s is neither tcp nor sctp; using tcp\n", llp);
    }
  }
  char* backend = nullptr;
  if (fi_param_get_str(&g_provider, "sctp_backend", &backend) == FI_SUCCESS && backend != nullptr) {
    if (std::strcmp(backend, "auto") == 0) {
      g_params.sctp_backend = transport::SctpBackend::kAuto;
    } else if (std::strcmp(backend, "kernel") == 0) {
      g_params.sctp_backend = transport::SctpBackend::kKernel;
    } else if (std::strcmp(backend, "usrsctp") == 0) {
      g_params.sctp_backend = transport::SctpBackend::kUsrsctp;
    } else {
      IWX_WARN(core, "FI_IWARPX_SCTP_BACKEND=%s is not auto, kernel or usrsctp; using auto\n",
               backend);
    }
  }
}

void ReadParams() {
  ReadLlpParams();
  ReadBool("sctp_unordered", &g_params.sctp_unordered);
  ReadBool("mpa_crc", &g_params.mpa_crc);
  ReadBool("mpa_markers", &g_params.mpa_markers);
  ReadBool("progress_thread", &g_params.progress_thread);
  ReadBool("dgram_crc", &g_params.dgram_crc);
  ReadBool("busy_poll", &g_params.busy_poll);
  ReadBool("busy_poll_park", &g_params.busy_poll_park);
  ReadBool("stats", &g_params.stats);
  ReadBool("rd_lend", &g_params.rd_lend);
  ReadBool("rd_place", &g_params.rd_place);
  ReadBool("rd_hot_socket", &g_params.rd_hot_socket);
  char* fault = nullptr;
  if (fi_param_get_str(&g_provider, "fault", &fault) == FI_SUCCESS && fault != nullptr) {
    auto spec = transport::FaultSpec::Parse(fault);
    if (spec.ok()) {
      g_params.fault = *spec;
      IWX_INFO(core, "FI_IWARPX_FAULT=%s: datagrams will be damaged on purpose\n", fault);
    } else {
      g_params.fault_invalid = true;
      IWX_WARN(core, "FI_IWARPX_FAULT=%s does not parse: %s\n", fault,
               spec.error().message.c_str());
    }
  }
  ReadInt("mpa_rev", 1, 2, &g_params.mpa_rev);
  ReadInt("ird", 1, kMaxIrdOrd, &g_params.ird);
  ReadInt("ord", 1, kMaxIrdOrd, &g_params.ord);
  int max_mr = static_cast<int>(g_params.max_mr);
  ReadInt("max_mr", 1, 1 << 24, &max_mr);
  g_params.max_mr = static_cast<size_t>(max_mr);
  ReadInt("mulpdu", 128, 65532, &g_params.mulpdu);
  ReadInt("rd_timeout", 100, 3600000, &g_params.rd_timeout_ms);
  ReadInt("rd_linger", 0, 3600000, &g_params.rd_linger_ms);
  ReadInt("rd_idle_release", 0, 3600000, &g_params.rd_idle_release_ms);
  ReadInt("rdm_eager", 256, 1 << 20, &g_params.rdm_eager);
  char* rndv = nullptr;
  if (fi_param_get_str(&g_provider, "rndv", &rndv) == FI_SUCCESS && rndv != nullptr) {
    if (std::strcmp(rndv, "read") == 0 || std::strcmp(rndv, "write") == 0) {
      g_params.rndv_write = std::strcmp(rndv, "write") == 0;
    } else {
      IWX_WARN(core, "FI_IWARPX_RNDV=%s is neither read nor write; using read\n", rndv);
    }
  }
  char* rules = nullptr;
  if (fi_param_get_str(&g_provider, "send_rules", &rules) == FI_SUCCESS && rules != nullptr) {
    g_params.send_rules = rules;  // parsed (and refused) where RDM endpoints open
  }
  ReadInt("rc_threshold_msgs", 1, INT32_MAX, &g_params.rc_threshold_msgs);
  ReadInt("rc_threshold_bytes", 1, INT32_MAX, &g_params.rc_threshold_bytes);
  ReadInt("max_rc", 0, 4096, &g_params.max_rc);
  ReadInt("max_fastpath", 0, 4096, &g_params.max_fastpath);
  ReadInt("fastpath_slots", 2, 4096, &g_params.fastpath_slots);
  ReadInt("fastpath_slot_size", 16, 65472, &g_params.fastpath_slot_size);
  ReadInt("rc_idle_ms", 0, INT32_MAX, &g_params.rc_idle_ms);
  int seg = g_params.rd_segment;
  ReadInt("rd_segment", 0, 65460, &seg);
  if (seg != 0 && seg < 128) {
    IWX_WARN(core, "FI_IWARPX_RD_SEGMENT=%d is below 128; choosing by path\n", seg);
    seg = 0;
  }
  g_params.rd_segment = seg;
}

// Once per process (fi_prov_ini): every parameter's value in effect, so a log
// shows what a run used without reading its environment.
void LogParams() {
  const Params& p = g_params;
  IWX_INFO(core,
           "parameters in effect: FI_IWARPX_MPA_CRC=%d FI_IWARPX_MPA_REV=%d "
           "FI_IWARPX_MPA_MARKERS=%d FI_IWARPX_IRD=%d FI_IWARPX_ORD=%d FI_IWARPX_MULPDU=%d "
           "FI_IWARPX_PROGRESS_THREAD=%d FI_IWARPX_BUSY_POLL=%d FI_IWARPX_BUSY_POLL_PARK=%d "
           "FI_IWARPX_MAX_MR=%zu "
           "FI_IWARPX_DGRAM_CRC=%d FI_IWARPX_FAULT=%s FI_IWARPX_RD_TIMEOUT=%d "
           "FI_IWARPX_RD_LINGER=%d FI_IWARPX_RD_IDLE_RELEASE=%d FI_IWARPX_RD_LEND=%d "
           "FI_IWARPX_RD_PLACE=%d FI_IWARPX_RD_HOT_SOCKET=%d FI_IWARPX_RD_SEGMENT=%d "
           "FI_IWARPX_RDM_EAGER=%d "
           "FI_IWARPX_RNDV=%s "
           "FI_IWARPX_SEND_RULES=%s FI_IWARPX_RC_THRESHOLD_MSGS=%d "
           "FI_IWARPX_RC_THRESHOLD_BYTES=%d FI_IWARPX_MAX_RC=%d FI_IWARPX_STATS=%d\n",
           p.mpa_crc, p.mpa_rev, p.mpa_markers, p.ird, p.ord, p.mulpdu, p.progress_thread,
           p.busy_poll, p.busy_poll_park, p.max_mr, p.dgram_crc,
           p.fault_invalid ? "(invalid)" : (p.fault.any() ? "(set)" : "none"), p.rd_timeout_ms,
           p.rd_linger_ms, p.rd_idle_release_ms, p.rd_lend, p.rd_place, p.rd_hot_socket,
           p.rd_segment, p.rdm_eager, p.rndv_write ? "write" : "read",
           p.send_rules.empty() ? "(default)" : p.send_rules.c_str(), p.rc_threshold_msgs,
           p.rc_threshold_bytes, p.max_rc, p.stats);
}

void Cleanup() {}

}  // namespace

// Not const: libfabric's fi_param_* and logging calls take a non-const pointer.
struct fi_provider g_provider = {
    .version = FI_VERSION(0, 1),
    .fi_version = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION),
    .context = {},
    .name = "iwarpx",
    .getinfo = Getinfo,
    .fabric = FabricOpen,
    .cleanup = Cleanup,
};

const Params& GetParams() {
  return g_params;
}

wire::MpaPolicy MpaPolicyFromParams() {
  wire::MpaPolicy policy;
  policy.max_revision = static_cast<uint8_t>(g_params.mpa_rev);
  policy.want_crc = g_params.mpa_crc;
  policy.want_markers = g_params.mpa_markers;
  policy.insert_markers = true;
  policy.ird = static_cast<uint16_t>(g_params.ird);
  policy.max_ird = static_cast<uint16_t>(g_params.ird);
  policy.ord = static_cast<uint16_t>(g_params.ord);
  return policy;
}

progress::Llp LlpOf(const struct fi_info* info) {
  return info != nullptr && info->ep_attr != nullptr &&
                 info->ep_attr->protocol == FI_PROTO_IWARPX_SCTP
             ? progress::Llp::kSctp
             : progress::Llp::kTcp;
}

progress::ChannelConfig ChannelConfigFor(const struct fi_info* info) {
  progress::ChannelConfig c;
  c.policy = MpaPolicyFromParams();
  c.llp = LlpOf(info);
  c.sctp_backend = g_params.sctp_backend;
  c.sctp_unordered_read_resp = g_params.sctp_unordered;
  return c;
}

}  // namespace iwarpx::ofi

extern "C" FI_EXT_INI {
  iwarpx::ofi::DefineParams();
  iwarpx::ofi::ReadParams();
  iwarpx::ofi::LogParams();
  return &iwarpx::ofi::g_provider;
}
