// Functional tests of iwarpx's FI_EP_MSG endpoints through libfabric's public
// API only (linked with -lfabric, never with provider code): connection
// management with private data, send/recv of every size class with data
// checks, RMA, atomics, inject, fence, selective completion, protection
// errors, a killed peer, many connections, shutdown and cancel. Loopback
// 127.0.0.1 with kernel-chosen ports; every wait is bounded (msg_fixture.h).
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cinttypes>
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_ext_iwarpx.h>

#include "msg_fixture.h"

namespace {

using msgtest::Bytes;
using msgtest::CqPoller;
using msgtest::Ctx;
using msgtest::EqEvent;
using msgtest::Net;
using msgtest::Pattern;
using msgtest::SteadyClock;

// What a target advertises to its peer (sent as a message).
struct RemoteBuf {
  uint64_t addr;
  uint64_t key;
  uint64_t len;
};

class MsgTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(net_.Open()) << net_.error; }

  // One message from `tx` to `rx` (a receive is posted here unless
  // `posted_ctx` names one already posted into `rbuf`).
  void Transfer(fid_ep* tx, CqPoller& txcq, fid_ep* rx, CqPoller& rxcq, const Bytes& data,
                size_t src_off = 1, size_t dst_off = 3) {
    Bytes src(data.size() + src_off);
    std::copy(data.begin(), data.end(), src.begin() + static_cast<ptrdiff_t>(src_off));
    Bytes dst(data.size() + dst_off + 16, 0x5a);
    void* rctx = Ctx(0x1000 + data.size());
    void* sctx = Ctx(0x2000 + data.size());
    ASSERT_EQ(fi_recv(rx, dst.data() + dst_off, data.size() + 16, nullptr, 0, rctx), 0);
    ASSERT_EQ(
        net_.Post([&] { return fi_send(tx, src.data() + src_off, data.size(), nullptr, 0, sctx); }),
        0);
    auto r = net_.WaitComp(rxcq, rctx);
    ASSERT_TRUE(r.has_value()) << "no receive completion for " << data.size() << " bytes";
    EXPECT_EQ(r->len, data.size());
    EXPECT_EQ(r->flags & (FI_RECV | FI_MSG), FI_RECV | FI_MSG);
    EXPECT_TRUE(std::equal(data.begin(), data.end(), dst.begin() + static_cast<ptrdiff_t>(dst_off)))
        << data.size() << " bytes differ";
    for (size_t i = 0; i < 16; ++i) ASSERT_EQ(dst[dst_off + data.size() + i], 0x5a) << i;
    auto s = net_.WaitComp(txcq, sctx);
    ASSERT_TRUE(s.has_value()) << "no send completion";
    EXPECT_EQ(s->flags & (FI_SEND | FI_MSG), FI_SEND | FI_MSG);
  }

  // The server registers `buf` with `access` and tells the client about it;
  // the client has a receive for it posted by this call.
  RemoteBuf Advertise(const Net::Conn& c, void* buf, size_t len, uint64_t access,
                      fid_mr** mr_out = nullptr) {
    RemoteBuf rb{};
    fid_mr* mr = net_.Reg(net_.server, buf, len, access);
    EXPECT_NE(mr, nullptr) << net_.error;
    if (mr == nullptr) return rb;
    if (mr_out != nullptr) *mr_out = mr;
    RemoteBuf adv{reinterpret_cast<uintptr_t>(buf), fi_mr_key(mr), len};
    EXPECT_EQ(fi_recv(c.client, &rb, sizeof(rb), nullptr, 0, Ctx(0xad)), 0);
    EXPECT_EQ(fi_send(c.server, &adv, sizeof(adv), nullptr, 0, Ctx(0xae)), 0);
    EXPECT_TRUE(net_.WaitComp(net_.client.cq, Ctx(0xad)).has_value());
    EXPECT_TRUE(net_.WaitComp(net_.server.cq, Ctx(0xae)).has_value());
    EXPECT_EQ(rb.addr, adv.addr);
    return rb;
  }

  size_t CmDataSize(fid_t fid) {
    size_t v = 0;
    size_t len = sizeof(v);
    EXPECT_EQ(fi_getopt(fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &v, &len), 0);
    EXPECT_EQ(len, sizeof(size_t));
    return v;
  }

  Net net_;
};

// --- 1. Connection management --------------------------------------------

TEST_F(MsgTest, ConnectAcceptPrivateDataBothWays) {
  fid_ep* cep = net_.OpenEp(net_.client);
  ASSERT_NE(cep, nullptr) << net_.error;
  const size_t max = CmDataSize(&cep->fid);
  ASSERT_GE(max, 56u);  // fi_cm(3): at least 56 bytes
  const Bytes too_much = Pattern(max + 1, 9);
  EXPECT_EQ(fi_connect(cep, &net_.listen_addr, too_much.data(), too_much.size()), -FI_EINVAL);
  const Bytes cdata = Pattern(max, 1);
  const Bytes sdata = Pattern(100, 2);
  ASSERT_TRUE(net_.Connect(cep, cdata.data(), cdata.size())) << net_.error;
  EXPECT_EQ(fi_connect(cep, &net_.listen_addr, nullptr, 0), -FI_EISCONN);
  auto req = net_.WaitConnReq();
  ASSERT_TRUE(req.has_value()) << net_.error;
  EXPECT_EQ(req->fid, &net_.pep->fid);
  ASSERT_NE(req->info, nullptr);
  EXPECT_NE(req->info->handle, nullptr);
  EXPECT_EQ(req->data, cdata);
  fid_ep* sep = net_.Accept(*req, sdata.data(), sdata.size());
  ASSERT_NE(sep, nullptr) << net_.error;
  auto cconn = net_.WaitConnected(net_.client, cep);
  ASSERT_TRUE(cconn.has_value()) << net_.error;
  EXPECT_EQ(*cconn, sdata);
  ASSERT_TRUE(net_.WaitConnected(net_.server, sep).has_value()) << net_.error;
  EXPECT_TRUE(net_.client.eq.errors.empty());
  EXPECT_TRUE(net_.server.eq.errors.empty());
  Transfer(cep, net_.client.cq, sep, net_.server.cq, Pattern(10, 3));
}

TEST_F(MsgTest, AcceptWithoutPrivateDataGivesEmptyConnectedData) {
  fid_ep* cep = net_.OpenEp(net_.client);
  ASSERT_NE(cep, nullptr) << net_.error;
  ASSERT_TRUE(net_.Connect(cep)) << net_.error;
  auto req = net_.WaitConnReq();
  ASSERT_TRUE(req.has_value()) << net_.error;
  EXPECT_TRUE(req->data.empty());
  fid_ep* sep = net_.Accept(*req);
  ASSERT_NE(sep, nullptr) << net_.error;
  auto d = net_.WaitConnected(net_.client, cep);
  ASSERT_TRUE(d.has_value()) << net_.error;
  EXPECT_TRUE(d->empty());
}

TEST_F(MsgTest, RejectCarriesPrivateDataThenListenerStillAccepts) {
  fid_ep* cep = net_.OpenEp(net_.client);
  ASSERT_NE(cep, nullptr) << net_.error;
  const Bytes cdata = Pattern(33, 4);
  ASSERT_TRUE(net_.Connect(cep, cdata.data(), cdata.size())) << net_.error;
  auto req = net_.WaitConnReq();
  ASSERT_TRUE(req.has_value()) << net_.error;
  EXPECT_EQ(req->data, cdata);
  const Bytes rdata = Pattern(77, 5);
  ASSERT_EQ(fi_reject(net_.pep, req->info->handle, rdata.data(), rdata.size()), 0);
  fi_freeinfo(req->info);
  req->info = nullptr;
  std::optional<msgtest::EqError> err;
  ASSERT_TRUE(net_.WaitUntil([&] {
    return (err = net_.client.eq.TakeError(&cep->fid)).has_value();
  })) << "no error event after fi_reject";
  EXPECT_EQ(err->err, FI_ECONNREFUSED) << fi_strerror(err->err);
  EXPECT_EQ(err->data, rdata);
  net_.Drive(std::chrono::milliseconds(100));
  EXPECT_FALSE(net_.client.eq.Has(FI_CONNECTED, &cep->fid));
  char b[8] = {};
  EXPECT_LT(fi_send(cep, b, sizeof(b), nullptr, 0, nullptr), 0);
  // The listener carries on.
  auto c = net_.Establish();
  ASSERT_TRUE(c.has_value()) << net_.error;
  Transfer(c->server, net_.server.cq, c->client, net_.client.cq, Pattern(100, 6));
}

