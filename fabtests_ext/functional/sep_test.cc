// FI_EP_DGRAM scalable endpoints through the public API: two scalable
// endpoints of 4 transmit and 4 receive contexts on loopback. A message sent
// to fi_rx_addr(peer, i, bits) completes on receive context i only (payload,
// count and FI_SOURCE checked), an ordinary endpoint talks to a scalable one
// both ways, all contexts of a scalable endpoint share one UDP socket (the
// process's sockets counted through /proc), and misuse is refused.
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "test_util.h"

namespace {

using fttest::Bytes;
using fttest::Ctx;
using fttest::kVersion;
using fttest::Pattern;

constexpr size_t kCtx = 4;
constexpr int kRxBits = 2;  // ceil(log2(kCtx))
constexpr size_t kBuf = 2048;

fi_info* SepHints(size_t tx_cnt, size_t rx_cnt) {
  fi_info* h = fi_allocinfo();
  h->fabric_attr->prov_name = strdup("iwarpx");
  h->ep_attr->type = FI_EP_DGRAM;
  h->ep_attr->tx_ctx_cnt = tx_cnt;
  h->ep_attr->rx_ctx_cnt = rx_cnt;
  h->caps = FI_MSG | FI_SOURCE;
  h->addr_format = FI_SOCKADDR_IN;
  return h;
}

// Inodes of the host's UDP sockets (/proc/net/udp and udp6: the 10th field).
std::set<unsigned long> UdpInodes() {
  std::set<unsigned long> inodes;
  for (const char* path : {"/proc/net/udp", "/proc/net/udp6"}) {
    std::ifstream f(path);
    std::string line;
    std::getline(f, line);  // header
    while (std::getline(f, line)) {
      std::istringstream in(line);
      std::string field;
      for (int i = 0; i < 10 && in >> field; ++i) {
      }
      if (!field.empty()) inodes.insert(std::stoul(field));
    }
  }
  return inodes;
}

// How many UDP sockets this process holds: its fds that are sockets whose
// inode /proc/net/udp* lists.
size_t OwnUdpSockets() {
  const std::set<unsigned long> udp = UdpInodes();
  size_t n = 0;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return SIZE_MAX;
  while (const dirent* e = readdir(d)) {
    const std::string path = std::string("/proc/self/fd/") + e->d_name;
    std::array<char, 64> target{};
    const ssize_t len = readlink(path.c_str(), target.data(), target.size() - 1);
    if (len <= 0) continue;
    const std::string t(target.data(), static_cast<size_t>(len));
    if (t.rfind("socket:[", 0) != 0) continue;
    if (udp.count(std::stoul(t.substr(8))) != 0) ++n;
  }
  closedir(d);
  return n;
}

// One scalable endpoint: its contexts, each with its own CQ; receive
// contexts also with a receive counter.
struct Sep {
  fid_ep* sep = nullptr;
  std::array<fid_ep*, kCtx> tx{};
  std::array<fid_ep*, kCtx> rx{};
  std::array<fid_cq*, kCtx> tx_cq{};
  std::array<fid_cq*, kCtx> rx_cq{};
  std::array<fid_cntr*, kCtx> rx_cntr{};
  sockaddr_in name{};
};

class SepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fi_info* hints = SepHints(kCtx, kCtx);
    ASSERT_EQ(fi_getinfo(kVersion, "127.0.0.1", "0", FI_SOURCE, hints, &info_), 0);
    fi_freeinfo(hints);
    ASSERT_EQ(info_->ep_attr->type, FI_EP_DGRAM);
    ASSERT_EQ(info_->ep_attr->tx_ctx_cnt, size_t{kCtx});  // the counts asked for
    ASSERT_EQ(info_->ep_attr->rx_ctx_cnt, size_t{kCtx});
    ASSERT_GE(info_->domain_attr->max_ep_rx_ctx, size_t{kCtx});
    ASSERT_GE(info_->domain_attr->max_ep_tx_ctx, size_t{kCtx});
    ASSERT_EQ(fi_fabric(info_->fabric_attr, &fabric_, nullptr), 0);
    ASSERT_EQ(fi_domain(fabric_, info_, &domain_, nullptr), 0);
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    av_attr.rx_ctx_bits = kRxBits;
    ASSERT_EQ(fi_av_open(domain_, &av_attr, &av_, nullptr), 0);
  }
  void TearDown() override {
    for (Sep* s : {&a_, &b_}) CloseSep(*s);
    for (fid_ep* ep : {plain_}) {
      if (ep != nullptr) {
        EXPECT_EQ(fi_close(&ep->fid), 0);
      }
    }
    if (plain_cq_ != nullptr) {
      EXPECT_EQ(fi_close(&plain_cq_->fid), 0);
    }
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

  static fid_cq* OpenCq(fid_domain* domain) {
    fi_cq_attr attr{};
    attr.format = FI_CQ_FORMAT_DATA;
    attr.size = 64;
    fid_cq* cq = nullptr;
    EXPECT_EQ(fi_cq_open(domain, &attr, &cq, nullptr), 0);
    return cq;
  }

  // Opens a scalable endpoint with every context bound and enabled.
  void OpenSep(Sep& s) {
    ASSERT_EQ(fi_scalable_ep(domain_, info_, &s.sep, nullptr), 0);
    ASSERT_EQ(s.sep->fid.fclass, size_t{FI_CLASS_SEP});
    // The order of fabtests' scalable_ep: contexts first, then the AV.
    for (size_t i = 0; i < kCtx; ++i) {
      const int index = static_cast<int>(i);
      ASSERT_EQ(fi_tx_context(s.sep, index, nullptr, &s.tx[i], Ctx(i)), 0);
      ASSERT_EQ(fi_rx_context(s.sep, index, nullptr, &s.rx[i], Ctx(i)), 0);
      EXPECT_EQ(s.tx[i]->fid.fclass, size_t{FI_CLASS_TX_CTX});
      EXPECT_EQ(s.rx[i]->fid.fclass, size_t{FI_CLASS_RX_CTX});
      s.tx_cq[i] = OpenCq(domain_);
      s.rx_cq[i] = OpenCq(domain_);
      fi_cntr_attr cntr_attr{};
      cntr_attr.events = FI_CNTR_EVENTS_COMP;
      ASSERT_EQ(fi_cntr_open(domain_, &cntr_attr, &s.rx_cntr[i], nullptr), 0);
      ASSERT_EQ(fi_ep_bind(s.tx[i], &s.tx_cq[i]->fid, FI_TRANSMIT), 0);
      ASSERT_EQ(fi_ep_bind(s.rx[i], &s.rx_cq[i]->fid, FI_RECV), 0);
      ASSERT_EQ(fi_ep_bind(s.rx[i], &s.rx_cntr[i]->fid, FI_RECV), 0);
    }
    ASSERT_EQ(fi_scalable_ep_bind(s.sep, &av_->fid, 0), 0);
    for (size_t i = 0; i < kCtx; ++i) {
      ASSERT_EQ(fi_enable(s.tx[i]), 0);
      ASSERT_EQ(fi_enable(s.rx[i]), 0);
    }
    ASSERT_EQ(fi_enable(s.sep), 0);
    size_t len = sizeof(s.name);
    ASSERT_EQ(fi_getname(&s.sep->fid, &s.name, &len), 0);
    ASSERT_EQ(len, sizeof(sockaddr_in));
    ASSERT_NE(s.name.sin_port, 0);
  }

  static void CloseSep(Sep& s) {
    for (size_t i = 0; i < kCtx; ++i) {
      for (fid_ep* ep : {s.tx[i], s.rx[i]}) {
        if (ep != nullptr) {
          EXPECT_EQ(fi_close(&ep->fid), 0);
        }
      }
      for (fid_cq* cq : {s.tx_cq[i], s.rx_cq[i]}) {
        if (cq != nullptr) {
          EXPECT_EQ(fi_close(&cq->fid), 0);
        }
      }
      if (s.rx_cntr[i] != nullptr) {
        EXPECT_EQ(fi_close(&s.rx_cntr[i]->fid), 0);
      }
    }
    if (s.sep != nullptr) {
      EXPECT_EQ(fi_close(&s.sep->fid), 0);
    }
    s = Sep{};
  }

  struct Comp {
    fi_cq_data_entry entry{};
    fi_addr_t src = FI_ADDR_NOTAVAIL;
  };
  // Reads `want` successful completions from `cq` within the bound; an error
  // entry fails the test.
  static std::vector<Comp> Drain(fid_cq* cq, size_t want) {
    std::vector<Comp> got;
    fttest::PollUntil(
        [&] {
          Comp c;
          const ssize_t n = fi_cq_readfrom(cq, &c.entry, 1, &c.src);
          if (n == 1) got.push_back(c);
          if (n == -FI_EAVAIL) {
            fi_cq_err_entry e{};
            EXPECT_EQ(fi_cq_readerr(cq, &e, 0), 1);
            ADD_FAILURE() << "error completion " << e.err;
            return false;
          }
          return n == 1 || n == -FI_EAGAIN;
        },
        [&] { return got.size() >= want; });
    return got;
  }
  // Nothing more completes on `cq` within `ms` (other CQs are polled too,
  // so the engine keeps delivering).
  static bool Quiet(fid_cq* cq, int ms) {
    fi_cq_data_entry e{};
    bool quiet = true;
    fttest::PollFor(
        [&] {
          if (fi_cq_read(cq, &e, 1) != -FI_EAGAIN) quiet = false;
          return true;
        },
        std::chrono::milliseconds(ms));
    return quiet;
  }

  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_av* av_ = nullptr;
  Sep a_;
  Sep b_;
  fid_ep* plain_ = nullptr;
  fid_cq* plain_cq_ = nullptr;
};

