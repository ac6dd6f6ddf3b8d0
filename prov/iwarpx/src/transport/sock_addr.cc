#include "transport/sock_addr.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "base/hash.h"

namespace iwarpx::transport {
namespace {

bool ParsePort(std::string_view service, uint16_t& port) {
  if (service.empty() || service.size() > 5) return false;
  unsigned value = 0;
  const char* end = service.data() + service.size();
  auto [ptr, ec] = std::from_chars(service.data(), end, value);
  if (ec != std::errc() || ptr != end || value > 65535) return false;
  port = static_cast<uint16_t>(value);
  return true;
}

Result<SockAddr, AddrError> Lookup(std::string_view node, std::string_view service, bool passive,
                                   int family, bool numeric) {
  uint16_t port = 0;
  if (!ParsePort(service, port)) return Err{AddrError::kBadPort};
  if (family != AF_UNSPEC && family != AF_INET && family != AF_INET6) {
    return Err{AddrError::kFamilyMismatch};
  }
  addrinfo hints{};
  hints.ai_family = family;
  hints.ai_socktype = SOCK_STREAM;  // one entry per address, not one per socket type
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0) | (numeric ? AI_NUMERICHOST : 0);
  const std::string node_str(node);
  const std::string service_str(service);
  addrinfo* list = nullptr;
  const int rc =
      ::getaddrinfo(node.empty() ? nullptr : node_str.c_str(), service_str.c_str(), &hints, &list);
  if (rc != 0) {
    switch (rc) {
      case EAI_NONAME: return Err{AddrError::kBadHost};
      case EAI_ADDRFAMILY:
      case EAI_FAMILY:
      case EAI_NODATA:
        return Err{family == AF_UNSPEC ? AddrError::kBadHost : AddrError::kFamilyMismatch};
      default: return Err{AddrError::kResolverFailure};
    }
  }
  std::optional<SockAddr> found;
  for (const addrinfo* ai = list; ai != nullptr && !found; ai = ai->ai_next) {
    found = SockAddr::FromRaw(ai->ai_addr, ai->ai_addrlen);
  }
  ::freeaddrinfo(list);
  if (!found) return Err{AddrError::kFamilyMismatch};
  return *found;
}

}  // namespace

const char* AddrErrorName(AddrError e) {
  switch (e) {
    case AddrError::kBadHost: return "bad host";
    case AddrError::kBadPort: return "bad port";
    case AddrError::kBadFormat: return "bad host:port format";
    case AddrError::kFamilyMismatch: return "no address of the requested family";
    case AddrError::kResolverFailure: return "resolver failure";
  }
  return "unknown";
}

SockAddr::SockAddr() : storage_{} {
  // Every byte: brace initialisation of the union sets its first member only.
  std::memset(&storage_, 0, sizeof(storage_));
  storage_.sa.sa_family = AF_UNSPEC;
}

Result<SockAddr, AddrError> SockAddr::Parse(std::string_view node, std::string_view service,
                                            bool passive, int family) {
  return Lookup(node, service, passive, family, /*numeric=*/true);
}

Result<SockAddr, AddrError> SockAddr::Resolve(std::string_view node, std::string_view service,
                                              bool passive, int family) {
  return Lookup(node, service, passive, family, /*numeric=*/false);
}

Result<SockAddr, AddrError> SockAddr::ParseHostPort(std::string_view text) {
  std::string_view host;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return Err{AddrError::kBadFormat};
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
    if (host.find(':') == std::string_view::npos) return Err{AddrError::kBadFormat};
    auto r = Parse(host, port, false, AF_INET6);
    if (!r.ok() && r.error() == AddrError::kFamilyMismatch) return Err{AddrError::kBadHost};
    return r;
  }
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return Err{AddrError::kBadFormat};
  host = text.substr(0, colon);
  port = text.substr(colon + 1);
  // An unbracketed IPv6 address is ambiguous ("::1:80"); require brackets.
  if (host.empty() || host.find(':') != std::string_view::npos) return Err{AddrError::kBadFormat};
  auto r = Parse(host, port, false, AF_INET);
  if (!r.ok() && r.error() == AddrError::kFamilyMismatch) return Err{AddrError::kBadHost};
  return r;
}

std::optional<SockAddr> SockAddr::FromRaw(const sockaddr* sa, socklen_t length) {
  if (sa == nullptr || length > sizeof(sockaddr_storage)) return std::nullopt;
  SockAddr out;
  // The first capacity() bytes hold any AF_INET/AF_INET6 address; Adopt
  // checks the family and that `length` covers its struct.
  std::memcpy(out.raw(), sa, std::min<size_t>(length, capacity()));
  if (!out.Adopt(length)) return std::nullopt;
  return out;
}

bool SockAddr::Adopt(socklen_t length) {
  socklen_t want = 0;
  if (storage_.sa.sa_family == AF_INET) want = sizeof(sockaddr_in);
  if (storage_.sa.sa_family == AF_INET6) want = sizeof(sockaddr_in6);
  if (want == 0 || length < want) {
    *this = SockAddr();
    return false;
  }
  length_ = want;
  return true;
}

