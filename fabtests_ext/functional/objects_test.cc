// Functional tests of the iwarpx provider's engine-independent objects through
// libfabric's public API only (linked with -lfabric, never with provider
// code). ctest sets FI_PROVIDER_PATH to the build directory of
// libiwarpx-fi.so and FI_PROVIDER=iwarpx; run by hand, the compiled-in build
// directory is used. Loopback addresses only; every wait is bounded.
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>

#include <chrono>
#include <cstring>
#include <set>
#include <vector>

#include <gtest/gtest.h>
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_ext_iwarpx.h>
#include <rdma/fi_tagged.h>

namespace {

constexpr uint32_t kVersion = FI_VERSION(1, 17);

fi_info* Hints() {
  fi_info* h = fi_allocinfo();
  h->fabric_attr->prov_name = strdup("iwarpx");
  return h;
}

int GetInfo(fi_info* hints, fi_info** out, const char* node = nullptr,
            const char* service = nullptr, uint64_t flags = 0) {
  return fi_getinfo(kVersion, node, service, flags, hints, out);
}

class ObjectsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fi_info* hints = Hints();
    hints->ep_attr->type = FI_EP_MSG;
    hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED | FI_MR_LOCAL;
    ASSERT_EQ(GetInfo(hints, &info_), 0);
    fi_freeinfo(hints);
    ASSERT_EQ(fi_fabric(info_->fabric_attr, &fabric_, nullptr), 0);
    ASSERT_EQ(fi_domain(fabric_, info_, &domain_, nullptr), 0);
  }
  void TearDown() override {
    if (domain_ != nullptr) {
      EXPECT_EQ(fi_close(&domain_->fid), 0);
    }
    if (fabric_ != nullptr) {
      EXPECT_EQ(fi_close(&fabric_->fid), 0);
    }
    fi_freeinfo(info_);
  }

  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
};

// iWARP over SCTP is a provider-specific protocol of FI_EP_MSG only
// (FI_PROTO_IWARPX_SCTP); hints naming it get it, other types do not match.
TEST(GetInfo, SctpProtocolIsOfferedOnMsgOnly) {
  fi_info* hints = fi_allocinfo();
  ASSERT_NE(hints, nullptr);
  hints->ep_attr->type = FI_EP_MSG;
  hints->ep_attr->protocol = FI_PROTO_IWARPX_SCTP;
  fi_info* info = nullptr;
  ASSERT_EQ(fi_getinfo(kVersion, nullptr, nullptr, 0, hints, &info), 0);
  int n = 0;
  for (fi_info* i = info; i != nullptr; i = i->next, ++n) {
    EXPECT_EQ(i->ep_attr->type, FI_EP_MSG);
    EXPECT_EQ(i->ep_attr->protocol, static_cast<uint32_t>(FI_PROTO_IWARPX_SCTP));
  }
  EXPECT_GE(n, 1);
  fi_freeinfo(info);
  info = nullptr;
  hints->ep_attr->protocol = FI_PROTO_IWARP;
  ASSERT_EQ(fi_getinfo(kVersion, nullptr, nullptr, 0, hints, &info), 0);
  EXPECT_EQ(info->ep_attr->protocol, static_cast<uint32_t>(FI_PROTO_IWARP));
  fi_freeinfo(info);
  info = nullptr;
  hints->ep_attr->type = FI_EP_RDM;
  hints->ep_attr->protocol = FI_PROTO_IWARPX_SCTP;
  EXPECT_EQ(fi_getinfo(kVersion, nullptr, nullptr, 0, hints, &info), -FI_ENODATA);
  EXPECT_EQ(info, nullptr);
  fi_freeinfo(hints);
}

