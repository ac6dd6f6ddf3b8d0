// FI_EP_DGRAM through the public API: getinfo, address vectors and names,
// send/recv of every size up to max_msg_size with data checks, the sender's
// address in fi_cq_readfrom, truncation, cancel, counters, what is refused,
// and bad datagrams from a raw socket (dropped, never delivered).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include <gtest/gtest.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "test_util.h"

namespace {

using fttest::Bytes;
using fttest::Ctx;
using fttest::EpStats;
using fttest::kVersion;
using fttest::Pattern;
using fttest::RawUdp;

fi_info* DgramHints() {
  fi_info* h = fi_allocinfo();
  h->fabric_attr->prov_name = strdup("iwarpx");
  h->ep_attr->type = FI_EP_DGRAM;
  h->caps = FI_MSG | FI_SOURCE;
  h->addr_format = FI_SOCKADDR_IN;
  return h;
}

struct Side {
  fid_ep* ep = nullptr;
  fid_cq* cq = nullptr;
  fid_cntr* send_cntr = nullptr;
  fid_cntr* recv_cntr = nullptr;
  fi_addr_t peer = FI_ADDR_NOTAVAIL;  // the other side in the shared AV
  sockaddr_in name{};
};

class DgramTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fi_info* hints = DgramHints();
    ASSERT_EQ(fi_getinfo(kVersion, "127.0.0.1", "0", FI_SOURCE, hints, &info_), 0);
    fi_freeinfo(hints);
    ASSERT_EQ(info_->ep_attr->type, FI_EP_DGRAM);
    ASSERT_EQ(fi_fabric(info_->fabric_attr, &fabric_, nullptr), 0);
    ASSERT_EQ(fi_domain(fabric_, info_, &domain_, nullptr), 0);
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    ASSERT_EQ(fi_av_open(domain_, &av_attr, &av_, nullptr), 0);
    Open(a_);
    Open(b_);
    ASSERT_FALSE(HasFatalFailure());
    ASSERT_EQ(fi_av_insert(av_, &a_.name, 1, &b_.peer, 0, nullptr), 1);
    ASSERT_EQ(fi_av_insert(av_, &b_.name, 1, &a_.peer, 0, nullptr), 1);
  }
  void TearDown() override {
    for (Side* s : {&a_, &b_}) {
      if (s->ep != nullptr) {
        EXPECT_EQ(fi_close(&s->ep->fid), 0);
      }
      if (s->cq != nullptr) {
        EXPECT_EQ(fi_close(&s->cq->fid), 0);
      }
      if (s->send_cntr != nullptr) {
        EXPECT_EQ(fi_close(&s->send_cntr->fid), 0);
      }
      if (s->recv_cntr != nullptr) {
        EXPECT_EQ(fi_close(&s->recv_cntr->fid), 0);
      }
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

  void Open(Side& s) {
    fi_info* i = fi_dupinfo(info_);
    // Each side its own port: the info's src_addr has port 0.
    ASSERT_EQ(fi_endpoint(domain_, i, &s.ep, nullptr), 0);
    fi_freeinfo(i);
    fi_cq_attr cq_attr{};
    cq_attr.format = FI_CQ_FORMAT_DATA;
    cq_attr.size = 64;
    ASSERT_EQ(fi_cq_open(domain_, &cq_attr, &s.cq, nullptr), 0);
    fi_cntr_attr cntr_attr{};
    cntr_attr.events = FI_CNTR_EVENTS_COMP;
    ASSERT_EQ(fi_cntr_open(domain_, &cntr_attr, &s.send_cntr, nullptr), 0);
    ASSERT_EQ(fi_cntr_open(domain_, &cntr_attr, &s.recv_cntr, nullptr), 0);
    // Data calls before fi_enable are refused; so is fi_enable without an AV.
    char byte = 0;
    EXPECT_EQ(fi_recv(s.ep, &byte, 1, nullptr, 0, nullptr), -FI_EOPBADSTATE);
    ASSERT_EQ(fi_ep_bind(s.ep, &s.cq->fid, FI_TRANSMIT | FI_RECV), 0);
    EXPECT_EQ(fi_enable(s.ep), -FI_ENOAV);
    ASSERT_EQ(fi_ep_bind(s.ep, &av_->fid, 0), 0);
    ASSERT_EQ(fi_ep_bind(s.ep, &s.send_cntr->fid, FI_SEND), 0);
    ASSERT_EQ(fi_ep_bind(s.ep, &s.recv_cntr->fid, FI_RECV), 0);
    ASSERT_EQ(fi_enable(s.ep), 0);
    size_t len = sizeof(s.name);
    ASSERT_EQ(fi_getname(&s.ep->fid, &s.name, &len), 0);
    ASSERT_EQ(len, sizeof(sockaddr_in));
    ASSERT_NE(s.name.sin_port, 0);
  }

  // Reads one completion (or error) from `s`'s CQ within 5 s.
  struct Comp {
    bool error = false;
    fi_cq_data_entry entry{};
    fi_cq_err_entry err{};
    fi_addr_t src = FI_ADDR_NOTAVAIL;
  };
  std::optional<Comp> Wait(Side& s) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < end) {
      Comp c;
      const ssize_t n = fi_cq_readfrom(s.cq, &c.entry, 1, &c.src);
      if (n == 1) return c;
      if (n == -FI_EAVAIL) {
        c.error = true;
        if (fi_cq_readerr(s.cq, &c.err, 0) == 1) return c;
      }
    }
    return std::nullopt;
  }
  // No completion shows up within `ms`.
  bool Quiet(Side& s, int ms) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    fi_cq_data_entry e{};
    while (std::chrono::steady_clock::now() < end) {
      if (fi_cq_read(s.cq, &e, 1) != -FI_EAGAIN) return false;
    }
    return true;
  }

  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_av* av_ = nullptr;
  Side a_;
  Side b_;
};

