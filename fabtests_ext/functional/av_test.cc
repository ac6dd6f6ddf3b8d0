// Address vectors through the public API (fi_av(3)): insert, insertsvc,
// lookup, remove, straddr, per-entry errors, and the calls iwarpx does not
// offer. The domain comes from the MSG entry: an AV belongs to the domain,
// whichever endpoint type later binds it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

namespace {

class AvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fi_info* hints = fi_allocinfo();
    hints->fabric_attr->prov_name = strdup("iwarpx");
    ASSERT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info_), 0);
    fi_freeinfo(hints);
    ASSERT_EQ(fi_fabric(info_->fabric_attr, &fabric_, nullptr), 0);
    ASSERT_EQ(fi_domain(fabric_, info_, &domain_, nullptr), 0);
  }
  void TearDown() override {
    if (av_ != nullptr) {
      EXPECT_EQ(fi_close(&av_->fid), 0);
    }
    if (domain_ != nullptr) {
      EXPECT_EQ(fi_close(&domain_->fid), 0);
    }
    if (fabric_ != nullptr) {
      EXPECT_EQ(fi_close(&fabric_->fid), 0);
    }
    fi_freeinfo(info_);
  }
  int Open(fi_av_type type) {
    fi_av_attr attr{};
    attr.type = type;
    return fi_av_open(domain_, &attr, &av_, nullptr);
  }

  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_av* av_ = nullptr;
};

sockaddr_in V4(const char* ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}

sockaddr_in6 V6(const char* ip, uint16_t port) {
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_port = htons(port);
  inet_pton(AF_INET6, ip, &a.sin6_addr);
  return a;
}

TEST_F(AvTest, TableInsertLookupRemoveAndStraddr) {
  ASSERT_EQ(Open(FI_AV_UNSPEC), 0);
  // Packed: v4, v6, v4, each its family's size.
  const sockaddr_in a = V4("127.0.0.1", 1000);
  const sockaddr_in6 b = V6("::1", 2000);
  const sockaddr_in c = V4("10.1.2.3", 3000);
  std::vector<uint8_t> packed(sizeof(a) + sizeof(b) + sizeof(c));
  std::memcpy(packed.data(), &a, sizeof(a));
  std::memcpy(packed.data() + sizeof(a), &b, sizeof(b));
  std::memcpy(packed.data() + sizeof(a) + sizeof(b), &c, sizeof(c));
  fi_addr_t fa[3] = {};
  ASSERT_EQ(fi_av_insert(av_, packed.data(), 3, fa, 0, nullptr), 3);
  EXPECT_EQ(fa[0], 0u);  // FI_AV_TABLE: indices in insertion order
  EXPECT_EQ(fa[1], 1u);
  EXPECT_EQ(fa[2], 2u);
  sockaddr_in6 out{};
  size_t len = sizeof(out);
  ASSERT_EQ(fi_av_lookup(av_, fa[1], &out, &len), 0);
  EXPECT_EQ(len, sizeof(sockaddr_in6));
  EXPECT_EQ(std::memcmp(&out, &b, sizeof(b)), 0);
  // A short buffer gets a truncated copy and the full size.
  uint8_t small[4] = {};
  len = sizeof(small);
  ASSERT_EQ(fi_av_lookup(av_, fa[2], small, &len), 0);
  EXPECT_EQ(len, sizeof(sockaddr_in));
  EXPECT_EQ(std::memcmp(small, &c, sizeof(small)), 0);
  // The same address again maps to its entry.
  fi_addr_t again = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insert(av_, &a, 1, &again, 0, nullptr), 1);
  EXPECT_EQ(again, fa[0]);
  // Remove: the entry is gone, removing it again is an error, and indices
  // are not reused.
  ASSERT_EQ(fi_av_remove(av_, &fa[1], 1, 0), 0);
  len = sizeof(out);
  EXPECT_EQ(fi_av_lookup(av_, fa[1], &out, &len), -FI_EINVAL);
  EXPECT_EQ(fi_av_remove(av_, &fa[1], 1, 0), -FI_EINVAL);
  fi_addr_t svc = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insertsvc(av_, "127.0.0.1", "4000", &svc, 0, nullptr), 1);
  EXPECT_EQ(svc, 3u);
  sockaddr_in got{};
  len = sizeof(got);
  ASSERT_EQ(fi_av_lookup(av_, svc, &got, &len), 0);
  EXPECT_EQ(ntohs(got.sin_port), 4000);
  // straddr: the libfabric address-string form; len reports the size needed.
  char buf[64];
  len = sizeof(buf);
  ASSERT_NE(fi_av_straddr(av_, &a, buf, &len), nullptr);
  EXPECT_STREQ(buf, "fi_sockaddr_in://127.0.0.1:1000");
  EXPECT_EQ(len, std::strlen(buf) + 1);
  len = sizeof(buf);
  fi_av_straddr(av_, &b, buf, &len);
  EXPECT_STREQ(buf, "fi_sockaddr_in6://[::1]:2000");
  char tiny[8];
  len = sizeof(tiny);
  fi_av_straddr(av_, &a, tiny, &len);
  EXPECT_STREQ(tiny, "fi_sock");
  EXPECT_EQ(len, std::strlen("fi_sockaddr_in://127.0.0.1:1000") + 1);
}