TEST_F(MsgTest, ConnectWithoutListenerIsRefused) {
  // A bound but not listening socket holds a port nobody listens on.
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(s, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  socklen_t alen = sizeof(a);
  ASSERT_EQ(getsockname(s, reinterpret_cast<sockaddr*>(&a), &alen), 0);
  fid_ep* cep = net_.OpenEp(net_.client);
  ASSERT_NE(cep, nullptr) << net_.error;
  const char data[] = "hello";
  const int r = fi_connect(cep, &a, data, sizeof(data));
  if (r != 0) {
    EXPECT_EQ(r, -FI_ECONNREFUSED);  // refused synchronously is fine too
  } else {
    std::optional<msgtest::EqError> err;
    ASSERT_TRUE(net_.WaitUntil([&] {
      return (err = net_.client.eq.TakeError(&cep->fid)).has_value();
    })) << "no error event for a connect to a closed port";
    if (net_.info->ep_attr->protocol == FI_PROTO_IWARPX_SCTP && err->err == FI_ETIMEDOUT) {
      // usrsctp: no SCTP stack answers at that UDP port (nothing sends an
      // ABORT), so the INIT retransmissions run out instead.
    } else {
      EXPECT_EQ(err->err, FI_ECONNREFUSED) << fi_strerror(err->err);
    }
  }
  EXPECT_FALSE(net_.client.eq.Has(FI_CONNECTED, &cep->fid));
  close(s);
}

// --- 2. Send/recv --------------------------------------------------------

class MsgSizeTest : public MsgTest, public ::testing::WithParamInterface<size_t> {};

// Receives posted before fi_connect (client) and before fi_accept (server),
// both directions, odd buffer offsets, random data.
TEST_P(MsgSizeTest, SendRecvBothWaysWithEarlyReceives) {
  const size_t n = GetParam();
  const Bytes c2s = Pattern(n, 11);
  const Bytes s2c = Pattern(n, 12);
  Bytes crecv(n + 3 + 16, 0x5a);
  Bytes srecv(n + 1 + 16, 0x5a);
  fid_ep* cep = net_.OpenEp(net_.client);
  ASSERT_NE(cep, nullptr) << net_.error;
  char tiny[4] = {};
  EXPECT_EQ(fi_send(cep, tiny, sizeof(tiny), nullptr, 0, nullptr), -FI_EOPBADSTATE);
  ASSERT_EQ(fi_recv(cep, crecv.data() + 3, n + 16, nullptr, 0, Ctx(1)), 0);
  ASSERT_TRUE(net_.Connect(cep)) << net_.error;
  auto req = net_.WaitConnReq();
  ASSERT_TRUE(req.has_value()) << net_.error;
  fid_ep* sep = net_.Accept(*req, nullptr, 0, [&](fid_ep* ep) {
    ASSERT_EQ(fi_recv(ep, srecv.data() + 1, n + 16, nullptr, 0, Ctx(2)), 0);
  });
  ASSERT_NE(sep, nullptr) << net_.error;
  ASSERT_TRUE(net_.WaitConnected(net_.server, sep).has_value()) << net_.error;
  // The server sends as soon as it is connected, maybe before the client
  // saw FI_CONNECTED: the client's early receive must catch it.
  Bytes ssrc(n + 1);
  std::copy(s2c.begin(), s2c.end(), ssrc.begin() + 1);
  ASSERT_EQ(net_.Post([&] { return fi_send(sep, ssrc.data() + 1, n, nullptr, 0, Ctx(3)); }), 0);
  ASSERT_TRUE(net_.WaitConnected(net_.client, cep).has_value()) << net_.error;
  Bytes csrc(n + 3);
  std::copy(c2s.begin(), c2s.end(), csrc.begin() + 3);
  ASSERT_EQ(net_.Post([&] { return fi_send(cep, csrc.data() + 3, n, nullptr, 0, Ctx(4)); }), 0);
  const auto t0 = SteadyClock::now();
  auto rc = net_.WaitComp(net_.client.cq, Ctx(1), std::chrono::seconds(30));
  auto rs = net_.WaitComp(net_.server.cq, Ctx(2), std::chrono::seconds(30));
  ASSERT_TRUE(rc.has_value() && rs.has_value()) << "receive completions missing";
  EXPECT_EQ(rc->len, n);
  EXPECT_EQ(rs->len, n);
  EXPECT_EQ(rc->buf, crecv.data() + 3);
  EXPECT_TRUE(std::equal(s2c.begin(), s2c.end(), crecv.begin() + 3)) << "server->client data";
  EXPECT_TRUE(std::equal(c2s.begin(), c2s.end(), srecv.begin() + 1)) << "client->server data";
  for (size_t i = 0; i < 16; ++i) {
    ASSERT_EQ(crecv[3 + n + i], 0x5a) << "byte past the message written at " << i;
    ASSERT_EQ(srecv[1 + n + i], 0x5a) << "byte past the message written at " << i;
  }
  EXPECT_TRUE(net_.WaitComp(net_.server.cq, Ctx(3)).has_value());
  EXPECT_TRUE(net_.WaitComp(net_.client.cq, Ctx(4)).has_value());
  const double ms = std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count();
  RecordProperty("ms", std::to_string(ms));
  EXPECT_TRUE(net_.client.cq.errs.empty() && net_.server.cq.errs.empty());
}

INSTANTIATE_TEST_SUITE_P(Sizes, MsgSizeTest,
                         ::testing::Values(size_t{0}, size_t{1}, size_t{4096}, size_t{65536 + 3},
                                           size_t{1} << 20, size_t{16} << 20),
                         [](const auto& p) { return std::to_string(p.param) + "B"; });

struct IovCase {
  std::vector<size_t> send;  // piece lengths
  std::vector<size_t> recv;
};

class MsgIovTest : public MsgTest, public ::testing::WithParamInterface<IovCase> {};

TEST_P(MsgIovTest, MultiIovSendRecvUnaligned) {
  const IovCase& k = GetParam();
  size_t total = 0;
  for (size_t l : k.send) total += l;
  size_t rtotal = 0;
  for (size_t l : k.recv) rtotal += l;
  ASSERT_GE(rtotal, total);
  auto c = net_.Establish();
  ASSERT_TRUE(c.has_value()) << net_.error;
  const Bytes data = Pattern(total, 21);
  // Each send piece in its own buffer at an odd offset.
  std::vector<Bytes> spieces;
  std::vector<iovec> siov;
  size_t off = 0;
  for (size_t i = 0; i < k.send.size(); ++i) {
    spieces.emplace_back(k.send[i] + 1 + i);
    std::copy_n(data.begin() + static_cast<ptrdiff_t>(off), k.send[i],
                spieces.back().begin() + static_cast<ptrdiff_t>(1 + i));
    off += k.send[i];
  }
  for (size_t i = 0; i < k.send.size(); ++i) siov.push_back({spieces[i].data() + 1 + i, k.send[i]});
  std::vector<Bytes> rpieces;
  std::vector<iovec> riov;
  for (size_t i = 0; i < k.recv.size(); ++i) rpieces.emplace_back(k.recv[i] + 3, 0x5a);
  for (size_t i = 0; i < k.recv.size(); ++i) riov.push_back({rpieces[i].data() + 3, k.recv[i]});
  for (int dir = 0; dir < 2; ++dir) {
    fid_ep* tx = dir == 0 ? c->client : c->server;
    fid_ep* rx = dir == 0 ? c->server : c->client;
    CqPoller& txcq = dir == 0 ? net_.client.cq : net_.server.cq;
    CqPoller& rxcq = dir == 0 ? net_.server.cq : net_.client.cq;
    for (Bytes& p : rpieces) std::fill(p.begin(), p.end(), 0x5a);
    ASSERT_EQ(fi_recvv(rx, riov.data(), nullptr, riov.size(), 0, Ctx(10 + dir)), 0);
    ASSERT_EQ(fi_sendv(tx, siov.data(), nullptr, siov.size(), 0, Ctx(20 + dir)), 0);
    auto r = net_.WaitComp(rxcq, Ctx(10 + dir));
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->len, total);
    Bytes got;
    for (size_t i = 0; i < k.recv.size(); ++i) {
      got.insert(got.end(), rpieces[i].begin() + 3, rpieces[i].end());
      for (size_t j = 0; j < 3; ++j) ASSERT_EQ(rpieces[i][j], 0x5a) << "before piece " << i;
    }
    EXPECT_TRUE(std::equal(data.begin(), data.end(), got.begin())) << "dir " << dir;
    for (size_t i = total; i < got.size(); ++i) ASSERT_EQ(got[i], 0x5a) << "past the message";
    ASSERT_TRUE(net_.WaitComp(txcq, Ctx(20 + dir)).has_value());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Splits, MsgIovTest,
    ::testing::Values(IovCase{{1, 4095, 65536, 30371}, {33333, 1, 7, 66662}},
                      IovCase{{17}, {5, 5, 5, 2}}, IovCase{{5, 5, 5, 2}, {17}},
                      IovCase{{3, size_t{1} << 19, (size_t{1} << 19) + 2}, {size_t{1} << 20, 5}},
                      IovCase{{16384, 16384, 16384, 16384}, {16383, 2, 16383, 32768}},
                      IovCase{{10, 20}, {7, 7, 7, 100}}, IovCase{{0, 64, 0}, {32, 0, 32}}));

// --- 3. RMA ----------------------------------------------------------------

TEST_F(MsgTest, RmaWriteThenReadBack) {
  auto c = net_.Establish();
  ASSERT_TRUE(c.has_value()) << net_.error;
  const size_t len = (size_t{1} << 20) + 7;
  Bytes target(len, 0);
  const RemoteBuf rb = Advertise(*c, target.data(), len, FI_REMOTE_READ | FI_REMOTE_WRITE);
  ASSERT_FALSE(HasFailure());
  // A write at an odd offset, then the whole region.
  const Bytes a = Pattern(100000, 31);
  Bytes src(a.size() + 1);
  std::copy(a.begin(), a.end(), src.begin() + 1);
  ASSERT_EQ(fi_write(c->client, src.data() + 1, a.size(), nullptr, 0, rb.addr + 5, rb.key, Ctx(1)),
            0);
  auto w = net_.WaitComp(net_.client.cq, Ctx(1));
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->flags & (FI_RMA | FI_WRITE), FI_RMA | FI_WRITE);
  Bytes back(a.size() + 2, 0x77);
  ASSERT_EQ(fi_read(c->client, back.data() + 1, a.size(), nullptr, 0, rb.addr + 5, rb.key, Ctx(2)),
            0);
  auto r = net_.WaitComp(net_.client.cq, Ctx(2));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->flags & (FI_RMA | FI_READ), FI_RMA | FI_READ);
  EXPECT_TRUE(std::equal(a.begin(), a.end(), back.begin() + 1)) << "read back differs";
  EXPECT_EQ(back[0], 0x77);
  EXPECT_EQ(back.back(), 0x77);
  EXPECT_TRUE(std::equal(a.begin(), a.end(), target.begin() + 5)) << "target differs";
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(target[i], 0);
  for (size_t i = 5 + a.size(); i < len; ++i) ASSERT_EQ(target[i], 0) << i;

  // The whole region from three local iovecs; read back into a registered sink.
  const Bytes whole = Pattern(len, 32);
  const size_t cut1 = 12345;
  const size_t cut2 = 700001;
  iovec iov[3] = {{const_cast<uint8_t*>(whole.data()), cut1},
                  {const_cast<uint8_t*>(whole.data()) + cut1, cut2 - cut1},
                  {const_cast<uint8_t*>(whole.data()) + cut2, len - cut2}};
  ASSERT_EQ(fi_writev(c->client, iov, nullptr, 3, 0, rb.addr, rb.key, Ctx(3)), 0);
  ASSERT_TRUE(net_.WaitComp(net_.client.cq, Ctx(3)).has_value());
  Bytes sink(len, 0);
  fid_mr* smr = net_.Reg(net_.client, sink.data(), len, FI_READ);
  ASSERT_NE(smr, nullptr) << net_.error;
  ASSERT_EQ(fi_read(c->client, sink.data(), len, fi_mr_desc(smr), 0, rb.addr, rb.key, Ctx(4)), 0);
  ASSERT_TRUE(net_.WaitComp(net_.client.cq, Ctx(4)).has_value());
  EXPECT_EQ(sink, whole);
  EXPECT_EQ(target, whole);
  EXPECT_TRUE(net_.client.cq.errs.empty());
}

TEST_F(MsgTest, WriteDataConsumesReceiveWithRemoteCqData) {
  auto c = net_.Establish();
  ASSERT_TRUE(c.has_value()) << net_.error;
  Bytes target(8192, 0);
  const RemoteBuf rb = Advertise(*c, target.data(), target.size(), FI_REMOTE_WRITE);
  ASSERT_FALSE(HasFailure());
  char rbuf[16];
  std::memset(rbuf, 0x5a, sizeof(rbuf));
  ASSERT_EQ(fi_recv(c->server, rbuf, sizeof(rbuf), nullptr, 0, Ctx(7)), 0);
  const Bytes d = Pattern(4099, 41);
  const uint64_t imm = 0x1122334455667788ULL;
  ASSERT_EQ(
      fi_writedata(c->client, d.data(), d.size(), nullptr, imm, 0, rb.addr + 1, rb.key, Ctx(8)), 0);
  auto t = net_.WaitComp(net_.server.cq, Ctx(7));
  ASSERT_TRUE(t.has_value()) << "no completion at the target";
  EXPECT_EQ(t->flags & FI_REMOTE_CQ_DATA, FI_REMOTE_CQ_DATA);
  EXPECT_EQ(t->data, imm);
  EXPECT_EQ(rbuf[0], 0x5a);  // the receive buffer is not written
  EXPECT_TRUE(std::equal(d.begin(), d.end(), target.begin() + 1));
  EXPECT_EQ(target[0], 0);
  EXPECT_EQ(target[d.size() + 1], 0);
  auto i = net_.WaitComp(net_.client.cq, Ctx(8));
  ASSERT_TRUE(i.has_value());
  EXPECT_EQ(i->flags & (FI_RMA | FI_WRITE), FI_RMA | FI_WRITE);
  // A zero-length writedata carries only the data.
  ASSERT_EQ(fi_recv(c->server, rbuf, sizeof(rbuf), nullptr, 0, Ctx(9)), 0);
  ASSERT_EQ(fi_writedata(c->client, d.data(), 0, nullptr, 42, 0, rb.addr, rb.key, Ctx(10)), 0);
  auto z = net_.WaitComp(net_.server.cq, Ctx(9));
  ASSERT_TRUE(z.has_value());
  EXPECT_EQ(z->data, 42u);
  EXPECT_TRUE(net_.WaitComp(net_.client.cq, Ctx(10)).has_value());
}

