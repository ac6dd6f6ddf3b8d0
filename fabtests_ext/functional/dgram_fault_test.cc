// FI_IWARPX_FAULT through the public API: ctest runs this program once per
// spec (the provider reads its parameters when libfabric loads it) with
// IWARPX_FAULT_EXPECT saying what the spec must do to 20 messages between two
// DGRAM endpoints:
//   none     nothing is delivered (drop=1000: nothing arrives; corrupt=1000:
//            every datagram fails its CRC or decode); the sends still
//            complete (UD)
//   twice    every message arrives twice (dup=1000: UD suppresses nothing)
//   refused  fi_endpoint refuses to open (a spec that does not parse)
// and that the sender's counters (fi_iwarpx_ep_stats fault_*) count each injected fault.
// Without both variables the test fails: it is not meant to run bare.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_ext_iwarpx.h>

#include "test_util.h"

namespace {

constexpr int kMessages = 20;

struct Ep {
  fid_ep* ep = nullptr;
  fid_cq* cq = nullptr;
  sockaddr_in name{};
};

int OpenEp(fid_domain* domain, fi_info* info, fid_av* av, Ep* e) {
  if (const int r = fi_endpoint(domain, info, &e->ep, nullptr); r != 0) return r;
  fi_cq_attr cq_attr{};
  cq_attr.format = FI_CQ_FORMAT_MSG;
  if (const int r = fi_cq_open(domain, &cq_attr, &e->cq, nullptr); r != 0) return r;
  if (const int r = fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV); r != 0) return r;
  if (const int r = fi_ep_bind(e->ep, &av->fid, 0); r != 0) return r;
  if (const int r = fi_enable(e->ep); r != 0) return r;
  size_t len = sizeof(e->name);
  return static_cast<int>(fi_getname(&e->ep->fid, &e->name, &len));
}

TEST(DgramFault, SpecFromTheEnvironmentDoesWhatItSays) {
  const char* spec_env = std::getenv("FI_IWARPX_FAULT");
  const char* expect_env = std::getenv("IWARPX_FAULT_EXPECT");
  ASSERT_TRUE(spec_env != nullptr && expect_env != nullptr)
      << "run through ctest, which sets FI_IWARPX_FAULT and IWARPX_FAULT_EXPECT";
  const std::string spec = spec_env;
  const std::string expect = expect_env;
  ASSERT_TRUE(expect == "none" || expect == "twice" || expect == "refused") << expect;
  fi_info* hints = fi_allocinfo();
  hints->fabric_attr->prov_name = strdup("iwarpx");
  hints->ep_attr->type = FI_EP_DGRAM;
  hints->addr_format = FI_SOCKADDR_IN;
  fi_info* info = nullptr;
  ASSERT_EQ(fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", "0", FI_SOURCE, hints, &info), 0);
  fi_freeinfo(hints);
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_av* av = nullptr;
  ASSERT_EQ(fi_fabric(info->fabric_attr, &fabric, nullptr), 0);
  ASSERT_EQ(fi_domain(fabric, info, &domain, nullptr), 0);
  fi_av_attr av_attr{};
  ASSERT_EQ(fi_av_open(domain, &av_attr, &av, nullptr), 0);
  Ep a;
  Ep b;
  if (expect == "refused") {
    EXPECT_EQ(fi_endpoint(domain, info, &a.ep, nullptr), -FI_EINVAL) << spec;
  } else {
    ASSERT_EQ(OpenEp(domain, info, av, &a), 0);
    ASSERT_EQ(OpenEp(domain, info, av, &b), 0);
    fi_addr_t to_b = FI_ADDR_NOTAVAIL;
    ASSERT_EQ(fi_av_insert(av, &b.name, 1, &to_b, 0, nullptr), 1);
    std::vector<std::vector<char>> bufs(size_t{2} * kMessages, std::vector<char>(64));
    for (auto& buf : bufs) {
      ASSERT_EQ(fi_recv(b.ep, buf.data(), buf.size(), nullptr, FI_ADDR_UNSPEC, nullptr), 0);
    }
    int sent = 0;
    for (int i = 0; i < kMessages; ++i) {
      const std::string m = "message " + std::to_string(i);
      ASSERT_EQ(fi_send(a.ep, m.data(), m.size(), nullptr, to_b, nullptr), 0);
    }
    int received = 0;
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    while (std::chrono::steady_clock::now() < end) {
      fi_cq_msg_entry e{};
      if (fi_cq_read(a.cq, &e, 1) == 1) ++sent;
      const ssize_t n = fi_cq_read(b.cq, &e, 1);
      ASSERT_NE(n, -FI_EAVAIL) << "an error completion at the receiver";
      if (n == 1) ++received;
    }
    EXPECT_EQ(sent, kMessages);  // UD: a send completes when UDP took it
    EXPECT_EQ(received, expect == "twice" ? 2 * kMessages : 0) << spec;
    // The sender's counters name what was injected: one fault per message, of the kind the
    // spec asks for at 1000 per mille; the receiver injected nothing.
    const std::optional<fi_iwarpx_ep_stats> sa = fttest::EpStats(domain, a.ep);
    const std::optional<fi_iwarpx_ep_stats> sb = fttest::EpStats(domain, b.ep);
    ASSERT_TRUE(sa.has_value() && sb.has_value());
    const auto kind = [&](const char* key) {
      return spec.find(key) != std::string::npos ? uint64_t{kMessages} : 0;
    };
    EXPECT_EQ(sa->fault_dropped, kind("drop=")) << spec;
    EXPECT_EQ(sa->fault_duplicated, kind("dup=")) << spec;
    EXPECT_EQ(sa->fault_corrupted, kind("corrupt=")) << spec;
    EXPECT_EQ(sa->fault_reordered, 0U) << spec;
    EXPECT_EQ(sb->fault_dropped + sb->fault_duplicated + sb->fault_corrupted, 0U) << spec;
    for (Ep* e : {&a, &b}) {
      EXPECT_EQ(fi_close(&e->ep->fid), 0);
      EXPECT_EQ(fi_close(&e->cq->fid), 0);
    }
  }
  EXPECT_EQ(fi_close(&av->fid), 0);
  EXPECT_EQ(fi_close(&domain->fid), 0);
  EXPECT_EQ(fi_close(&fabric->fid), 0);
  fi_freeinfo(info);
}

}  // namespace