TEST(GetInfo, NoHintsListsMsgThenDgramThenRdm) {
  fi_info* info = nullptr;
  ASSERT_EQ(fi_getinfo(kVersion, nullptr, nullptr, 0, nullptr, &info), 0);
  int msg = 0;
  int dgram = 0;
  int rdm = 0;
  for (fi_info* i = info; i != nullptr; i = i->next) {
    ASSERT_STREQ(i->fabric_attr->prov_name, "iwarpx");
    EXPECT_EQ(i->ep_attr->protocol, static_cast<uint32_t>(FI_PROTO_IWARP));
    EXPECT_TRUE(i->addr_format == FI_SOCKADDR_IN || i->addr_format == FI_SOCKADDR_IN6);
    EXPECT_EQ(i->domain_attr->data_progress, FI_PROGRESS_MANUAL);
    if (i->ep_attr->type == FI_EP_MSG) {
      EXPECT_EQ(dgram + rdm, 0) << "MSG entries come first";
      EXPECT_EQ(i->caps & (FI_MSG | FI_RMA | FI_ATOMIC), FI_MSG | FI_RMA | FI_ATOMIC);
      ++msg;
    } else if (i->ep_attr->type == FI_EP_DGRAM) {
      EXPECT_EQ(rdm, 0) << "DGRAM entries before RDM";
      EXPECT_EQ(i->caps & (FI_MSG | FI_SOURCE | FI_RMA), FI_MSG | FI_SOURCE);
      ++dgram;
    } else {
      EXPECT_EQ(i->ep_attr->type, FI_EP_RDM);
      constexpr uint64_t kRdm =
          FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SOURCE | FI_DIRECTED_RECV;
      EXPECT_EQ(i->caps & kRdm, kRdm);
      EXPECT_EQ(i->tx_attr->iov_limit, 3u);  // the RDM header takes one SGE
      EXPECT_EQ(i->domain_attr->cq_data_size, 8u);
      EXPECT_EQ(i->mode & FI_RX_CQ_DATA, 0u);  // CQ data travels in the RDM header
      EXPECT_NE(i->ep_attr->mem_tag_format, 0u);
      ++rdm;
    }
  }
  EXPECT_GE(msg, 1);
  EXPECT_EQ(dgram, msg);  // one per address family each
  EXPECT_EQ(rdm, msg);
  fi_freeinfo(info);
}

TEST(GetInfo, CapsSubsetMatchesSupersetDoesNot) {
  fi_info* hints = Hints();
  hints->caps = FI_MSG;
  fi_info* info = nullptr;
  ASSERT_EQ(GetInfo(hints, &info), 0);
  EXPECT_EQ(info->caps & (FI_SEND | FI_RECV), FI_SEND | FI_RECV);
  EXPECT_EQ(info->caps & FI_RMA, 0u);
  fi_freeinfo(info);
  hints->caps = FI_MSG | FI_TAGGED;  // only the RDM endpoint tags
  info = nullptr;
  ASSERT_EQ(GetInfo(hints, &info), 0);
  for (fi_info* i = info; i != nullptr; i = i->next) EXPECT_EQ(i->ep_attr->type, FI_EP_RDM);
  fi_freeinfo(info);
  hints->caps = FI_MSG | FI_MULTICAST;  // nobody
  info = nullptr;
  EXPECT_EQ(GetInfo(hints, &info), -FI_ENODATA);
  EXPECT_EQ(info, nullptr);
  fi_freeinfo(hints);
}

TEST(GetInfo, EpTypeAndAttrsAreHonoured) {
  fi_info* hints = Hints();
  fi_info* info = nullptr;
  hints->ep_attr->type = FI_EP_SOCK_STREAM;  // not offered
  EXPECT_EQ(GetInfo(hints, &info), -FI_ENODATA);
  hints->ep_attr->type = FI_EP_MSG;
  hints->tx_attr->iov_limit = 1000;
  EXPECT_EQ(GetInfo(hints, &info), -FI_ENODATA);
  hints->tx_attr->iov_limit = 2;
  hints->rx_attr->size = 64;
  // Either progress model is offered as asked (AUTO runs the progress thread).
  hints->domain_attr->data_progress = FI_PROGRESS_AUTO;
  ASSERT_EQ(GetInfo(hints, &info), 0);
  EXPECT_EQ(info->domain_attr->data_progress, FI_PROGRESS_AUTO);
  fi_freeinfo(info);
  hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  ASSERT_EQ(GetInfo(hints, &info), 0);
  EXPECT_EQ(info->rx_attr->size, 64u);
  EXPECT_EQ(info->domain_attr->threading, FI_THREAD_DOMAIN);
  EXPECT_EQ(info->domain_attr->data_progress, FI_PROGRESS_MANUAL);
  fi_freeinfo(info);
  fi_freeinfo(hints);
}