TEST_F(AvTest, MapAndPerEntryErrors) {
  ASSERT_EQ(Open(FI_AV_MAP), 0);
  sockaddr_un bad{};
  bad.sun_family = AF_UNIX;
  fi_addr_t fa = 0;
  int err = 0;
  EXPECT_EQ(fi_av_insert(av_, &bad, 1, &fa, FI_SYNC_ERR, &err), 0);
  EXPECT_EQ(fa, FI_ADDR_NOTAVAIL);
  EXPECT_EQ(err, -FI_EINVAL);
  // A good entry followed by a bad one: one inserted.
  struct {
    sockaddr_in good;
    sockaddr_un bad;
  } two{V4("127.0.0.1", 5), bad};
  fi_addr_t fas[2] = {};
  int errs[2] = {1, 1};
  EXPECT_EQ(fi_av_insert(av_, &two, 2, fas, FI_SYNC_ERR, errs), 1);
  EXPECT_NE(fas[0], FI_ADDR_NOTAVAIL);
  EXPECT_EQ(errs[0], 0);
  EXPECT_EQ(fas[1], FI_ADDR_NOTAVAIL);
  EXPECT_EQ(errs[1], -FI_EINVAL);
  fi_addr_t svc = 0;
  EXPECT_EQ(fi_av_insertsvc(av_, "no.such.host.invalid", "1", &svc, 0, nullptr), 0);
  EXPECT_EQ(svc, FI_ADDR_NOTAVAIL);
  EXPECT_EQ(fi_av_insert(av_, &two.good, 1, nullptr, FI_MORE, nullptr), -FI_EBADFLAGS);
}

TEST_F(AvTest, WhatIsNotOfferedIsRefused) {
  fi_av_attr attr{};
  attr.type = FI_AV_TABLE;
  attr.flags = FI_EVENT;
  EXPECT_EQ(fi_av_open(domain_, &attr, &av_, nullptr), -FI_ENOSYS);
  attr.flags = 0;
  attr.name = "shared";
  EXPECT_EQ(fi_av_open(domain_, &attr, &av_, nullptr), -FI_ENOSYS);
  attr.name = nullptr;
  attr.rx_ctx_bits = 17;  // more than the 16 bits of context index offered
  EXPECT_EQ(fi_av_open(domain_, &attr, &av_, nullptr), -FI_EINVAL);
  attr.rx_ctx_bits = 64;
  EXPECT_EQ(fi_av_open(domain_, &attr, &av_, nullptr), -FI_EINVAL);
  attr.rx_ctx_bits = -1;
  EXPECT_EQ(fi_av_open(domain_, &attr, &av_, nullptr), -FI_EINVAL);
  attr.rx_ctx_bits = 4;
  attr.count = size_t{1} << 60;  // entries that would not fit below the index bits
  EXPECT_EQ(fi_av_open(domain_, &attr, &av_, nullptr), -FI_EINVAL);
  attr.count = 0;
  attr.rx_ctx_bits = 0;
  attr.type = FI_AV_UNSPEC;
  attr.count = 0;
  int bogus = 42;  // not a fi_av_type value
  std::memcpy(&attr.type, &bogus, sizeof(bogus));
  EXPECT_EQ(fi_av_open(domain_, &attr, &av_, nullptr), -FI_EINVAL);
  EXPECT_EQ(av_, nullptr);
  ASSERT_EQ(Open(FI_AV_TABLE), 0);
  fi_addr_t fa = 0;
  EXPECT_EQ(fi_av_insertsym(av_, "127.0.0.1", 1, "1", 1, &fa, 0, nullptr), -FI_ENOSYS);
  // The domain cannot close while the AV is open.
  EXPECT_EQ(fi_close(&domain_->fid), -FI_EBUSY);
}

// rx_ctx_bits (scalable endpoints): entries are plain fi_addrs; lookup and
// remove take them, not fi_rx_addr forms.
TEST_F(AvTest, RxCtxBitsKeepEntriesPlain) {
  fi_av_attr attr{};
  attr.type = FI_AV_TABLE;
  attr.rx_ctx_bits = 16;
  attr.count = 8;
  ASSERT_EQ(fi_av_open(domain_, &attr, &av_, nullptr), 0);
  const sockaddr_in a = V4("127.0.0.1", 4000);
  fi_addr_t fa = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insert(av_, &a, 1, &fa, 0, nullptr), 1);
  EXPECT_EQ(fa, 0u);
  sockaddr_in out{};
  size_t len = sizeof(out);
  ASSERT_EQ(fi_av_lookup(av_, fa, &out, &len), 0);
  EXPECT_EQ(out.sin_port, a.sin_port);
  len = sizeof(out);
  EXPECT_EQ(fi_av_lookup(av_, fi_rx_addr(fa, 3, 16), &out, &len), -FI_EINVAL);
  fi_addr_t rx = fi_rx_addr(fa, 3, 16);
  EXPECT_EQ(fi_av_remove(av_, &rx, 1, 0), -FI_EINVAL);
  EXPECT_EQ(fi_av_remove(av_, &fa, 1, 0), 0);
}

}  // namespace
