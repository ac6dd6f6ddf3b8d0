// The FI_IWARPX_SCTP_OPS extension (rdma/fi_ext_iwarpx.h) through the public
// API: over SCTP (fabtests_msg_sctp.*, FI_IWARPX_LLP=sctp) sends spread over
// every stream of the association all arrive intact, each stream's in the
// order sent; over TCP (fabtests_msg.*) the endpoint has one stream and any
// other is refused. Misuse returns -FI_E* in both.
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rdma/fi_ext_iwarpx.h>

#include "msg_fixture.h"

namespace {

using msgtest::Bytes;
using msgtest::Ctx;
using msgtest::Net;
using msgtest::Pattern;

class MsgStreamsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(net_.Open()) << net_.error;
    ASSERT_EQ(fi_open_ops(&net_.client.domain->fid, FI_IWARPX_SCTP_OPS, 0,
                          reinterpret_cast<void**>(&ops_), nullptr),
              0);
    ASSERT_NE(ops_, nullptr);
    ASSERT_GE(ops_->size, sizeof(fi_iwarpx_sctp_ops));
  }
  bool Sctp() const { return net_.info->ep_attr->protocol == FI_PROTO_IWARPX_SCTP; }

  ssize_t SendOn(fid_ep* ep, const Bytes& data, uint16_t stream, void* ctx, uint64_t flags = 0) {
    iovec iov{const_cast<uint8_t*>(data.data()), data.size()};  // NOLINT
    fi_msg msg{};
    msg.msg_iov = &iov;
    msg.iov_count = 1;
    msg.context = ctx;
    return net_.Post([&] { return ops_->sendmsg(ep, &msg, flags | FI_COMPLETION, stream); });
  }

  Net net_;
  fi_iwarpx_sctp_ops* ops_ = nullptr;
};

TEST_F(MsgStreamsTest, SendsOverEveryStreamArriveIntactInOrderPerStream) {
  auto c = net_.Establish();
  ASSERT_TRUE(c.has_value()) << net_.error;
  uint16_t n = 0;
  ASSERT_EQ(ops_->tx_streams(c->client, &n), 0);
  const char* llp = getenv("FI_IWARPX_LLP");
  // fabtests_msg_sctp.* must really run over SCTP, or this proves nothing there.
  if (llp != nullptr && std::string(llp) == "sctp") {
    ASSERT_TRUE(Sctp());
  }
  std::printf("tx_streams %u over %s\n", static_cast<unsigned>(n), Sctp() ? "sctp" : "tcp");
  if (!Sctp()) {
    EXPECT_EQ(n, 1u);
  } else {
    EXPECT_GE(n, 2u);  // usrsctp: 8 negotiated (SctpOptions::streams)
    EXPECT_LE(n, 16u);
  }
  // Each message starts with its index; sizes from 8 B to 40 KiB.
  const size_t count = size_t{6} * n;
  std::vector<Bytes> data;
  for (size_t i = 0; i < count; ++i) {
    Bytes d = Pattern(8 + (i * 7919) % 40000, i + 1);
    std::copy_n(reinterpret_cast<const uint8_t*>(&i), sizeof(i), d.begin());
    data.push_back(std::move(d));
  }
  std::vector<Bytes> rbufs(count, Bytes(40016, 0));
  for (size_t i = 0; i < count; ++i) {
    ASSERT_EQ(fi_recv(c->server, rbufs[i].data(), rbufs[i].size(), nullptr, 0, Ctx(0x100 + i)), 0);
  }
  for (size_t i = 0; i < count; ++i) {
    ASSERT_EQ(SendOn(c->client, data[i], static_cast<uint16_t>(i % n), Ctx(0x1000 + i)), 0) << i;
  }
  std::vector<int> seen(count, 0);
  for (size_t k = 0; k < count; ++k) {
    auto s = net_.WaitComp(net_.client.cq, Ctx(0x1000 + k));
    ASSERT_TRUE(s.has_value()) << "send " << k;
  }
  std::vector<fi_cq_data_entry> done;
  for (size_t k = 0; k < count; ++k) {
    auto r = net_.WaitComp(net_.server.cq, Ctx(0x100 + k));
    ASSERT_TRUE(r.has_value()) << "receive " << k;
    done.push_back(*r);
  }
  for (const fi_cq_data_entry& e : done) {
    const size_t slot = reinterpret_cast<uintptr_t>(e.op_context) - 0x100;
    ASSERT_LT(slot, count);
    size_t idx = 0;
    std::copy_n(rbufs[slot].begin(), sizeof(idx), reinterpret_cast<uint8_t*>(&idx));
    ASSERT_LT(idx, count);
    ++seen[idx];
    ASSERT_EQ(e.len, data[idx].size());
    EXPECT_TRUE(std::equal(data[idx].begin(), data[idx].end(), rbufs[slot].begin())) << idx;
  }
  for (size_t i = 0; i < count; ++i) EXPECT_EQ(seen[i], 1) << i;
  // Per stream, the receives were claimed in the order the stream's messages
  // were sent (receives are consumed as messages begin to arrive).
  std::map<uint16_t, size_t> prev_slot;
  for (size_t slot = 0; slot < count; ++slot) {
    size_t idx = 0;
    std::copy_n(rbufs[slot].begin(), sizeof(idx), reinterpret_cast<uint8_t*>(&idx));
    const auto stream = static_cast<uint16_t>(idx % n);
    if (prev_slot.count(stream) != 0) {
      size_t prev_idx = 0;
      std::copy_n(rbufs[prev_slot[stream]].begin(), sizeof(prev_idx),
                  reinterpret_cast<uint8_t*>(&prev_idx));
      EXPECT_LT(prev_idx, idx) << "stream " << stream;
    }
    prev_slot[stream] = slot;
  }
}

TEST_F(MsgStreamsTest, MisuseIsRefused) {
  auto c = net_.Establish();
  ASSERT_TRUE(c.has_value()) << net_.error;
  uint16_t n = 0;
  ASSERT_EQ(ops_->tx_streams(c->client, &n), 0);
  const Bytes d = Pattern(16, 3);
  EXPECT_EQ(SendOn(c->client, d, n, Ctx(1)), -FI_EINVAL);  // no such stream
  EXPECT_EQ(SendOn(c->client, d, 0, Ctx(2), FI_REMOTE_CQ_DATA), -FI_EOPNOTSUPP);
  EXPECT_EQ(ops_->sendmsg(c->client, nullptr, 0, 0), -FI_EINVAL);
  EXPECT_EQ(ops_->tx_streams(c->client, nullptr), -FI_EINVAL);
  EXPECT_EQ(ops_->tx_streams(nullptr, &n), -FI_EINVAL);
  // Not an FI_EP_MSG endpoint: the CQ.
  EXPECT_EQ(ops_->tx_streams(reinterpret_cast<fid_ep*>(net_.client.cq.cq), &n), -FI_EINVAL);
  void* other = nullptr;
  EXPECT_EQ(fi_open_ops(&net_.client.domain->fid, FI_IWARPX_SCTP_OPS, 1, &other, nullptr),
            -FI_EINVAL);
  // The endpoint still works on stream 0 after all that.
  Bytes r(32, 0);
  ASSERT_EQ(fi_recv(c->server, r.data(), r.size(), nullptr, 0, Ctx(3)), 0);
  ASSERT_EQ(SendOn(c->client, d, 0, Ctx(4)), 0);
  auto e = net_.WaitComp(net_.server.cq, Ctx(3));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->len, d.size());
  EXPECT_TRUE(std::equal(d.begin(), d.end(), r.begin()));
}

}  // namespace