TEST(DgramInfo, AttributesAreHonest) {
  fi_info* hints = DgramHints();
  fi_info* info = nullptr;
  ASSERT_EQ(fi_getinfo(kVersion, nullptr, nullptr, 0, hints, &info), 0);
  for (fi_info* i = info; i != nullptr; i = i->next) {
    EXPECT_EQ(i->ep_attr->type, FI_EP_DGRAM);
    EXPECT_EQ(i->ep_attr->max_msg_size, 65442u);  // one datagram's segment
    EXPECT_NE(i->caps & FI_SOURCE, 0u);
    // FI_SOURCE is a receive capability (fabtests' fi_getinfo_test checks it).
    EXPECT_NE(i->rx_attr->caps & FI_SOURCE, 0u);
    EXPECT_EQ(i->tx_attr->caps & FI_SOURCE, 0u);
    EXPECT_EQ(i->caps & (FI_RMA | FI_ATOMIC | FI_TAGGED), 0u);
    EXPECT_EQ(i->domain_attr->cq_data_size, 0u);
    EXPECT_EQ(i->tx_attr->msg_order, FI_ORDER_NONE);
  }
  fi_freeinfo(info);
  // What the datagram endpoint does not offer finds nothing.
  hints->caps = FI_MSG | FI_RMA;
  EXPECT_EQ(fi_getinfo(kVersion, nullptr, nullptr, 0, hints, &info), -FI_ENODATA);
  hints->caps = FI_MSG;
  hints->ep_attr->max_msg_size = 65443;
  EXPECT_EQ(fi_getinfo(kVersion, nullptr, nullptr, 0, hints, &info), -FI_ENODATA);
  fi_freeinfo(hints);
}

TEST_F(DgramTest, EverySizeArrivesWithTheSendersAddress) {
  const std::vector<size_t> sizes = {0, 1, 63, 64, 1000, 4096, 9000, 65442};
  Bytes buf(65442 + 16);
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::fill(buf.begin(), buf.end(), 0xEE);
    ASSERT_EQ(fi_recv(b_.ep, buf.data(), buf.size(), nullptr, FI_ADDR_UNSPEC, Ctx(100 + i)), 0);
    const Bytes m = Pattern(sizes[i], static_cast<uint8_t>(i));
    ASSERT_EQ(fi_send(a_.ep, m.data(), m.size(), nullptr, a_.peer, Ctx(i)), 0);
    auto tx = Wait(a_);
    ASSERT_TRUE(tx && !tx->error) << sizes[i];
    EXPECT_EQ(tx->entry.op_context, Ctx(i));
    EXPECT_EQ(tx->entry.flags, FI_SEND | FI_MSG);
    auto rx = Wait(b_);
    ASSERT_TRUE(rx && !rx->error) << sizes[i];
    EXPECT_EQ(rx->entry.op_context, Ctx(100 + i));
    EXPECT_EQ(rx->entry.flags, FI_RECV | FI_MSG);
    EXPECT_EQ(rx->entry.len, sizes[i]);
    EXPECT_EQ(rx->src, b_.peer);  // the AV's entry for a_
    EXPECT_TRUE(std::equal(m.begin(), m.end(), buf.begin())) << sizes[i];
    EXPECT_EQ(buf[sizes[i]], 0xEE);
  }
  EXPECT_EQ(fi_cntr_read(a_.send_cntr), sizes.size());
  EXPECT_EQ(fi_cntr_read(b_.recv_cntr), sizes.size());
  // Too long for one datagram: refused at the call.
  Bytes big(65443);
  EXPECT_EQ(fi_send(a_.ep, big.data(), big.size(), nullptr, a_.peer, nullptr), -FI_EINVAL);
}