// Send with remote CQ data (fi_senddata / fi_injectdata / fi_sendmsg with
// FI_REMOTE_CQ_DATA): the iwarpx "Send with Immediate Data" extension,
// negotiated in the MPA exchange because both ends asked for cq_data_size.
class MsgSendDataTest : public MsgTest {
 protected:
  void SetUp() override {
    net_.cq_data = true;
    ASSERT_TRUE(net_.Open()) << net_.error;
    ASSERT_GT(net_.info->domain_attr->cq_data_size, 0u);
  }
  // Checks one target completion of a send with data.
  void ExpectRecvWithData(void* ctx, size_t len, uint64_t data) {
    auto t = net_.WaitComp(net_.server.cq, ctx);
    ASSERT_TRUE(t.has_value()) << "no completion at the target";
    EXPECT_EQ(t->flags & (FI_MSG | FI_RECV | FI_REMOTE_CQ_DATA),
              FI_MSG | FI_RECV | FI_REMOTE_CQ_DATA);
    EXPECT_EQ(t->flags & (FI_RMA | FI_REMOTE_WRITE), 0u);
    EXPECT_EQ(t->len, len);
    EXPECT_EQ(t->data, data);
  }
};

TEST_F(MsgSendDataTest, SendDataZeroBytesAnd64KiB) {
  auto c = net_.Establish();
  ASSERT_TRUE(c.has_value()) << net_.error;
  const size_t big = size_t{64} * 1024;
  Bytes r0(16, 0x5a);
  Bytes r1(big + 16, 0x5a);
  ASSERT_EQ(fi_recv(c->server, r0.data(), r0.size(), nullptr, 0, Ctx(1)), 0);
  ASSERT_EQ(fi_recv(c->server, r1.data(), r1.size(), nullptr, 0, Ctx(2)), 0);
  const Bytes d = Pattern(big, 61);
  ASSERT_EQ(net_.Post([&] { return fi_senddata(c->client, d.data(), 0, nullptr, 7, 0, Ctx(3)); }),
            0);
  const uint64_t data = 0xFEDCBA9876543210ULL;
  ASSERT_EQ(net_.Post([&] {
    return fi_senddata(c->client, d.data(), d.size(), nullptr, data, 0, Ctx(4));
  }),
            0);
  ExpectRecvWithData(Ctx(1), 0, 7);
  EXPECT_EQ(r0[0], 0x5a);
  ExpectRecvWithData(Ctx(2), big, data);
  EXPECT_TRUE(std::equal(d.begin(), d.end(), r1.begin())) << "payload differs";
  for (size_t i = big; i < r1.size(); ++i) ASSERT_EQ(r1[i], 0x5a) << "past the message";
  for (int ctx : {3, 4}) {
    auto s = net_.WaitComp(net_.client.cq, Ctx(ctx));
    ASSERT_TRUE(s.has_value()) << "no send completion " << ctx;
    EXPECT_EQ(s->flags & (FI_SEND | FI_MSG), FI_SEND | FI_MSG);
  }
  // A plain send afterwards takes a receive of its own, with no data.
  Transfer(c->client, net_.client.cq, c->server, net_.server.cq, Pattern(100, 62));
  EXPECT_TRUE(net_.client.cq.errs.empty());
  EXPECT_TRUE(net_.server.cq.errs.empty());
}

TEST_F(MsgSendDataTest, InjectDataCopiesAtTheCall) {
  auto c = net_.Establish();
  ASSERT_TRUE(c.has_value()) << net_.error;
  const size_t inject_size = net_.info->tx_attr->inject_size;
  ASSERT_GE(inject_size, 8u);
  Bytes big(inject_size + 1, 1);
  EXPECT_EQ(fi_injectdata(c->client, big.data(), big.size(), 5, 0), -FI_EINVAL);
  const Bytes orig = Pattern(inject_size, 63);
  Bytes buf = orig;
  Bytes r(inject_size + 8, 0);
  ASSERT_EQ(fi_recv(c->server, r.data(), r.size(), nullptr, 0, Ctx(1)), 0);
  ASSERT_EQ(net_.Post([&] { return fi_injectdata(c->client, buf.data(), buf.size(), 99, 0); }), 0);
  std::fill(buf.begin(), buf.end(), 0);  // the data was copied at the call
  ExpectRecvWithData(Ctx(1), inject_size, 99);
  EXPECT_TRUE(std::equal(orig.begin(), orig.end(), r.begin()));
  // fi_inject* writes no completion at the initiator.
  net_.PollAll();
  EXPECT_TRUE(net_.client.cq.done.empty());
  EXPECT_TRUE(net_.client.cq.errs.empty());
}

TEST_F(MsgSendDataTest, SendMsgWithRemoteCqData) {
  auto c = net_.Establish();
  ASSERT_TRUE(c.has_value()) << net_.error;
  const Bytes a = Pattern(3000, 64);
  const Bytes b = Pattern(5, 65);
  Bytes r(4096, 0);
  ASSERT_EQ(fi_recv(c->server, r.data(), r.size(), nullptr, 0, Ctx(1)), 0);
  iovec iov[2] = {{const_cast<uint8_t*>(a.data()), a.size()},
                  {const_cast<uint8_t*>(b.data()), b.size()}};
  fi_msg msg{};
  msg.msg_iov = iov;
  msg.iov_count = 2;
  msg.context = Ctx(2);
  msg.data = 0x0123456789ULL;
  ASSERT_EQ(net_.Post([&] { return fi_sendmsg(c->client, &msg, FI_REMOTE_CQ_DATA); }), 0);
  ExpectRecvWithData(Ctx(1), a.size() + b.size(), 0x0123456789ULL);
  EXPECT_TRUE(std::equal(a.begin(), a.end(), r.begin()));
  EXPECT_TRUE(std::equal(b.begin(), b.end(), r.begin() + static_cast<ptrdiff_t>(a.size())));
  ASSERT_TRUE(net_.WaitComp(net_.client.cq, Ctx(2)).has_value());
}

// Without cq_data_size the MPA exchange does not offer the extension: the
// send with data is refused at the call and nothing reaches the peer.
TEST_F(MsgTest, SendDataWithoutCqDataSizeIsNotSupported) {
  ASSERT_EQ(net_.info->domain_attr->cq_data_size, 0u);
  auto c = net_.Establish();
  ASSERT_TRUE(c.has_value()) << net_.error;
  char buf[8] = {};
  EXPECT_EQ(fi_senddata(c->client, buf, sizeof(buf), nullptr, 1, 0, Ctx(1)), -FI_EOPNOTSUPP);
  EXPECT_EQ(fi_injectdata(c->client, buf, sizeof(buf), 1, 0), -FI_EOPNOTSUPP);
  iovec iov = {buf, sizeof(buf)};
  fi_msg msg{};
  msg.msg_iov = &iov;
  msg.iov_count = 1;
  msg.context = Ctx(2);
  msg.data = 1;
  EXPECT_EQ(fi_sendmsg(c->client, &msg, FI_REMOTE_CQ_DATA), -FI_EOPNOTSUPP);
  // The connection is unharmed.
  Transfer(c->client, net_.client.cq, c->server, net_.server.cq, Pattern(10, 66));
}

// --- 4. Atomics --------------------------------------------------------------

TEST_F(MsgTest, Atomics64) {
  auto c = net_.Establish();
  ASSERT_TRUE(c.has_value()) << net_.error;
  std::array<uint64_t, 4> target = {0, 100, 0, 0};
  const RemoteBuf rb =
      Advertise(*c, target.data(), sizeof(target), FI_REMOTE_READ | FI_REMOTE_WRITE);
  ASSERT_FALSE(HasFailure());
  const uint64_t at = rb.addr + 8;  // target[1]
  uint64_t operand = 5;
  uint64_t result = 0;
  uint64_t compare = 0;
  auto done = [&](uintptr_t ctx) {
    auto e = net_.WaitComp(net_.client.cq, Ctx(ctx));
    EXPECT_TRUE(e.has_value()) << "atomic " << ctx;
    if (e) {
      EXPECT_NE(e->flags & FI_ATOMIC, 0u);
    }
    return e.has_value();
  };
  ASSERT_EQ(fi_atomic(c->client, &operand, 1, nullptr, 0, at, rb.key, FI_UINT64, FI_SUM, Ctx(1)),
            0);
  ASSERT_TRUE(done(1));
  // FI_ATOMIC_READ (ordered after the sum) sees its result.
  uint64_t ignored = 0;
  ASSERT_EQ(fi_fetch_atomic(c->client, &ignored, 1, nullptr, &result, nullptr, 0, at, rb.key,
                            FI_UINT64, FI_ATOMIC_READ, Ctx(2)),
            0);
  ASSERT_TRUE(done(2));
  EXPECT_EQ(result, 105u);
  EXPECT_EQ(target[1], 105u);
  operand = 7;
  ASSERT_EQ(fi_fetch_atomic(c->client, &operand, 1, nullptr, &result, nullptr, 0, at, rb.key,
                            FI_UINT64, FI_SUM, Ctx(3)),
            0);
  ASSERT_TRUE(done(3));
  EXPECT_EQ(result, 105u);
  EXPECT_EQ(target[1], 112u);
  // Compare-and-swap: match, then mismatch.
  operand = 999;
  compare = 112;
  ASSERT_EQ(fi_compare_atomic(c->client, &operand, 1, nullptr, &compare, nullptr, &result, nullptr,
                              0, at, rb.key, FI_UINT64, FI_CSWAP, Ctx(4)),
            0);
  ASSERT_TRUE(done(4));
  EXPECT_EQ(result, 112u);
  EXPECT_EQ(target[1], 999u);
  operand = 5;
  compare = 112;
  ASSERT_EQ(fi_compare_atomic(c->client, &operand, 1, nullptr, &compare, nullptr, &result, nullptr,
                              0, at, rb.key, FI_UINT64, FI_CSWAP, Ctx(5)),
            0);
  ASSERT_TRUE(done(5));
  EXPECT_EQ(result, 999u);
  EXPECT_EQ(target[1], 999u);
  // Signed add of a negative value; neighbours untouched.
  int64_t neg = -1000;
  int64_t sres = 0;
  ASSERT_EQ(fi_fetch_atomic(c->client, &neg, 1, nullptr, &sres, nullptr, 0, at, rb.key, FI_INT64,
                            FI_SUM, Ctx(6)),
            0);
  ASSERT_TRUE(done(6));
  EXPECT_EQ(sres, 999);
  EXPECT_EQ(static_cast<int64_t>(target[1]), -1);
  EXPECT_EQ(target[0], 0u);
  EXPECT_EQ(target[2], 0u);
  // What iwarpx cannot do is refused at the call.
  EXPECT_EQ(fi_atomic(c->client, &operand, 1, nullptr, 0, at, rb.key, FI_UINT8, FI_SUM, Ctx(7)),
            -FI_EINVAL);
  EXPECT_EQ(
      fi_atomic(c->client, &operand, 1, nullptr, 0, at + 4, rb.key, FI_UINT64, FI_SUM, Ctx(7)),
      -FI_EINVAL);  // not 8-byte aligned
  EXPECT_LT(fi_atomic(c->client, &operand, 1, nullptr, 0, at, rb.key, FI_UINT64, FI_PROD, Ctx(8)),
            0);
  EXPECT_TRUE(net_.client.cq.errs.empty());
}

