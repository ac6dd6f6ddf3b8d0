// A small harness for FI_EP_MSG functional tests through libfabric's public
// API only: one fabric, a "server" and a "client" side (each its own domain,
// EQ and CQ), a listening passive endpoint on 127.0.0.1 with a kernel-chosen
// port, and helpers that drive manual progress by reading every EQ and CQ
// until a condition holds or a deadline passes (never an unbounded wait).
// CQ entries and EQ events are buffered, so a test can wait for one
// particular completion (by op_context) or event (by fid) without losing the
// others.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
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

#include "test_util.h"

namespace msgtest {

using fttest::Bytes;
using fttest::Ctx;
using fttest::kVersion;
using fttest::kWait;
using fttest::Pattern;
using fttest::SteadyClock;
constexpr size_t kCmBuf = 512;  // >= FI_OPT_CM_DATA_SIZE

struct EqEvent {
  uint32_t event = 0;
  fid_t fid = nullptr;
  fi_info* info = nullptr;  // FI_CONNREQ only; owned by the event until taken
  Bytes data;
};

struct EqError {
  fid_t fid = nullptr;
  int err = 0;
  int prov_errno = 0;
  Bytes data;
};

// An EQ whose events are buffered.
class EqPoller {
 public:
  fid_eq* eq = nullptr;
  std::deque<EqEvent> events;
  std::deque<EqError> errors;

  ~EqPoller() { FreeInfos(); }
  void FreeInfos() {
    for (EqEvent& e : events) {
      if (e.info != nullptr) fi_freeinfo(e.info);
      e.info = nullptr;
    }
  }
  // Reads everything available; returns false on an unexpected read error.
  bool Poll() {
    if (eq == nullptr) return true;
    for (;;) {
      alignas(fi_eq_cm_entry) uint8_t buf[sizeof(fi_eq_cm_entry) + kCmBuf];
      uint32_t event = 0;
      const ssize_t n = fi_eq_read(eq, &event, buf, sizeof(buf), 0);
      if (n == -FI_EAGAIN) return true;
      if (n == -FI_EAVAIL) {
        uint8_t data[kCmBuf];
        fi_eq_err_entry err{};
        err.err_data = data;
        err.err_data_size = sizeof(data);
        const ssize_t r = fi_eq_readerr(eq, &err, 0);
        if (r < 0) return false;
        EqError e;
        e.fid = err.fid;
        e.err = err.err;
        e.prov_errno = err.prov_errno;
        if (err.err_data != nullptr && err.err_data_size != 0) {
          const auto* p = static_cast<const uint8_t*>(err.err_data);
          e.data.assign(p, p + err.err_data_size);
        }
        errors.push_back(std::move(e));
        continue;
      }
      if (n < 0) return false;
      EqEvent e;
      e.event = event;
      if (static_cast<size_t>(n) >= sizeof(fi_eq_cm_entry)) {
        fi_eq_cm_entry cm{};
        std::memcpy(&cm, buf, sizeof(cm));
        e.fid = cm.fid;
        e.info = cm.info;
        e.data.assign(buf + sizeof(fi_eq_cm_entry), buf + n);
      } else if (static_cast<size_t>(n) >= sizeof(fi_eq_entry)) {
        fi_eq_entry en{};
        std::memcpy(&en, buf, sizeof(en));
        e.fid = en.fid;
      }
      events.push_back(std::move(e));
    }
  }
  std::optional<EqEvent> Take(uint32_t event, fid_t fid = nullptr) {
    for (auto it = events.begin(); it != events.end(); ++it) {
      if (it->event == event && (fid == nullptr || it->fid == fid)) {
        EqEvent e = std::move(*it);
        events.erase(it);
        return e;
      }
    }
    return std::nullopt;
  }
  std::optional<EqError> TakeError(fid_t fid = nullptr) {
    for (auto it = errors.begin(); it != errors.end(); ++it) {
      if (fid == nullptr || it->fid == fid) {
        EqError e = std::move(*it);
        errors.erase(it);
        return e;
      }
    }
    return std::nullopt;
  }
  [[nodiscard]] bool Has(uint32_t event, fid_t fid) const {
    for (const EqEvent& e : events) {
      if (e.event == event && e.fid == fid) return true;
    }
    return false;
  }
  [[nodiscard]] bool HasError(fid_t fid) const {
    for (const EqError& e : errors) {
      if (e.fid == fid) return true;
    }
    return false;
  }
};

// A CQ (FI_CQ_FORMAT_DATA) whose entries are buffered.
class CqPoller {
 public:
  fid_cq* cq = nullptr;
  std::deque<fi_cq_data_entry> done;
  std::deque<fi_cq_err_entry> errs;
  std::vector<std::string> err_text;  // fi_cq_strerror of each error, in order