TEST_F(DgramTest, GatherScatterInjectAndUnknownSource) {
  Bytes r1(5);
  Bytes r2(100);
  iovec riov[2] = {{r1.data(), r1.size()}, {r2.data(), r2.size()}};
  ASSERT_EQ(fi_recvv(b_.ep, riov, nullptr, 2, FI_ADDR_UNSPEC, Ctx(1)), 0);
  const Bytes p1 = Pattern(3, 1);
  const Bytes p2 = Pattern(7, 2);
  iovec siov[2] = {{const_cast<uint8_t*>(p1.data()), p1.size()},
                   {const_cast<uint8_t*>(p2.data()), p2.size()}};
  ASSERT_EQ(fi_sendv(a_.ep, siov, nullptr, 2, a_.peer, Ctx(2)), 0);
  auto rx = Wait(b_);
  ASSERT_TRUE(rx && !rx->error);
  EXPECT_EQ(rx->entry.len, 10u);
  Bytes whole = p1;
  whole.insert(whole.end(), p2.begin(), p2.end());
  EXPECT_TRUE(std::equal(whole.begin(), whole.begin() + 5, r1.begin()));
  EXPECT_TRUE(std::equal(whole.begin() + 5, whole.end(), r2.begin()));
  ASSERT_TRUE(Wait(a_).has_value());
  // fi_inject: the buffer is reusable at once and no completion is written.
  Bytes r3(64);
  ASSERT_EQ(fi_recv(b_.ep, r3.data(), r3.size(), nullptr, FI_ADDR_UNSPEC, Ctx(3)), 0);
  Bytes in = Pattern(40, 9);
  const Bytes sent = in;
  ASSERT_EQ(fi_inject(a_.ep, in.data(), in.size(), a_.peer), 0);
  std::fill(in.begin(), in.end(), 0);
  rx = Wait(b_);
  ASSERT_TRUE(rx && !rx->error);
  EXPECT_TRUE(std::equal(sent.begin(), sent.end(), r3.begin()));
  EXPECT_TRUE(Quiet(a_, 50));
  Bytes too_big(info_->tx_attr->inject_size + 1);
  EXPECT_EQ(fi_inject(a_.ep, too_big.data(), too_big.size(), a_.peer), -FI_EINVAL);
  // A sender not in the receiver's AV: the receive reports FI_ADDR_NOTAVAIL.
  ASSERT_EQ(fi_av_remove(av_, &b_.peer, 1, 0), 0);
  ASSERT_EQ(fi_recv(b_.ep, r3.data(), r3.size(), nullptr, FI_ADDR_UNSPEC, Ctx(4)), 0);
  ASSERT_EQ(fi_send(a_.ep, sent.data(), 8, nullptr, a_.peer, Ctx(5)), 0);
  rx = Wait(b_);
  ASSERT_TRUE(rx && !rx->error);
  EXPECT_EQ(rx->src, FI_ADDR_NOTAVAIL);
  // Inserted again (a new index: FI_AV_TABLE never reuses one), the next
  // receive names it: the AV's remembered last answer is dropped on insert
  // as it was on remove.
  fi_addr_t again = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insert(av_, &a_.name, 1, &again, 0, nullptr), 1);
  ASSERT_NE(again, b_.peer);
  ASSERT_EQ(fi_recv(b_.ep, r3.data(), r3.size(), nullptr, FI_ADDR_UNSPEC, Ctx(6)), 0);
  ASSERT_EQ(fi_send(a_.ep, sent.data(), 8, nullptr, a_.peer, Ctx(7)), 0);
  rx = Wait(b_);
  ASSERT_TRUE(rx && !rx->error);
  EXPECT_EQ(rx->src, again);
}