// 32-bit integers: each lane of an 8-byte word changes alone (the masked
// RFC 7306 request), results are exactly 4 bytes, neighbours stay as they were.
TEST_F(MsgTest, Atomics32) {
  auto c = net_.Establish();
  ASSERT_TRUE(c.has_value()) << net_.error;
  size_t count = 0;
  EXPECT_EQ(fi_atomicvalid(c->client, FI_UINT32, FI_SUM, &count), 0);
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(fi_compare_atomicvalid(c->client, FI_INT32, FI_CSWAP, &count), 0);
  alignas(8) std::array<uint32_t, 4> target = {0xFFFFFFFFu, 7, 100, 0xABCDEF01u};
  const RemoteBuf rb =
      Advertise(*c, target.data(), sizeof(target), FI_REMOTE_READ | FI_REMOTE_WRITE);
  ASSERT_FALSE(HasFailure());
  auto done = [&](uintptr_t ctx) {
    auto e = net_.WaitComp(net_.client.cq, Ctx(ctx));
    EXPECT_TRUE(e.has_value()) << "atomic " << ctx;
    return e.has_value();
  };
  // Results sit between guard words: a 4-byte result must not spill.
  std::array<uint32_t, 3> res = {0x5A5A5A5Au, 0, 0x5A5A5A5Au};
  uint32_t operand = 2;
  // Lane 0 wraps from 0xFFFFFFFF to 1 without carrying into lane 1.
  ASSERT_EQ(fi_fetch_atomic(c->client, &operand, 1, nullptr, &res[1], nullptr, 0, rb.addr, rb.key,
                            FI_UINT32, FI_SUM, Ctx(1)),
            0);
  ASSERT_TRUE(done(1));
  EXPECT_EQ(res[1], 0xFFFFFFFFu);
  EXPECT_EQ(target[0], 1u);
  EXPECT_EQ(target[1], 7u);
  // Lane 1: signed add of -10 goes to -3, lane 0 unchanged.
  int32_t neg = -10;
  int32_t sres = 0;
  ASSERT_EQ(fi_fetch_atomic(c->client, &neg, 1, nullptr, &sres, nullptr, 0, rb.addr + 4, rb.key,
                            FI_INT32, FI_SUM, Ctx(2)),
            0);
  ASSERT_TRUE(done(2));
  EXPECT_EQ(sres, 7);
  EXPECT_EQ(static_cast<int32_t>(target[1]), -3);
  EXPECT_EQ(target[0], 1u);
  // Compare-swap on the second word's low lane: a match, then a mismatch.
  operand = 555;
  uint32_t compare = 100;
  ASSERT_EQ(fi_compare_atomic(c->client, &operand, 1, nullptr, &compare, nullptr, &res[1], nullptr,
                              0, rb.addr + 8, rb.key, FI_UINT32, FI_CSWAP, Ctx(3)),
            0);
  ASSERT_TRUE(done(3));
  EXPECT_EQ(res[1], 100u);
  EXPECT_EQ(target[2], 555u);
  operand = 1;
  ASSERT_EQ(fi_compare_atomic(c->client, &operand, 1, nullptr, &compare, nullptr, &res[1], nullptr,
                              0, rb.addr + 8, rb.key, FI_UINT32, FI_CSWAP, Ctx(4)),
            0);
  ASSERT_TRUE(done(4));
  EXPECT_EQ(res[1], 555u);
  EXPECT_EQ(target[2], 555u);
  // Swap (FI_ATOMIC_WRITE) and read (FI_ATOMIC_READ) on the high lane.
  operand = 0x01020304u;
  ASSERT_EQ(fi_fetch_atomic(c->client, &operand, 1, nullptr, &res[1], nullptr, 0, rb.addr + 12,
                            rb.key, FI_UINT32, FI_ATOMIC_WRITE, Ctx(5)),
            0);
  ASSERT_TRUE(done(5));
  EXPECT_EQ(res[1], 0xABCDEF01u);
  ASSERT_EQ(fi_fetch_atomic(c->client, &operand, 1, nullptr, &res[1], nullptr, 0, rb.addr + 12,
                            rb.key, FI_UINT32, FI_ATOMIC_READ, Ctx(6)),
            0);
  ASSERT_TRUE(done(6));
  EXPECT_EQ(res[1], 0x01020304u);
  EXPECT_EQ(target[2], 555u);
  EXPECT_EQ(target[3], 0x01020304u);
  EXPECT_EQ(res[0], 0x5A5A5A5Au);
  EXPECT_EQ(res[2], 0x5A5A5A5Au);
  // A 32-bit target must be 4-byte aligned.
  EXPECT_EQ(
      fi_atomic(c->client, &operand, 1, nullptr, 0, rb.addr + 2, rb.key, FI_UINT32, FI_SUM, Ctx(7)),
      -FI_EINVAL);
  EXPECT_TRUE(net_.client.cq.errs.empty());
}

// --- 5. Inject, fence, selective completion ---------------------------------

TEST_F(MsgTest, InjectCopiesAtTheCallAndWritesNoCompletion) {
  auto c = net_.Establish();
  ASSERT_TRUE(c.has_value()) << net_.error;
  size_t inject_size = net_.info->tx_attr->inject_size;
  ASSERT_GE(inject_size, 8u);
  const Bytes orig = Pattern(inject_size, 51);
  Bytes buf = orig;
  Bytes r1(inject_size + 8, 0);
  Bytes r2(16, 0);
  ASSERT_EQ(fi_recv(c->server, r1.data(), r1.size(), nullptr, 0, Ctx(1)), 0);
  ASSERT_EQ(fi_recv(c->server, r2.data(), r2.size(), nullptr, 0, Ctx(2)), 0);
  ASSERT_EQ(fi_inject(c->client, buf.data(), buf.size(), 0), 0);
  std::fill(buf.begin(), buf.end(), 0xee);  // reused right away
  EXPECT_EQ(fi_inject(c->client, buf.data(), inject_size + 1, 0), -FI_EINVAL);
  ASSERT_EQ(fi_send(c->client, "after", 6, nullptr, 0, Ctx(3)), 0);
  auto e1 = net_.WaitComp(net_.server.cq, Ctx(1));
  ASSERT_TRUE(e1.has_value());
  EXPECT_EQ(e1->len, inject_size);
  EXPECT_TRUE(std::equal(orig.begin(), orig.end(), r1.begin())) << "inject sent the later bytes";
  ASSERT_TRUE(net_.WaitComp(net_.server.cq, Ctx(2)).has_value());
  EXPECT_STREQ(reinterpret_cast<char*>(r2.data()), "after");
  ASSERT_TRUE(net_.WaitComp(net_.client.cq, Ctx(3)).has_value());
  // fi_inject_write: same rules; read back what was written.
  uint64_t target[2] = {0, 0};
  const RemoteBuf rb = Advertise(*c, target, sizeof(target), FI_REMOTE_READ | FI_REMOTE_WRITE);
  ASSERT_FALSE(HasFailure());
  uint64_t v = 0xfeedfacecafebeefULL;
  ASSERT_EQ(fi_inject_write(c->client, &v, sizeof(v), 0, rb.addr + 8, rb.key), 0);
  v = 0;
  uint64_t back = 0;
  ASSERT_EQ(fi_read(c->client, &back, sizeof(back), nullptr, 0, rb.addr + 8, rb.key, Ctx(4)), 0);
  ASSERT_TRUE(net_.WaitComp(net_.client.cq, Ctx(4)).has_value());
  EXPECT_EQ(back, 0xfeedfacecafebeefULL);
  EXPECT_EQ(target[1], 0xfeedfacecafebeefULL);
  EXPECT_EQ(target[0], 0u);
  net_.Drive(std::chrono::milliseconds(200));
  // Only the completions asked for: none for the two injects.
  EXPECT_TRUE(net_.client.cq.done.empty()) << net_.client.cq.done.size() << " extra completions";
  EXPECT_TRUE(net_.client.cq.errs.empty());
}

// A 1 MiB fi_readmsg, then a fenced write into the same region: the fenced
// write may start only once the Read completed: the Read's completion comes
// first and the Read returns the old contents in full. (Without FI_FENCE the
// write completes first here.)
TEST_F(MsgTest, FencedWriteWaitsForEarlierRead) {
  auto c = net_.Establish();
  ASSERT_TRUE(c.has_value()) << net_.error;
  const size_t len = size_t{1} << 20;
  const Bytes oldv = Pattern(len, 61);
  const Bytes newv = Pattern(len, 62);
  Bytes target = oldv;
  const RemoteBuf rb = Advertise(*c, target.data(), len, FI_REMOTE_READ | FI_REMOTE_WRITE);
  ASSERT_FALSE(HasFailure());
  for (int round = 0; round < 3; ++round) {
    target = oldv;
    Bytes sink(len, 0);
    iovec liov = {sink.data(), len};
    fi_rma_iov riov = {rb.addr, len, rb.key};
    fi_msg_rma rmsg{};
    rmsg.msg_iov = &liov;
    rmsg.iov_count = 1;
    rmsg.rma_iov = &riov;
    rmsg.rma_iov_count = 1;
    rmsg.context = Ctx(100 + round);
    ASSERT_EQ(fi_readmsg(c->client, &rmsg, FI_COMPLETION), 0);
    iovec wiov = {const_cast<uint8_t*>(newv.data()), len};
    fi_msg_rma wmsg = rmsg;
    wmsg.msg_iov = &wiov;
    wmsg.context = Ctx(200 + round);
    ASSERT_EQ(fi_writemsg(c->client, &wmsg, FI_COMPLETION | FI_FENCE), 0);
    ASSERT_TRUE(net_.WaitUntil([&] { return net_.client.cq.done.size() >= 2; }))
        << "completions missing";
    EXPECT_EQ(net_.client.cq.done[0].op_context, Ctx(100 + round)) << "read completes first";
    EXPECT_EQ(net_.client.cq.done[1].op_context, Ctx(200 + round));
    net_.client.cq.done.clear();
    EXPECT_TRUE(sink == oldv) << "the read saw bytes of the fenced write (round " << round << ")";
    // The write completes when sent (FI_TRANSMIT_COMPLETE): wait until it has
    // landed before the next round resets the target.
    EXPECT_TRUE(net_.WaitUntil([&] { return target == newv; })) << "the write did not land";
  }
}

// A 1 MiB read, then a fenced send: the send starts only after the Read
// completed, so its completion comes second, and scribbling on the region
// when the send arrives cannot reach the read data.
TEST_F(MsgTest, FencedSendWaitsForEarlierRead) {
  auto c = net_.Establish();
  ASSERT_TRUE(c.has_value()) << net_.error;
  const size_t len = size_t{1} << 20;
  const Bytes oldv = Pattern(len, 63);
  Bytes target = oldv;
  const RemoteBuf rb = Advertise(*c, target.data(), len, FI_REMOTE_READ);
  ASSERT_FALSE(HasFailure());
  Bytes sink(len, 0);
  char rbuf[8] = {};
  ASSERT_EQ(fi_recv(c->server, rbuf, sizeof(rbuf), nullptr, 0, Ctx(1)), 0);
  iovec liov = {sink.data(), len};
  fi_rma_iov riov = {rb.addr, len, rb.key};
  fi_msg_rma rmsg{};
  rmsg.msg_iov = &liov;
  rmsg.iov_count = 1;
  rmsg.rma_iov = &riov;
  rmsg.rma_iov_count = 1;
  rmsg.context = Ctx(2);
  ASSERT_EQ(fi_readmsg(c->client, &rmsg, FI_COMPLETION), 0);
  char sbuf[4] = "go!";
  iovec siov = {sbuf, sizeof(sbuf)};
  fi_msg smsg{};
  smsg.msg_iov = &siov;
  smsg.iov_count = 1;
  smsg.context = Ctx(3);
  ASSERT_EQ(fi_sendmsg(c->client, &smsg, FI_COMPLETION | FI_FENCE), 0);
  bool scribbled = false;
  ASSERT_TRUE(net_.WaitUntil([&] {
    if (!scribbled && net_.server.cq.Take(Ctx(1))) {
      std::fill(target.begin(), target.end(), 0xcc);
      scribbled = true;
    }
    return scribbled && net_.client.cq.done.size() >= 2;
  }));
  EXPECT_EQ(net_.client.cq.done[0].op_context, Ctx(2)) << "the read completes first";
  EXPECT_EQ(net_.client.cq.done[1].op_context, Ctx(3));
  EXPECT_TRUE(sink == oldv) << "the read was still running when the fenced send arrived";
}

