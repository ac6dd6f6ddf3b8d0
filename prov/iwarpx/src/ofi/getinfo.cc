#include "ofi/getinfo.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdlib>
#include <cstring>
#include <iterator>

#include <rdma/fi_errno.h>
#include <rdma/fi_ext_iwarpx.h>

#include "ofi/fabric.h"
#include "ofi/log.h"
#include "ofi/pep.h"
#include "ofi/prov.h"
#include "rd/ud_qp.h"

namespace iwarpx::ofi {
namespace {

constexpr uint64_t kExtraCaps = FI_LOCAL_COMM | FI_REMOTE_COMM;  // both true over TCP
// One TCP stream, processed in order by RDMAP (RFC 5040 section 5.5): sends,
// writes and read requests are placed/executed in the order posted. Not
// promised: anything after a Read (WAR, SAR), since the responder reads its
// source when it sends each Read Response; FI_FENCE gives that order.
constexpr uint64_t kMsgOrder = FI_ORDER_SAS | FI_ORDER_SAW | FI_ORDER_WAW | FI_ORDER_WAS |
                               FI_ORDER_RAW | FI_ORDER_RAS | FI_ORDER_RAR;
// libfabric's OFI_CORE_PROV_ONLY (include/ofi.h, not installed): set when a
// utility provider (ofi_rxm) looks for a core provider to layer over. Until
// the MSG endpoint exists such a layering would list "iwarpx;ofi_rxm" RDM
// entries whose endpoints cannot open, so those queries are declined.
constexpr uint64_t kCoreProvOnly = 1ULL << 59;
// mem_tag_format of a provider whose tags are 64 opaque bits, all matched
// with the ignore mask (libfabric's internal FI_TAG_GENERIC).
constexpr uint64_t kTagGeneric = 0xAAAAAAAAAAAAAAAAull;
constexpr uint64_t kRmaDirections = FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;

// What one endpoint type offers; getinfo matches hints against each type the
// hints allow and builds one fi_info per (type, address family).
struct EpTemplate {
  enum fi_ep_type type;
  const char* name;
  uint64_t tx_caps;
  uint64_t rx_caps;
  uint64_t msg_order;
  size_t max_msg_size;
  size_t max_order_size;  // RAW and WAW (0: none)
  bool cq_data;           // remote CQ data (RFC 7306 Immediate Data, FI_RX_CQ_DATA)
  size_t rma_iov_limit;
  size_t iov_limit;
  bool rx_cq_data_mode;  // remote CQ data consumes a posted receive (FI_RX_CQ_DATA)
  size_t max_ctx;        // transmit/receive contexts per (scalable) endpoint
  uint64_t all_caps() const { return tx_caps | rx_caps | kExtraCaps; }
};

// FI_EP_MSG: connected iWARP over TCP (RFC 5040/5041/5044/6581/7306).
constexpr EpTemplate kMsgEp = {FI_EP_MSG,    "FI_EP_MSG", kTxCaps,     kRxCaps,
                               kMsgOrder,    kMaxMsgSize, kMaxMsgSize, true,
                               kRmaIovLimit, kIovLimit,   true,        1};
// FI_EP_DGRAM: datagram iWARP's UD service over UDP (docs/wire.md §3.5): one
// Send per datagram, no order, the sender's address with each receive.
constexpr EpTemplate kDgramEp = {FI_EP_DGRAM,
                                 "FI_EP_DGRAM",
                                 FI_MSG | FI_SEND | FI_NAMED_RX_CTX,  // fi_rx_addr (dgram_sep.h)
                                 FI_MSG | FI_RECV | FI_SOURCE,        // FI_SOURCE is a receive cap
                                 FI_ORDER_NONE,
                                 rd::kUdMaxMessage,
                                 0,
                                 false,
                                 0,
                                 kIovLimit,
                                 false,
                                 kMaxDgramCtx};
// FI_EP_RDM: datagram iWARP's RD service (docs/wire.md §3.6-3.10): one RD
// queue pair per peer, so between a pair the same order as on MSG; tagged
// messages; remote CQ data in the message header (no receive consumed).
constexpr EpTemplate kRdmEp = {FI_EP_RDM,
                               "FI_EP_RDM",
                               kTxCaps | FI_TAGGED,
                               kRxCaps | FI_TAGGED | FI_SOURCE | FI_DIRECTED_RECV | FI_MULTI_RECV,
                               kMsgOrder,
                               kMaxMsgSize,
                               kMaxMsgSize,
                               true,
                               kRmaIovLimit,
                               kRdmIovLimit,
                               false,
                               1};
constexpr const EpTemplate* kTemplates[] = {&kMsgEp, &kDgramEp, &kRdmEp};

// The endpoint type whose template the hints are being checked against (for
// the reason lines; null outside that loop).
thread_local const char* tl_checking = nullptr;

int NoMatch(const char* why) {
  IWX_INFO(core, "fi_getinfo: hints not met%s%s: %s\n", tl_checking != nullptr ? " by " : "",
           tl_checking != nullptr ? tl_checking : "", why);
  return -FI_ENODATA;
}

// Capability bits asked for that `offered` lacks, named.
int NoMatchCaps(const char* what, uint64_t asked, uint64_t offered) {
  const uint64_t missing = asked & ~offered;
  char names[512];
  if (fi_tostr_r(names, sizeof(names), &missing, FI_TYPE_CAPS) == nullptr) names[0] = '\0';
  IWX_INFO(core, "fi_getinfo: hints not met%s%s: %s asks for %s (%#lx), not offered\n",
           tl_checking != nullptr ? " by " : "", tl_checking != nullptr ? tl_checking : "", what,
           names, static_cast<unsigned long>(missing));
  return -FI_ENODATA;
}

// One fi_info to build: an address family and the addresses found for it.
struct Candidate {
  int family = AF_UNSPEC;
  sockaddr_storage src{};
  socklen_t src_len = 0;
  sockaddr_storage dst{};
  socklen_t dst_len = 0;
};

constexpr int kMaxCandidates = 2;

socklen_t SockaddrLen(int family) {
  return family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
}

int CheckEpAttr(const struct fi_ep_attr& a, const EpTemplate& t) {
  if (a.type != FI_EP_UNSPEC && a.type != t.type) return NoMatch("ep_type");
  if (a.protocol != FI_PROTO_UNSPEC && a.protocol != FI_PROTO_IWARP) {
    if (a.protocol != FI_PROTO_IWARPX_SCTP) {
      return NoMatch("protocol (FI_PROTO_IWARP, or FI_PROTO_IWARPX_SCTP for FI_EP_MSG)");
    }
    if (t.type != FI_EP_MSG) return NoMatch("protocol (FI_PROTO_IWARPX_SCTP is FI_EP_MSG only)");
  }
  if (a.max_msg_size > t.max_msg_size) return NoMatch("ep_attr max_msg_size");
  if (a.max_order_raw_size > t.max_order_size || a.max_order_waw_size > t.max_order_size ||
      a.max_order_war_size != 0) {
    return NoMatch("ep_attr max_order_*_size (RAW/WAW up to max_msg_size on MSG, no WAR)");
  }
  if (a.tx_ctx_cnt == FI_SHARED_CONTEXT || a.rx_ctx_cnt == FI_SHARED_CONTEXT) {
    return NoMatch("shared contexts are not supported");
  }
  if (a.tx_ctx_cnt > t.max_ctx) return NoMatch("ep_attr tx_ctx_cnt (max_ep_tx_ctx)");
  if (a.rx_ctx_cnt > t.max_ctx) return NoMatch("ep_attr rx_ctx_cnt (max_ep_rx_ctx)");
  if (a.auth_key_size != 0) return NoMatch("auth keys are not supported");
  return 0;
}

int CheckDomainAttr(const struct fi_domain_attr& a, const EpTemplate& t) {
  if (a.name != nullptr && std::strcmp(a.name, kDomainName) != 0) return NoMatch("domain name");
  if (a.mr_key_size > kMrKeySize) return NoMatch("mr_key_size (STags are 4 bytes)");
  if (a.cq_data_size > (t.cq_data ? kCqDataSize : 0)) {
    return NoMatch("cq_data_size (RFC 7306 Immediate Data carries 8 bytes; none on DGRAM)");
  }
  if (a.mr_iov_limit > 1) return NoMatch("mr_iov_limit (one iovec per region)");
  if (a.mr_cnt > GetParams().max_mr) return NoMatch("mr_cnt (FI_IWARPX_MAX_MR)");
  if (a.cq_cnt > kCqCnt || a.cntr_cnt > kCqCnt) return NoMatch("cq_cnt/cntr_cnt");
  if (a.ep_cnt > kEpCnt) return NoMatch("ep_cnt");
  if (a.tx_ctx_cnt > t.max_ctx || a.rx_ctx_cnt > t.max_ctx || a.max_ep_tx_ctx > t.max_ctx ||
      a.max_ep_rx_ctx > t.max_ctx || a.max_ep_stx_ctx != 0 || a.max_ep_srx_ctx != 0) {
    return NoMatch(
        "domain context counts (one TX and one RX context per endpoint; FI_EP_DGRAM scalable "
        "endpoints up to max_ep_tx_ctx/max_ep_rx_ctx; no shared contexts)");
  }
  if (a.auth_key_size != 0) return NoMatch("auth keys are not supported");
  if ((a.caps & ~t.all_caps()) != 0) return NoMatchCaps("domain_attr caps", a.caps, t.all_caps());
  return 0;
}

int CheckTxAttr(const struct fi_tx_attr& a, const EpTemplate& t) {
  if ((a.caps & ~(t.tx_caps | kExtraCaps)) != 0) {
    return NoMatchCaps("tx_attr caps", a.caps, t.tx_caps | kExtraCaps);
  }
  if ((a.msg_order & ~t.msg_order) != 0) return NoMatch("tx_attr msg_order");
  if (a.comp_order != FI_ORDER_NONE) return NoMatch("tx_attr comp_order");
  if (a.inject_size > kInjectSize) return NoMatch("tx_attr inject_size");
  if (a.size > kTxSize) return NoMatch("tx_attr size");
  if (a.iov_limit > kIovLimit) return NoMatch("tx_attr iov_limit");
  if (a.rma_iov_limit > t.rma_iov_limit) return NoMatch("tx_attr rma_iov_limit");
  return 0;
}

int CheckRxAttr(const struct fi_rx_attr& a, const EpTemplate& t) {
  if ((a.caps & ~(t.rx_caps | kExtraCaps)) != 0) {
    return NoMatchCaps("rx_attr caps", a.caps, t.rx_caps | kExtraCaps);
  }
  if ((a.msg_order & ~t.msg_order) != 0) return NoMatch("rx_attr msg_order");
  if (a.comp_order != FI_ORDER_NONE) return NoMatch("rx_attr comp_order");
  if (a.size > kRxSize) return NoMatch("rx_attr size");
  if (a.iov_limit > kIovLimit) return NoMatch("rx_attr iov_limit");
  return 0;
}

// The protocol an endpoint of template t gets: on FI_EP_MSG the hints' choice,
// else FI_IWARPX_LLP's; FI_PROTO_IWARP on every other type.
uint32_t ProtocolFor(const struct fi_info* hints, const EpTemplate& t) {
  if (t.type != FI_EP_MSG) return FI_PROTO_IWARP;
  constexpr uint32_t kUnspec = FI_PROTO_UNSPEC;
  constexpr uint32_t kIwarp = FI_PROTO_IWARP;
  const uint32_t asked =
      hints != nullptr && hints->ep_attr != nullptr ? hints->ep_attr->protocol : kUnspec;
  if (asked != kUnspec) return asked;
  return GetParams().msg_llp == progress::Llp::kSctp ? FI_PROTO_IWARPX_SCTP : kIwarp;
}

// SCTP is offered only where FI_IWARPX_SCTP_BACKEND can run.
int CheckProtocolAvailable(const struct fi_info* hints, const EpTemplate& t) {
  if (ProtocolFor(hints, t) != FI_PROTO_IWARPX_SCTP) return 0;
  auto b = transport::ResolveSctpBackend(GetParams().sctp_backend);
  if (b.ok()) return 0;
  IWX_INFO(core, "fi_getinfo: FI_PROTO_IWARPX_SCTP needs SCTP backend %s, which cannot run: %s\n",
           transport::ToString(GetParams().sctp_backend), strerror(b.error().err));
  return -FI_ENODATA;
}

int CheckHints(const struct fi_info& h, const EpTemplate& t) {
  if ((h.caps & ~t.all_caps()) != 0) return NoMatchCaps("caps", h.caps, t.all_caps());
  const uint64_t mode = h.mode | (h.rx_attr != nullptr ? h.rx_attr->mode : 0);
  if (t.rx_cq_data_mode && h.domain_attr != nullptr && h.domain_attr->cq_data_size != 0 &&
      (mode & FI_RX_CQ_DATA) == 0) {
    return NoMatch("cq_data_size without FI_RX_CQ_DATA mode (Immediate Data takes a receive)");
  }
  if (h.ep_attr != nullptr) {
    if (const int r = CheckEpAttr(*h.ep_attr, t); r != 0) return r;
  }
  if (h.domain_attr != nullptr) {
    if (const int r = CheckDomainAttr(*h.domain_attr, t); r != 0) return r;
  }
  if (h.tx_attr != nullptr) {
    if (const int r = CheckTxAttr(*h.tx_attr, t); r != 0) return r;
  }
  if (h.rx_attr != nullptr) {
    if (const int r = CheckRxAttr(*h.rx_attr, t); r != 0) return r;
  }
  if (h.fabric_attr != nullptr && h.fabric_attr->name != nullptr &&
      std::strcmp(h.fabric_attr->name, kFabricName) != 0) {
    return NoMatch("fabric name");
  }
  return 0;
}

// Which families hints->addr_format allows (bit 0 IPv4, bit 1 IPv6); 0: none.
int AllowedFamilies(const struct fi_info* hints) {
  if (hints == nullptr) return 3;
  switch (hints->addr_format) {
    case FI_FORMAT_UNSPEC:
    case FI_SOCKADDR: return 3;
    case FI_SOCKADDR_IN: return 1;
    case FI_SOCKADDR_IN6: return 2;
    default: return 0;
  }
}

bool FamilyAllowed(int allowed, int family) {
  return (family == AF_INET && (allowed & 1) != 0) || (family == AF_INET6 && (allowed & 2) != 0);
}

// Validates a sockaddr from hints; its family, or AF_UNSPEC when unusable.
int HintAddrFamily(const void* addr, size_t len) {
  if (addr == nullptr || len < sizeof(sa_family_t)) return AF_UNSPEC;
  const int family = static_cast<const sockaddr*>(addr)->sa_family;
  if ((family != AF_INET && family != AF_INET6) || len < SockaddrLen(family)) return AF_UNSPEC;
  return family;
}

Candidate* FindOrAdd(Candidate* c, int* n, int family) {
  for (int i = 0; i < *n; ++i) {
    if (c[i].family == family) return nullptr;  // first address per family wins
  }
  if (*n == kMaxCandidates) return nullptr;
  c[*n].family = family;
  return &c[(*n)++];
}

int ResolveNode(const char* node, const char* service, uint64_t flags, const struct fi_info* hints,
                int allowed, Candidate* c, int* n) {
  addrinfo ai_hints{};
  ai_hints.ai_family = allowed == 1 ? AF_INET : allowed == 2 ? AF_INET6 : AF_UNSPEC;
  ai_hints.ai_socktype = SOCK_STREAM;
  if ((flags & FI_NUMERICHOST) != 0) ai_hints.ai_flags |= AI_NUMERICHOST;
  if ((flags & FI_SOURCE) != 0 && node == nullptr) ai_hints.ai_flags |= AI_PASSIVE;
  addrinfo* res = nullptr;
  if (const int rc = getaddrinfo(node, service, &ai_hints, &res); rc != 0) {
    IWX_WARN(core, "fi_getinfo: cannot resolve node '%s' service '%s': %s\n",
             node != nullptr ? node : "(null)", service != nullptr ? service : "(null)",
             gai_strerror(rc));
    return -FI_ENODATA;
  }
  const bool source = (flags & FI_SOURCE) != 0;
  const int hint_src_family =
      hints != nullptr ? HintAddrFamily(hints->src_addr, hints->src_addrlen) : AF_UNSPEC;
  for (const addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    if (!FamilyAllowed(allowed, ai->ai_family) || ai->ai_addrlen > sizeof(sockaddr_storage)) {
      continue;
    }
    Candidate* cand = FindOrAdd(c, n, ai->ai_family);
    if (cand == nullptr) continue;
    if (source) {
      std::memcpy(&cand->src, ai->ai_addr, ai->ai_addrlen);
      cand->src_len = ai->ai_addrlen;
    } else {
      std::memcpy(&cand->dst, ai->ai_addr, ai->ai_addrlen);
      cand->dst_len = ai->ai_addrlen;
      if (hint_src_family == ai->ai_family) {
        cand->src_len = SockaddrLen(hint_src_family);
        std::memcpy(&cand->src, hints->src_addr, cand->src_len);
      }
    }
  }
  freeaddrinfo(res);
  return 0;
}

int FromHintAddrs(const struct fi_info& h, int allowed, Candidate* c, int* n) {
  const int sf = HintAddrFamily(h.src_addr, h.src_addrlen);
  const int df = HintAddrFamily(h.dest_addr, h.dest_addrlen);
  if ((h.src_addr != nullptr && sf == AF_UNSPEC) || (h.dest_addr != nullptr && df == AF_UNSPEC)) {
    IWX_WARN(core, "fi_getinfo: hints src_addr/dest_addr is not a sockaddr_in/in6 of its length\n");
    return -FI_EINVAL;
  }
  if (sf != AF_UNSPEC && df != AF_UNSPEC && sf != df) {
    IWX_WARN(core, "fi_getinfo: hints src_addr and dest_addr are of different families\n");
    return -FI_EINVAL;
  }
  const int family = sf != AF_UNSPEC ? sf : df;
  if (!FamilyAllowed(allowed, family)) return NoMatch("addr_format vs src_addr/dest_addr");
  Candidate* cand = FindOrAdd(c, n, family);
  if (sf != AF_UNSPEC) {
    cand->src_len = SockaddrLen(sf);
    std::memcpy(&cand->src, h.src_addr, cand->src_len);
  }
  if (df != AF_UNSPEC) {
    cand->dst_len = SockaddrLen(df);
    std::memcpy(&cand->dst, h.dest_addr, cand->dst_len);
  }
  return 0;
}

// Address families with an interface that is up (both when that cannot be told).
void LocalFamilies(int allowed, Candidate* c, int* n) {
  bool has4 = false;
  bool has6 = false;
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) {
    has4 = has6 = true;
  } else {
    for (const ifaddrs* i = ifs; i != nullptr; i = i->ifa_next) {
      if (i->ifa_addr == nullptr || (i->ifa_flags & IFF_UP) == 0) continue;
      has4 = has4 || i->ifa_addr->sa_family == AF_INET;
      has6 = has6 || i->ifa_addr->sa_family == AF_INET6;
    }
    freeifaddrs(ifs);
  }
  if (has4 && FamilyAllowed(allowed, AF_INET)) FindOrAdd(c, n, AF_INET);
  if (has6 && FamilyAllowed(allowed, AF_INET6)) FindOrAdd(c, n, AF_INET6);
}

// hints->handle: the address of the passive endpoint it names (empty when
// the pep has none), or -FI_E* when the provider cannot use the handle.
int HandleAddress(struct fid* handle, transport::SockAddr* addr) {
  if (handle->fclass != FI_CLASS_PEP) {
    IWX_WARN(core,
             "fi_getinfo: hints->handle of class %zu: only a passive endpoint (FI_CLASS_PEP) "
             "can be given\n",
             handle->fclass);
    return -FI_EINVAL;
  }
  PassiveEndpoint* pep = PassiveEndpoint::From(handle);
  if (pep == nullptr) return NoMatch("hints->handle is another provider's passive endpoint");
  *addr = pep->Name();
  return 0;
}

// Every candidate takes the pep's address as its source; the other family
// cannot use it and is dropped.
void UsePepAddress(const transport::SockAddr& addr, Candidate* c, int* n) {
  int kept = 0;
  for (int k = 0; k < *n; ++k) {
    if (c[k].family != addr.family()) continue;
    c[kept] = c[k];
    std::memcpy(&c[kept].src, addr.sa(), addr.length());
    c[kept].src_len = addr.length();
    ++kept;
  }
  *n = kept;
}

uint64_t CapsFor(uint64_t requested, const EpTemplate& t) {
  if (requested == 0) return t.all_caps();
  uint64_t caps = requested | kExtraCaps;
  if ((caps & FI_MSG) != 0 && (caps & (FI_SEND | FI_RECV)) == 0) caps |= FI_SEND | FI_RECV;
  if ((caps & (FI_RMA | FI_ATOMIC)) != 0 && (caps & kRmaDirections) == 0) caps |= kRmaDirections;
  return caps;
}

void* CopyAddr(const sockaddr_storage& a, socklen_t len) {
  void* p = std::malloc(len);
  if (p != nullptr) std::memcpy(p, &a, len);
  return p;
}

struct fi_info* Build(const Candidate& c, const struct fi_info* hints, uint32_t version,
                      const EpTemplate& t) {
  struct fi_info* i = fi_allocinfo();
  if (i == nullptr) return nullptr;
  i->caps = CapsFor(hints != nullptr ? hints->caps : 0, t);
  i->mode = 0;
  // FI_REMOTE_CQ_DATA travels as RFC 7306 Immediate Data, which consumes a
  // posted receive at the target: that is libfabric's FI_RX_CQ_DATA mode. An
  // application that does not accept the mode gets no remote CQ data.
  const bool rx_cq_data_ok =
      t.cq_data && (!t.rx_cq_data_mode || hints == nullptr ||
                    ((hints->mode | (hints->rx_attr != nullptr ? hints->rx_attr->mode : 0)) &
                     FI_RX_CQ_DATA) != 0);
  if (rx_cq_data_ok && t.rx_cq_data_mode) i->mode |= FI_RX_CQ_DATA;
  i->addr_format = c.family == AF_INET ? FI_SOCKADDR_IN : FI_SOCKADDR_IN6;
  if (c.src_len != 0) {
    i->src_addr = CopyAddr(c.src, c.src_len);
    i->src_addrlen = i->src_addr != nullptr ? c.src_len : 0;
  } else {
    // No source asked for: the wildcard address of the family, port 0 (the
    // kernel picks the interface and port at connect or listen time).
    sockaddr_storage any{};
    any.ss_family = static_cast<sa_family_t>(c.family);
    const socklen_t len = SockaddrLen(c.family);
    i->src_addr = CopyAddr(any, len);
    i->src_addrlen = i->src_addr != nullptr ? len : 0;
  }
  if (c.dst_len != 0) {
    i->dest_addr = CopyAddr(c.dst, c.dst_len);
    i->dest_addrlen = i->dest_addr != nullptr ? c.dst_len : 0;
  }

  struct fi_tx_attr& tx = *i->tx_attr;
  // FI_LOCAL_COMM/FI_REMOTE_COMM are domain capabilities: info->caps only.
  tx.caps = i->caps & t.tx_caps;
  tx.msg_order = t.msg_order;
  tx.comp_order = FI_ORDER_NONE;
  tx.inject_size = kInjectSize;
  tx.size = hints != nullptr && hints->tx_attr != nullptr && hints->tx_attr->size != 0
                ? hints->tx_attr->size
                : kTxSize;
  tx.iov_limit = t.iov_limit;
  // The default flags of data calls are the application's (fi_endpoint(3)):
  // e.g. FI_COMPLETION with FI_SELECTIVE_COMPLETION binds, as Open MPI's mtl ofi does.
  if (hints != nullptr && hints->tx_attr != nullptr) tx.op_flags = hints->tx_attr->op_flags;
  tx.rma_iov_limit = t.rma_iov_limit;

  struct fi_rx_attr& rx = *i->rx_attr;
  rx.caps = i->caps & t.rx_caps;
  rx.msg_order = t.msg_order;
  rx.mode = i->mode & FI_RX_CQ_DATA;
  rx.comp_order = FI_ORDER_NONE;
  rx.size = hints != nullptr && hints->rx_attr != nullptr && hints->rx_attr->size != 0
                ? hints->rx_attr->size
                : kRxSize;
  rx.iov_limit = t.iov_limit;
  if (hints != nullptr && hints->rx_attr != nullptr) rx.op_flags = hints->rx_attr->op_flags;

  struct fi_ep_attr& ep = *i->ep_attr;
  ep.type = t.type;
  // RDMAP/DDP over MPA/TCP or over datagrams (wire.md), or over SCTP on MSG.
  ep.protocol = ProtocolFor(hints, t);
  ep.protocol_version = 1;  // RDMAP version 1 (RFC 5040)
  ep.max_msg_size = t.max_msg_size;
  // MSG: RAW and WAW hold for whole messages (one in-order stream); WAR does not.
  ep.max_order_raw_size = t.max_order_size;
  ep.max_order_waw_size = t.max_order_size;
  ep.max_order_war_size = 0;
  // The context counts asked for (a scalable endpoint's), else one of each.
  const struct fi_ep_attr* he = hints != nullptr ? hints->ep_attr : nullptr;
  ep.tx_ctx_cnt = he != nullptr && he->tx_ctx_cnt != 0 ? he->tx_ctx_cnt : 1;
  ep.rx_ctx_cnt = he != nullptr && he->rx_ctx_cnt != 0 ? he->rx_ctx_cnt : 1;
  if ((i->caps & FI_TAGGED) != 0) ep.mem_tag_format = kTagGeneric;

  struct fi_domain_attr& d = *i->domain_attr;
  d.name = strdup(kDomainName);
  const enum fi_threading threading = hints != nullptr && hints->domain_attr != nullptr
                                          ? hints->domain_attr->threading
                                          : FI_THREAD_UNSPEC;
  d.threading = threading != FI_THREAD_UNSPEC ? threading : FI_THREAD_SAFE;
  // Progress: what the application asks for; otherwise manual unless
  // FI_IWARPX_PROGRESS_THREAD makes the provider run its progress thread.
  const enum fi_progress dflt = GetParams().progress_thread ? FI_PROGRESS_AUTO : FI_PROGRESS_MANUAL;
  const struct fi_domain_attr* hd = hints != nullptr ? hints->domain_attr : nullptr;
  d.control_progress =
      hd != nullptr && hd->control_progress != FI_PROGRESS_UNSPEC ? hd->control_progress : dflt;
  d.data_progress =
      hd != nullptr && hd->data_progress != FI_PROGRESS_UNSPEC ? hd->data_progress : dflt;
  d.resource_mgmt = FI_RM_ENABLED;
  d.av_type = FI_AV_UNSPEC;
  d.mr_mode = static_cast<int>(MrModeFor(hints, version));
  d.mr_key_size = kMrKeySize;
  d.cq_data_size = rx_cq_data_ok ? kCqDataSize : 0;
  d.cq_cnt = kCqCnt;
  d.ep_cnt = kEpCnt;
  d.tx_ctx_cnt = t.max_ctx;
  d.rx_ctx_cnt = t.max_ctx;
  d.max_ep_tx_ctx = t.max_ctx;
  d.max_ep_rx_ctx = t.max_ctx;
  d.cntr_cnt = kCqCnt;
  d.mr_iov_limit = 1;
  d.caps = kExtraCaps;
  d.mr_cnt = GetParams().max_mr;

  i->fabric_attr->name = strdup(kFabricName);
  if (d.name == nullptr || i->fabric_attr->name == nullptr ||
      (c.src_len != 0 && i->src_addr == nullptr) || (c.dst_len != 0 && i->dest_addr == nullptr)) {
    fi_freeinfo(i);
    return nullptr;
  }
  return i;
}

}  // namespace