  bool Poll() {
    if (cq == nullptr) return true;
    for (;;) {
      fi_cq_data_entry e[16];
      const ssize_t n = fi_cq_read(cq, e, 16);
      if (n == -FI_EAGAIN) return true;
      if (n == -FI_EAVAIL) {
        fi_cq_err_entry err{};
        if (fi_cq_readerr(cq, &err, 0) < 0) return false;
        char buf[256] = {};
        const char* s = fi_cq_strerror(cq, err.prov_errno, err.err_data, buf, sizeof(buf));
        errs.push_back(err);
        err_text.emplace_back(s != nullptr ? s : "(null)");
        continue;
      }
      if (n < 0) return false;
      for (ssize_t i = 0; i < n; ++i) done.push_back(e[i]);
    }
  }
  std::optional<fi_cq_data_entry> Take(void* ctx) {
    for (auto it = done.begin(); it != done.end(); ++it) {
      if (it->op_context == ctx) {
        const fi_cq_data_entry e = *it;
        done.erase(it);
        return e;
      }
    }
    return std::nullopt;
  }
  std::optional<fi_cq_err_entry> TakeErr(void* ctx) {
    for (auto it = errs.begin(); it != errs.end(); ++it) {
      if (it->op_context == ctx) {
        const fi_cq_err_entry e = *it;
        err_text.erase(err_text.begin() + (it - errs.begin()));
        errs.erase(it);
        return e;
      }
    }
    return std::nullopt;
  }
};

struct Side {
  fid_domain* domain = nullptr;
  EqPoller eq;
  CqPoller cq;
};

// The whole two-sided setup; usable from a test fixture or a forked child.
class Net {
 public:
  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  Side server;
  Side client;
  fid_pep* pep = nullptr;
  sockaddr_in listen_addr{};
  std::vector<fid_ep*> eps;
  std::vector<fid_mr*> mrs;
  std::vector<fid_cntr*> cntrs;
  std::vector<fid_cq*> extra_cqs;
  std::vector<CqPoller*> extra_pollers;
  std::string error;  // the first setup failure
  // Set before Open(): ask for remote CQ data (cq_data_size 8 with the
  // FI_RX_CQ_DATA mode), which lets fi_senddata work between iwarpx ends.
  bool cq_data = false;

  Net() = default;
  Net(const Net&) = delete;
  Net& operator=(const Net&) = delete;
  ~Net() { Close(); }

  // Returns false (error set) on failure.
  bool Open(size_t cq_size = 4096, size_t eq_size = 1024, bool listen = true) {
    fi_info* hints = fi_allocinfo();
    hints->fabric_attr->prov_name = strdup("iwarpx");
    hints->ep_attr->type = FI_EP_MSG;
    hints->caps = FI_MSG | FI_RMA | FI_ATOMIC;
    hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    if (cq_data) {
      hints->domain_attr->cq_data_size = 8;
      hints->mode |= FI_RX_CQ_DATA;
    }
    int r = fi_getinfo(kVersion, "127.0.0.1", "0", FI_SOURCE, hints, &info);
    fi_freeinfo(hints);
    if (r != 0) return Fail("fi_getinfo", r);
    if ((r = fi_fabric(info->fabric_attr, &fabric, nullptr)) != 0) return Fail("fi_fabric", r);
    for (Side* s : {&server, &client}) {
      if ((r = fi_domain(fabric, info, &s->domain, nullptr)) != 0) return Fail("fi_domain", r);
      fi_eq_attr ea{};
      ea.size = eq_size;
      ea.wait_obj = FI_WAIT_UNSPEC;
      if ((r = fi_eq_open(fabric, &ea, &s->eq.eq, nullptr)) != 0) return Fail("fi_eq_open", r);
      fi_cq_attr ca{};
      ca.size = cq_size;
      ca.format = FI_CQ_FORMAT_DATA;
      ca.wait_obj = FI_WAIT_NONE;
      if ((r = fi_cq_open(s->domain, &ca, &s->cq.cq, nullptr)) != 0) return Fail("fi_cq_open", r);
    }
    if (listen) return Listen();
    return true;
  }