// fi_poll(3) over a real connection: a CQ shows up while it holds a
// completion (fi_poll takes nothing off it), a counter once per change; the
// poll set alone drives the progress that makes them appear.
TEST_F(MsgTest, PollSetReportsCqAndCounterWithoutConsuming) {
  fid_cq* pcq = nullptr;
  fi_cq_attr ca{};
  ca.size = 16;
  ca.format = FI_CQ_FORMAT_DATA;
  ASSERT_EQ(fi_cq_open(net_.client.domain, &ca, &pcq, Ctx(0xc0)), 0);
  net_.extra_cqs.push_back(pcq);  // not polled by the fixture: only this test reads it
  fid_cntr* cntr = nullptr;
  fi_cntr_attr cta{};
  cta.events = FI_CNTR_EVENTS_COMP;
  ASSERT_EQ(fi_cntr_open(net_.client.domain, &cta, &cntr, Ctx(0xc1)), 0);
  net_.cntrs.push_back(cntr);
  fi_poll_attr pa{};
  fid_poll* ps = nullptr;
  ASSERT_EQ(fi_poll_open(net_.client.domain, &pa, &ps), 0);
  // Leaves the set empty and closed before the fixture closes its members.
  struct PollSetGuard {
    fid_poll* ps;
    std::vector<fid*> members;
    ~PollSetGuard() {
      for (fid* f : members) EXPECT_EQ(fi_poll_del(ps, f, 0), 0);
      EXPECT_EQ(fi_close(&ps->fid), 0);
    }
  } guard{ps, {}};
  ASSERT_EQ(fi_poll_add(ps, &pcq->fid, 0), 0);
  guard.members.push_back(&pcq->fid);
  ASSERT_EQ(fi_poll_add(ps, &cntr->fid, 0), 0);
  guard.members.push_back(&cntr->fid);

  fid_ep* cep = net_.OpenEp(net_.client, nullptr, FI_TRANSMIT | FI_RECV, pcq, false);
  ASSERT_NE(cep, nullptr) << net_.error;
  ASSERT_EQ(fi_ep_bind(cep, &cntr->fid, FI_SEND | FI_RECV), 0);
  ASSERT_EQ(fi_enable(cep), 0);
  char crecv[16] = {};
  char srecv[16] = {};
  ASSERT_EQ(fi_recv(cep, crecv, sizeof(crecv), nullptr, 0, Ctx(1)), 0);
  ASSERT_TRUE(net_.Connect(cep)) << net_.error;
  auto req = net_.WaitConnReq();
  ASSERT_TRUE(req.has_value()) << net_.error;
  fid_ep* sep = net_.Accept(*req, nullptr, 0, [&](fid_ep* ep) {
    ASSERT_EQ(fi_recv(ep, srecv, sizeof(srecv), nullptr, 0, Ctx(2)), 0);
  });
  ASSERT_NE(sep, nullptr) << net_.error;
  ASSERT_TRUE(net_.WaitConnected(net_.server, sep).has_value()) << net_.error;
  ASSERT_TRUE(net_.WaitConnected(net_.client, cep).has_value()) << net_.error;

  void* ctx[8] = {};
  EXPECT_EQ(fi_poll(ps, ctx, 8), 0) << "nothing completed on the client yet";

  // Polls only the poll set until both members were reported (or 10 s).
  const auto poll_until_both = [&] {
    std::set<void*> seen;
    const auto deadline = SteadyClock::now() + msgtest::kWait;
    while (seen.size() < 2 && SteadyClock::now() < deadline) {
      const int n = fi_poll(ps, ctx, 8);
      EXPECT_GE(n, 0);
      for (int i = 0; i < n; ++i) seen.insert(ctx[i]);
    }
    return seen;
  };

  char msg[16] = "to the server";
  ASSERT_EQ(net_.Post([&] { return fi_send(cep, msg, sizeof(msg), nullptr, 0, Ctx(3)); }), 0);
  EXPECT_EQ(poll_until_both(), (std::set<void*>{Ctx(0xc0), Ctx(0xc1)}));
  // The completion is still queued; the counter's change was reported once.
  ASSERT_EQ(fi_poll(ps, ctx, 8), 1);
  EXPECT_EQ(ctx[0], Ctx(0xc0));
  EXPECT_EQ(fi_cntr_read(cntr), 1u);
  fi_cq_data_entry e{};
  ASSERT_EQ(fi_cq_read(pcq, &e, 1), 1);
  EXPECT_EQ(e.op_context, Ctx(3));
  EXPECT_EQ(fi_poll(ps, ctx, 8), 0);
  ASSERT_TRUE(net_.WaitComp(net_.server.cq, Ctx(2)).has_value());
  EXPECT_STREQ(srecv, "to the server");

  // The other direction: the client's receive completes.
  char back[16] = "to the client";
  ASSERT_EQ(net_.Post([&] { return fi_send(sep, back, sizeof(back), nullptr, 0, Ctx(4)); }), 0);
  EXPECT_EQ(poll_until_both(), (std::set<void*>{Ctx(0xc0), Ctx(0xc1)}));
  // count 1 with the CQ ready gives the CQ only (members in the order added).
  ASSERT_EQ(fi_poll(ps, ctx, 1), 1);
  EXPECT_EQ(ctx[0], Ctx(0xc0));
  EXPECT_EQ(fi_cntr_read(cntr), 2u);
  ASSERT_EQ(fi_cq_read(pcq, &e, 1), 1);
  EXPECT_EQ(e.op_context, Ctx(1));
  EXPECT_EQ(e.len, sizeof(back));
  EXPECT_STREQ(crecv, "to the client");
  EXPECT_EQ(fi_poll(ps, ctx, 8), 0);
  EXPECT_EQ(fi_cq_read(pcq, &e, 1), -FI_EAGAIN);
  EXPECT_TRUE(net_.WaitComp(net_.server.cq, Ctx(4)).has_value());
}

TEST_F(MsgTest, SelectiveCompletionCountsEverything) {
  fid_cq* txcq = nullptr;
  fi_cq_attr ca{};
  ca.size = 64;
  ca.format = FI_CQ_FORMAT_DATA;
  ASSERT_EQ(fi_cq_open(net_.client.domain, &ca, &txcq, nullptr), 0);
  net_.extra_cqs.push_back(txcq);
  CqPoller txp;
  txp.cq = txcq;
  net_.extra_pollers.push_back(&txp);
  fid_cntr* cntr = nullptr;
  fi_cntr_attr cta{};
  cta.events = FI_CNTR_EVENTS_COMP;
  ASSERT_EQ(fi_cntr_open(net_.client.domain, &cta, &cntr, nullptr), 0);
  net_.cntrs.push_back(cntr);

  fid_ep* cep =
      net_.OpenEp(net_.client, nullptr, FI_TRANSMIT | FI_SELECTIVE_COMPLETION, txcq, false);
  ASSERT_NE(cep, nullptr) << net_.error;
  ASSERT_EQ(fi_ep_bind(cep, &net_.client.cq.cq->fid, FI_RECV), 0);
  ASSERT_EQ(fi_ep_bind(cep, &cntr->fid, FI_SEND | FI_WRITE | FI_READ), 0);
  ASSERT_EQ(fi_enable(cep), 0);
  ASSERT_TRUE(net_.Connect(cep)) << net_.error;
  auto req = net_.WaitConnReq();
  ASSERT_TRUE(req.has_value()) << net_.error;
  fid_ep* sep = net_.Accept(*req);
  ASSERT_NE(sep, nullptr) << net_.error;
  ASSERT_TRUE(net_.WaitConnected(net_.client, cep).has_value()) << net_.error;
  ASSERT_TRUE(net_.WaitConnected(net_.server, sep).has_value()) << net_.error;
  Net::Conn conn{cep, sep};
  uint64_t target = 0;
  const RemoteBuf rb = Advertise(conn, &target, sizeof(target), FI_REMOTE_WRITE | FI_REMOTE_READ);
  ASSERT_FALSE(HasFailure());

  char r[4][8] = {};
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(fi_recv(sep, r[i], sizeof(r[i]), nullptr, 0, Ctx(10 + i)), 0);
  }
  char m[4][8] = {"zero", "one", "two", "three"};
  for (int i = 0; i < 4; ++i) {
    iovec iov = {m[i], sizeof(m[i])};
    fi_msg msg{};
    msg.msg_iov = &iov;
    msg.iov_count = 1;
    msg.context = Ctx(20 + i);
    ASSERT_EQ(fi_sendmsg(cep, &msg, i == 2 ? FI_COMPLETION : 0), 0);  // only #2 reports
  }
  uint64_t v = 77;
  iovec wiov = {&v, sizeof(v)};
  fi_rma_iov riov = {rb.addr, sizeof(v), rb.key};
  fi_msg_rma wmsg{};
  wmsg.msg_iov = &wiov;
  wmsg.iov_count = 1;
  wmsg.rma_iov = &riov;
  wmsg.rma_iov_count = 1;
  wmsg.context = Ctx(30);
  ASSERT_EQ(fi_writemsg(cep, &wmsg, 0), 0);
  uint64_t back = 0;
  wiov.iov_base = &back;
  wmsg.context = Ctx(31);
  ASSERT_EQ(fi_readmsg(cep, &wmsg, 0), 0);
  ASSERT_TRUE(net_.WaitUntil([&] { return fi_cntr_read(cntr) >= 6; }))
      << "counter " << fi_cntr_read(cntr) << " of 6";
  net_.Drive(std::chrono::milliseconds(100));
  EXPECT_EQ(fi_cntr_read(cntr), 6u);
  EXPECT_EQ(fi_cntr_readerr(cntr), 0u);
  ASSERT_EQ(txp.done.size(), 1u) << "selective completion: one operation asked for a CQ entry";
  EXPECT_EQ(txp.done[0].op_context, Ctx(22));
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(net_.WaitComp(net_.server.cq, Ctx(10 + i)).has_value());
    EXPECT_STREQ(r[i], m[i]);
  }
  EXPECT_EQ(target, 77u);
  EXPECT_EQ(back, 77u);
  net_.extra_pollers.clear();
}

// --- 6. Protection errors at the initiator ------------------------------------

enum class Bad {
  kWrongKeyWrite,
  kWrongKeyRead,
  kWriteLenPlusOne,
  kWriteAtAddrPlusOne,
  kReadLenPlusOne,
  kWriteBeforeStart,
  kNoRemoteWrite,
  kNoRemoteRead,
  kNoRemoteAtomic,
  kDeregisteredWrite,
  kDeregisteredRead,
  kDeregisteredAtomic,
};

class MsgErrorTest : public MsgTest, public ::testing::WithParamInterface<Bad> {};

