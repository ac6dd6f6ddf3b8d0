// Send-rule chains (seed 004 §5.3, the Aptus design): which channel of a peer
// carries one message. A chain is an ordered list of rules {condition,
// channel}; the first rule whose condition holds and whose channel the peer
// has (allocated, and able to carry a message of that size) wins.
//
// Syntax (FI_IWARPX_SEND_RULES; docs/design.md "Send-rule chains"):
//   chain     := rule ("," rule)*                    at most kMaxRules rules
//   rule      := condition ":" channel
//   condition := "any" | term ("&" term)*           all terms must hold
//   term      := ("size" | "peers") op number       size: message bytes;
//                                                    peers: peers of the endpoint
//   op        := "<=" | "<" | ">=" | ">" | "=="
//   number    := decimal digits, optional suffix k | m | g (x1024, x1024^2, x1024^3)
//   channel   := "ud_sr" | "ud_zcopy" | "rc_sr" | "rc_fp" | "rc_rdma" | "copy"
// Spaces and tabs around tokens are ignored; names are lower case.
// Example: size<=2048:rc_fp,size<=8192:ud_sr,size<=8192:rc_sr,any:rc_rdma,any:ud_zcopy
//
// Validity: the last rule must be "any:ud_zcopy". UD-ZCopy (rendezvous over
// the reliable datagram stream) is the one channel every peer has from the
// start and that carries every size, so Select always finds a channel.
// Every other defect (unknown word, missing ':', empty rule, number too large,
// a condition no size can meet such as size<0, too many rules) is refused with
// a message naming the rule (1-based) and the offending text.
//
// Contract: pure (no I/O, no allocation in Select); a parsed chain is
// immutable and may be shared by threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace iwarpx::rdm {

enum class Channel : uint8_t {
  kUdSr = 0,     // eager send/receive over reliable datagrams
  kUdZcopy = 1,  // rendezvous over reliable datagrams: the receiver pulls with RDMA Read
  kRcSr = 2,     // send/receive over an on-demand connected QP
  kRcFp = 3,     // small-message RDMA-write fast path over a connected QP
  kRcRdma = 4,   // zero-copy rendezvous over a connected QP
  // Copy-based rendezvous (seed 004 §3.2): RTS, the receiver's CTS, then the
  // data as eager-sized DATA Sends copied into the matched buffer; over the
  // peer's current path (datagrams, or its connection once switched), any
  // size. Also what a rendezvous falls back to when registration fails.
  kCopy = 5,
};
inline constexpr size_t kChannelCount = 6;

[[nodiscard]] std::string_view ChannelName(Channel c);

// A set of channels (bit i: Channel i).
class ChannelSet {
 public:
  constexpr ChannelSet() = default;
  constexpr ChannelSet(std::initializer_list<Channel> cs) {
    for (const Channel c : cs) Add(c);
  }
  constexpr void Add(Channel c) { bits_ |= Bit(c); }
  constexpr void Remove(Channel c) { bits_ &= static_cast<uint8_t>(~Bit(c)); }
  [[nodiscard]] constexpr bool Has(Channel c) const { return (bits_ & Bit(c)) != 0; }

 private:
  static constexpr uint8_t Bit(Channel c) {
    return static_cast<uint8_t>(1u << static_cast<int>(c));
  }
  uint8_t bits_ = 0;
};

// Largest message each channel can carry for one peer (0: none; UINT64_MAX:
// any). UD-SR is bounded by the eager bounce size, RC-FP by its ring slot.
struct ChannelLimits {
  uint64_t max_size[kChannelCount] = {UINT64_MAX, UINT64_MAX, UINT64_MAX,
                                      UINT64_MAX, UINT64_MAX, UINT64_MAX};
  [[nodiscard]] uint64_t of(Channel c) const { return max_size[static_cast<int>(c)]; }
};

// Closed ranges; a term narrows one of them.
struct RuleCondition {
  uint64_t size_min = 0;
  uint64_t size_max = UINT64_MAX;
  uint64_t peers_min = 0;
  uint64_t peers_max = UINT64_MAX;

  [[nodiscard]] bool Holds(uint64_t size, uint64_t peers) const {
    return size >= size_min && size <= size_max && peers >= peers_min && peers <= peers_max;
  }
  [[nodiscard]] bool always() const {
    return size_min == 0 && size_max == UINT64_MAX && peers_min == 0 && peers_max == UINT64_MAX;
  }
  friend bool operator==(const RuleCondition&, const RuleCondition&) = default;
};

struct SendRule {
  RuleCondition cond;
  Channel channel = Channel::kUdZcopy;
  friend bool operator==(const SendRule&, const SendRule&) = default;
};

class SendRuleChain {
 public:
  static constexpr size_t kMaxRules = 32;
  // Until the connected channels exist (issue 5): eager over datagrams for
  // whatever fits the eager bounce size (ChannelLimits), rendezvous above.
  static constexpr std::string_view kDefaultText = "any:ud_sr,any:ud_zcopy";

  // Parses and validates `text`; the error says what is wrong and where.
  static Result<SendRuleChain, std::string> Parse(std::string_view text);
  // The built-in default chain (kDefaultText).
  static const SendRuleChain& Default();

  // The channel for a message of `size` bytes to a peer that has `available`
  // channels, on an endpoint with `peers` peers. UD-ZCopy is always
  // available; the result is never a channel missing from `available` or one
  // whose limit is below `size`.
  [[nodiscard]] Channel Select(uint64_t size, uint64_t peers, ChannelSet available,
                               const ChannelLimits& limits) const;

  // Canonical text: Parse(ToString()) gives an equal chain.
  [[nodiscard]] std::string ToString() const;
  [[nodiscard]] const std::vector<SendRule>& rules() const { return rules_; }
  // The channels some rule names (those worth allocating for a peer).
  [[nodiscard]] ChannelSet named() const { return named_; }

  friend bool operator==(const SendRuleChain& a, const SendRuleChain& b) {
    return a.rules_ == b.rules_;
  }

 private:
  std::vector<SendRule> rules_;
  ChannelSet named_;
};

}  // namespace iwarpx::rdm