// Message k for receive context r: (r, k) in its first two bytes, then a pattern.
Bytes Message(size_t r, size_t k) {
  Bytes m = Pattern(16 + 100 * r + k, 16 * r + k);
  m[0] = static_cast<uint8_t>(r);
  m[1] = static_cast<uint8_t>(k);
  return m;
}

TEST(SepInfo, ContextCountsAreAdvertisedAndBounded) {
  fi_info* hints = SepHints(0, 0);
  fi_info* info = nullptr;
  ASSERT_EQ(fi_getinfo(kVersion, nullptr, nullptr, 0, hints, &info), 0);
  for (fi_info* i = info; i != nullptr; i = i->next) {
    EXPECT_EQ(i->domain_attr->max_ep_tx_ctx, 16u);
    EXPECT_EQ(i->domain_attr->max_ep_rx_ctx, 16u);
    EXPECT_EQ(i->ep_attr->tx_ctx_cnt, 1u);  // none asked for: one of each
    EXPECT_EQ(i->ep_attr->rx_ctx_cnt, 1u);
  }
  fi_freeinfo(info);
  // Naming a receive context is an initiator capability (fi_rx_addr).
  hints->caps = FI_MSG | FI_NAMED_RX_CTX;
  ASSERT_EQ(fi_getinfo(kVersion, nullptr, nullptr, 0, hints, &info), 0);
  EXPECT_NE(info->caps & FI_NAMED_RX_CTX, 0u);
  EXPECT_NE(info->tx_attr->caps & FI_NAMED_RX_CTX, 0u);
  fi_freeinfo(info);
  fi_freeinfo(hints);
  hints = SepHints(16, 16);
  ASSERT_EQ(fi_getinfo(kVersion, nullptr, nullptr, 0, hints, &info), 0);
  EXPECT_EQ(info->ep_attr->rx_ctx_cnt, 16u);
  fi_freeinfo(info);
  fi_freeinfo(hints);
  hints = SepHints(1, 17);
  EXPECT_EQ(fi_getinfo(kVersion, nullptr, nullptr, 0, hints, &info), -FI_ENODATA);
  hints->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
  EXPECT_EQ(fi_getinfo(kVersion, nullptr, nullptr, 0, hints, &info), -FI_ENODATA);
  // The other endpoint types have one context of each.
  hints->ep_attr->rx_ctx_cnt = 2;
  hints->ep_attr->type = FI_EP_RDM;
  EXPECT_EQ(fi_getinfo(kVersion, nullptr, nullptr, 0, hints, &info), -FI_ENODATA);
  hints->ep_attr->rx_ctx_cnt = 0;
  ASSERT_EQ(fi_getinfo(kVersion, nullptr, nullptr, 0, hints, &info), 0);
  EXPECT_EQ(info->domain_attr->max_ep_rx_ctx, 1u);
  fi_freeinfo(info);
  fi_freeinfo(hints);
}