uint64_t MrModeFor(const struct fi_info* hints, uint32_t version) {
  constexpr uint64_t kBasic = FI_MR_BASIC;
  constexpr uint64_t kScalable = FI_MR_SCALABLE;
  const bool legacy = version < FI_VERSION(1, 5);
  if (hints == nullptr || hints->domain_attr == nullptr) {
    return legacy ? kBasic : kPreferredMrMode;
  }
  const auto user = static_cast<uint64_t>(hints->domain_attr->mr_mode);
  if (legacy) return user == kScalable ? kScalable : kBasic;
  if ((user & kBasic) != 0) return kBasic;
  if ((user & kScalable) != 0) return kScalable;
  return user & kPreferredMrMode;
}

uint64_t EffectiveMrMode(const struct fi_info* info, uint32_t version) {
  if (info == nullptr || info->domain_attr == nullptr) return kPreferredMrMode;
  const auto mode = static_cast<uint64_t>(info->domain_attr->mr_mode);
  if (mode == FI_MR_BASIC || (mode == FI_MR_UNSPEC && version < FI_VERSION(1, 5))) {
    return kPreferredMrMode;
  }
  if (mode == FI_MR_SCALABLE) return 0;
  return mode & kPreferredMrMode;
}

int CheckDomainInfo(const struct fi_info* info) {
  if (info->ep_attr != nullptr && info->ep_attr->type != FI_EP_UNSPEC &&
      info->ep_attr->type != FI_EP_MSG && info->ep_attr->type != FI_EP_DGRAM &&
      info->ep_attr->type != FI_EP_RDM) {
    IWX_WARN(domain,
             "fi_domain: ep_type %d is not provided by iwarpx (FI_EP_MSG, FI_EP_DGRAM, "
             "FI_EP_RDM)\n",
             static_cast<int>(info->ep_attr->type));
    return -FI_EINVAL;
  }
  return 0;
}