TEST(GetInfo, ModeAndMrMode) {
  fi_info* hints = Hints();
  hints->mode = FI_CONTEXT;  // offered by the application, not required by iwarpx
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED;
  fi_info* info = nullptr;
  ASSERT_EQ(GetInfo(hints, &info), 0);
  EXPECT_EQ(info->mode, 0u);
  EXPECT_EQ(info->domain_attr->mr_mode, FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED);
  fi_freeinfo(info);
  hints->domain_attr->mr_mode = 0;  // the application chooses keys and uses offsets
  ASSERT_EQ(GetInfo(hints, &info), 0);
  EXPECT_EQ(info->domain_attr->mr_mode, 0);
  fi_freeinfo(info);
  fi_freeinfo(hints);
}

TEST(GetInfo, SourceNodeServiceResolves) {
  fi_info* hints = Hints();
  hints->ep_attr->type = FI_EP_MSG;
  fi_info* info = nullptr;
  ASSERT_EQ(GetInfo(hints, &info, "127.0.0.1", "4791", FI_SOURCE), 0);
  ASSERT_EQ(info->addr_format, static_cast<uint32_t>(FI_SOCKADDR_IN));
  ASSERT_EQ(info->src_addrlen, sizeof(sockaddr_in));
  const auto* sin = static_cast<const sockaddr_in*>(info->src_addr);
  EXPECT_EQ(ntohs(sin->sin_port), 4791);
  EXPECT_EQ(ntohl(sin->sin_addr.s_addr), INADDR_LOOPBACK);
  EXPECT_EQ(info->dest_addr, nullptr);
  EXPECT_EQ(info->next, nullptr);  // one family for a numeric IPv4 node
  fi_freeinfo(info);

  ASSERT_EQ(GetInfo(hints, &info, "127.0.0.1", "4791"), 0);
  ASSERT_EQ(info->dest_addrlen, sizeof(sockaddr_in));
  // No source given: the family's wildcard address, port 0 (fi_getinfo_test
  // wants src_addr set on every entry).
  ASSERT_EQ(info->src_addrlen, sizeof(sockaddr_in));
  const auto* any = static_cast<const sockaddr_in*>(info->src_addr);
  EXPECT_EQ(any->sin_addr.s_addr, htonl(INADDR_ANY));
  EXPECT_EQ(any->sin_port, 0);
  fi_freeinfo(info);

  hints->addr_format = FI_SOCKADDR_IN6;
  EXPECT_EQ(GetInfo(hints, &info, "127.0.0.1", "4791", FI_SOURCE), -FI_ENODATA);
  fi_freeinfo(hints);
}

TEST(GetInfo, BadNodeIsAnError) {
  fi_info* hints = Hints();
  fi_info* info = nullptr;
  EXPECT_LT(GetInfo(hints, &info, "not-an-address", "4791", FI_NUMERICHOST), 0);
  EXPECT_LT(GetInfo(hints, &info, "256.256.256.256", "4791", FI_NUMERICHOST | FI_SOURCE), 0);
  EXPECT_EQ(info, nullptr);
  fi_freeinfo(hints);
}

