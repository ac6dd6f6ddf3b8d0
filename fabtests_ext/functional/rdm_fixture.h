// A harness for FI_EP_RDM functional tests through libfabric's public API
// only: one fabric and any number of "sides", each one endpoint with its own
// domain, address vector, transmit CQ and receive CQ (FI_CQ_FORMAT_TAGGED),
// opened from fi_getinfo(ep_type FI_EP_RDM, caps FI_MSG|FI_TAGGED|FI_RMA|
// FI_ATOMIC|FI_DIRECTED_RECV|FI_SOURCE, node 127.0.0.1, kernel-chosen UDP
// port). Connect() puts two sides' fi_getname addresses into each other's AV.
// Progress is manual: every wait reads every CQ of every side until a
// condition holds or a deadline passes (never an unbounded wait). Completions
// and error entries are buffered with the source fi_addr that
// fi_cq_readfrom reported, so a test can wait for one particular operation
// (by op_context) without losing the others.
#pragma once

#include <netinet/in.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "test_util.h"

namespace rdmtest {

using fttest::Bytes;
using fttest::Ctx;
using fttest::kVersion;
using fttest::kWait;
using fttest::Pattern;
using fttest::SteadyClock;

struct Comp {
  fi_cq_tagged_entry e{};
  fi_addr_t src = FI_ADDR_NOTAVAIL;
};

// A tagged-format CQ whose entries are buffered.
class CqPoller {
 public:
  fid_cq* cq = nullptr;
  std::deque<Comp> done;
  std::deque<fi_cq_err_entry> errs;

  // Reads everything available; false on an unexpected read error.
  bool Poll() {
    if (cq == nullptr) return true;
    for (;;) {
      fi_cq_tagged_entry e[16];
      fi_addr_t src[16];
      const ssize_t n = fi_cq_readfrom(cq, e, 16, src);
      if (n == -FI_EAGAIN) return true;
      if (n == -FI_EAVAIL) {
        fi_cq_err_entry err{};
        if (fi_cq_readerr(cq, &err, 0) != 1) return false;
        errs.push_back(err);
        continue;
      }
      if (n < 0) return false;
      for (ssize_t i = 0; i < n; ++i) done.push_back(Comp{e[i], src[i]});
    }
  }
  std::optional<Comp> Take(void* ctx) {
    for (auto it = done.begin(); it != done.end(); ++it) {
      if (it->e.op_context == ctx) {
        const Comp c = *it;
        done.erase(it);
        return c;
      }
    }
    return std::nullopt;
  }
  std::optional<fi_cq_err_entry> TakeErr(void* ctx) {
    for (auto it = errs.begin(); it != errs.end(); ++it) {
      if (it->op_context == ctx) {
        const fi_cq_err_entry e = *it;
        errs.erase(it);
        return e;
      }
    }
    return std::nullopt;
  }
  [[nodiscard]] bool HasErr(void* ctx) const {
    for (const fi_cq_err_entry& e : errs) {
      if (e.op_context == ctx) return true;
    }
    return false;
  }
  [[nodiscard]] bool Empty() const { return done.empty() && errs.empty(); }
};

struct Side {
  fid_domain* domain = nullptr;
  fid_av* av = nullptr;
  fid_ep* ep = nullptr;
  CqPoller tx;
  CqPoller rx;
  sockaddr_in name{};
  std::map<const Side*, fi_addr_t> peers;  // other sides in this side's AV
  std::vector<fid_mr*> mrs;

  // `other`'s fi_addr in this side's AV.
  [[nodiscard]] fi_addr_t To(const Side& other) const {
    auto it = peers.find(&other);
    return it == peers.end() ? FI_ADDR_NOTAVAIL : it->second;
  }
};

class Net {
 public:
  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  std::vector<std::unique_ptr<Side>> sides;
  std::string error;  // the first failure

  Net() = default;
  Net(const Net&) = delete;
  Net& operator=(const Net&) = delete;
  ~Net() { Close(); }

  static fi_info* Hints() {
    fi_info* h = fi_allocinfo();
    h->fabric_attr->prov_name = strdup("iwarpx");
    h->ep_attr->type = FI_EP_RDM;
    h->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_DIRECTED_RECV | FI_SOURCE;
    h->addr_format = FI_SOCKADDR_IN;
    h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    return h;
  }

  bool Open() {
    fi_info* hints = Hints();
    int r = fi_getinfo(kVersion, "127.0.0.1", "0", FI_SOURCE, hints, &info);
    fi_freeinfo(hints);
    if (r != 0) return Fail("fi_getinfo", r);
    if ((r = fi_fabric(info->fabric_attr, &fabric, nullptr)) != 0) return Fail("fi_fabric", r);
    return true;
  }