SockAddr SockAddr::Loopback4(uint16_t port) {
  SockAddr out;
  auto* in = reinterpret_cast<sockaddr_in*>(&out.storage_);
  in->sin_family = AF_INET;
  in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  in->sin_port = htons(port);
  out.length_ = sizeof(sockaddr_in);
  return out;
}

SockAddr SockAddr::Any4(uint16_t port) {
  SockAddr out = Loopback4(port);
  reinterpret_cast<sockaddr_in*>(&out.storage_)->sin_addr.s_addr = htonl(INADDR_ANY);
  return out;
}

SockAddr SockAddr::Loopback6(uint16_t port) {
  SockAddr out;
  auto* in6 = reinterpret_cast<sockaddr_in6*>(&out.storage_);
  in6->sin6_family = AF_INET6;
  in6->sin6_addr = in6addr_loopback;
  in6->sin6_port = htons(port);
  out.length_ = sizeof(sockaddr_in6);
  return out;
}

SockAddr SockAddr::Any6(uint16_t port) {
  SockAddr out = Loopback6(port);
  reinterpret_cast<sockaddr_in6*>(&out.storage_)->sin6_addr = in6addr_any;
  return out;
}

uint16_t SockAddr::port() const {
  if (storage_.sa.sa_family == AF_INET) {
    return ntohs(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_port);
  }
  if (storage_.sa.sa_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_port);
  }
  return 0;
}

void SockAddr::set_port(uint16_t port) {
  if (storage_.sa.sa_family == AF_INET) {
    reinterpret_cast<sockaddr_in*>(&storage_)->sin_port = htons(port);
  } else if (storage_.sa.sa_family == AF_INET6) {
    reinterpret_cast<sockaddr_in6*>(&storage_)->sin6_port = htons(port);
  }
}

std::string SockAddr::ToString() const {
  char host[INET6_ADDRSTRLEN + 16] = {};
  if (storage_.sa.sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&storage_);
    ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    return std::string(host) + ":" + std::to_string(port());
  }
  if (storage_.sa.sa_family == AF_INET6) {
    // getnameinfo appends "%scope" for scoped (link-local) addresses.
    if (::getnameinfo(sa(), length_, host, sizeof(host), nullptr, 0, NI_NUMERICHOST) != 0) {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&storage_);
      ::inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    }
    return "[" + std::string(host) + "]:" + std::to_string(port());
  }
  return "";
}

bool operator==(const SockAddr& a, const SockAddr& b) {
  if (a.length_ != b.length_ || a.family() != b.family()) return false;
  if (a.family() == AF_INET) {
    const auto* x = reinterpret_cast<const sockaddr_in*>(&a.storage_);
    const auto* y = reinterpret_cast<const sockaddr_in*>(&b.storage_);
    return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
  }
  if (a.family() == AF_INET6) {
    const auto* x = reinterpret_cast<const sockaddr_in6*>(&a.storage_);
    const auto* y = reinterpret_cast<const sockaddr_in6*>(&b.storage_);
    return x->sin6_port == y->sin6_port && x->sin6_flowinfo == y->sin6_flowinfo &&
           x->sin6_scope_id == y->sin6_scope_id &&
           std::memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(in6_addr)) == 0;
  }
  return true;  // both empty
}

bool SockAddr::is_loopback() const {
  if (family() == AF_INET) {
    const auto* s4 = reinterpret_cast<const sockaddr_in*>(&storage_);
    return (ntohl(s4->sin_addr.s_addr) >> 24) == 127;
  }
  if (family() == AF_INET6) {
    const auto* s6 = reinterpret_cast<const sockaddr_in6*>(&storage_);
    if (IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr)) return true;
    return IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr) && s6->sin6_addr.s6_addr[12] == 127;
  }
  return false;
}

bool SockAddr::is_any() const {
  if (family() == AF_INET) {
    return reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr.s_addr == htonl(INADDR_ANY);
  }
  if (family() == AF_INET6) {
    return IN6_IS_ADDR_UNSPECIFIED(&reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr);
  }
  return false;
}

SockAddr SockAddr::HostLocal() const {
  if (!is_any()) return *this;
  return is_ipv6() ? Loopback6(port()) : Loopback4(port());
}

size_t SockAddrHash::operator()(const SockAddr& a) const {
  // The fields operator== compares (flowinfo aside: a hash may ignore a field
  // that equality checks), a 64-bit word at a time (base/hash.h).
  const int family = a.family();
  const uint64_t head = (uint64_t{static_cast<uint16_t>(family)} << 16) | a.port();
  if (family == AF_INET) {
    uint32_t addr = 0;
    std::memcpy(&addr, &reinterpret_cast<const sockaddr_in*>(a.sa())->sin_addr, sizeof(addr));
    return static_cast<size_t>(HashMix((head << 32) | addr));
  }
  if (family == AF_INET6) {
    const auto* s6 = reinterpret_cast<const sockaddr_in6*>(a.sa());
    uint64_t w[2] = {0, 0};
    std::memcpy(w, &s6->sin6_addr, sizeof(w));
    const uint64_t h = HashMix(head ^ (uint64_t{s6->sin6_scope_id} << 32));
    return static_cast<size_t>(HashCombine(HashCombine(h, w[0]), w[1]));
  }
  return static_cast<size_t>(HashMix(head));
}

}  // namespace iwarpx::transport