TEST_F(SepTest, EachReceiveContextGetsOnlyItsMessagesWithTheSendersAddress) {
  OpenSep(a_);
  OpenSep(b_);
  ASSERT_FALSE(HasFatalFailure());
  fi_addr_t a_addr = FI_ADDR_NOTAVAIL;
  fi_addr_t b_addr = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insert(av_, &a_.name, 1, &a_addr, 0, nullptr), 1);
  ASSERT_EQ(fi_av_insert(av_, &b_.name, 1, &b_addr, 0, nullptr), 1);
  // Receive context r of b gets 2 (r + 1) messages; 8 receives on each.
  std::vector<std::vector<Bytes>> bufs(kCtx, std::vector<Bytes>(8, Bytes(kBuf, 0xEE)));
  for (size_t r = 0; r < kCtx; ++r) {
    for (size_t k = 0; k < 8; ++k) {
      ASSERT_EQ(
          fi_recv(b_.rx[r], bufs[r][k].data(), kBuf, nullptr, FI_ADDR_UNSPEC, Ctx(100 * r + k)), 0);
    }
  }
  std::array<size_t, kCtx> sent_by_tx{};
  size_t n = 0;
  for (size_t r = 0; r < kCtx; ++r) {
    for (size_t k = 0; k < 2 * (r + 1); ++k, ++n) {
      const Bytes m = Message(r, k);
      const size_t t = n % kCtx;  // every transmit context takes a share
      const fi_addr_t to = fi_rx_addr(b_addr, static_cast<int>(r), kRxBits);
      ASSERT_EQ(fi_send(a_.tx[t], m.data(), m.size(), nullptr, to, Ctx(1000 + n)), 0);
      ++sent_by_tx[t];
    }
  }
  for (size_t t = 0; t < kCtx; ++t) {
    const std::vector<Comp> tx = Drain(a_.tx_cq[t], sent_by_tx[t]);
    ASSERT_EQ(tx.size(), sent_by_tx[t]) << "tx context " << t;
    for (const Comp& c : tx) EXPECT_EQ(c.entry.flags, FI_SEND | FI_MSG);
  }
  for (size_t r = 0; r < kCtx; ++r) {
    const size_t want = 2 * (r + 1);
    const std::vector<Comp> rx = Drain(b_.rx_cq[r], want);
    ASSERT_EQ(rx.size(), want) << "rx context " << r;
    std::set<size_t> seen;
    for (const Comp& c : rx) {
      const auto ctx = reinterpret_cast<uintptr_t>(c.entry.op_context);
      ASSERT_EQ(ctx / 100, r);
      const Bytes& buf = bufs[r][ctx % 100];
      ASSERT_GE(c.entry.len, 2u);
      EXPECT_EQ(buf[0], r) << "a message for context " << int{buf[0]} << " arrived on " << r;
      const Bytes m = Message(buf[0], buf[1]);
      EXPECT_EQ(c.entry.len, m.size());
      EXPECT_TRUE(std::equal(m.begin(), m.end(), buf.begin()));
      EXPECT_EQ(buf[m.size()], 0xEE);
      // FI_SOURCE: the sending sep's base address, whichever tx context sent.
      EXPECT_EQ(c.src, a_addr);
      seen.insert(buf[1]);
    }
    EXPECT_EQ(seen.size(), want);  // each message once
    EXPECT_EQ(fi_cntr_read(b_.rx_cntr[r]), want);
  }
  // Nothing else arrives anywhere (b's other contexts, or a's).
  for (size_t r = 0; r < kCtx; ++r) {
    EXPECT_TRUE(Quiet(b_.rx_cq[r], 30)) << r;
    EXPECT_TRUE(Quiet(a_.rx_cq[r], 10)) << r;
  }
  // The shared port delivered the 20 datagrams, none to an unknown QPN.
  const auto st = fttest::EpStats(domain_, b_.sep);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->rx_unknown_qpn, 0u);
  EXPECT_EQ(st->ud_no_receive, 0u);

  // To a receive context with nothing posted (a's context 3): dropped and
  // counted there, never handed to another context.
  const Bytes m = Message(0, 0);
  ASSERT_EQ(fi_send(b_.tx[0], m.data(), m.size(), nullptr, fi_rx_addr(a_addr, 3, kRxBits), Ctx(1)),
            0);
  ASSERT_EQ(Drain(b_.tx_cq[0], 1).size(), 1u);
  bool counted = false;
  fttest::PollUntil(
      [&] {
        fi_cq_data_entry e{};
        (void)fi_cq_read(a_.rx_cq[3], &e, 1);  // drives the engine; no receive is posted
        return true;
      },
      [&] {
        const auto s = fttest::EpStats(domain_, a_.sep);
        counted = s && s->ud_no_receive == 1;
        return counted;
      });
  EXPECT_TRUE(counted) << "context 3 of a has no receive posted: counted as no_receive";
  for (size_t r = 0; r < kCtx; ++r) EXPECT_TRUE(Quiet(a_.rx_cq[r], 10)) << r;
}

