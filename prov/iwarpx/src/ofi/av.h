// Address vectors (fi_av_open, fi_av(3)) for the datagram endpoints: a table
// of peer addresses (IPv4/IPv6 socket addresses, the endpoints' names) that
// send calls name by fi_addr_t and receive completions report back
// (FI_SOURCE, fi_cq_readfrom).
//
// Contract
// - FI_AV_TABLE (also chosen for FI_AV_UNSPEC) and FI_AV_MAP. fi_addr_t is
//   the entry's index in both; TABLE indices are handed out in insertion
//   order, as the man page requires, and never reused after fi_av_remove.
// - Inserted addresses are packed struct sockaddr_in / sockaddr_in6, each
//   taking its family's size. An entry that is not one fails alone: its
//   fi_addr is FI_ADDR_NOTAVAIL (and, with FI_SYNC_ERR, its int in `context`
//   is the -FI_E* code); the return value counts the successful entries.
// - Synchronous only: FI_EVENT, named (shared) AVs and fi_av_insertsym are
//   -FI_ENOSYS with a log line.
// - fi_av_lookup copies at most *addrlen bytes and sets *addrlen to the full
//   size; fi_av_straddr writes "fi_sockaddr_in://1.2.3.4:5" (or _in6).
// - attr->rx_ctx_bits (scalable endpoints): 0..kMaxRxCtxBits, with
//   attr->count fitting in the bits left (ofi/rx_addr.h); other values are
//   -FI_EINVAL with a log line. Resolve() splits fi_rx_addr(entry, i, bits)
//   into the entry's address and receive-context index i; Get() and
//   fi_av_lookup take plain entries only (index 0).
// - Find() (the engine's reverse lookup for FI_SOURCE) returns the plain
//   entry; Find(), Get() and Resolve() are O(1) (Find remembers its last
//   answer until the next insert or remove).
// - Thread-safe (one mutex); fi_close is -FI_EBUSY while endpoints are bound.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include <rdma/fi_domain.h>

#include "ofi/common.h"
#include "transport/sock_addr.h"

namespace iwarpx::ofi {

class Domain;

class Av {
 public:
  static int Open(struct fid_domain* domain, struct fi_av_attr* attr, struct fid_av** av,
                  void* context);
  // The Av behind a fid, or nullptr if it is not an iwarpx AV.
  static Av* From(struct fid* fid);

  void Ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Unref() { refs_.fetch_sub(1, std::memory_order_acq_rel); }
  Domain* domain() { return domain_; }

  struct Target {
    transport::SockAddr addr;  // the entry's address
    uint32_t rx_index = 0;     // the receive context fi_rx_addr named
  };
  // The address of a valid entry (no receive-context index).
  std::optional<transport::SockAddr> Get(fi_addr_t addr);
  // The address of the entry `addr` names and the receive-context index in
  // its top rx_ctx_bits bits.
  std::optional<Target> Resolve(fi_addr_t addr);
  [[nodiscard]] int rx_ctx_bits() const { return rx_ctx_bits_; }
  // The entry holding `addr`, or FI_ADDR_NOTAVAIL. A loopback source also
  // finds an entry inserted as the wildcard address with its port (a peer on
  // this host bound to "any address" names itself that way).
  fi_addr_t Find(const transport::SockAddr& addr);
  // Changes whenever an insert or remove may change what Resolve() or Find()
  // answer: an endpoint may keep their last answers while it stays the same.
  [[nodiscard]] uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

  // The fi_ops_av entries.
  int Insert(const void* addr, size_t count, fi_addr_t* fi_addr, uint64_t flags, void* context);
  int InsertSvc(const char* node, const char* service, fi_addr_t* fi_addr, uint64_t flags,
                void* context);
  int Remove(fi_addr_t* fi_addr, size_t count, uint64_t flags);
  int Lookup(fi_addr_t fi_addr, void* addr, size_t* addrlen);
  int Close();

 private:
  struct Key {
    int family;
    uint16_t port;
    uint32_t scope;
    uint8_t bytes[16];
    friend bool operator==(const Key&, const Key&) = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  static Key KeyOf(const transport::SockAddr& a);

  Av(Domain* domain, enum fi_av_type type, int rx_ctx_bits)
      : domain_(domain), type_(type), rx_ctx_bits_(rx_ctx_bits) {}
  // mu_ held.
  fi_addr_t InsertOne(const transport::SockAddr& a);

  FidHandle<struct fid_av, Av> handle_;
  Domain* domain_;
  enum fi_av_type type_;
  const int rx_ctx_bits_;
  // Find() without its cache; mu_ held.
  [[nodiscard]] fi_addr_t FindLocked(const transport::SockAddr& addr) const;

  std::mutex mu_;
  std::vector<std::optional<transport::SockAddr>> entries_;
  std::unordered_map<Key, fi_addr_t, KeyHash> index_;
  // Find()'s last answer, dropped whenever index_ changes: a datagram
  // endpoint's receives mostly come from the peer of the previous one, and
  // the hash lookup (two of them for a loopback source of a wildcard entry)
  // was ~600 instructions of a ping-pong's receive path.
  struct LastFind {
    transport::SockAddr addr;
    fi_addr_t result = FI_ADDR_NOTAVAIL;
  };
  std::optional<LastFind> last_find_;
  std::atomic<uint64_t> generation_{0};  // bumped under mu_ with every index_ change
  std::atomic<int> refs_{0};
};

int AvOpen(struct fid_domain* domain, struct fi_av_attr* attr, struct fid_av** av, void* context);

// fi_av_straddr: "fi_sockaddr_in://1.2.3.4:5678" / "fi_sockaddr_in6://[::1]:5678".
const char* AvStraddr(const void* addr, char* buf, size_t* len);

}  // namespace iwarpx::ofi