TEST_P(MsgErrorTest, InitiatorGetsErrorTargetUntouchedConnectionEnds) {
  const Bad bad = GetParam();
  // Receives on both sides, to see them flushed when the connection ends.
  char crecv[8];
  char srecv[8];
  auto c = net_.Establish({}, [&](fid_ep* ep) {
    ASSERT_EQ(fi_recv(ep, srecv, sizeof(srecv), nullptr, 0, Ctx(0x50)), 0);
  });
  ASSERT_TRUE(c.has_value()) << net_.error;
  const size_t len = 4096;
  const size_t guard = 64;
  Bytes mem = Pattern(len + 2 * guard, 71);
  const Bytes before = mem;
  uint64_t access = FI_REMOTE_READ | FI_REMOTE_WRITE;
  if (bad == Bad::kNoRemoteWrite) access = FI_REMOTE_READ;
  if (bad == Bad::kNoRemoteRead || bad == Bad::kNoRemoteAtomic) access = FI_REMOTE_WRITE;
  fid_mr* mr = nullptr;
  // (An atomic needs read and write access: a write-only region refuses it.)
  const RemoteBuf rb = Advertise(*c, mem.data() + guard, len, access, &mr);
  ASSERT_FALSE(HasFailure());
  uint64_t probe_mem = 0x1234;
  const RemoteBuf probe = Advertise(*c, &probe_mem, sizeof(probe_mem), FI_REMOTE_READ);
  ASSERT_FALSE(HasFailure());
  ASSERT_EQ(fi_recv(c->client, crecv, sizeof(crecv), nullptr, 0, Ctx(0xc0)), 0);
  if (bad == Bad::kDeregisteredWrite || bad == Bad::kDeregisteredRead ||
      bad == Bad::kDeregisteredAtomic) {
    net_.CloseMr(mr);
  }
  const Bytes src = Pattern(len + 1, 72);
  Bytes sink(len + 1, 0);
  uint64_t operand = 1;
  uint64_t result = 0;
  void* ctx = Ctx(0xbad);
  ssize_t r = 0;
  switch (bad) {
    case Bad::kWrongKeyWrite:
      r = fi_write(c->client, src.data(), len, nullptr, 0, rb.addr, rb.key ^ 0x5a5a, ctx);
      break;
    case Bad::kWrongKeyRead:
      r = fi_read(c->client, sink.data(), len, nullptr, 0, rb.addr, rb.key ^ 0x5a5a, ctx);
      break;
    case Bad::kWriteLenPlusOne:
      r = fi_write(c->client, src.data(), len + 1, nullptr, 0, rb.addr, rb.key, ctx);
      break;
    case Bad::kWriteAtAddrPlusOne:
      r = fi_write(c->client, src.data(), len, nullptr, 0, rb.addr + 1, rb.key, ctx);
      break;
    case Bad::kReadLenPlusOne:
      r = fi_read(c->client, sink.data(), len + 1, nullptr, 0, rb.addr, rb.key, ctx);
      break;
    case Bad::kWriteBeforeStart:
      r = fi_write(c->client, src.data(), 8, nullptr, 0, rb.addr - 1, rb.key, ctx);
      break;
    case Bad::kNoRemoteWrite:
    case Bad::kDeregisteredWrite:
      r = fi_write(c->client, src.data(), len, nullptr, 0, rb.addr, rb.key, ctx);
      break;
    case Bad::kNoRemoteRead:
    case Bad::kDeregisteredRead:
      r = fi_read(c->client, sink.data(), len, nullptr, 0, rb.addr, rb.key, ctx);
      break;
    case Bad::kNoRemoteAtomic:
    case Bad::kDeregisteredAtomic:
      r = fi_fetch_atomic(c->client, &operand, 1, nullptr, &result, nullptr, 0, rb.addr, rb.key,
                          FI_UINT64, FI_SUM, ctx);
      break;
  }
  ASSERT_EQ(r, 0);
  const bool is_write = bad == Bad::kWrongKeyWrite || bad == Bad::kWriteLenPlusOne ||
                        bad == Bad::kWriteAtAddrPlusOne || bad == Bad::kWriteBeforeStart ||
                        bad == Bad::kNoRemoteWrite || bad == Bad::kDeregisteredWrite;
  void* probe_ctx = Ctx(0xb0b);
  uint64_t probe_sink = 0;
  if (is_write) {
    // An RDMA Write completes at the initiator when transmitted
    // (FI_TRANSMIT_COMPLETE); the target's verdict comes back as a Terminate.
    // A Read behind it (of valid memory) must then fail: the initiator learns
    // of the error through an error completion.
    ASSERT_EQ(fi_read(c->client, &probe_sink, sizeof(probe_sink), nullptr, 0, probe.addr, probe.key,
                      probe_ctx),
              0);
  }
  std::optional<fi_cq_err_entry> err;
  if (is_write) {
    std::optional<fi_cq_err_entry> werr;
    std::optional<fi_cq_data_entry> wok;
    ASSERT_TRUE(net_.WaitUntil([&] {
      if (!werr && !wok) {
        werr = net_.client.cq.TakeErr(ctx);
        if (!werr) wok = net_.client.cq.Take(ctx);
      }
      if (!err) err = net_.client.cq.TakeErr(probe_ctx);
      return (werr || wok) && err;
    })) << "write completion "
        << (werr || wok) << ", read error " << err.has_value();
    EXPECT_FALSE(net_.client.cq.Take(probe_ctx).has_value()) << "the read behind it succeeded";
    EXPECT_EQ(probe_sink, 0u);
    if (werr) {
      EXPECT_EQ(werr->err, FI_EACCES) << fi_strerror(werr->err);
      err = werr;
    }
  } else {
    err = net_.WaitErr(net_.client.cq, ctx);
    ASSERT_TRUE(err.has_value()) << "no error completion at the initiator";
    EXPECT_EQ(err->err, FI_EACCES) << fi_strerror(err->err);
  }
  EXPECT_NE(err->err, 0);
  EXPECT_NE(err->prov_errno, 0);
  char buf[256] = {};
  const char* text =
      fi_cq_strerror(net_.client.cq.cq, err->prov_errno, err->err_data, buf, sizeof(buf));
  ASSERT_NE(text, nullptr);
  // The text names the iWARP protection error the target reported.
  EXPECT_TRUE(std::strstr(text, "RDMAP") != nullptr || std::strstr(text, "DDP") != nullptr) << text;
  std::printf("    error completion: err %d (%s), prov_errno %#x: %s\n", err->err,
              fi_strerror(err->err), static_cast<unsigned>(err->prov_errno), text);
  EXPECT_FALSE(net_.client.cq.Take(ctx).has_value() && !is_write) << "also a successful completion";
  // The connection ends on both sides, and the posted receives come back.
  const fid_t cfid = &c->client->fid;
  const fid_t sfid = &c->server->fid;
  EXPECT_TRUE(net_.WaitUntil([&] {
    return (net_.client.eq.Has(FI_SHUTDOWN, cfid) || net_.client.eq.HasError(cfid)) &&
           (net_.server.eq.Has(FI_SHUTDOWN, sfid) || net_.server.eq.HasError(sfid));
  })) << "client ended: "
      << (net_.client.eq.Has(FI_SHUTDOWN, cfid) || net_.client.eq.HasError(cfid))
      << ", server ended: "
      << (net_.server.eq.Has(FI_SHUTDOWN, sfid) || net_.server.eq.HasError(sfid));
  EXPECT_TRUE(net_.WaitErr(net_.client.cq, Ctx(0xc0)).has_value()) << "client receive not flushed";
  EXPECT_TRUE(net_.WaitErr(net_.server.cq, Ctx(0x50)).has_value()) << "server receive not flushed";
  EXPECT_TRUE(mem == before) << "the target memory changed";
  if (bad == Bad::kNoRemoteAtomic || bad == Bad::kDeregisteredAtomic) {
    EXPECT_EQ(result, 0u);
  }
  // Nothing more can be posted.
  EXPECT_LT(fi_write(c->client, src.data(), 8, nullptr, 0, rb.addr, rb.key, Ctx(1)), 0);
}

std::string BadName(const ::testing::TestParamInfo<Bad>& p) {
  static const char* const kNames[] = {
      "WrongKeyWrite",  "WrongKeyRead",      "WriteLenPlusOne",  "WriteAtAddrPlusOne",
      "ReadLenPlusOne", "WriteBeforeStart",  "NoRemoteWrite",    "NoRemoteRead",
      "NoRemoteAtomic", "DeregisteredWrite", "DeregisteredRead", "DeregisteredAtomic"};
  return kNames[static_cast<int>(p.param)];
}

INSTANTIATE_TEST_SUITE_P(Cases, MsgErrorTest,
                         ::testing::Values(Bad::kWrongKeyWrite, Bad::kWrongKeyRead,
                                           Bad::kWriteLenPlusOne, Bad::kWriteAtAddrPlusOne,
                                           Bad::kReadLenPlusOne, Bad::kWriteBeforeStart,
                                           Bad::kNoRemoteWrite, Bad::kNoRemoteRead,
                                           Bad::kNoRemoteAtomic, Bad::kDeregisteredWrite,
                                           Bad::kDeregisteredRead, Bad::kDeregisteredAtomic),
                         BadName);

// FI_DELIVERY_COMPLETE asks for the write's completion only once the data is
// placed at the target, so "any target-side errors would be reported" with
// it (fi_cq(3)).
// The provider follows such a write with a zero-length RDMA Read (ep.h).
TEST_F(MsgTest, DeliveryCompleteWriteReportsTargetError) {
  auto c = net_.Establish();
  ASSERT_TRUE(c.has_value()) << net_.error;
  Bytes mem = Pattern(4096, 73);
  const Bytes before = mem;
  const RemoteBuf rb = Advertise(*c, mem.data(), mem.size(), FI_REMOTE_READ | FI_REMOTE_WRITE);
  ASSERT_FALSE(HasFailure());
  const Bytes src = Pattern(4096, 74);
  iovec iov = {const_cast<uint8_t*>(src.data()), src.size()};
  fi_rma_iov riov = {rb.addr, src.size(), rb.key ^ 0x5a5a};
  fi_msg_rma msg{};
  msg.msg_iov = &iov;
  msg.iov_count = 1;
  msg.rma_iov = &riov;
  msg.rma_iov_count = 1;
  msg.context = Ctx(1);
  ASSERT_EQ(fi_writemsg(c->client, &msg, FI_COMPLETION | FI_DELIVERY_COMPLETE), 0);
  std::optional<fi_cq_data_entry> ok;
  std::optional<fi_cq_err_entry> err;
  ASSERT_TRUE(net_.WaitUntil([&] {
    ok = net_.client.cq.Take(Ctx(1));
    err = net_.client.cq.TakeErr(Ctx(1));
    return ok || err;
  }));
  EXPECT_FALSE(ok.has_value()) << "a refused FI_DELIVERY_COMPLETE write completed successfully";
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(err->err, FI_EACCES);
  EXPECT_TRUE(mem == before);
}

// With FI_DELIVERY_COMPLETE the data is in the target's memory by the time
// the write's completion is read, without driving the target any further.
TEST_F(MsgTest, DeliveryCompleteWriteHasLandedAtCompletion) {
  auto c = net_.Establish();
  ASSERT_TRUE(c.has_value()) << net_.error;
  const size_t len = size_t{1} << 20;
  Bytes mem(len, 0);
  const RemoteBuf rb = Advertise(*c, mem.data(), mem.size(), FI_REMOTE_WRITE);
  ASSERT_FALSE(HasFailure());
  const Bytes src = Pattern(len, 75);
  iovec iov = {const_cast<uint8_t*>(src.data()), src.size()};
  fi_rma_iov riov = {rb.addr, src.size(), rb.key};
  fi_msg_rma msg{};
  msg.msg_iov = &iov;
  msg.iov_count = 1;
  msg.rma_iov = &riov;
  msg.rma_iov_count = 1;
  msg.context = Ctx(2);
  ASSERT_EQ(fi_writemsg(c->client, &msg, FI_COMPLETION | FI_DELIVERY_COMPLETE), 0);
  std::optional<fi_cq_data_entry> ok;
  ASSERT_TRUE(net_.WaitUntil([&] {
    ok = net_.client.cq.Take(Ctx(2));
    return ok.has_value() || !net_.client.cq.errs.empty();
  }));
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->flags, FI_RMA | FI_WRITE);
  EXPECT_TRUE(mem == src) << "completed before the data was placed";
  EXPECT_TRUE(net_.client.cq.done.empty()) << "one completion per write, not two";
}

