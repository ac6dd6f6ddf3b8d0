#include "rdm/send_rules.h"

#include <algorithm>
#include <array>
#include <utility>

namespace iwarpx::rdm {
namespace {

constexpr std::array<std::string_view, kChannelCount> kChannelNames = {"ud_sr", "ud_zcopy", "rc_sr",
                                                                       "rc_fp", "rc_rdma",  "copy"};

// A cursor over one rule's text with the error context.
class Lexer {
 public:
  explicit Lexer(std::string_view s) : s_(s) {}

  void SkipSpace() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t')) ++pos_;
  }
  [[nodiscard]] bool AtEnd() {
    SkipSpace();
    return pos_ == s_.size();
  }
  // Consumes `lit` if it comes next.
  bool Eat(std::string_view lit) {
    SkipSpace();
    if (s_.substr(pos_, lit.size()) != lit) return false;
    pos_ += lit.size();
    return true;
  }
  // The next run of [a-z_].
  std::string_view Word() {
    SkipSpace();
    const size_t start = pos_;
    while (pos_ < s_.size() && ((s_[pos_] >= 'a' && s_[pos_] <= 'z') || s_[pos_] == '_')) ++pos_;
    return s_.substr(start, pos_ - start);
  }
  // Decimal with an optional k/m/g suffix; false on no digits or overflow.
  bool Number(uint64_t* out) {
    SkipSpace();
    const size_t start = pos_;
    uint64_t v = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      const uint64_t d = static_cast<uint64_t>(s_[pos_] - '0');
      if (v > (UINT64_MAX - d) / 10) return false;
      v = v * 10 + d;
      ++pos_;
    }
    if (pos_ == start) return false;
    int shift = 0;
    if (pos_ < s_.size()) {
      if (s_[pos_] == 'k') shift = 10;
      if (s_[pos_] == 'm') shift = 20;
      if (s_[pos_] == 'g') shift = 30;
    }
    if (shift != 0) {
      if (v > (UINT64_MAX >> shift)) return false;
      v <<= shift;
      ++pos_;
    }
    *out = v;
    return true;
  }
  [[nodiscard]] std::string_view rest() const { return s_.substr(pos_); }

 private:
  std::string_view s_;
  size_t pos_ = 0;
};

// Narrows [*lo, *hi] by "op n"; false if the range became empty.
bool Narrow(std::string_view op, uint64_t n, uint64_t* lo, uint64_t* hi) {
  if (op == "<=") {
    *hi = std::min(*hi, n);
  } else if (op == "<") {
    if (n == 0) return false;
    *hi = std::min(*hi, n - 1);
  } else if (op == ">=") {
    *lo = std::max(*lo, n);
  } else if (op == ">") {
    if (n == UINT64_MAX) return false;
    *lo = std::max(*lo, n + 1);
  } else {  // "=="
    *lo = std::max(*lo, n);
    *hi = std::min(*hi, n);
  }
  return *lo <= *hi;
}

std::string RuleError(size_t index, std::string_view rule, std::string_view what) {
  std::string e = "send rule ";
  e += std::to_string(index + 1);
  e += " \"";
  e += rule;
  e += "\": ";
  e += what;
  return e;
}

