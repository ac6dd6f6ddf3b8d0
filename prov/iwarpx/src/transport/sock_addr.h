// SockAddr: an IPv4 or IPv6 socket address (room for a sockaddr_in6 +
// length: 32 bytes, not a 128-byte sockaddr_storage, since an RDM endpoint
// keeps a few per peer).
//
// Contract
// - A value type; a default-constructed SockAddr is empty (family AF_UNSPEC,
//   length 0, valid() false). Every factory yields either an AF_INET address
//   of sizeof(sockaddr_in) bytes or an AF_INET6 one of sizeof(sockaddr_in6).
// - Parse() takes numeric hosts only ("1.2.3.4", "::1", "fe80::1%lo") and
//   never touches DNS; Resolve() also accepts names (getaddrinfo, may block on
//   a resolver: call it at setup time, never from the progress path) and
//   returns the first address. The service is always a decimal port 0..65535
//   (port 0 = "let the kernel choose" when binding). An empty node with
//   `passive` gives the wildcard address (for bind); an empty node without it
//   gives loopback, as getaddrinfo does.
// - ParseHostPort() reads the ToString() format back: "1.2.3.4:5678",
//   "[::1]:5678".
// - operator== compares family, address, port (and, for IPv6, flowinfo and
//   scope id); the bytes of sockaddr_storage beyond length() never matter.
// - Not thread-safe (plain value); const methods may be used concurrently.
//   Used later as libfabric FI_SOCKADDR_IN / FI_SOCKADDR_IN6 addresses.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace iwarpx::transport {

enum class AddrError : uint8_t {
  kBadHost,          // not a numeric IPv4/IPv6 address (Parse), or the name is unknown
  kBadPort,          // service is not a decimal number in 0..65535
  kBadFormat,        // ParseHostPort: missing ':' or ']' / empty part
  kFamilyMismatch,   // the host has no address of the requested family
  kResolverFailure,  // getaddrinfo failed for another reason (EAI_AGAIN, EAI_MEMORY, ...)
};

const char* AddrErrorName(AddrError e);

class SockAddr {
 public:
  SockAddr();

  // `family` is AF_UNSPEC, AF_INET or AF_INET6.
  static Result<SockAddr, AddrError> Parse(std::string_view node, std::string_view service,
                                           bool passive = false, int family = AF_UNSPEC);
  static Result<SockAddr, AddrError> Resolve(std::string_view node, std::string_view service,
                                             bool passive = false, int family = AF_UNSPEC);
  static Result<SockAddr, AddrError> ParseHostPort(std::string_view text);
  // Copies a kernel-provided address; nullopt unless AF_INET/AF_INET6 with a
  // length at least the family's struct size.
  static std::optional<SockAddr> FromRaw(const sockaddr* sa, socklen_t length);

  static SockAddr Loopback4(uint16_t port = 0);
  static SockAddr Loopback6(uint16_t port = 0);
  static SockAddr Any4(uint16_t port = 0);
  static SockAddr Any6(uint16_t port = 0);

  [[nodiscard]] bool valid() const { return length_ != 0; }
  [[nodiscard]] int family() const { return storage_.sa.sa_family; }
  [[nodiscard]] bool is_ipv6() const { return storage_.sa.sa_family == AF_INET6; }
  // 127.0.0.0/8, ::1 or an IPv4-mapped 127/8 address.
  [[nodiscard]] bool is_loopback() const;
  // 0.0.0.0 or :: (a socket bound to "any address" reports it as its name).
  [[nodiscard]] bool is_any() const;
  // The address a datagram sent to this one comes from when both ends are on
  // this host: a wildcard address (is_any) becomes the loopback address of
  // its family, same port; others are returned unchanged.
  [[nodiscard]] SockAddr HostLocal() const;
  [[nodiscard]] uint16_t port() const;  // host byte order; 0 when empty
  void set_port(uint16_t port);         // no effect when empty

  [[nodiscard]] const sockaddr* sa() const { return reinterpret_cast<const sockaddr*>(&storage_); }
  [[nodiscard]] socklen_t length() const { return length_; }

  // For syscalls that fill an address (accept, recvfrom, getsockname):
  // pass raw() and capacity(), then Adopt(length). Adopt() keeps the address
  // only if it is a complete AF_INET/AF_INET6 one, else leaves it empty, and
  // returns valid(). capacity() holds a sockaddr_in6: a longer address (of
  // another family) is cut by the kernel and refused by Adopt.
  sockaddr* raw() { return &storage_.sa; }
  static constexpr socklen_t capacity() { return sizeof(Storage); }
  bool Adopt(socklen_t length);

  // "1.2.3.4:5678", "[::1]:5678", "[fe80::1%2]:5678"; "" when empty.
  [[nodiscard]] std::string ToString() const;

  friend bool operator==(const SockAddr& a, const SockAddr& b);

 private:
  union Storage {
    sockaddr sa;
    sockaddr_in in4;
    sockaddr_in6 in6;
  };
  Storage storage_;
  socklen_t length_ = 0;
};

// Hash consistent with operator== (family, port, address and IPv6 scope;
// equal addresses hash alike), for unordered containers keyed by address.
struct SockAddrHash {
  size_t operator()(const SockAddr& a) const;
};

}  // namespace iwarpx::transport
