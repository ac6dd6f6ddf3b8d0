// Reliable datagram endpoint setup, address exchange, tagged posting and
// completion polling for the benchmarks. See bench_rdm_fabric.h for the
// contract.
#include "bench_rdm_fabric.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <string>

#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

namespace bench {
namespace {

constexpr size_t kMaxNameBytes = kCtlBytes - sizeof(Ctl);

}  // namespace

RdmEndpoint::RdmEndpoint(const Options& o, uint64_t caps) : o_(o) {
  fi_info* hints = fi_allocinfo();
  if (hints == nullptr) Fail(o_, "fi_allocinfo failed");
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = caps | FI_MSG;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->domain_attr->mr_mode = static_cast<int>(kMrModesHandled);
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  hints->domain_attr->av_type = o_.av == "map" ? FI_AV_MAP : FI_AV_TABLE;
  hints->fabric_attr->prov_name = strdup(o_.provider.c_str());
  Open(hints);
  fi_freeinfo(hints);
  Hello();
}

RdmEndpoint::~RdmEndpoint() {
  Close(ep_ == nullptr ? nullptr : &ep_->fid, "ep");
  for (auto& r : regions_) FreeRegion(r.get());
  Close(av_ == nullptr ? nullptr : &av_->fid, "av");
  Close(tx_cq_ == nullptr ? nullptr : &tx_cq_->fid, "tx cq");
  Close(rx_cq_ == nullptr ? nullptr : &rx_cq_->fid, "rx cq");
  Close(domain_ == nullptr ? nullptr : &domain_->fid, "domain");
  Close(fabric_ == nullptr ? nullptr : &fabric_->fid, "fabric");
  fi_freeinfo(info_);
}

// Everything up to an enabled endpoint with its control buffers and the
// first control receive, so the peer's first message finds it posted.
void RdmEndpoint::Open(fi_info* hints) {
  if (o_.is_client()) {
    Check(o_, fi_getinfo(kFiVersion, o_.server.c_str(), o_.port.c_str(), 0, hints, &info_),
          "fi_getinfo (client)");
    if (info_->dest_addr == nullptr) Fail(o_, "fi_getinfo gave no destination address");
    if (!o_.src_addr.empty()) BindClientTo(o_.src_addr);
  } else {
    const char* node = o_.src_addr.empty() ? nullptr : o_.src_addr.c_str();
    Check(o_, fi_getinfo(kFiVersion, node, o_.port.c_str(), FI_SOURCE, hints, &info_),
          "fi_getinfo (server, FI_SOURCE)");
  }
  if (o_.verbose) PrintInfo(info_);
  CheckMrMode(o_, info_);
  Check(o_, fi_fabric(info_->fabric_attr, &fabric_, nullptr), "fi_fabric");
  Check(o_, fi_domain(fabric_, info_, &domain_, nullptr), "fi_domain");

  fi_av_attr av_attr{};
  av_attr.type = hints->domain_attr->av_type;
  av_attr.count = 4;
  Check(o_, fi_av_open(domain_, &av_attr, &av_, nullptr), "fi_av_open");
  const EndpointParts parts =
      OpenEndpointWithCqs(o_, domain_, info_, FI_CQ_FORMAT_TAGGED, &av_->fid, "fi_ep_bind (av)");
  tx_cq_ = parts.tx_cq;
  rx_cq_ = parts.rx_cq;
  ep_ = parts.ep;

  contexts_.resize(info_->tx_attr->size + info_->rx_attr->size + 4);
  for (auto& c : contexts_) free_contexts_.push_back(&c);
  ctl_tx_ = Register(kCtlBytes, FI_SEND);
  ctl_rx_ = Register(kCtlBytes, FI_RECV);
  PostCtlRecv();
}

// The address the server learns from HELLO is the client's fi_getname: a
// wildcard one only works on loopback, so across hosts the client names its
// own IPv4 address (the endpoint binds info->src_addr).
void RdmEndpoint::BindClientTo(const std::string& addr) {
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  if (inet_pton(AF_INET, addr.c_str(), &sin.sin_addr) != 1) {
    Fail(o_, "-s " + addr + ": not an IPv4 address");
  }
  void* copy = malloc(sizeof(sin));
  if (copy == nullptr) Fail(o_, "out of memory");
  memcpy(copy, &sin, sizeof(sin));
  free(info_->src_addr);
  info_->src_addr = copy;
  info_->src_addrlen = sizeof(sin);
  info_->addr_format = FI_SOCKADDR_IN;
}

fi_addr_t RdmEndpoint::InsertPeer(const void* addr) {
  fi_addr_t fi_addr = FI_ADDR_NOTAVAIL;
  const int ret = fi_av_insert(av_, addr, 1, &fi_addr, 0, nullptr);
  if (ret != 1 || fi_addr == FI_ADDR_NOTAVAIL) {
    Check(o_, ret < 0 ? ret : -FI_EINVAL, "fi_av_insert (peer address)");
  }
  return fi_addr;
}

// The client names itself in a HELLO (no FI_SOURCE needed at the server);
// the server's ACK proves the path works both ways before any timing.
void RdmEndpoint::Hello() {
  if (o_.is_client()) {
    peer_ = InsertPeer(info_->dest_addr);
    uint8_t name[kMaxNameBytes];
    size_t name_len = sizeof(name);
    Check(o_, fi_getname(&ep_->fid, name, &name_len), "fi_getname (endpoint)");
    Ctl hello;
    hello.type = CtlType::kHello;
    SendCtl(hello, name, name_len);
    if (WaitCtl().type != CtlType::kAck) Fail(o_, "protocol error: expected ACK to HELLO");
    return;
  }
  const unsigned port = BoundPort(o_, &ep_->fid);
  fprintf(stderr, "%s: listening on port %u\n", o_.program.c_str(), port);
  WritePortFile(o_, port);
  std::vector<uint8_t> name;
  if (WaitCtl(&name).type != CtlType::kHello) Fail(o_, "protocol error: expected HELLO");
  if (name.empty()) Fail(o_, "HELLO without the client's address");
  peer_ = InsertPeer(name.data());
  Ctl ack;
  ack.type = CtlType::kAck;
  SendCtl(ack);
}

size_t RdmEndpoint::max_window() const {
  const size_t queue = std::min(info_->tx_attr->size, info_->rx_attr->size);
  return queue > 2 ? queue - 2 : 1;
}

Region* RdmEndpoint::Register(size_t len, uint64_t access) {
  regions_.push_back(RegisterRegion(o_, info_, domain_, ep_, len, access, regions_.size() + 1));
  return regions_.back().get();
}

RdmEndpoint::OpContext* RdmEndpoint::TakeContext(bool control, size_t slot) {
  PollUntil(
      o_, [&] { return !free_contexts_.empty(); }, [&] { Progress(); }, "a free operation context");
  OpContext* c = free_contexts_.back();
  free_contexts_.pop_back();
  c->control = control;
  c->slot = slot;
  return c;
}

void RdmEndpoint::PostTRecv(Region* r, size_t offset, size_t len, uint64_t tag, size_t slot,
                            uint64_t ignore) {
  OpContext* c = TakeContext(false, slot);
  PostRetry(
      o_,
      [&] {
        return fi_trecv(ep_, r->buf + offset, len, r->desc, FI_ADDR_UNSPEC, tag, ignore, &c->fi);
      },
      [&] { Progress(); }, "fi_trecv");
}

void RdmEndpoint::PostTSend(Region* r, size_t offset, size_t len, uint64_t tag) {
  OpContext* c = TakeContext(false, 0);
  PostRetry(
      o_, [&] { return fi_tsend(ep_, r->buf + offset, len, r->desc, peer_, tag, &c->fi); },
      [&] { Progress(); }, "fi_tsend");
  ++tx_posted_;
}

void RdmEndpoint::PostWrite(Region* r, size_t offset, size_t len, uint64_t remote_addr,
                            uint64_t key) {
  OpContext* c = TakeContext(false, 0);
  PostRetry(
      o_,
      [&] { return fi_write(ep_, r->buf + offset, len, r->desc, peer_, remote_addr, key, &c->fi); },
      [&] { Progress(); }, "fi_write");
  ++tx_posted_;
}

void RdmEndpoint::PostRead(Region* r, size_t offset, size_t len, uint64_t remote_addr,
                           uint64_t key) {
  OpContext* c = TakeContext(false, 0);
  PostRetry(
      o_,
      [&] { return fi_read(ep_, r->buf + offset, len, r->desc, peer_, remote_addr, key, &c->fi); },
      [&] { Progress(); }, "fi_read");
  ++tx_posted_;
}

void RdmEndpoint::PostAtomicAdd(Region* src, size_t offset, uint64_t remote_addr, uint64_t key) {
  OpContext* c = TakeContext(false, 0);
  PostRetry(
      o_,
      [&] {
        return fi_atomic(ep_, src->buf + offset, 1, src->desc, peer_, remote_addr, key, FI_UINT64,
                         FI_SUM, &c->fi);
      },
      [&] { Progress(); }, "fi_atomic");
  ++tx_posted_;
}

void RdmEndpoint::PostFetchAdd(Region* src, size_t offset, Region* res, size_t res_offset,
                               uint64_t remote_addr, uint64_t key) {
  OpContext* c = TakeContext(false, 0);
  PostRetry(
      o_,
      [&] {
        return fi_fetch_atomic(ep_, src->buf + offset, 1, src->desc, res->buf + res_offset,
                               res->desc, peer_, remote_addr, key, FI_UINT64, FI_SUM, &c->fi);
      },
      [&] { Progress(); }, "fi_fetch_atomic");
  ++tx_posted_;
}

void RdmEndpoint::PostCtlRecv() {
  OpContext* c = TakeContext(true, 0);
  PostRetry(
      o_,
      [&] { return fi_recv(ep_, ctl_rx_->buf, kCtlBytes, ctl_rx_->desc, FI_ADDR_UNSPEC, &c->fi); },
      [&] { Progress(); }, "fi_recv (control)");
}

void RdmEndpoint::Progress() {
  ReadCq<fi_cq_tagged_entry>(o_, tx_cq_, "transmit", [&](const fi_cq_tagged_entry& e) {
    free_contexts_.push_back(static_cast<OpContext*>(e.op_context));
    ++tx_done_;
  });
  ReadCq<fi_cq_tagged_entry>(o_, rx_cq_, "receive", [&](const fi_cq_tagged_entry& e) {
    auto* c = static_cast<OpContext*>(e.op_context);
    rx_done_.push_back(RdmRxDone{c->control, e.len, e.tag, c->slot});
    free_contexts_.push_back(c);
  });
}

void RdmEndpoint::WaitTx(uint64_t count) {
  PollUntil(
      o_, [&] { return tx_done_ >= count; }, [&] { Progress(); }, "transmit completions");
}

RdmRxDone RdmEndpoint::WaitRx() {
  PollUntil(
      o_, [&] { return !rx_done_.empty(); }, [&] { Progress(); }, "a receive completion");
  const RdmRxDone done = rx_done_.front();
  rx_done_.pop_front();
  return done;
}

void RdmEndpoint::SendCtl(Ctl ctl, const void* name, size_t name_len) {
  if (name_len > kMaxNameBytes) Fail(o_, "endpoint name too long for a control message");
  ctl.magic = kCtlMagic;
  ctl.name_len = name_len;
  memcpy(ctl_tx_->buf, &ctl, sizeof(ctl));
  if (name_len != 0) memcpy(ctl_tx_->buf + sizeof(ctl), name, name_len);
  const size_t len = sizeof(ctl) + name_len;
  OpContext* c = TakeContext(true, 0);
  PostRetry(
      o_, [&] { return fi_send(ep_, ctl_tx_->buf, len, ctl_tx_->desc, peer_, &c->fi); },
      [&] { Progress(); }, "fi_send (control)");
  ++tx_posted_;
  WaitTx(tx_posted_);
}

Ctl RdmEndpoint::WaitCtl(std::vector<uint8_t>* name) {
  const RdmRxDone done = WaitRx();
  if (!done.control) Fail(o_, "protocol error: data where a control message was due");
  Ctl ctl;
  if (done.len < sizeof(ctl)) {
    Fail(o_, "control message of " + std::to_string(done.len) + " B, expected at least " +
                 std::to_string(sizeof(ctl)));
  }
  memcpy(&ctl, ctl_rx_->buf, sizeof(ctl));
  if (ctl.magic != kCtlMagic) Fail(o_, "control message with a bad magic number");
  if (ctl.name_len != done.len - sizeof(ctl)) Fail(o_, "control message with a bad name length");
  if (name != nullptr) name->assign(ctl_rx_->buf + sizeof(ctl), ctl_rx_->buf + done.len);
  PostCtlRecv();
  return ctl;
}

}  // namespace bench