Result<SendRule, std::string> ParseRule(std::string_view text, size_t index) {
  Lexer lx(text);
  SendRule rule;
  if (lx.AtEnd()) return Err{RuleError(index, text, "empty rule")};
  if (lx.Eat("any")) {
    // the whole range
  } else {
    for (;;) {
      const std::string_view var = lx.Word();
      uint64_t* lo = nullptr;
      uint64_t* hi = nullptr;
      if (var == "size") {
        lo = &rule.cond.size_min;
        hi = &rule.cond.size_max;
      } else if (var == "peers") {
        lo = &rule.cond.peers_min;
        hi = &rule.cond.peers_max;
      } else {
        return Err{RuleError(index, text,
                             "expected \"any\", \"size\" or \"peers\" before \"" +
                                 std::string(var.empty() ? lx.rest() : var) + "\"")};
      }
      std::string_view op;
      for (const std::string_view cand : {"<=", ">=", "==", "<", ">"}) {
        if (lx.Eat(cand)) {
          op = cand;
          break;
        }
      }
      if (op.empty()) {
        return Err{RuleError(index, text,
                             "expected one of <= < >= > == after \"" + std::string(var) + "\"")};
      }
      uint64_t n = 0;
      if (!lx.Number(&n)) {
        return Err{RuleError(
            index, text,
            "expected a number (digits, optional k/m/g) at \"" + std::string(lx.rest()) + "\"")};
      }
      if (!Narrow(op, n, lo, hi)) {
        return Err{RuleError(index, text, "the condition can never hold")};
      }
      if (!lx.Eat("&")) break;
    }
  }
  if (!lx.Eat(":")) {
    return Err{RuleError(index, text,
                         "expected \":\" and a channel at \"" + std::string(lx.rest()) + "\"")};
  }
  const std::string_view name = lx.Word();
  size_t c = 0;
  while (c < kChannelNames.size() && kChannelNames[c] != name) ++c;
  if (c == kChannelNames.size() || name.empty()) {
    return Err{RuleError(index, text,
                         "unknown channel \"" + std::string(name.empty() ? lx.rest() : name) +
                             "\" (ud_sr, ud_zcopy, rc_sr, rc_fp, rc_rdma, copy)")};
  }
  rule.channel = static_cast<Channel>(c);
  if (!lx.AtEnd()) {
    return Err{RuleError(index, text, "unexpected \"" + std::string(lx.rest()) + "\"")};
  }
  return rule;
}

void AppendBound(std::string* out, std::string_view var, std::string_view op, uint64_t n) {
  if (!out->empty() && out->back() != ',' && out->back() != ':') *out += '&';
  *out += var;
  *out += op;
  *out += std::to_string(n);
}

}  // namespace

std::string_view ChannelName(Channel c) {
  return kChannelNames[static_cast<size_t>(c)];
}

Result<SendRuleChain, std::string> SendRuleChain::Parse(std::string_view text) {
  SendRuleChain chain;
  size_t start = 0;
  for (size_t index = 0;; ++index) {
    const size_t comma = text.find(',', start);
    const std::string_view piece = text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (index == kMaxRules) {
      return Err{"send rules: more than " + std::to_string(kMaxRules) + " rules"};
    }
    auto rule = ParseRule(piece, index);
    if (!rule.ok()) return Err{rule.error()};
    chain.rules_.push_back(*rule);
    chain.named_.Add(rule->channel);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  const SendRule& last = chain.rules_.back();
  if (!last.cond.always() || last.channel != Channel::kUdZcopy) {
    return Err{std::string(
        "send rules: the last rule must be \"any:ud_zcopy\" (the only channel every peer has "
        "for every message size); append \",any:ud_zcopy\"")};
  }
  return chain;
}

const SendRuleChain& SendRuleChain::Default() {
  static const SendRuleChain chain = std::move(Parse(kDefaultText)).value();
  return chain;
}

Channel SendRuleChain::Select(uint64_t size, uint64_t peers, ChannelSet available,
                              const ChannelLimits& limits) const {
  available.Add(Channel::kUdZcopy);
  for (const SendRule& r : rules_) {
    if (!r.cond.Holds(size, peers)) continue;
    if (!available.Has(r.channel) || size > limits.of(r.channel)) continue;
    return r.channel;
  }
  return Channel::kUdZcopy;  // unreachable for a parsed chain (its last rule is any:ud_zcopy)
}

std::string SendRuleChain::ToString() const {
  std::string out;
  for (const SendRule& r : rules_) {
    if (!out.empty()) out += ',';
    const RuleCondition& c = r.cond;
    if (c.always()) out += "any";
    if (c.size_min == c.size_max) {
      AppendBound(&out, "size", "==", c.size_min);
    } else {
      if (c.size_min != 0) AppendBound(&out, "size", ">=", c.size_min);
      if (c.size_max != UINT64_MAX) AppendBound(&out, "size", "<=", c.size_max);
    }
    if (c.peers_min == c.peers_max) {
      AppendBound(&out, "peers", "==", c.peers_min);
    } else {
      if (c.peers_min != 0) AppendBound(&out, "peers", ">=", c.peers_min);
      if (c.peers_max != UINT64_MAX) AppendBound(&out, "peers", "<=", c.peers_max);
    }
    out += ':';
    out += ChannelName(r.channel);
  }
  return out;
}

}  // namespace iwarpx::rdm
