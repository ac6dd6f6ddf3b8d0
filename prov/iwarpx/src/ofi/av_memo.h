// AvMemo: an endpoint's memory of its last Av::Resolve and Av::Find answers,
// kept while the address vector's generation() stays the same. A datagram
// ping-pong sends to and hears from one peer: without it every message took
// the AV's mutex twice (~210 instructions per round trip).
//
// Contract
// - Resolve(av, a) / Find(av, src) answer exactly what av->Resolve(a) /
//   av->Find(src) answer now, as long as the AV changes only through its own
//   calls (every insert or remove that could change an answer moves its
//   generation). `av` may be null: Resolve is nullopt, Find FI_ADDR_NOTAVAIL.
// - A racing fi_av_insert/remove on another thread is seen as if it had come
//   just after this call (the generation is read before the memory is used).
// - Not thread-safe: the owner serialises calls (the engine lock).
#pragma once

#include <cstdint>
#include <optional>

#include <rdma/fabric.h>

#include "ofi/av.h"
#include "transport/sock_addr.h"

namespace iwarpx::ofi {

class AvMemo {
 public:
  std::optional<Av::Target> Resolve(Av* av, fi_addr_t addr) {
    if (av == nullptr) return std::nullopt;
    const uint64_t gen = av->generation();
    if (tx_.av == av && tx_.gen == gen && tx_.addr == addr) return tx_.target;
    const std::optional<Av::Target> t = av->Resolve(addr);
    if (!t) return t;
    tx_ = Tx{av, gen, addr, *t};
    return t;
  }

  fi_addr_t Find(Av* av, const transport::SockAddr& src) {
    if (av == nullptr) return FI_ADDR_NOTAVAIL;
    const uint64_t gen = av->generation();
    if (rx_.av == av && rx_.gen == gen && rx_.src == src) return rx_.result;
    const fi_addr_t result = av->Find(src);
    rx_ = Rx{av, gen, src, result};
    return result;
  }

 private:
  struct Tx {
    Av* av = nullptr;
    uint64_t gen = 0;
    fi_addr_t addr = FI_ADDR_NOTAVAIL;
    Av::Target target;
  };
  struct Rx {
    Av* av = nullptr;
    uint64_t gen = 0;
    transport::SockAddr src;
    fi_addr_t result = FI_ADDR_NOTAVAIL;
  };
  Tx tx_;
  Rx rx_;
};

}  // namespace iwarpx::ofi