TEST_F(ObjectsTest, EndpointLifecycleAndMisuse) {
  fid_ep* ep = nullptr;
  ASSERT_EQ(fi_endpoint(domain_, info_, &ep, nullptr), 0);
  // An MSG endpoint needs an EQ before fi_enable; data calls need a connection.
  EXPECT_EQ(fi_enable(ep), -FI_ENOEQ);
  char buf[8] = {};
  EXPECT_EQ(fi_send(ep, buf, sizeof(buf), nullptr, 0, nullptr), -FI_EOPBADSTATE);
  EXPECT_EQ(fi_tsend(ep, buf, sizeof(buf), nullptr, 0, 0, nullptr), -FI_ENOSYS);
  // While the endpoint is open its domain cannot close.
  EXPECT_EQ(fi_close(&domain_->fid), -FI_EBUSY);
  EXPECT_EQ(fi_close(&ep->fid), 0);
  fid_pep* pep = nullptr;
  ASSERT_EQ(fi_passive_ep(fabric_, info_, &pep, nullptr), 0);
  EXPECT_EQ(fi_listen(pep), -FI_ENOEQ);
  EXPECT_EQ(fi_close(&pep->fid), 0);
  // An address vector opens (for datagram endpoints) but a connected
  // endpoint has no use for one.
  fid_av* av = nullptr;
  fi_av_attr av_attr{};
  ASSERT_EQ(fi_av_open(domain_, &av_attr, &av, nullptr), 0);
  ASSERT_EQ(fi_endpoint(domain_, info_, &ep, nullptr), 0);
  EXPECT_LT(fi_ep_bind(ep, &av->fid, 0), 0);
  EXPECT_EQ(fi_close(&ep->fid), 0);
  EXPECT_EQ(fi_close(&av->fid), 0);
}

TEST_F(ObjectsTest, MrEveryAccessCombination) {
  std::vector<char> buf(4096);
  const uint64_t bits[] = {FI_SEND, FI_RECV, FI_READ, FI_WRITE, FI_REMOTE_READ, FI_REMOTE_WRITE};
  std::vector<fid_mr*> mrs;
  std::set<uint64_t> keys;
  for (uint64_t combo = 0; combo < 64; ++combo) {
    uint64_t access = 0;
    for (int b = 0; b < 6; ++b) {
      if ((combo & (1u << b)) != 0) access |= bits[b];
    }
    fid_mr* mr = nullptr;
    ASSERT_EQ(fi_mr_reg(domain_, buf.data(), buf.size(), access, 0, 0, 0, &mr, nullptr), 0)
        << access;
    EXPECT_NE(fi_mr_desc(mr), nullptr);
    EXPECT_NE(fi_mr_key(mr), 0u);
    keys.insert(fi_mr_key(mr));
    mrs.push_back(mr);
  }
  EXPECT_EQ(keys.size(), mrs.size());
  // Provider-chosen keys are random, not a counter.
  int sequential = 0;
  for (size_t i = 1; i < mrs.size(); ++i) {
    if (fi_mr_key(mrs[i]) == fi_mr_key(mrs[i - 1]) + 1) ++sequential;
  }
  EXPECT_LT(sequential, 3);
  EXPECT_EQ(fi_close(&domain_->fid), -FI_EBUSY);  // MRs still open
  for (fid_mr* mr : mrs) EXPECT_EQ(fi_close(&mr->fid), 0);
}

TEST_F(ObjectsTest, MrMisuse) {
  char buf[64] = {};
  fid_mr* mr = nullptr;
  EXPECT_EQ(fi_mr_reg(domain_, buf, sizeof(buf), FI_SEND, 8, 0, 0, &mr, nullptr), -FI_EINVAL);
  EXPECT_EQ(fi_mr_reg(domain_, buf, sizeof(buf), FI_SEND, 0, 0, 1, &mr, nullptr), -FI_EBADFLAGS);
  iovec iov[2] = {{buf, 32}, {buf + 32, 32}};
  EXPECT_EQ(fi_mr_regv(domain_, iov, 2, FI_REMOTE_WRITE, 0, 0, 0, &mr, nullptr), -FI_EINVAL);
  ASSERT_EQ(fi_mr_regv(domain_, iov, 1, FI_REMOTE_WRITE, 0, 0, 0, &mr, nullptr), 0);
  EXPECT_EQ(fi_close(&mr->fid), 0);
  fi_mr_attr attr{};
  attr.mr_iov = iov;
  attr.iov_count = 1;
  attr.access = FI_REMOTE_READ;
  ASSERT_EQ(fi_mr_regattr(domain_, &attr, 0, &mr), 0);
  EXPECT_EQ(fi_close(&mr->fid), 0);
}