// Back-to-back FI_DELIVERY_COMPLETE writes that fill the send queue: each
// write goes in with its fence or not at all (-FI_EAGAIN), so every
// completion still finds its own bytes at the target.
TEST_F(MsgTest, DeliveryCompleteWritesFillingTheSendQueueEachLandFirst) {
  auto c = net_.Establish();
  ASSERT_TRUE(c.has_value()) << net_.error;
  constexpr size_t kWrites = 600;
  constexpr size_t kChunk = 64;
  Bytes mem(kWrites * kChunk, 0);
  const RemoteBuf rb = Advertise(*c, mem.data(), mem.size(), FI_REMOTE_WRITE);
  ASSERT_FALSE(HasFailure());
  const Bytes src = Pattern(mem.size(), 76);
  size_t completed = 0;
  size_t early = 0;
  size_t eagain = 0;
  auto drain = [&] {
    net_.WaitUntil([] { return true; });  // one progress pass
    while (!net_.client.cq.done.empty()) {
      const fi_cq_data_entry e = net_.client.cq.done.front();
      net_.client.cq.done.pop_front();
      const auto i = reinterpret_cast<uintptr_t>(e.op_context) - 1000;
      if (!std::equal(src.begin() + static_cast<ptrdiff_t>(i * kChunk),
                      src.begin() + static_cast<ptrdiff_t>((i + 1) * kChunk),
                      mem.begin() + static_cast<ptrdiff_t>(i * kChunk))) {
        ++early;
      }
      ++completed;
    }
  };
  for (size_t i = 0; i < kWrites; ++i) {
    iovec iov = {const_cast<uint8_t*>(src.data() + i * kChunk), kChunk};
    fi_rma_iov riov = {rb.addr + i * kChunk, kChunk, rb.key};
    fi_msg_rma msg{};
    msg.msg_iov = &iov;
    msg.iov_count = 1;
    msg.rma_iov = &riov;
    msg.rma_iov_count = 1;
    msg.context = Ctx(1000 + i);
    ssize_t r = 0;
    const auto deadline = SteadyClock::now() + std::chrono::seconds(10);
    while ((r = fi_writemsg(c->client, &msg, FI_COMPLETION | FI_DELIVERY_COMPLETE)) == -FI_EAGAIN &&
           SteadyClock::now() < deadline) {
      ++eagain;
      drain();
    }
    ASSERT_EQ(r, 0) << "write " << i;
  }
  ASSERT_TRUE(net_.WaitUntil([&] {
    drain();
    return completed == kWrites || !net_.client.cq.errs.empty();
  }));
  EXPECT_TRUE(net_.client.cq.errs.empty());
  EXPECT_EQ(completed, kWrites);
  EXPECT_EQ(early, 0u) << "writes completed before their data was placed";
  EXPECT_GT(eagain, 0u) << "the send queue never filled: the test proves nothing";
  EXPECT_TRUE(mem == src);
}

// --- 9. Shutdown, 10. options, names, cancel -----------------------------------

TEST_F(MsgTest, ShutdownNotifiesPeerAndFlushesLocalReceives) {
  char cr[4][8];
  char sr[2][8];
  auto c = net_.Establish(
      [&](fid_ep* ep) {
        for (int i = 0; i < 4; ++i) ASSERT_EQ(fi_recv(ep, cr[i], 8, nullptr, 0, Ctx(1 + i)), 0);
      },
      [&](fid_ep* ep) {
        for (int i = 0; i < 2; ++i) ASSERT_EQ(fi_recv(ep, sr[i], 8, nullptr, 0, Ctx(11 + i)), 0);
      });
  ASSERT_TRUE(c.has_value()) << net_.error;
  ASSERT_EQ(fi_shutdown(c->client, 0), 0);
  std::optional<EqEvent> ev;
  ASSERT_TRUE(net_.WaitUntil([&] {
    return (ev = net_.server.eq.Take(FI_SHUTDOWN, &c->server->fid)).has_value();
  })) << "the peer got no FI_SHUTDOWN";
  // ep.h: local receives are flushed with FI_ECANCELED by a local close.
  for (int i = 0; i < 4; ++i) {
    auto e = net_.WaitErr(net_.client.cq, Ctx(1 + i));
    ASSERT_TRUE(e.has_value()) << "receive " << i << " not flushed";
    EXPECT_EQ(e->err, FI_ECANCELED) << fi_strerror(e->err);
    EXPECT_NE(e->flags & FI_RECV, 0u);
  }
  // The peer's receives end with the connection too.
  for (int i = 0; i < 2; ++i) {
    auto e = net_.WaitErr(net_.server.cq, Ctx(11 + i));
    ASSERT_TRUE(e.has_value()) << "peer receive " << i << " not flushed";
    EXPECT_NE(e->err, 0);
  }
  // The side that called fi_shutdown gets its FI_SHUTDOWN too (as verbs and
  // tcp do; libfabric's fi_cm_data waits for it).
  EXPECT_TRUE(net_.WaitUntil([&] { return net_.client.eq.Has(FI_SHUTDOWN, &c->client->fid); }));
  EXPECT_TRUE(net_.client.eq.errors.empty());
  EXPECT_TRUE(net_.client.cq.done.empty() && net_.server.cq.done.empty());
  char b[4] = {};
  EXPECT_LT(fi_send(c->client, b, sizeof(b), nullptr, 0, nullptr), 0);
  EXPECT_LT(fi_send(c->server, b, sizeof(b), nullptr, 0, nullptr), 0);
  EXPECT_LT(fi_shutdown(c->client, 0), 0);
}

TEST_F(MsgTest, CmDataSizeNamesAndPeers) {
  const size_t pep_size = CmDataSize(&net_.pep->fid);
  EXPECT_GE(pep_size, 56u);
  fid_ep* cep = net_.OpenEp(net_.client);
  ASSERT_NE(cep, nullptr) << net_.error;
  EXPECT_EQ(CmDataSize(&cep->fid), pep_size);
  size_t small = 0;
  size_t small_len = 1;
  EXPECT_EQ(fi_getopt(&cep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &small, &small_len),
            -FI_ETOOSMALL);
  sockaddr_in a{};
  size_t alen = sizeof(a);
  EXPECT_EQ(fi_getpeer(cep, &a, &alen), -FI_ENOTCONN);
  const Bytes cdata = Pattern(pep_size, 81);
  ASSERT_TRUE(net_.Connect(cep, cdata.data(), cdata.size())) << net_.error;
  auto req = net_.WaitConnReq();
  ASSERT_TRUE(req.has_value()) << net_.error;
  EXPECT_EQ(req->data, cdata);
  const Bytes sdata = Pattern(pep_size, 82);
  fid_ep* sep = net_.Accept(*req, sdata.data(), sdata.size());
  ASSERT_NE(sep, nullptr) << net_.error;
  auto d = net_.WaitConnected(net_.client, cep);
  ASSERT_TRUE(d.has_value()) << net_.error;
  EXPECT_EQ(*d, sdata);
  ASSERT_TRUE(net_.WaitConnected(net_.server, sep).has_value()) << net_.error;

  auto name = [](fid_t fid) {
    sockaddr_in s{};
    size_t l = sizeof(s);
    EXPECT_EQ(fi_getname(fid, &s, &l), 0);
    EXPECT_EQ(l, sizeof(s));
    return s;
  };
  auto peer = [](fid_ep* ep) {
    sockaddr_in s{};
    size_t l = sizeof(s);
    EXPECT_EQ(fi_getpeer(ep, &s, &l), 0);
    EXPECT_EQ(l, sizeof(s));
    return s;
  };
  const sockaddr_in cname = name(&cep->fid);
  const sockaddr_in sname = name(&sep->fid);
  const sockaddr_in cpeer = peer(cep);
  const sockaddr_in speer = peer(sep);
  EXPECT_EQ(cname.sin_family, AF_INET);
  EXPECT_EQ(ntohl(cname.sin_addr.s_addr), INADDR_LOOPBACK);
  EXPECT_NE(cname.sin_port, 0);
  EXPECT_EQ(cpeer.sin_port, net_.listen_addr.sin_port);
  EXPECT_EQ(cpeer.sin_addr.s_addr, net_.listen_addr.sin_addr.s_addr);
  EXPECT_EQ(sname.sin_port, net_.listen_addr.sin_port);
  EXPECT_EQ(speer.sin_port, cname.sin_port);
  EXPECT_EQ(speer.sin_addr.s_addr, cname.sin_addr.s_addr);
  // A too small buffer reports the size needed.
  sockaddr_in s{};
  size_t l = 4;
  EXPECT_EQ(fi_getpeer(cep, &s, &l), -FI_ETOOSMALL);
  EXPECT_EQ(l, sizeof(sockaddr_in));
}

TEST_F(MsgTest, CancelReceivePostedBeforeConnect) {
  fid_ep* cep = net_.OpenEp(net_.client);
  ASSERT_NE(cep, nullptr) << net_.error;
  char a[16];
  char b[16];
  std::memset(a, 0x5a, sizeof(a));
  std::memset(b, 0x5a, sizeof(b));
  ASSERT_EQ(fi_recv(cep, a, sizeof(a), nullptr, 0, Ctx(1)), 0);
  ASSERT_EQ(fi_recv(cep, b, sizeof(b), nullptr, 0, Ctx(2)), 0);
  EXPECT_EQ(fi_cancel(&cep->fid, Ctx(1)), 0);
  EXPECT_EQ(fi_cancel(&cep->fid, Ctx(99)), -FI_ENOENT);
  auto e = net_.WaitErr(net_.client.cq, Ctx(1));
  ASSERT_TRUE(e.has_value()) << "no FI_ECANCELED entry for the canceled receive";
  EXPECT_EQ(e->err, FI_ECANCELED);
  EXPECT_NE(e->flags & FI_RECV, 0u);
  EXPECT_EQ(fi_cancel(&cep->fid, Ctx(1)), -FI_ENOENT);  // only once
  ASSERT_TRUE(net_.Connect(cep)) << net_.error;
  auto req = net_.WaitConnReq();
  ASSERT_TRUE(req.has_value()) << net_.error;
  fid_ep* sep = net_.Accept(*req);
  ASSERT_NE(sep, nullptr) << net_.error;
  ASSERT_TRUE(net_.WaitConnected(net_.server, sep).has_value()) << net_.error;
  ASSERT_TRUE(net_.WaitConnected(net_.client, cep).has_value()) << net_.error;
  ASSERT_EQ(fi_send(sep, "hello", 6, nullptr, 0, Ctx(3)), 0);
  auto r = net_.WaitComp(net_.client.cq, Ctx(2));
  ASSERT_TRUE(r.has_value()) << "the remaining receive got nothing";
  EXPECT_STREQ(b, "hello");
  EXPECT_EQ(a[0], 0x5a) << "the canceled buffer was written";
  EXPECT_FALSE(net_.client.cq.Take(Ctx(1)).has_value());
  ASSERT_TRUE(net_.WaitComp(net_.server.cq, Ctx(3)).has_value());
}

