// A socket that busy polling took out of the epoll set (FI_IWARPX_BUSY_POLL_PARK)
// must not cost a sleeping application its wake-up: after FI_GETWAIT and
// fi_trywait, poll(2) on the CQ's wait descriptor returns when a datagram
// arrives. The sender lives in another fabric (its own progress engine), so
// nothing but the receiver's epoll set can wake the sleeper.
#include <netinet/in.h>
#include <poll.h>

#include <chrono>
#include <cstring>
#include <thread>

#include <gtest/gtest.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "test_util.h"

namespace {

using fttest::kVersion;

// One DGRAM endpoint in a fabric of its own, its CQ with the given wait object.
struct Node {
  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_av* av = nullptr;
  fid_cq* cq = nullptr;
  fid_ep* ep = nullptr;
  fi_addr_t peer = FI_ADDR_NOTAVAIL;
  sockaddr_in name{};

  void Open(fi_wait_obj wait) {
    fi_info* hints = fi_allocinfo();
    hints->fabric_attr->prov_name = strdup("iwarpx");
    hints->ep_attr->type = FI_EP_DGRAM;
    hints->caps = FI_MSG;
    hints->addr_format = FI_SOCKADDR_IN;
    ASSERT_EQ(fi_getinfo(kVersion, "127.0.0.1", "0", FI_SOURCE, hints, &info), 0);
    fi_freeinfo(hints);
    ASSERT_EQ(fi_fabric(info->fabric_attr, &fabric, nullptr), 0);
    ASSERT_EQ(fi_domain(fabric, info, &domain, nullptr), 0);
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    ASSERT_EQ(fi_av_open(domain, &av_attr, &av, nullptr), 0);
    fi_cq_attr cq_attr{};
    cq_attr.format = FI_CQ_FORMAT_CONTEXT;
    cq_attr.size = 64;
    cq_attr.wait_obj = wait;
    ASSERT_EQ(fi_cq_open(domain, &cq_attr, &cq, nullptr), 0);
    ASSERT_EQ(fi_endpoint(domain, info, &ep, nullptr), 0);
    ASSERT_EQ(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
    ASSERT_EQ(fi_ep_bind(ep, &av->fid, 0), 0);
    ASSERT_EQ(fi_enable(ep), 0);
    size_t len = sizeof(name);
    ASSERT_EQ(fi_getname(&ep->fid, &name, &len), 0);
  }
  void Close() {
    for (fid* f : {ep ? &ep->fid : nullptr, cq ? &cq->fid : nullptr, av ? &av->fid : nullptr,
                   domain ? &domain->fid : nullptr, fabric ? &fabric->fid : nullptr}) {
      if (f != nullptr) {
        EXPECT_EQ(fi_close(f), 0);
      }
    }
    fi_freeinfo(info);
  }
  // Busy-polls one completion (5 s at most).
  bool Reap() {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    fi_cq_entry e{};
    while (std::chrono::steady_clock::now() < end) {
      if (fi_cq_read(cq, &e, 1) == 1) return true;
    }
    return false;
  }
};

TEST(DgramWait, AParkedSocketStillWakesASleeperOnTheWaitFd) {
  Node rx;
  Node tx;
  rx.Open(FI_WAIT_FD);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  tx.Open(FI_WAIT_NONE);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  ASSERT_EQ(fi_av_insert(rx.av, &tx.name, 1, &rx.peer, 0, nullptr), 1);
  ASSERT_EQ(fi_av_insert(tx.av, &rx.name, 1, &tx.peer, 0, nullptr), 1);
  char in = 0;
  char out = 'x';
  // Busy-polled traffic: the receiver's socket becomes hot and is parked.
  for (int i = 0; i < 32; ++i) {
    ASSERT_EQ(fi_recv(rx.ep, &in, 1, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
    ASSERT_EQ(fi_inject(tx.ep, &out, 1, tx.peer), 0);
    ASSERT_TRUE(rx.Reap()) << "message " << i;
  }
  // The application now sleeps the libfabric way.
  int fd = -1;
  ASSERT_EQ(fi_control(&rx.cq->fid, FI_GETWAIT, &fd), 0);
  ASSERT_EQ(fi_recv(rx.ep, &in, 1, nullptr, FI_ADDR_UNSPEC, nullptr), 0);
  fid* fids[] = {&rx.cq->fid};
  ASSERT_EQ(fi_trywait(rx.fabric, fids, 1), 0);
  std::thread sender([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(fi_inject(tx.ep, &out, 1, tx.peer), 0);
  });
  const auto start = std::chrono::steady_clock::now();
  pollfd pfd{fd, POLLIN, 0};
  const int ready = ::poll(&pfd, 1, 5000);
  const auto slept = std::chrono::steady_clock::now() - start;
  sender.join();
  EXPECT_EQ(ready, 1);
  EXPECT_LT(slept, std::chrono::seconds(3));  // woken by the datagram, not the timeout
  EXPECT_TRUE(rx.Reap());
  tx.Close();
  rx.Close();
}

}  // namespace