  // A side with its domain, AV and CQs; its endpoint enabled unless
  // `enable` is false (then nothing is bound to it either).
  Side* AddSide(bool enable = true) {
    auto s = std::make_unique<Side>();
    Side* p = s.get();
    sides.push_back(std::move(s));
    int r = fi_domain(fabric, info, &p->domain, nullptr);
    if (r != 0) return FailNull("fi_domain", r);
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    if ((r = fi_av_open(p->domain, &av_attr, &p->av, nullptr)) != 0) {
      return FailNull("fi_av_open", r);
    }
    for (CqPoller* c : {&p->tx, &p->rx}) {
      fi_cq_attr ca{};
      ca.size = 4096;
      ca.format = FI_CQ_FORMAT_TAGGED;
      ca.wait_obj = FI_WAIT_NONE;
      if ((r = fi_cq_open(p->domain, &ca, &c->cq, nullptr)) != 0) return FailNull("fi_cq_open", r);
    }
    if ((r = fi_endpoint(p->domain, info, &p->ep, nullptr)) != 0) {
      return FailNull("fi_endpoint", r);
    }
    if (!enable) return p;
    if ((r = fi_ep_bind(p->ep, &p->av->fid, 0)) != 0) return FailNull("fi_ep_bind(av)", r);
    if ((r = fi_ep_bind(p->ep, &p->tx.cq->fid, FI_TRANSMIT)) != 0) {
      return FailNull("fi_ep_bind(tx cq)", r);
    }
    if ((r = fi_ep_bind(p->ep, &p->rx.cq->fid, FI_RECV)) != 0) {
      return FailNull("fi_ep_bind(rx cq)", r);
    }
    if ((r = fi_enable(p->ep)) != 0) return FailNull("fi_enable", r);
    size_t len = sizeof(p->name);
    if ((r = fi_getname(&p->ep->fid, &p->name, &len)) != 0) return FailNull("fi_getname", r);
    if (len != sizeof(sockaddr_in) || p->name.sin_port == 0) {
      error = "fi_getname: not a bound sockaddr_in";
      return nullptr;
    }
    return p;
  }

  // Puts each side's address into the other's AV.
  bool Connect(Side& a, Side& b) { return Insert(a, b) && Insert(b, a); }
  // `other`'s address into `s`'s AV.
  bool Insert(Side& s, const Side& other) {
    fi_addr_t fa = FI_ADDR_NOTAVAIL;
    const int r = fi_av_insert(s.av, &other.name, 1, &fa, 0, nullptr);
    if (r != 1) return Fail("fi_av_insert", r < 0 ? r : -FI_EINVAL);
    s.peers[&other] = fa;
    return true;
  }

  void CloseEp(Side& s) {
    if (s.ep != nullptr) fi_close(&s.ep->fid);
    s.ep = nullptr;
  }

  void Close() {
    for (auto& s : sides) {
      CloseEp(*s);
      for (fid_mr* m : s->mrs) fi_close(&m->fid);
      s->mrs.clear();
      for (CqPoller* c : {&s->tx, &s->rx}) {
        if (c->cq != nullptr) fi_close(&c->cq->fid);
        c->cq = nullptr;
      }
      if (s->av != nullptr) fi_close(&s->av->fid);
      s->av = nullptr;
      if (s->domain != nullptr) fi_close(&s->domain->fid);
      s->domain = nullptr;
    }
    sides.clear();
    if (fabric != nullptr) fi_close(&fabric->fid);
    fabric = nullptr;
    if (info != nullptr) fi_freeinfo(info);
    info = nullptr;
  }

  // One pass over every CQ (each read drives manual progress).
  bool PollAll() {
    bool ok = true;
    for (auto& s : sides) {
      ok = s->tx.Poll() && ok;
      ok = s->rx.Poll() && ok;
    }
    return ok;
  }
  bool WaitUntil(const std::function<bool()>& pred, SteadyClock::duration timeout = kWait) {
    return fttest::PollUntil([this] { return PollAll(); }, pred, timeout);
  }
  // Polls for `d` regardless (lets messages travel and unwanted entries show up).
  void Drive(SteadyClock::duration d) {
    fttest::PollFor([this] { return PollAll(); }, d);
  }

  // The completion of `ctx` on `cq`; nullopt if it failed or did not come.
  std::optional<Comp> WaitComp(CqPoller& cq, void* ctx, SteadyClock::duration timeout = kWait) {
    std::optional<Comp> c;
    WaitUntil([&] { return (c = cq.Take(ctx)).has_value() || cq.HasErr(ctx); }, timeout);
    return c;
  }
  // The error entry of `ctx` on `cq`; nullopt if it completed or did not come.
  std::optional<fi_cq_err_entry> WaitErr(CqPoller& cq, void* ctx,
                                         SteadyClock::duration timeout = kWait) {
    std::optional<fi_cq_err_entry> e;
    bool ok = false;
    WaitUntil(
        [&] {
          if ((e = cq.TakeErr(ctx)).has_value()) return true;
          for (const Comp& c : cq.done) {
            if (c.e.op_context == ctx) ok = true;
          }
          return ok;
        },
        timeout);
    return e;
  }

  // Posts with -FI_EAGAIN retried (progress driven) until the deadline.
  ssize_t Post(const std::function<ssize_t()>& op) {
    const auto deadline = SteadyClock::now() + kWait;
    for (;;) {
      const ssize_t r = op();
      if (r != -FI_EAGAIN || SteadyClock::now() > deadline) return r;
      PollAll();
    }
  }

  // Registers `buf` at `s` (closed with the side).
  fid_mr* Reg(Side& s, void* buf, size_t len, uint64_t access, uint64_t requested_key = 0) {
    fid_mr* mr = nullptr;
    const int r = fi_mr_reg(s.domain, buf, len, access, 0, requested_key, 0, &mr, nullptr);
    if (r != 0) return static_cast<fid_mr*>(FailNullV("fi_mr_reg", r));
    s.mrs.push_back(mr);
    return mr;
  }
  // The address a peer names `buf` by: virtual with FI_MR_VIRT_ADDR, else
  // the offset into the region (`base` is the registered start).
  [[nodiscard]] uint64_t RemoteAddr(const void* base, const void* buf) const {
    const auto b = reinterpret_cast<uintptr_t>(buf);
    if ((info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) != 0) return b;
    return b - reinterpret_cast<uintptr_t>(base);
  }

 private:
  bool Fail(const char* what, int r) {
    if (error.empty()) error = std::string(what) + ": " + fi_strerror(-r);
    return false;
  }
  Side* FailNull(const char* what, int r) {
    Fail(what, r);
    return nullptr;
  }
  void* FailNullV(const char* what, int r) {
    Fail(what, r);
    return nullptr;
  }
};

}  // namespace rdmtest