TEST(MrKeys, RequestedKeyWithoutProvKey) {
  fi_info* hints = Hints();
  hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED;
  fi_info* info = nullptr;
  ASSERT_EQ(GetInfo(hints, &info), 0);
  ASSERT_EQ(info->domain_attr->mr_mode & FI_MR_PROV_KEY, 0);
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  ASSERT_EQ(fi_fabric(info->fabric_attr, &fabric, nullptr), 0);
  ASSERT_EQ(fi_domain(fabric, info, &domain, nullptr), 0);
  char buf[64] = {};
  fid_mr* mr = nullptr;
  fid_mr* dup = nullptr;
  ASSERT_EQ(fi_mr_reg(domain, buf, sizeof(buf), FI_REMOTE_READ, 0, 0x1234, 0, &mr, nullptr), 0);
  EXPECT_EQ(fi_mr_key(mr), 0x1234u);
  EXPECT_EQ(fi_mr_reg(domain, buf, sizeof(buf), FI_REMOTE_READ, 0, 0x1234, 0, &dup, nullptr),
            -FI_ENOKEY);
  EXPECT_EQ(fi_mr_reg(domain, buf, sizeof(buf), FI_REMOTE_READ, 0, 1ULL << 40, 0, &dup, nullptr),
            -FI_EKEYREJECTED);
  EXPECT_EQ(fi_close(&fabric->fid), -FI_EBUSY);  // domain still open
  EXPECT_EQ(fi_close(&mr->fid), 0);
  EXPECT_EQ(fi_close(&domain->fid), 0);
  EXPECT_EQ(fi_close(&fabric->fid), 0);
  fi_freeinfo(info);
  fi_freeinfo(hints);
}

class CqFormatTest : public ObjectsTest, public ::testing::WithParamInterface<fi_cq_format> {};

TEST_P(CqFormatTest, WaitFdTimeoutAndEmptyRead) {
  fi_cq_attr attr{};
  attr.format = GetParam();
  attr.wait_obj = FI_WAIT_FD;
  attr.size = 16;
  fid_cq* cq = nullptr;
  ASSERT_EQ(fi_cq_open(domain_, &attr, &cq, nullptr), 0);
  int fd = -1;
  ASSERT_EQ(fi_control(&cq->fid, FI_GETWAIT, &fd), 0);
  ASSERT_GE(fd, 0);
  fid* fids[] = {&cq->fid};
  EXPECT_EQ(fi_trywait(fabric_, fids, 1), 0);
  pollfd p = {fd, POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 0), 0);  // nothing pending: not readable

  fi_cq_data_entry entries[4];
  EXPECT_EQ(fi_cq_read(cq, entries, 4), -FI_EAGAIN);
  fi_addr_t src[4];
  EXPECT_EQ(fi_cq_readfrom(cq, entries, 4, src), -FI_EAGAIN);
  fi_cq_err_entry err{};
  EXPECT_EQ(fi_cq_readerr(cq, &err, 0), -FI_EAGAIN);

  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(fi_cq_sread(cq, entries, 4, nullptr, 50), -FI_EAGAIN);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  EXPECT_GE(ms, 45);
  EXPECT_LT(ms, 2000);
  EXPECT_EQ(fi_cq_sreadfrom(cq, entries, 4, src, nullptr, 10), -FI_EAGAIN);
  EXPECT_EQ(fi_cq_signal(cq), 0);
  EXPECT_EQ(fi_close(&cq->fid), 0);
}

INSTANTIATE_TEST_SUITE_P(Formats, CqFormatTest,
                         ::testing::Values(FI_CQ_FORMAT_CONTEXT, FI_CQ_FORMAT_MSG,
                                           FI_CQ_FORMAT_DATA, FI_CQ_FORMAT_TAGGED));