// FI_MORE: the sends marked with it wait for the next send without it and go
// out together (one sendmmsg); all arrive, in order, each completes once. A
// run of FI_MORE sends with no closing send still leaves at the next
// progress pass (fi_cq_read), not never.
TEST_F(DgramTest, SendsWithFiMoreAreBatchedAndAllArrive) {
  constexpr size_t kCount = 20;
  std::vector<Bytes> bufs(kCount, Bytes(64, 0));
  for (size_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(fi_recv(b_.ep, bufs[i].data(), bufs[i].size(), nullptr, FI_ADDR_UNSPEC, Ctx(100 + i)),
              0);
  }
  std::vector<Bytes> msgs;
  for (size_t i = 0; i < kCount; ++i) msgs.push_back(Pattern(8 + i, static_cast<uint8_t>(i)));
  auto send = [&](size_t i, uint64_t flags) {
    iovec iov = {msgs[i].data(), msgs[i].size()};
    fi_msg m{};
    m.msg_iov = &iov;
    m.iov_count = 1;
    m.addr = a_.peer;
    m.context = Ctx(i);
    return fi_sendmsg(a_.ep, &m, flags);
  };
  for (size_t i = 0; i + 1 < kCount / 2; ++i) ASSERT_EQ(send(i, FI_MORE | FI_COMPLETION), 0);
  ASSERT_EQ(send(kCount / 2 - 1, FI_COMPLETION), 0);
  for (size_t i = kCount / 2; i < kCount; ++i) ASSERT_EQ(send(i, FI_MORE | FI_COMPLETION), 0);
  // Completions: every send once, in post order; every receive in order.
  for (size_t i = 0; i < kCount; ++i) {
    auto tx = Wait(a_);
    ASSERT_TRUE(tx && !tx->error) << i;
    EXPECT_EQ(tx->entry.op_context, Ctx(i));
  }
  for (size_t i = 0; i < kCount; ++i) {
    auto rx = Wait(b_);
    ASSERT_TRUE(rx && !rx->error) << i;
    EXPECT_EQ(rx->entry.op_context, Ctx(100 + i));
    EXPECT_EQ(rx->entry.len, msgs[i].size());
    EXPECT_TRUE(std::equal(msgs[i].begin(), msgs[i].end(), bufs[i].begin())) << i;
  }
  EXPECT_TRUE(Quiet(a_, 20));
  EXPECT_TRUE(Quiet(b_, 20));
}

TEST_F(DgramTest, TruncationCancelAndRefusedCalls) {
  Bytes small(4);
  ASSERT_EQ(fi_recv(b_.ep, small.data(), small.size(), nullptr, FI_ADDR_UNSPEC, Ctx(1)), 0);
  const Bytes m = Pattern(10, 3);
  ASSERT_EQ(fi_send(a_.ep, m.data(), m.size(), nullptr, a_.peer, nullptr), 0);
  auto rx = Wait(b_);
  ASSERT_TRUE(rx && rx->error);
  EXPECT_EQ(rx->err.err, FI_ETRUNC);
  EXPECT_EQ(rx->err.op_context, Ctx(1));
  EXPECT_EQ(rx->err.len, 4u);
  EXPECT_EQ(rx->err.olen, 6u);
  EXPECT_TRUE(std::equal(small.begin(), small.end(), m.begin()));
  // fi_cancel of a posted receive: FI_ECANCELED; cancelling it again finds nothing.
  Bytes r(8);
  ASSERT_EQ(fi_recv(b_.ep, r.data(), r.size(), nullptr, FI_ADDR_UNSPEC, Ctx(2)), 0);
  EXPECT_EQ(fi_cancel(&b_.ep->fid, Ctx(2)), 0);
  rx = Wait(b_);
  ASSERT_TRUE(rx && rx->error);
  EXPECT_EQ(rx->err.err, FI_ECANCELED);
  EXPECT_EQ(rx->err.op_context, Ctx(2));
  EXPECT_EQ(fi_cancel(&b_.ep->fid, Ctx(2)), -FI_ENOENT);
  // A datagram that finds no posted receive is dropped (UD), not queued.
  ASSERT_EQ(fi_send(a_.ep, m.data(), m.size(), nullptr, a_.peer, nullptr), 0);
  EXPECT_TRUE(Quiet(b_, 100));
  ASSERT_EQ(fi_recv(b_.ep, r.data(), r.size(), nullptr, FI_ADDR_UNSPEC, Ctx(3)), 0);
  EXPECT_TRUE(Quiet(b_, 100));
  // Unknown fi_addr, remote CQ data, RMA, connection calls: refused.
  EXPECT_EQ(fi_send(a_.ep, m.data(), 1, nullptr, 12345, nullptr), -FI_EINVAL);
  EXPECT_EQ(fi_senddata(a_.ep, m.data(), 1, nullptr, 7, a_.peer, nullptr), -FI_ENOSYS);
  EXPECT_EQ(fi_write(a_.ep, m.data(), 1, nullptr, a_.peer, 0, 0, nullptr), -FI_ENOSYS);
  EXPECT_EQ(fi_connect(a_.ep, &b_.name, nullptr, 0), -FI_ENOSYS);
  EXPECT_EQ(fi_setname(&a_.ep->fid, &b_.name, sizeof(b_.name)), -FI_ENOSYS);
  // The AV cannot close while endpoints use it.
  EXPECT_EQ(fi_close(&av_->fid), -FI_EBUSY);
}