  bool Listen() {
    int r = fi_passive_ep(fabric, info, &pep, nullptr);
    if (r != 0) return Fail("fi_passive_ep", r);
    if ((r = fi_pep_bind(pep, &server.eq.eq->fid, 0)) != 0) return Fail("fi_pep_bind", r);
    if ((r = fi_listen(pep)) != 0) return Fail("fi_listen", r);
    size_t len = sizeof(listen_addr);
    if ((r = fi_getname(&pep->fid, &listen_addr, &len)) != 0) return Fail("fi_getname", r);
    if (len != sizeof(sockaddr_in) || listen_addr.sin_port == 0) {
      error = "fi_getname(pep): no port";
      return false;
    }
    return true;
  }

  void Close() {
    for (auto it = eps.rbegin(); it != eps.rend(); ++it) fi_close(&(*it)->fid);
    eps.clear();
    for (fid_mr* m : mrs) fi_close(&m->fid);
    mrs.clear();
    if (pep != nullptr) fi_close(&pep->fid);
    pep = nullptr;
    for (fid_cq* c : extra_cqs) fi_close(&c->fid);
    extra_cqs.clear();
    for (fid_cntr* c : cntrs) fi_close(&c->fid);
    cntrs.clear();
    for (Side* s : {&server, &client}) {
      if (s->cq.cq != nullptr) fi_close(&s->cq.cq->fid);
      s->cq.cq = nullptr;
      s->eq.FreeInfos();
      if (s->eq.eq != nullptr) fi_close(&s->eq.eq->fid);
      s->eq.eq = nullptr;
      if (s->domain != nullptr) fi_close(&s->domain->fid);
      s->domain = nullptr;
    }
    if (fabric != nullptr) fi_close(&fabric->fid);
    fabric = nullptr;
    if (info != nullptr) fi_freeinfo(info);
    info = nullptr;
  }

  // One pass over every EQ and CQ (each read drives manual progress).
  bool PollAll() {
    bool ok = true;
    for (Side* s : {&server, &client}) {
      ok = s->eq.Poll() && ok;
      ok = s->cq.Poll() && ok;
    }
    for (CqPoller* p : extra_pollers) ok = p->Poll() && ok;
    return ok;
  }

  bool WaitUntil(const std::function<bool()>& pred, SteadyClock::duration timeout = kWait) {
    return fttest::PollUntil([this] { return PollAll(); }, pred, timeout);
  }
  // Polls for `d` regardless (to let unwanted entries show up).
  void Drive(SteadyClock::duration d) {
    fttest::PollFor([this] { return PollAll(); }, d);
  }

  // An enabled endpoint on `side` (from `ep_info`, default `info`), its EQ
  // and CQ bound; `cq_flags` for the CQ bind.
  fid_ep* OpenEp(Side& side, fi_info* ep_info = nullptr, uint64_t cq_flags = FI_TRANSMIT | FI_RECV,
                 fid_cq* cq = nullptr, bool enable = true) {
    fid_ep* ep = nullptr;
    int r = fi_endpoint(side.domain, ep_info != nullptr ? ep_info : info, &ep, nullptr);
    if (r != 0) return FailNull("fi_endpoint", r);
    eps.push_back(ep);
    if ((r = fi_ep_bind(ep, &side.eq.eq->fid, 0)) != 0) return FailNull("fi_ep_bind(eq)", r);
    if ((r = fi_ep_bind(ep, &(cq != nullptr ? cq : side.cq.cq)->fid, cq_flags)) != 0) {
      return FailNull("fi_ep_bind(cq)", r);
    }
    if (enable && (r = fi_enable(ep)) != 0) return FailNull("fi_enable", r);
    return ep;
  }

  void CloseEp(fid_ep* ep) {
    for (auto it = eps.begin(); it != eps.end(); ++it) {
      if (*it == ep) {
        eps.erase(it);
        break;
      }
    }
    fi_close(&ep->fid);
  }

