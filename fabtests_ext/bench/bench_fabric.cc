// Connected-endpoint setup, buffer registration, posting and completion
// polling for the benchmarks. See bench_fabric.h for the contract.
#include "bench_fabric.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <cstring>
#include <string>

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

namespace bench {
namespace {

const char* EventName(uint32_t event) {
  switch (event) {
    case FI_CONNREQ: return "FI_CONNREQ";
    case FI_CONNECTED: return "FI_CONNECTED";
    case FI_SHUTDOWN: return "FI_SHUTDOWN";
    default: return "other";
  }
}

}  // namespace

Connection::Connection(const Options& o, uint64_t caps, uint64_t msg_order) : o_(o) {
  fi_info* hints = fi_allocinfo();
  if (hints == nullptr) Fail(o_, "fi_allocinfo failed");
  hints->ep_attr->type = FI_EP_MSG;
  hints->caps = caps;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->tx_attr->msg_order = msg_order;
  hints->rx_attr->msg_order = msg_order;
  hints->domain_attr->mr_mode = static_cast<int>(kMrModesHandled);
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  hints->fabric_attr->prov_name = strdup(o_.provider.c_str());
  if (o_.is_client()) {
    OpenClient(hints);
  } else {
    OpenServer(hints);
  }
  fi_freeinfo(hints);
  WaitConnected();
}

Connection::~Connection() {
  if (ep_ != nullptr && o_.is_client()) {
    const int ret = fi_shutdown(ep_, 0);
    if (ret != 0) fprintf(stderr, "warning: fi_shutdown failed: %s\n", fi_strerror(-ret));
  } else if (ep_ != nullptr) {
    WaitPeerShutdown();
  }
  Close(ep_ == nullptr ? nullptr : &ep_->fid, "ep");
  for (auto& r : regions_) FreeRegion(r.get());
  Close(tx_cq_ == nullptr ? nullptr : &tx_cq_->fid, "tx cq");
  Close(rx_cq_ == nullptr ? nullptr : &rx_cq_->fid, "rx cq");
  Close(pep_ == nullptr ? nullptr : &pep_->fid, "pep");
  Close(domain_ == nullptr ? nullptr : &domain_->fid, "domain");
  Close(eq_ == nullptr ? nullptr : &eq_->fid, "eq");
  Close(fabric_ == nullptr ? nullptr : &fabric_->fid, "fabric");
  fi_freeinfo(info_);
}

// Server: give the client's fi_shutdown a moment to arrive (FI_SHUTDOWN or an
// error entry); either way is fine. Some providers progress connection state
// only from CQ reads, so the receive CQ is polled too (entries are dropped).
void Connection::WaitPeerShutdown() {
  const double deadline = NowSeconds() + 1.0;
  while (NowSeconds() < deadline) {
    fi_cq_msg_entry entry{};
    if (fi_cq_read(rx_cq_, &entry, 1) == -FI_EAVAIL) {
      fi_cq_err_entry err{};
      (void)fi_cq_readerr(rx_cq_, &err, 0);
    }
    uint32_t event = 0;
    fi_eq_cm_entry cm{};
    const ssize_t ret = fi_eq_read(eq_, &event, &cm, sizeof(cm), 0);
    if (ret != -FI_EAGAIN) return;
  }
}

// fi_getinfo with the preferred msg_order; a provider that does not
// advertise it is used without, with a note (the data checks still catch a
// reordering that matters).
int Connection::GetInfo(fi_info* hints, const char* node, uint64_t flags, fi_info** out) {
  int ret = fi_getinfo(kFiVersion, node, o_.port.c_str(), flags, hints, out);
  if (ret == -FI_ENODATA && hints->tx_attr->msg_order != 0) {
    uint64_t order = hints->tx_attr->msg_order;
    fprintf(stderr, "%s: note: provider %s does not advertise msg_order %s; going on without\n",
            o_.program.c_str(), o_.provider.c_str(), fi_tostr(&order, FI_TYPE_MSG_ORDER));
    hints->tx_attr->msg_order = 0;
    hints->rx_attr->msg_order = 0;
    ret = fi_getinfo(kFiVersion, node, o_.port.c_str(), flags, hints, out);
  }
  return ret;
}

void Connection::OpenServer(fi_info* hints) {
  fi_info* listen_info = nullptr;
  const char* node = o_.src_addr.empty() ? nullptr : o_.src_addr.c_str();
  Check(o_, GetInfo(hints, node, FI_SOURCE, &listen_info), "fi_getinfo (server, FI_SOURCE)");
  if (o_.verbose) PrintInfo(listen_info);
  Check(o_, fi_fabric(listen_info->fabric_attr, &fabric_, nullptr), "fi_fabric");
  fi_eq_attr eq_attr{};
  eq_attr.wait_obj = FI_WAIT_NONE;
  Check(o_, fi_eq_open(fabric_, &eq_attr, &eq_, nullptr), "fi_eq_open");
  Check(o_, fi_passive_ep(fabric_, listen_info, &pep_, nullptr), "fi_passive_ep");
  Check(o_, fi_pep_bind(pep_, &eq_->fid, 0), "fi_pep_bind");
  Check(o_, fi_listen(pep_), "fi_listen");
  fi_freeinfo(listen_info);

  const unsigned port = BoundPort(o_, &pep_->fid);
  fprintf(stderr, "%s: listening on port %u\n", o_.program.c_str(), port);
  WritePortFile(o_, port);

  fi_eq_cm_entry entry{};
  const uint32_t event = ReadEq(&entry, NowSeconds() + o_.timeout);
  if (event != FI_CONNREQ) {
    Fail(o_, std::string("expected FI_CONNREQ on the passive endpoint, got ") + EventName(event));
  }
  if (entry.info == nullptr) Fail(o_, "FI_CONNREQ event without fi_info");
  info_ = entry.info;
  Check(o_, fi_domain(fabric_, info_, &domain_, nullptr), "fi_domain (from FI_CONNREQ info)");
  OpenEndpoint();
  Check(o_, fi_accept(ep_, nullptr, 0), "fi_accept");
}

void Connection::OpenClient(fi_info* hints) {
  Check(o_, GetInfo(hints, o_.server.c_str(), 0, &info_), "fi_getinfo (client)");
  if (o_.verbose) PrintInfo(info_);
  Check(o_, fi_fabric(info_->fabric_attr, &fabric_, nullptr), "fi_fabric");
  fi_eq_attr eq_attr{};
  eq_attr.wait_obj = FI_WAIT_NONE;
  Check(o_, fi_eq_open(fabric_, &eq_attr, &eq_, nullptr), "fi_eq_open");
  Check(o_, fi_domain(fabric_, info_, &domain_, nullptr), "fi_domain");
  OpenEndpoint();
  Check(o_, fi_connect(ep_, info_->dest_addr, nullptr, 0), "fi_connect");
}

// Endpoint, CQs, the control buffers and the first control receive: all
// before fi_accept / fi_connect, so the peer's first message finds it.
void Connection::OpenEndpoint() {
  CheckMrMode(o_, info_);
  const EndpointParts parts =
      OpenEndpointWithCqs(o_, domain_, info_, FI_CQ_FORMAT_MSG, &eq_->fid, "fi_ep_bind (eq)");
  tx_cq_ = parts.tx_cq;
  rx_cq_ = parts.rx_cq;
  ep_ = parts.ep;

  contexts_.resize(info_->tx_attr->size + info_->rx_attr->size + 4);
  for (auto& c : contexts_) free_contexts_.push_back(&c);
  ctl_tx_ = Register(kCtlBytes, FI_SEND);
  ctl_rx_ = Register(kCtlBytes, FI_RECV);
  PostCtlRecv();
}

void Connection::WaitConnected() {
  fi_eq_cm_entry entry{};
  const uint32_t event = ReadEq(&entry, NowSeconds() + o_.timeout);
  if (event != FI_CONNECTED) {
    Fail(o_, std::string("expected FI_CONNECTED, got ") + EventName(event));
  }
  if (entry.fid != &ep_->fid) Fail(o_, "FI_CONNECTED for another fid than the endpoint");
}

// Polls the EQ until an event and returns it; error entries and the
// deadline are fatal. Once the endpoint exists its CQs are polled too, for
// providers whose connection state advances with data progress.
uint32_t Connection::ReadEq(fi_eq_cm_entry* entry, double deadline) {
  uint32_t event = 0;
  for (;;) {
    if (tx_cq_ != nullptr) Progress();
    const ssize_t ret = fi_eq_read(eq_, &event, entry, sizeof(*entry), 0);
    if (ret >= 0) return event;
    if (ret == -FI_EAVAIL) {
      fi_eq_err_entry err{};
      const ssize_t eret = fi_eq_readerr(eq_, &err, 0);
      if (eret < 0) Check(o_, eret, "fi_eq_readerr");
      Fail(o_, std::string("connection failed: ") + fi_strerror(err.err) + " (provider: " +
                   fi_eq_strerror(eq_, err.prov_errno, err.err_data, nullptr, 0) + ")");
    }
    if (ret != -FI_EAGAIN) Check(o_, ret, "fi_eq_read");
    if (NowSeconds() > deadline) Fail(o_, "timed out waiting for a connection event (--timeout)");
    struct timespec pause = {0, 100'000};
    nanosleep(&pause, nullptr);
  }
}

size_t Connection::max_window() const {
  // Two slots stay free for the control messages.
  const size_t queue = std::min(info_->tx_attr->size, info_->rx_attr->size);
  return queue > 2 ? queue - 2 : 1;
}

Region* Connection::Register(size_t len, uint64_t access) {
  regions_.push_back(RegisterRegion(o_, info_, domain_, ep_, len, access, next_key_++));
  return regions_.back().get();
}

Connection::OpContext* Connection::TakeContext(OpKind kind) {
  PollUntil(
      o_, [&] { return !free_contexts_.empty(); }, [&] { Progress(); }, "a free operation context");
  OpContext* c = free_contexts_.back();
  free_contexts_.pop_back();
  c->kind = kind;
  return c;
}

void Connection::PostRecv(Region* r, size_t len, OpKind kind) {
  OpContext* c = TakeContext(kind);
  PostRetry(
      o_, [&] { return fi_recv(ep_, r->buf, len, r->desc, FI_ADDR_UNSPEC, &c->fi); },
      [&] { Progress(); }, "fi_recv");
}

void Connection::PostSend(Region* r, size_t len) {
  OpContext* c = TakeContext(OpKind::kData);
  PostRetry(
      o_, [&] { return fi_send(ep_, r->buf, len, r->desc, FI_ADDR_UNSPEC, &c->fi); },
      [&] { Progress(); }, "fi_send");
  ++tx_posted_;
}

void Connection::PostWrite(Region* r, size_t len, uint64_t remote_addr, uint64_t key) {
  OpContext* c = TakeContext(OpKind::kData);
  PostRetry(
      o_,
      [&] { return fi_write(ep_, r->buf, len, r->desc, FI_ADDR_UNSPEC, remote_addr, key, &c->fi); },
      [&] { Progress(); }, "fi_write");
  ++tx_posted_;
}

void Connection::PostRead(Region* r, size_t len, uint64_t remote_addr, uint64_t key) {
  OpContext* c = TakeContext(OpKind::kData);
  PostRetry(
      o_,
      [&] { return fi_read(ep_, r->buf, len, r->desc, FI_ADDR_UNSPEC, remote_addr, key, &c->fi); },
      [&] { Progress(); }, "fi_read");
  ++tx_posted_;
}

void Connection::Progress() {
  ReadCq<fi_cq_msg_entry>(o_, tx_cq_, "transmit", [&](const fi_cq_msg_entry& e) {
    free_contexts_.push_back(static_cast<OpContext*>(e.op_context));
    ++tx_done_;
  });
  ReadCq<fi_cq_msg_entry>(o_, rx_cq_, "receive", [&](const fi_cq_msg_entry& e) {
    auto* c = static_cast<OpContext*>(e.op_context);
    rx_done_.push_back(RxDone{c->kind, e.len});
    free_contexts_.push_back(c);
  });
}

void Connection::WaitTx(uint64_t count) {
  PollUntil(
      o_, [&] { return tx_done_ >= count; }, [&] { Progress(); }, "transmit completions");
}

RxDone Connection::WaitRx() {
  PollUntil(
      o_, [&] { return !rx_done_.empty(); }, [&] { Progress(); }, "a receive completion");
  const RxDone done = rx_done_.front();
  rx_done_.pop_front();
  return done;
}

void Connection::SendCtl(Ctl ctl) {
  ctl.magic = kCtlMagic;
  memcpy(ctl_tx_->buf, &ctl, sizeof(ctl));
  PostSend(ctl_tx_, sizeof(ctl));
  WaitTx(tx_posted_);
}

Ctl Connection::WaitCtl() {
  const RxDone done = WaitRx();
  if (done.kind != OpKind::kControl)
    Fail(o_, "protocol error: data where a control message was due");
  if (done.len != sizeof(Ctl)) {
    Fail(o_, "control message of " + std::to_string(done.len) + " B, expected " +
                 std::to_string(sizeof(Ctl)));
  }
  Ctl ctl;
  memcpy(&ctl, ctl_rx_->buf, sizeof(ctl));
  if (ctl.magic != kCtlMagic) Fail(o_, "control message with a bad magic number");
  return ctl;
}

void Connection::PostCtlRecv() {
  PostRecv(ctl_rx_, kCtlBytes, OpKind::kControl);
}

}  // namespace bench
