// Socket-style address reservation through libfabric's public API only (what
// fabtests' fi_msg_sockets does): fi_setname on a passive endpoint reserves an
// address (port 0 gives a real port), fi_getinfo with hints->handle = that
// pep returns infos carrying the handle and the pep's address, and an active
// endpoint opened from such an info connects from that address, also after
// the pep is closed. Misuses are refused. Loopback 127.0.0.1 with
// kernel-chosen ports; every wait is bounded (msg_fixture.h).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "msg_fixture.h"

namespace {

using msgtest::Bytes;
using msgtest::Ctx;
using msgtest::Net;
using msgtest::Pattern;

std::string Str(const sockaddr_in& a) {
  char host[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a.sin_addr, host, sizeof(host));
  return std::string(host) + ":" + std::to_string(ntohs(a.sin_port));
}

bool SameAddr(const sockaddr_in& a, const sockaddr_in& b) {
  return a.sin_family == b.sin_family && a.sin_port == b.sin_port &&
         a.sin_addr.s_addr == b.sin_addr.s_addr;
}

sockaddr_in Loopback(uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

// bind(2) of a fresh TCP socket without SO_REUSEADDR: 0 or errno.
int PlainBind(const sockaddr_in& a) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  const int r = bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof(a)) == 0 ? 0 : errno;
  close(fd);
  return r;
}

class SocketsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(net_.Open()) << net_.error; }
  void TearDown() override {
    for (fid_pep* p : peps_) fi_close(&p->fid);
    peps_.clear();
    for (fi_info* i : infos_) fi_freeinfo(i);
    infos_.clear();
  }

  // A passive endpoint opened without a source address (as fi_msg_sockets
  // opens it), nullptr on failure.
  fid_pep* OpenPep() {
    fi_info* i = fi_dupinfo(net_.info);
    if (i == nullptr) return nullptr;
    std::free(i->src_addr);
    i->src_addr = nullptr;
    i->src_addrlen = 0;
    fid_pep* pep = nullptr;
    const int r = fi_passive_ep(net_.fabric, i, &pep, nullptr);
    fi_freeinfo(i);
    EXPECT_EQ(r, 0) << fi_strerror(-r);
    if (r != 0) return nullptr;
    peps_.push_back(pep);
    return pep;
  }

  void ClosePep(fid_pep* pep) {
    std::erase(peps_, pep);
    EXPECT_EQ(fi_close(&pep->fid), 0);
  }

  static sockaddr_in NameOf(fid_t fid) {
    sockaddr_in a{};
    size_t len = sizeof(a);
    EXPECT_EQ(fi_getname(fid, &a, &len), 0);
    EXPECT_EQ(len, sizeof(sockaddr_in));
    return a;
  }

  // fi_getinfo towards the server's listener with hints->handle = `pep`.
  fi_info* InfoFor(fid_pep* pep, int* ret = nullptr) {
    fi_info* hints = fi_dupinfo(net_.info);
    hints->handle = &pep->fid;
    const std::string port = std::to_string(ntohs(net_.listen_addr.sin_port));
    fi_info* out = nullptr;
    const int r = fi_getinfo(msgtest::kVersion, "127.0.0.1", port.c_str(), 0, hints, &out);
    hints->handle = nullptr;
    fi_freeinfo(hints);
    if (ret != nullptr) *ret = r;
    if (r != 0) return nullptr;
    infos_.push_back(out);
    return out;
  }

  // One message each way over an established connection, data checked.
  void Exchange(fid_ep* client, fid_ep* server) {
    for (size_t dir = 0; dir < 2; ++dir) {
      fid_ep* tx = dir == 0 ? client : server;
      fid_ep* rx = dir == 0 ? server : client;
      msgtest::CqPoller& txcq = dir == 0 ? net_.client.cq : net_.server.cq;
      msgtest::CqPoller& rxcq = dir == 0 ? net_.server.cq : net_.client.cq;
      const Bytes data = Pattern(1000 + dir, 7 + dir);
      Bytes dst(data.size(), 0);
      ASSERT_EQ(fi_recv(rx, dst.data(), dst.size(), nullptr, 0, Ctx(0x100 + dir)), 0);
      ASSERT_EQ(net_.Post([&] {
        return fi_send(tx, data.data(), data.size(), nullptr, 0, Ctx(0x200 + dir));
      }),
                0);
      auto r = net_.WaitComp(rxcq, Ctx(0x100 + dir));
      ASSERT_TRUE(r.has_value()) << "no receive completion, direction " << dir;
      EXPECT_EQ(r->len, data.size());
      EXPECT_EQ(dst, data);
      ASSERT_TRUE(net_.WaitComp(txcq, Ctx(0x200 + dir)).has_value());
    }
  }

  Net net_;
  std::vector<fid_pep*> peps_;
  std::vector<fi_info*> infos_;
};