TEST_F(ObjectsTest, CqWaitObjectsAndFormats) {
  fi_cq_attr attr{};
  fid_cq* cq = nullptr;
  attr.format = static_cast<fi_cq_format>(FI_CQ_FORMAT_TAGGED + 1);  // no such format
  EXPECT_EQ(fi_cq_open(domain_, &attr, &cq, nullptr), -FI_ENOSYS);
  attr.format = FI_CQ_FORMAT_CONTEXT;
  attr.wait_obj = FI_WAIT_SET;
  EXPECT_EQ(fi_cq_open(domain_, &attr, &cq, nullptr), -FI_ENOSYS);
  attr.wait_obj = FI_WAIT_NONE;
  ASSERT_EQ(fi_cq_open(domain_, &attr, &cq, nullptr), 0);
  int fd = -1;
  EXPECT_EQ(fi_control(&cq->fid, FI_GETWAIT, &fd), -FI_ENODATA);
  fi_cq_entry e;
  EXPECT_EQ(fi_cq_sread(cq, &e, 1, nullptr, 10), -FI_EINVAL);
  EXPECT_EQ(fi_close(&domain_->fid), -FI_EBUSY);  // CQ still open
  EXPECT_EQ(fi_close(&cq->fid), 0);
  attr.wait_obj = FI_WAIT_UNSPEC;
  ASSERT_EQ(fi_cq_open(domain_, &attr, &cq, nullptr), 0);
  EXPECT_EQ(fi_control(&cq->fid, FI_GETWAIT, &fd), 0);
  EXPECT_EQ(fi_close(&cq->fid), 0);
}

TEST_F(ObjectsTest, CounterAddReadWait) {
  fi_cntr_attr attr{};
  attr.events = FI_CNTR_EVENTS_COMP;
  attr.wait_obj = FI_WAIT_FD;
  fid_cntr* cntr = nullptr;
  ASSERT_EQ(fi_cntr_open(domain_, &attr, &cntr, nullptr), 0);
  EXPECT_EQ(fi_cntr_read(cntr), 0u);
  EXPECT_EQ(fi_cntr_add(cntr, 5), 0);
  EXPECT_EQ(fi_cntr_read(cntr), 5u);
  EXPECT_EQ(fi_cntr_wait(cntr, 5, 100), 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(fi_cntr_wait(cntr, 6, 30), -FI_ETIMEDOUT);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(fi_cntr_set(cntr, 10), 0);
  EXPECT_EQ(fi_cntr_read(cntr), 10u);
  EXPECT_EQ(fi_cntr_adderr(cntr, 2), 0);
  EXPECT_EQ(fi_cntr_readerr(cntr), 2u);
  EXPECT_EQ(fi_cntr_seterr(cntr, 0), 0);
  EXPECT_EQ(fi_cntr_readerr(cntr), 0u);
  int fd = -1;
  ASSERT_EQ(fi_control(&cntr->fid, FI_GETWAIT, &fd), 0);
  fid* fids[] = {&cntr->fid};
  EXPECT_EQ(fi_trywait(fabric_, fids, 1), -FI_EAGAIN);  // changed since opened
  EXPECT_EQ(fi_trywait(fabric_, fids, 1), 0);
  EXPECT_EQ(fi_close(&cntr->fid), 0);
}

TEST_F(ObjectsTest, EqWriteReadRoundTrip) {
  fi_eq_attr attr{};
  attr.wait_obj = FI_WAIT_FD;
  attr.flags = FI_WRITE;
  fid_eq* eq = nullptr;
  ASSERT_EQ(fi_eq_open(fabric_, &attr, &eq, nullptr), 0);
  uint32_t event = 0;
  fi_eq_entry entry{};
  EXPECT_EQ(fi_eq_read(eq, &event, &entry, sizeof(entry), 0), -FI_EAGAIN);
  EXPECT_EQ(fi_eq_sread(eq, &event, &entry, sizeof(entry), 20, 0), -FI_EAGAIN);
  fi_eq_entry out{};
  out.fid = &eq->fid;
  out.context = &out;
  out.data = 42;
  EXPECT_EQ(fi_eq_write(eq, FI_NOTIFY, &out, sizeof(out), 0), static_cast<ssize_t>(sizeof(out)));
  int fd = -1;
  ASSERT_EQ(fi_control(&eq->fid, FI_GETWAIT, &fd), 0);
  pollfd p = {fd, POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 1000), 1);
  fid* fids[] = {&eq->fid};
  EXPECT_EQ(fi_trywait(fabric_, fids, 1), -FI_EAGAIN);
  EXPECT_EQ(fi_eq_read(eq, &event, &entry, 4, 0), -FI_ETOOSMALL);
  EXPECT_EQ(fi_eq_read(eq, &event, &entry, sizeof(entry), FI_PEEK),
            static_cast<ssize_t>(sizeof(entry)));
  EXPECT_EQ(fi_eq_sread(eq, &event, &entry, sizeof(entry), 1000, 0),
            static_cast<ssize_t>(sizeof(entry)));
  EXPECT_EQ(event, static_cast<uint32_t>(FI_NOTIFY));
  EXPECT_EQ(entry.data, 42u);
  EXPECT_EQ(entry.context, &out);
  EXPECT_EQ(fi_trywait(fabric_, fids, 1), 0);
  EXPECT_EQ(fi_close(&fabric_->fid), -FI_EBUSY);  // EQ (and domain) still open
  EXPECT_EQ(fi_close(&eq->fid), 0);

  attr.flags = 0;
  ASSERT_EQ(fi_eq_open(fabric_, &attr, &eq, nullptr), 0);
  EXPECT_EQ(fi_eq_write(eq, FI_NOTIFY, &out, sizeof(out), 0), -FI_EINVAL);  // no FI_WRITE
  EXPECT_EQ(fi_close(&eq->fid), 0);
}

