// fi_getinfo for the provider: the FI_EP_MSG template, hint matching and
// address resolution.
//
// Contract
// - Getinfo follows fi_getinfo(3): a non-zero hint the provider cannot meet
//   gives -FI_ENODATA (logged at INFO, saying which hint); zero hints are
//   wildcards; node/service go through getaddrinfo into src_addr (FI_SOURCE)
//   or dest_addr; one fi_info per address family (IPv4 -> FI_SOCKADDR_IN,
//   IPv6 -> FI_SOCKADDR_IN6) that matches. The list is allocated with
//   fi_allocinfo, so the application frees it with fi_freeinfo.
// - hints->handle (fi_getinfo(3)): an iwarpx passive endpoint is copied to
//   every returned fi_info, whose src_addr becomes the pep's address (its
//   fi_setname/listening address or src_addr; fi_infos of the other address
//   family are left out). Another provider's pep gives -FI_ENODATA; a handle
//   of any other class -FI_EINVAL (logged).
// - The attributes are those of the finished MSG provider, so nothing a user
//   relies on changes when endpoints land (they return -FI_ENOSYS until then).
// - The limits below are shared by getinfo and the objects that enforce them.
// Thread-safe (reads only Params and its arguments).
#pragma once

#include <cstddef>
#include <cstdint>

#include <rdma/fabric.h>

namespace iwarpx::ofi {

inline constexpr const char* kDomainName = "iwarpx";

inline constexpr uint64_t kTxCaps = FI_MSG | FI_RMA | FI_ATOMIC | FI_SEND | FI_READ | FI_WRITE;
inline constexpr uint64_t kRxCaps =
    FI_MSG | FI_RMA | FI_ATOMIC | FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE;
inline constexpr uint64_t kCaps = kTxCaps | kRxCaps;

// mr_mode when the application leaves it to the provider. FI_MR_VIRT_ADDR |
// FI_MR_PROV_KEY | FI_MR_ALLOCATED is exactly FI_MR_BASIC's meaning, the mode
// every RDMA-style consumer handles (Open MPI's btl/ofi and mtl/ofi, fabtests,
// the verbs provider's users): peers address regions by virtual address with
// a key the provider chose (a random STag, as RFC 5040 wants). FI_MR_LOCAL is
// not required: the engine copies from or receives into any local buffer, so
// descriptors may be NULL. Every bit is optional: an application that clears
// FI_MR_PROV_KEY chooses keys, one that clears FI_MR_VIRT_ADDR uses offsets.
inline constexpr uint64_t kPreferredMrMode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED;

inline constexpr size_t kMaxMsgSize = size_t{1} << 31;
inline constexpr size_t kTxSize = 1024;
inline constexpr size_t kRxSize = 1024;
inline constexpr size_t kDefaultTxSize = 256;  // when tx_attr->size is 0
inline constexpr size_t kDefaultRxSize = 256;
// ULP private data in MPA Request/Reply frames: 512 bytes less the 4-byte
// RFC 6581 IRD/ORD block (FI_OPT_CM_DATA_SIZE).
inline constexpr size_t kMaxCmData = 508;
inline constexpr size_t kIovLimit = 4;
inline constexpr size_t kRdmIovLimit = 3;  // the RDM header takes one SGE
inline constexpr size_t kRmaIovLimit = 1;
inline constexpr size_t kInjectSize = 64;
inline constexpr size_t kMrKeySize = 4;   // an STag
inline constexpr size_t kCqDataSize = 8;  // RFC 7306 Immediate Data (fi_writedata)
inline constexpr size_t kDefaultCqSize = 1024;
inline constexpr size_t kMaxCqSize = size_t{1} << 20;
inline constexpr size_t kDefaultEqSize = 256;
inline constexpr size_t kMaxEqSize = size_t{1} << 16;
inline constexpr size_t kCqCnt = 256;
inline constexpr size_t kEpCnt = 4096;
// Transmit and receive contexts of one FI_EP_DGRAM scalable endpoint
// (domain_attr->max_ep_tx_ctx / max_ep_rx_ctx); the other types have one.
inline constexpr size_t kMaxDgramCtx = 16;

// The provider's getinfo() entry point.
int Getinfo(uint32_t version, const char* node, const char* service, uint64_t flags,
            const struct fi_info* hints, struct fi_info** info);

// The mr_mode returned for `hints` (nullptr: none) at API `version`.
uint64_t MrModeFor(const struct fi_info* hints, uint32_t version);
// The FI_MR_* bits a domain opened with `info` works by (FI_MR_BASIC
// expanded to kPreferredMrMode, FI_MR_SCALABLE to none).
uint64_t EffectiveMrMode(const struct fi_info* info, uint32_t version);
// 0, or -FI_EINVAL (logged) when `info` asks fi_domain for something getinfo
// would never have returned.
int CheckDomainInfo(const struct fi_info* info);

}  // namespace iwarpx::ofi