// --- 8. Many connections ---------------------------------------------------------

TEST_F(MsgTest, TwoHundredConnectionsAtOnce) {
  constexpr size_t kConns = 200;
  rlimit rl{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
  if (rl.rlim_cur < 2048 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = std::min<rlim_t>(rl.rlim_max, 4096);
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
  }
  const auto t0 = SteadyClock::now();
  struct Pair {
    fid_ep* c = nullptr;
    fid_ep* s = nullptr;
    uint32_t crecv = 0;
    uint32_t srecv = 0;
    bool connected_c = false;
    bool connected_s = false;
  };
  std::vector<Pair> pairs(kConns);
  std::map<fid_t, size_t> by_fid;
  for (size_t i = 0; i < kConns; ++i) {
    Pair& p = pairs[i];
    p.c = net_.OpenEp(net_.client);
    ASSERT_NE(p.c, nullptr) << net_.error;
    by_fid[&p.c->fid] = i;
    ASSERT_EQ(fi_recv(p.c, &p.crecv, sizeof(p.crecv), nullptr, 0, Ctx(0x10000 + i)), 0);
    const uint32_t id = static_cast<uint32_t>(i);
    ASSERT_EQ(fi_connect(p.c, &net_.listen_addr, &id, sizeof(id)), 0);
  }
  // Accept every request (matched by the private data) as it comes.
  size_t accepted = 0;
  size_t connected = 0;
  ASSERT_TRUE(net_.WaitUntil(
      [&] {
        while (auto req = net_.server.eq.Take(FI_CONNREQ)) {
          uint32_t id = 0;
          if (req->data.size() != sizeof(id)) return true;  // fails below
          std::memcpy(&id, req->data.data(), sizeof(id));
          Pair& p = pairs.at(id);
          p.s = net_.Accept(*req, nullptr, 0, [&](fid_ep* ep) {
            (void)fi_recv(ep, &p.srecv, sizeof(p.srecv), nullptr, 0, Ctx(0x20000 + id));
          });
          if (p.s == nullptr) return true;
          by_fid[&p.s->fid] = id;
          ++accepted;
        }
        while (auto ev = net_.client.eq.Take(FI_CONNECTED)) {
          pairs.at(by_fid.at(ev->fid)).connected_c = true;
          ++connected;
        }
        while (auto ev = net_.server.eq.Take(FI_CONNECTED)) {
          pairs.at(by_fid.at(ev->fid)).connected_s = true;
          ++connected;
        }
        return connected == 2 * kConns || !net_.client.eq.errors.empty() ||
               !net_.server.eq.errors.empty();
      },
      std::chrono::seconds(60)))
      << "accepted " << accepted << ", connected " << connected;
  ASSERT_TRUE(net_.error.empty()) << net_.error;
  ASSERT_TRUE(net_.client.eq.errors.empty()) << "client EQ error " << net_.client.eq.errors[0].err;
  ASSERT_TRUE(net_.server.eq.errors.empty()) << "server EQ error " << net_.server.eq.errors[0].err;
  ASSERT_EQ(connected, 2 * kConns);
  // One message each way on every connection.
  std::vector<uint32_t> cval(kConns);
  std::vector<uint32_t> sval(kConns);
  for (size_t i = 0; i < kConns; ++i) {
    cval[i] = 0xc0000000U + static_cast<uint32_t>(i);
    sval[i] = 0x50000000U + static_cast<uint32_t>(i);
    ASSERT_EQ(net_.Post([&] {
      return fi_send(pairs[i].c, &cval[i], sizeof(uint32_t), nullptr, 0, Ctx(0x30000 + i));
    }),
              0);
    ASSERT_EQ(net_.Post([&] {
      return fi_send(pairs[i].s, &sval[i], sizeof(uint32_t), nullptr, 0, Ctx(0x40000 + i));
    }),
              0);
  }
  ASSERT_TRUE(net_.WaitUntil(
      [&] {
        return net_.client.cq.done.size() >= 2 * kConns && net_.server.cq.done.size() >= 2 * kConns;
      },
      std::chrono::seconds(30)))
      << net_.client.cq.done.size() << " client and " << net_.server.cq.done.size()
      << " server completions of " << 2 * kConns;
  EXPECT_TRUE(net_.client.cq.errs.empty() && net_.server.cq.errs.empty());
  for (size_t i = 0; i < kConns; ++i) {
    EXPECT_EQ(pairs[i].srecv, cval[i]) << i;
    EXPECT_EQ(pairs[i].crecv, sval[i]) << i;
  }
  // Clean close: each client shuts down, every server endpoint sees it.
  for (Pair& p : pairs) ASSERT_EQ(fi_shutdown(p.c, 0), 0);
  size_t shut = 0;
  EXPECT_TRUE(net_.WaitUntil(
      [&] {
        while (net_.server.eq.Take(FI_SHUTDOWN)) ++shut;
        return shut == kConns;
      },
      std::chrono::seconds(30)))
      << shut << " FI_SHUTDOWN of " << kConns;
  for (Pair& p : pairs) {
    net_.CloseEp(p.c);
    net_.CloseEp(p.s);
  }
  const double s = std::chrono::duration<double>(SteadyClock::now() - t0).count();
  std::printf("    %zu connections set up, used and closed in %.2f s\n", kConns, s);
  EXPECT_LT(s, 60.0);
}

// --- 7. A killed peer -----------------------------------------------------------

// The child: a server that accepts one connection, advertises a 16 MiB
// region and keeps receiving until it is killed (or 60 s pass).
[[noreturn]] void ChildServer(int wfd) {
  Net net;
  if (!net.Open(4096, 64)) _exit(10);
  const uint16_t port = net.listen_addr.sin_port;
  if (write(wfd, &port, sizeof(port)) != sizeof(port)) _exit(11);
  constexpr size_t kRecv = 64 * 1024;
  constexpr size_t kRecvs = 64;
  std::vector<Bytes> bufs(kRecvs, Bytes(kRecv));
  auto req = net.WaitConnReq();
  if (!req) _exit(12);
  fid_ep* ep = net.Accept(*req, nullptr, 0, [&](fid_ep* e) {
    for (size_t i = 0; i < kRecvs; ++i) {
      (void)fi_recv(e, bufs[i].data(), kRecv, nullptr, 0, Ctx(static_cast<uintptr_t>(i)));
    }
  });
  if (ep == nullptr || !net.WaitConnected(net.server, ep)) _exit(13);
  Bytes region(size_t{16} << 20);
  fid_mr* mr = net.Reg(net.server, region.data(), region.size(), FI_REMOTE_WRITE | FI_REMOTE_READ);
  if (mr == nullptr) _exit(14);
  RemoteBuf adv{reinterpret_cast<uintptr_t>(region.data()), fi_mr_key(mr), region.size()};
  if (fi_send(ep, &adv, sizeof(adv), nullptr, 0, Ctx(0xae)) != 0) _exit(15);
  const auto deadline = SteadyClock::now() + std::chrono::seconds(60);
  while (SteadyClock::now() < deadline) {
    net.PollAll();
    while (!net.server.cq.done.empty()) {
      const fi_cq_data_entry e = net.server.cq.done.front();
      net.server.cq.done.pop_front();
      const auto i = reinterpret_cast<uintptr_t>(e.op_context);
      if ((e.flags & FI_RECV) != 0 && i < kRecvs) {
        (void)fi_recv(ep, bufs[i].data(), kRecv, nullptr, 0, e.op_context);
      }
    }
  }
  _exit(0);
}

TEST(MsgPeer, KilledMidTransferIsReportedWithinTenSeconds) {
  int pfd[2];
  ASSERT_EQ(pipe(pfd), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(pfd[0]);
    ChildServer(pfd[1]);
  }
  close(pfd[1]);
  struct Reaper {
    pid_t pid;
    ~Reaper() {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  } reaper{pid};
  uint16_t port = 0;
  pollfd p = {pfd[0], POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 10000), 1) << "the child did not start";
  ASSERT_EQ(read(pfd[0], &port, sizeof(port)), static_cast<ssize_t>(sizeof(port)));
  close(pfd[0]);

  Net net;
  ASSERT_TRUE(net.Open(4096, 64, false)) << net.error;
  net.listen_addr.sin_family = AF_INET;
  net.listen_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  net.listen_addr.sin_port = port;
  RemoteBuf rb{};
  fid_ep* ep = net.OpenEp(net.client);
  ASSERT_NE(ep, nullptr) << net.error;
  ASSERT_EQ(fi_recv(ep, &rb, sizeof(rb), nullptr, 0, Ctx(0xad)), 0);
  ASSERT_TRUE(net.Connect(ep)) << net.error;
  ASSERT_TRUE(net.WaitConnected(net.client, ep).has_value()) << net.error;
  ASSERT_TRUE(net.WaitComp(net.client.cq, Ctx(0xad)).has_value());
  ASSERT_EQ(rb.len, size_t{16} << 20);

  // Stream 64 KiB sends and 1 MiB writes, up to 16 in flight.
  const Bytes data = Pattern(size_t{1} << 20, 91);
  std::set<uintptr_t> outstanding;
  uintptr_t next = 1;
  size_t completed = 0;
  bool killed = false;
  bool can_post = true;
  SteadyClock::time_point kill_time{};
  auto ended = [&] {
    return net.client.eq.Has(FI_SHUTDOWN, &ep->fid) || net.client.eq.HasError(&ep->fid) ||
           !net.client.cq.errs.empty();
  };
  const auto deadline = SteadyClock::now() + std::chrono::seconds(30);
  while (SteadyClock::now() < deadline) {
    net.PollAll();
    while (!net.client.cq.done.empty()) {
      outstanding.erase(reinterpret_cast<uintptr_t>(net.client.cq.done.front().op_context));
      net.client.cq.done.pop_front();
      ++completed;
    }
    for (const fi_cq_err_entry& e : net.client.cq.errs) {
      outstanding.erase(reinterpret_cast<uintptr_t>(e.op_context));
    }
    if (!killed && completed >= 32) {
      ASSERT_EQ(kill(pid, SIGKILL), 0);
      killed = true;
      kill_time = SteadyClock::now();
    }
    if (killed && ended() && outstanding.empty()) break;
    if (killed && SteadyClock::now() - kill_time > std::chrono::seconds(10)) break;
    while (can_post && outstanding.size() < 16) {
      const uintptr_t id = next;
      const ssize_t r = (id % 2 == 0)
                            ? fi_send(ep, data.data(), 64 * 1024, nullptr, 0, Ctx(id))
                            : fi_write(ep, data.data(), data.size(), nullptr, 0,
                                       rb.addr + ((id / 2) % 15) * data.size(), rb.key, Ctx(id));
      if (r == -FI_EAGAIN) break;
      if (r != 0) {
        can_post = false;  // the connection is gone
        break;
      }
      outstanding.insert(id);
      ++next;
    }
  }
  ASSERT_TRUE(killed) << "only " << completed << " operations completed before the deadline";
  const double after = std::chrono::duration<double>(SteadyClock::now() - kill_time).count();
  EXPECT_TRUE(ended()) << "no FI_SHUTDOWN, EQ error or error completion " << after
                       << " s after the peer was killed";
  EXPECT_TRUE(outstanding.empty())
      << outstanding.size() << " operations neither completed nor failed";
  for (const fi_cq_err_entry& e : net.client.cq.errs) {
    EXPECT_NE(e.err, 0);
  }
  std::printf("    peer killed after %zu completions; reported within %.3f s (%zu errors)\n",
              completed, after, net.client.cq.errs.size());
}

}  // namespace