  bool Connect(fid_ep* ep, const void* data = nullptr, size_t len = 0) {
    const int r = fi_connect(ep, &listen_addr, data, len);
    return r == 0 || Fail("fi_connect", r);
  }

  // Waits for the next FI_CONNREQ; returns it (info owned by the caller).
  std::optional<EqEvent> WaitConnReq() {
    std::optional<EqEvent> ev;
    if (!WaitUntil([&] { return (ev = server.eq.Take(FI_CONNREQ)).has_value(); })) {
      error = "no FI_CONNREQ within the deadline";
      return std::nullopt;
    }
    return ev;
  }

  // Opens the server endpoint for `req`, runs `prepost` on it, accepts.
  fid_ep* Accept(EqEvent& req, const void* data = nullptr, size_t len = 0,
                 const std::function<void(fid_ep*)>& prepost = {}) {
    fid_ep* ep = OpenEp(server, req.info);
    fi_freeinfo(req.info);
    req.info = nullptr;
    if (ep == nullptr) return nullptr;
    if (prepost) prepost(ep);
    const int r = fi_accept(ep, data, len);
    if (r != 0) return FailNull("fi_accept", r);
    return ep;
  }

  std::optional<Bytes> WaitConnected(Side& side, fid_ep* ep) {
    std::optional<EqEvent> ev;
    if (!WaitUntil([&] { return (ev = side.eq.Take(FI_CONNECTED, &ep->fid)).has_value(); })) {
      error = "no FI_CONNECTED within the deadline";
      return std::nullopt;
    }
    return ev->data;
  }

  struct Conn {
    fid_ep* client = nullptr;
    fid_ep* server = nullptr;
  };
  // A full connection with the default endpoints.
  std::optional<Conn> Establish(const std::function<void(fid_ep*)>& client_prepost = {},
                                const std::function<void(fid_ep*)>& server_prepost = {}) {
    Conn c;
    c.client = OpenEp(client);
    if (c.client == nullptr) return std::nullopt;
    if (client_prepost) client_prepost(c.client);
    if (!Connect(c.client)) return std::nullopt;
    auto req = WaitConnReq();
    if (!req) return std::nullopt;
    c.server = Accept(*req, nullptr, 0, server_prepost);
    if (c.server == nullptr) return std::nullopt;
    if (!WaitConnected(server, c.server) || !WaitConnected(client, c.client)) return std::nullopt;
    return c;
  }

  std::optional<fi_cq_data_entry> WaitComp(CqPoller& cq, void* ctx,
                                           SteadyClock::duration timeout = kWait) {
    std::optional<fi_cq_data_entry> e;
    WaitUntil([&] { return (e = cq.Take(ctx)).has_value() || HasErr(cq, ctx); }, timeout);
    return e;
  }
  std::optional<fi_cq_err_entry> WaitErr(CqPoller& cq, void* ctx,
                                         SteadyClock::duration timeout = kWait) {
    std::optional<fi_cq_err_entry> e;
    WaitUntil([&] { return (e = cq.TakeErr(ctx)).has_value(); }, timeout);
    return e;
  }
  static bool HasErr(const CqPoller& cq, void* ctx) {
    for (const fi_cq_err_entry& e : cq.errs) {
      if (e.op_context == ctx) return true;
    }
    return false;
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

  fid_mr* Reg(Side& side, void* buf, size_t len, uint64_t access) {
    fid_mr* mr = nullptr;
    const int r = fi_mr_reg(side.domain, buf, len, access, 0, 0, 0, &mr, nullptr);
    if (r != 0) {
      Fail("fi_mr_reg", r);
      return nullptr;
    }
    mrs.push_back(mr);
    return mr;
  }
  void CloseMr(fid_mr* mr) {
    for (auto it = mrs.begin(); it != mrs.end(); ++it) {
      if (*it == mr) {
        mrs.erase(it);
        break;
      }
    }
    fi_close(&mr->fid);
  }

 private:
  bool Fail(const char* what, int r) {
    if (error.empty()) error = std::string(what) + ": " + fi_strerror(-r);
    return false;
  }
  fid_ep* FailNull(const char* what, int r) {
    Fail(what, r);
    return nullptr;
  }
};

}  // namespace msgtest