TEST_F(SepTest, OrdinaryEndpointsTalkToScalableOnes) {
  OpenSep(b_);
  ASSERT_FALSE(HasFatalFailure());
  fi_info* i = fi_dupinfo(info_);
  i->ep_attr->tx_ctx_cnt = 1;
  i->ep_attr->rx_ctx_cnt = 1;
  ASSERT_EQ(fi_endpoint(domain_, i, &plain_, nullptr), 0);
  fi_freeinfo(i);
  plain_cq_ = OpenCq(domain_);
  ASSERT_EQ(fi_ep_bind(plain_, &plain_cq_->fid, FI_TRANSMIT | FI_RECV), 0);
  ASSERT_EQ(fi_ep_bind(plain_, &av_->fid, 0), 0);
  ASSERT_EQ(fi_enable(plain_), 0);
  sockaddr_in plain_name{};
  size_t len = sizeof(plain_name);
  ASSERT_EQ(fi_getname(&plain_->fid, &plain_name, &len), 0);
  fi_addr_t p_addr = FI_ADDR_NOTAVAIL;
  fi_addr_t b_addr = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insert(av_, &plain_name, 1, &p_addr, 0, nullptr), 1);
  ASSERT_EQ(fi_av_insert(av_, &b_.name, 1, &b_addr, 0, nullptr), 1);
  std::array<Bytes, kCtx> bufs;
  for (size_t r = 0; r < kCtx; ++r) {
    bufs[r] = Bytes(kBuf, 0);
    ASSERT_EQ(fi_recv(b_.rx[r], bufs[r].data(), kBuf, nullptr, FI_ADDR_UNSPEC, Ctx(r)), 0);
  }
  // A plain fi_addr reaches receive context 0; fi_rx_addr the others.
  for (size_t r : {0u, 2u}) {
    const Bytes m = Message(r, 1);
    const fi_addr_t to = r == 0 ? b_addr : fi_rx_addr(b_addr, static_cast<int>(r), kRxBits);
    ASSERT_EQ(fi_send(plain_, m.data(), m.size(), nullptr, to, Ctx(50 + r)), 0);
    ASSERT_EQ(Drain(plain_cq_, 1).size(), 1u);
    const std::vector<Comp> rx = Drain(b_.rx_cq[r], 1);
    ASSERT_EQ(rx.size(), 1u);
    EXPECT_EQ(rx[0].entry.len, m.size());
    EXPECT_TRUE(std::equal(m.begin(), m.end(), bufs[r].begin()));
    EXPECT_EQ(rx[0].src, p_addr);
  }
  EXPECT_TRUE(Quiet(b_.rx_cq[1], 20));
  EXPECT_TRUE(Quiet(b_.rx_cq[3], 20));
  // Back from transmit context 3: the plain endpoint sees the sep's address.
  Bytes back(kBuf, 0);
  ASSERT_EQ(fi_recv(plain_, back.data(), back.size(), nullptr, FI_ADDR_UNSPEC, Ctx(7)), 0);
  const Bytes m = Message(3, 3);
  ASSERT_EQ(fi_send(b_.tx[3], m.data(), m.size(), nullptr, p_addr, Ctx(8)), 0);
  ASSERT_EQ(Drain(b_.tx_cq[3], 1).size(), 1u);
  const std::vector<Comp> rx = Drain(plain_cq_, 1);
  ASSERT_EQ(rx.size(), 1u);
  EXPECT_EQ(rx[0].entry.op_context, Ctx(7));
  EXPECT_TRUE(std::equal(m.begin(), m.end(), back.begin()));
  EXPECT_EQ(rx[0].src, b_addr);
}