int Getinfo(uint32_t version, const char* node, const char* service, uint64_t flags,
            const struct fi_info* hints, struct fi_info** info) {
  if (info == nullptr) return -FI_EINVAL;
  *info = nullptr;
  if ((flags & kCoreProvOnly) != 0) {
    return NoMatch(
        "no layering of utility providers (ofi_rxm): iwarpx has its own RDM endpoint "
        "plans (issue 5)");
  }
  // The endpoint types whose template the hints match.
  const EpTemplate* types[std::size(kTemplates)] = {};
  size_t ntypes = 0;
  for (const EpTemplate* t : kTemplates) {
    tl_checking = t->name;
    if ((hints == nullptr || CheckHints(*hints, *t) == 0) &&
        CheckProtocolAvailable(hints, *t) == 0) {
      types[ntypes++] = t;
    }
    tl_checking = nullptr;
  }
  if (ntypes == 0) return -FI_ENODATA;
  const int allowed = AllowedFamilies(hints);
  if (allowed == 0) return NoMatch("addr_format (FI_SOCKADDR, FI_SOCKADDR_IN or FI_SOCKADDR_IN6)");
  transport::SockAddr pep_addr;
  if (hints != nullptr && hints->handle != nullptr) {
    if (const int r = HandleAddress(hints->handle, &pep_addr); r != 0) return r;
  }

  Candidate cands[kMaxCandidates];
  int n = 0;
  int ret = 0;
  if (node != nullptr || service != nullptr) {
    ret = ResolveNode(node, service, flags, hints, allowed, cands, &n);
  } else if (hints != nullptr && (hints->src_addr != nullptr || hints->dest_addr != nullptr)) {
    ret = FromHintAddrs(*hints, allowed, cands, &n);
  } else {
    LocalFamilies(allowed, cands, &n);
  }
  if (ret != 0) return ret;
  if (n == 0) return NoMatch("no local or resolved address of an allowed family");
  if (pep_addr.valid()) {
    UsePepAddress(pep_addr, cands, &n);
    if (n == 0) return NoMatch("addr_format/node vs the family of hints->handle's address");
  }

  struct fi_info* head = nullptr;
  struct fi_info** tail = &head;
  for (size_t t = 0; t < ntypes; ++t) {
    // A passive endpoint's handle belongs to connected endpoints only.
    if (pep_addr.valid() && types[t]->type != FI_EP_MSG) continue;
    for (int k = 0; k < n; ++k) {
      struct fi_info* i = Build(cands[k], hints, version, *types[t]);
      if (i == nullptr) {
        fi_freeinfo(head);
        return -FI_ENOMEM;
      }
      if (hints != nullptr) i->handle = hints->handle;
      *tail = i;
      tail = &i->next;
    }
  }
  *info = head;
  return 0;
}

}  // namespace iwarpx::ofi