// fi_poll(3): poll sets hold CQs and counters of their domain; misuse is
// refused with -FI_E*, and membership pins the members open.
TEST_F(ObjectsTest, PollSetOpenAddDelClose) {
  fi_poll_attr pattr{};
  fid_poll* ps = nullptr;
  pattr.flags = 1;
  EXPECT_EQ(fi_poll_open(domain_, &pattr, &ps), -FI_EBADFLAGS);
  pattr.flags = 0;
  ASSERT_EQ(fi_poll_open(domain_, &pattr, &ps), 0);
  EXPECT_EQ(fi_close(&domain_->fid), -FI_EBUSY);  // the poll set holds the domain

  fi_cq_attr cq_attr{};
  fid_cq* cq = nullptr;
  ASSERT_EQ(fi_cq_open(domain_, &cq_attr, &cq, &cq), 0);
  fi_cntr_attr cntr_attr{};
  cntr_attr.events = FI_CNTR_EVENTS_COMP;
  fid_cntr* cntr = nullptr;
  ASSERT_EQ(fi_cntr_open(domain_, &cntr_attr, &cntr, &cntr), 0);
  fi_eq_attr eq_attr{};
  fid_eq* eq = nullptr;
  ASSERT_EQ(fi_eq_open(fabric_, &eq_attr, &eq, nullptr), 0);

  // Only CQs and counters, flags 0; nothing is a member yet.
  EXPECT_EQ(fi_poll_add(ps, &eq->fid, 0), -FI_EINVAL);
  EXPECT_EQ(fi_poll_add(ps, &domain_->fid, 0), -FI_EINVAL);
  EXPECT_EQ(fi_poll_add(ps, nullptr, 0), -FI_EINVAL);
  EXPECT_EQ(fi_poll_add(ps, &cq->fid, 1), -FI_EBADFLAGS);
  EXPECT_EQ(fi_poll_del(ps, &cq->fid, 0), -FI_EINVAL);
  void* ctx[4] = {};
  EXPECT_EQ(fi_poll(ps, ctx, 4), 0);
  EXPECT_EQ(fi_poll(ps, ctx, -1), -FI_EINVAL);
  EXPECT_EQ(fi_poll(ps, nullptr, 4), -FI_EINVAL);

  ASSERT_EQ(fi_poll_add(ps, &cq->fid, 0), 0);
  ASSERT_EQ(fi_poll_add(ps, &cntr->fid, 0), 0);
  EXPECT_EQ(fi_poll(ps, ctx, 4), 0);  // empty CQ, unchanged counter
  // Members cannot close, nor can a poll set with members.
  EXPECT_EQ(fi_close(&cq->fid), -FI_EBUSY);
  EXPECT_EQ(fi_close(&cntr->fid), -FI_EBUSY);
  EXPECT_EQ(fi_close(&ps->fid), -FI_EBUSY);

  // A second add is counted: the CQ stays until the second del.
  ASSERT_EQ(fi_poll_add(ps, &cq->fid, 0), 0);
  EXPECT_EQ(fi_poll_del(ps, &cq->fid, 0), 0);
  EXPECT_EQ(fi_close(&cq->fid), -FI_EBUSY);
  EXPECT_EQ(fi_poll_del(ps, &cq->fid, 0), 0);
  EXPECT_EQ(fi_poll_del(ps, &cq->fid, 0), -FI_EINVAL);
  EXPECT_EQ(fi_close(&cq->fid), 0);

  // A counter is news once per change; fi_cntr_add/set move the checkpoint.
  EXPECT_EQ(fi_cntr_adderr(cntr, 1), 0);
  EXPECT_EQ(fi_poll(ps, ctx, 4), 1);
  EXPECT_EQ(ctx[0], &cntr);
  EXPECT_EQ(fi_poll(ps, ctx, 4), 0);
  EXPECT_EQ(fi_cntr_add(cntr, 3), 0);
  EXPECT_EQ(fi_poll(ps, ctx, 4), 0);
  EXPECT_EQ(fi_cntr_seterr(cntr, 0), 0);
  EXPECT_EQ(fi_poll(ps, ctx, 0), 0);  // count 0 reports (and takes) nothing
  EXPECT_EQ(fi_poll(ps, ctx, 4), 1);
  EXPECT_EQ(fi_cntr_read(cntr), 3u);

  EXPECT_EQ(fi_poll_del(ps, &cntr->fid, 0), 0);
  EXPECT_EQ(fi_close(&cntr->fid), 0);
  EXPECT_EQ(fi_close(&eq->fid), 0);
  EXPECT_EQ(fi_close(&ps->fid), 0);
}