TEST_F(SepTest, AllContextsShareOneSocket) {
  const size_t before = OwnUdpSockets();
  ASSERT_NE(before, SIZE_MAX);
  OpenSep(a_);
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_EQ(OwnUdpSockets(), before + 1) << "4 tx + 4 rx contexts on one UDP socket";
  // Every context names the sep's address.
  for (size_t i = 0; i < kCtx; ++i) {
    for (fid_ep* ep : {a_.tx[i], a_.rx[i]}) {
      sockaddr_in n{};
      size_t len = sizeof(n);
      ASSERT_EQ(fi_getname(&ep->fid, &n, &len), 0);
      EXPECT_EQ(n.sin_port, a_.name.sin_port);
      EXPECT_EQ(n.sin_addr.s_addr, a_.name.sin_addr.s_addr);
    }
  }
  // An ordinary endpoint has a socket of its own, for comparison.
  ASSERT_EQ(fi_endpoint(domain_, info_, &plain_, nullptr), 0);
  EXPECT_EQ(OwnUdpSockets(), before + 2);
  EXPECT_EQ(fi_close(&plain_->fid), 0);
  plain_ = nullptr;
  CloseSep(a_);
  EXPECT_EQ(OwnUdpSockets(), before);
}

TEST_F(SepTest, MisuseIsRefused) {
  fid_ep* sep = nullptr;
  // More contexts than offered, shared contexts, another endpoint type.
  fi_info* i = fi_dupinfo(info_);
  i->ep_attr->rx_ctx_cnt = 17;
  EXPECT_EQ(fi_scalable_ep(domain_, i, &sep, nullptr), -FI_EINVAL);
  i->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
  EXPECT_EQ(fi_scalable_ep(domain_, i, &sep, nullptr), -FI_EINVAL);
  i->ep_attr->rx_ctx_cnt = kCtx;
  i->ep_attr->type = FI_EP_RDM;
  EXPECT_EQ(fi_scalable_ep(domain_, i, &sep, nullptr), -FI_ENOSYS);
  fi_freeinfo(i);
  EXPECT_EQ(sep, nullptr);

  ASSERT_EQ(fi_scalable_ep(domain_, info_, &a_.sep, nullptr), 0);
  fid_ep* ctx = nullptr;
  EXPECT_EQ(fi_tx_context(a_.sep, static_cast<int>(kCtx), nullptr, &ctx, nullptr), -FI_EINVAL);
  EXPECT_EQ(fi_rx_context(a_.sep, -1, nullptr, &ctx, nullptr), -FI_EINVAL);
  fi_rx_attr big{};
  big.size = 1 << 20;
  EXPECT_EQ(fi_rx_context(a_.sep, 0, &big, &ctx, nullptr), -FI_EINVAL);
  EXPECT_EQ(ctx, nullptr);
  ASSERT_EQ(fi_tx_context(a_.sep, 0, nullptr, &a_.tx[0], nullptr), 0);
  ASSERT_EQ(fi_rx_context(a_.sep, 0, nullptr, &a_.rx[0], nullptr), 0);
  EXPECT_EQ(fi_tx_context(a_.sep, 0, nullptr, &ctx, nullptr), -FI_EBUSY);
  EXPECT_EQ(fi_rx_context(a_.sep, 0, nullptr, &ctx, nullptr), -FI_EBUSY);
  // The sep carries no data; contexts not enabled refuse data calls.
  char byte = 0;
  EXPECT_EQ(fi_send(a_.sep, &byte, 1, nullptr, 0, nullptr), -FI_ENOSYS);
  EXPECT_EQ(fi_recv(a_.sep, &byte, 1, nullptr, 0, nullptr), -FI_ENOSYS);
  EXPECT_EQ(fi_recv(a_.rx[0], &byte, 1, nullptr, 0, nullptr), -FI_EOPBADSTATE);
  EXPECT_EQ(fi_send(a_.tx[0], &byte, 1, nullptr, 0, nullptr), -FI_EOPBADSTATE);
  // Each context does one direction.
  EXPECT_EQ(fi_recv(a_.tx[0], &byte, 1, nullptr, 0, nullptr), -FI_EINVAL);
  EXPECT_EQ(fi_send(a_.rx[0], &byte, 1, nullptr, 0, nullptr), -FI_EINVAL);
  a_.tx_cq[0] = OpenCq(domain_);
  a_.rx_cq[0] = OpenCq(domain_);
  EXPECT_EQ(fi_ep_bind(a_.tx[0], &a_.tx_cq[0]->fid, FI_RECV), -FI_EBADFLAGS);
  EXPECT_EQ(fi_ep_bind(a_.rx[0], &a_.rx_cq[0]->fid, FI_TRANSMIT), -FI_EBADFLAGS);
  EXPECT_EQ(fi_ep_bind(a_.rx[0], &av_->fid, 0), -FI_EINVAL);  // the AV goes to the sep
  ASSERT_EQ(fi_ep_bind(a_.tx[0], &a_.tx_cq[0]->fid, FI_TRANSMIT), 0);
  ASSERT_EQ(fi_ep_bind(a_.rx[0], &a_.rx_cq[0]->fid, FI_RECV), 0);
  EXPECT_EQ(fi_enable(a_.tx[0]), -FI_ENOAV);  // the sep has no AV yet
  EXPECT_EQ(fi_enable(a_.sep), -FI_ENOAV);
  EXPECT_EQ(fi_scalable_ep_bind(a_.sep, &a_.tx_cq[0]->fid, 0), -FI_EINVAL);  // AVs only
  ASSERT_EQ(fi_scalable_ep_bind(a_.sep, &av_->fid, 0), 0);
  EXPECT_EQ(fi_enable(a_.tx[0]), 0);
  EXPECT_EQ(fi_enable(a_.rx[0]), 0);
  EXPECT_EQ(fi_enable(a_.sep), 0);
  // Not an entry of the AV: refused at the call.
  EXPECT_EQ(fi_send(a_.tx[0], &byte, 1, nullptr, fi_rx_addr(5, 1, kRxBits), nullptr), -FI_EINVAL);
  // The sep cannot close under its contexts; an index is free again once closed.
  EXPECT_EQ(fi_close(&a_.sep->fid), -FI_EBUSY);
  ASSERT_EQ(fi_close(&a_.rx[0]->fid), 0);
  a_.rx[0] = nullptr;
  EXPECT_EQ(fi_close(&a_.sep->fid), -FI_EBUSY);  // tx 0 is still open
  ASSERT_EQ(fi_rx_context(a_.sep, 0, nullptr, &a_.rx[0], nullptr), 0);
  // TearDown closes the contexts, then the sep (0 expected).
}

}  // namespace