// Bytes from a raw UDP socket: garbage, a corrupted iwarpx datagram and a
// truncated header are dropped; the receive stays posted for a good one.
TEST_F(DgramTest, BadDatagramsAreDroppedNeverDelivered) {
  Bytes r(64, 0);
  ASSERT_EQ(fi_recv(b_.ep, r.data(), r.size(), nullptr, FI_ADDR_UNSPEC, Ctx(1)), 0);
  RawUdp raw;
  ASSERT_TRUE(raw.ok());
  const std::optional<fi_iwarpx_ep_stats> before = EpStats(domain_, b_.ep);
  ASSERT_TRUE(before.has_value());
  ASSERT_TRUE(raw.SendTo(b_.name, Pattern(100, 7)));                // not iwarpx at all
  ASSERT_TRUE(raw.SendTo(b_.name, Bytes{0x69, 0x77, 0x01, 0x01}));  // magic, version, then nothing
  // A real datagram captured from a_: sent to the raw socket's address.
  fi_addr_t raw_fa = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insert(av_, &raw.name(), 1, &raw_fa, 0, nullptr), 1);
  const Bytes m = Pattern(20, 1);
  ASSERT_EQ(fi_send(a_.ep, m.data(), m.size(), nullptr, raw_fa, nullptr), 0);
  std::optional<Bytes> captured = raw.Recv();
  ASSERT_TRUE(captured.has_value() && captured->size() > 44);
  Bytes corrupt = *captured;
  corrupt[60] ^= 0x01;  // a payload bit: the CRC no longer matches
  ASSERT_TRUE(raw.SendTo(b_.name, corrupt));
  EXPECT_TRUE(Quiet(b_, 200));
  EXPECT_EQ(r, Bytes(64, 0));
  const std::optional<fi_iwarpx_ep_stats> after = EpStats(domain_, b_.ep);
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->rx_malformed - before->rx_malformed, 2u);
  EXPECT_EQ(after->rx_bad_crc - before->rx_bad_crc, 1u);
  EXPECT_EQ(after->rx_datagrams, before->rx_datagrams);
  // The intact datagram is delivered (its source is the raw socket).
  ASSERT_TRUE(raw.SendTo(b_.name, *captured));
  auto rx = Wait(b_);
  ASSERT_TRUE(rx && !rx->error);
  EXPECT_EQ(rx->entry.len, 20u);
  EXPECT_EQ(rx->src, raw_fa);
  EXPECT_TRUE(std::equal(m.begin(), m.end(), r.begin()));
  // A datagram that finds no receive is dropped and counted as such.
  ASSERT_TRUE(raw.SendTo(b_.name, *captured));
  EXPECT_TRUE(Quiet(b_, 200));
  const std::optional<fi_iwarpx_ep_stats> last = EpStats(domain_, b_.ep);
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->ud_no_receive - before->ud_no_receive, 1u);
}

}  // namespace