TEST_F(ObjectsTest, PollSetRefusesAnotherDomainsCq) {
  fid_domain* other = nullptr;
  ASSERT_EQ(fi_domain(fabric_, info_, &other, nullptr), 0);
  fi_cq_attr cq_attr{};
  fid_cq* cq = nullptr;
  ASSERT_EQ(fi_cq_open(other, &cq_attr, &cq, nullptr), 0);
  fi_poll_attr pattr{};
  fid_poll* ps = nullptr;
  ASSERT_EQ(fi_poll_open(domain_, &pattr, &ps), 0);
  EXPECT_EQ(fi_poll_add(ps, &cq->fid, 0), -FI_EINVAL);
  EXPECT_EQ(fi_close(&ps->fid), 0);
  EXPECT_EQ(fi_close(&cq->fid), 0);
  EXPECT_EQ(fi_close(&other->fid), 0);
}

TEST_F(ObjectsTest, QueryAtomicIsRfc7306) {
  fi_atomic_attr attr{};
  EXPECT_EQ(fi_query_atomic(domain_, FI_UINT64, FI_SUM, &attr, 0), 0);
  EXPECT_EQ(attr.size, 8u);
  EXPECT_EQ(fi_query_atomic(domain_, FI_UINT64, FI_CSWAP, &attr, FI_COMPARE_ATOMIC), 0);
  EXPECT_EQ(fi_query_atomic(domain_, FI_INT32, FI_ATOMIC_READ, &attr, FI_FETCH_ATOMIC), 0);
  EXPECT_EQ(attr.size, 4u);
  EXPECT_EQ(attr.count, 1u);
  EXPECT_EQ(fi_query_atomic(domain_, FI_UINT16, FI_SUM, &attr, 0), -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_query_atomic(domain_, FI_DOUBLE, FI_SUM, &attr, 0), -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_query_atomic(domain_, FI_UINT64, FI_PROD, &attr, FI_FETCH_ATOMIC), -FI_EOPNOTSUPP);
}

}  // namespace