TEST_F(SocketsTest, SetNamePortZeroGivesRealPortAndListensThere) {
  fid_pep* pep = OpenPep();
  ASSERT_NE(pep, nullptr);
  sockaddr_in want = Loopback(0);
  ASSERT_EQ(fi_setname(&pep->fid, &want, sizeof(want)), 0);
  const sockaddr_in bound = NameOf(&pep->fid);
  EXPECT_EQ(bound.sin_family, AF_INET);
  EXPECT_EQ(bound.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
  EXPECT_NE(bound.sin_port, 0) << "port still 0 after fi_setname";

  // The listener uses exactly the reserved address.
  ASSERT_EQ(fi_pep_bind(pep, &net_.server.eq.eq->fid, 0), 0);
  ASSERT_EQ(fi_listen(pep), 0);
  EXPECT_TRUE(SameAddr(NameOf(&pep->fid), bound)) << Str(NameOf(&pep->fid));

  // Nobody else can reserve a listening address.
  fid_pep* other = OpenPep();
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(fi_setname(&other->fid, const_cast<sockaddr_in*>(&bound), sizeof(bound)),
            -FI_EADDRINUSE);
  // And a listening pep takes no new name.
  EXPECT_EQ(fi_setname(&pep->fid, &want, sizeof(want)), -FI_EOPBADSTATE);
}

TEST_F(SocketsTest, GetinfoCopiesPepHandleAndItsAddress) {
  fid_pep* pep = OpenPep();
  ASSERT_NE(pep, nullptr);
  sockaddr_in want = Loopback(0);
  ASSERT_EQ(fi_setname(&pep->fid, &want, sizeof(want)), 0);
  const sockaddr_in bound = NameOf(&pep->fid);
  fi_info* info = InfoFor(pep);
  ASSERT_NE(info, nullptr);
  for (fi_info* i = info; i != nullptr; i = i->next) {
    EXPECT_EQ(i->handle, &pep->fid);
    EXPECT_EQ(i->addr_format, static_cast<uint32_t>(FI_SOCKADDR_IN));
    ASSERT_EQ(i->src_addrlen, sizeof(sockaddr_in));
    sockaddr_in src{};
    std::memcpy(&src, i->src_addr, sizeof(src));
    EXPECT_TRUE(SameAddr(src, bound)) << Str(src) << " vs " << Str(bound);
    ASSERT_EQ(i->dest_addrlen, sizeof(sockaddr_in));
    sockaddr_in dst{};
    std::memcpy(&dst, i->dest_addr, sizeof(dst));
    EXPECT_TRUE(SameAddr(dst, net_.listen_addr));
  }
}

TEST_F(SocketsTest, GetinfoRefusesAHandleThatIsNotAPassiveEndpoint) {
  fi_info* hints = fi_dupinfo(net_.info);
  ASSERT_NE(hints, nullptr);
  hints->handle = &net_.client.domain->fid;
  fi_info* out = nullptr;
  const int r = fi_getinfo(msgtest::kVersion, "127.0.0.1", "9", 0, hints, &out);
  hints->handle = nullptr;
  fi_freeinfo(hints);
  // The provider says -FI_EINVAL; libfabric reports a provider that gave
  // nothing as -FI_ENODATA. Either way: no info.
  EXPECT_TRUE(r == -FI_EINVAL || r == -FI_ENODATA) << fi_strerror(-r);
  EXPECT_EQ(out, nullptr);
  if (out != nullptr) fi_freeinfo(out);
}

TEST_F(SocketsTest, ActiveEndpointConnectsFromThePepAddressAfterThePepIsClosed) {
  fid_pep* pep = OpenPep();
  ASSERT_NE(pep, nullptr);
  sockaddr_in want = Loopback(0);
  ASSERT_EQ(fi_setname(&pep->fid, &want, sizeof(want)), 0);
  const sockaddr_in bound = NameOf(&pep->fid);
  ASSERT_NE(bound.sin_port, 0);
  fi_info* info = InfoFor(pep);
  ASSERT_NE(info, nullptr);
  ASSERT_EQ(info->handle, &pep->fid);

  fid_ep* ep = net_.OpenEp(net_.client, info);
  ASSERT_NE(ep, nullptr) << net_.error;
  ClosePep(pep);  // the endpoint holds the address now
  EXPECT_TRUE(SameAddr(NameOf(&ep->fid), bound)) << Str(NameOf(&ep->fid));

  // The address is still held (by the endpoint): a plain bind to it fails.
  EXPECT_EQ(PlainBind(bound), EADDRINUSE);

  ASSERT_EQ(fi_connect(ep, info->dest_addr, nullptr, 0), 0);
  EXPECT_TRUE(SameAddr(NameOf(&ep->fid), bound)) << "after fi_connect";
  auto req = net_.WaitConnReq();
  ASSERT_TRUE(req.has_value()) << net_.error;
  // The server sees the connection come from the reserved address.
  ASSERT_EQ(req->info->dest_addrlen, sizeof(sockaddr_in));
  sockaddr_in from{};
  std::memcpy(&from, req->info->dest_addr, sizeof(from));
  EXPECT_TRUE(SameAddr(from, bound)) << Str(from);
  fid_ep* server = net_.Accept(*req);
  ASSERT_NE(server, nullptr) << net_.error;
  ASSERT_TRUE(net_.WaitConnected(net_.server, server).has_value()) << net_.error;
  ASSERT_TRUE(net_.WaitConnected(net_.client, ep).has_value()) << net_.error;
  EXPECT_TRUE(SameAddr(NameOf(&ep->fid), bound)) << "after FI_CONNECTED";
  sockaddr_in peer{};
  size_t len = sizeof(peer);
  ASSERT_EQ(fi_getpeer(server, &peer, &len), 0);
  EXPECT_TRUE(SameAddr(peer, bound)) << Str(peer);
  Exchange(ep, server);
}

TEST_F(SocketsTest, PepWithOnlySrcAddrLendsABoundAddress) {
  // Opened from an info whose src_addr is 127.0.0.1:0, no fi_setname: the
  // address is bound when the endpoint takes it.
  fid_pep* pep = nullptr;
  ASSERT_EQ(fi_passive_ep(net_.fabric, net_.info, &pep, nullptr), 0);
  peps_.push_back(pep);
  fi_info* info = InfoFor(pep);
  ASSERT_NE(info, nullptr);
  fid_ep* ep = net_.OpenEp(net_.client, info);
  ASSERT_NE(ep, nullptr) << net_.error;
  const sockaddr_in name = NameOf(&ep->fid);
  EXPECT_EQ(name.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
  EXPECT_NE(name.sin_port, 0);
  ASSERT_EQ(fi_connect(ep, &net_.listen_addr, nullptr, 0), 0);
  auto req = net_.WaitConnReq();
  ASSERT_TRUE(req.has_value()) << net_.error;
  fid_ep* server = net_.Accept(*req);
  ASSERT_NE(server, nullptr) << net_.error;
  ASSERT_TRUE(net_.WaitConnected(net_.client, ep).has_value()) << net_.error;
  EXPECT_TRUE(SameAddr(NameOf(&ep->fid), name));
}

TEST_F(SocketsTest, ListeningOrLentPepIsRefusedAsHandle) {
  // The fixture's listening pep.
  fi_info* info = InfoFor(net_.pep);
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->handle, &net_.pep->fid);
  fid_ep* ep = nullptr;
  EXPECT_EQ(fi_endpoint(net_.client.domain, info, &ep, nullptr), -FI_EINVAL);
  EXPECT_EQ(ep, nullptr);

  // A pep whose address an endpoint took lends it only once, and listens no more.
  fid_pep* pep = OpenPep();
  ASSERT_NE(pep, nullptr);
  sockaddr_in want = Loopback(0);
  ASSERT_EQ(fi_setname(&pep->fid, &want, sizeof(want)), 0);
  fi_info* lent = InfoFor(pep);
  ASSERT_NE(lent, nullptr);
  ASSERT_NE(net_.OpenEp(net_.client, lent), nullptr) << net_.error;
  EXPECT_EQ(fi_endpoint(net_.client.domain, lent, &ep, nullptr), -FI_EINVAL);
  ASSERT_EQ(fi_pep_bind(pep, &net_.server.eq.eq->fid, 0), 0);
  EXPECT_EQ(fi_listen(pep), -FI_EOPBADSTATE);
  EXPECT_EQ(fi_setname(&pep->fid, &want, sizeof(want)), -FI_EOPBADSTATE);

  // Not a connection request nor a pep: refused too.
  fi_info* bogus = fi_dupinfo(net_.info);
  ASSERT_NE(bogus, nullptr);
  bogus->handle = &net_.client.domain->fid;
  EXPECT_EQ(fi_endpoint(net_.client.domain, bogus, &ep, nullptr), -FI_EINVAL);
  bogus->handle = nullptr;
  fi_freeinfo(bogus);
}

}  // namespace
