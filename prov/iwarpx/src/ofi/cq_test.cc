// The engine side of CQs, EQs and counters (Post/PostError/Inc), which the
// public API cannot reach: ordering of completions and errors, the three
// formats, overflow, that posting makes the wait fd readable, and that the
// blocking reads sleep (not spin) yet wake for another thread's post.
#include "ofi/cq.h"

#include <poll.h>
#include <time.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "ofi/cntr.h"
#include "ofi/fabric.h"

namespace iwarpx::ofi {
namespace {

class CqTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fi_fabric_attr fattr{};
    ASSERT_EQ(FabricOpen(&fattr, &fabric_, nullptr), 0);
    info_ = fi_allocinfo();
    ASSERT_EQ(fi_domain(fabric_, info_, &domain_, nullptr), 0);
  }
  void TearDown() override {
    EXPECT_EQ(fi_close(&domain_->fid), 0);
    EXPECT_EQ(fi_close(&fabric_->fid), 0);
    fi_freeinfo(info_);
  }
  fid_cq* OpenCq(fi_cq_format format, size_t size) {
    fi_cq_attr attr{};
    attr.format = format;
    attr.size = size;
    attr.wait_obj = FI_WAIT_FD;
    fid_cq* cq = nullptr;
    EXPECT_EQ(fi_cq_open(domain_, &attr, &cq, nullptr), 0);
    return cq;
  }
  fid_cntr* OpenCntr() {
    fi_cntr_attr attr{};
    attr.wait_obj = FI_WAIT_UNSPEC;
    fid_cntr* cntr = nullptr;
    EXPECT_EQ(fi_cntr_open(domain_, &attr, &cntr, nullptr), 0);
    return cntr;
  }

  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fi_info* info_ = nullptr;
};

fi_cq_data_entry Completion(int n) {
  fi_cq_data_entry c{};
  c.op_context = reinterpret_cast<void*>(static_cast<uintptr_t>(0x1000 + n));
  c.flags = FI_SEND | FI_MSG;
  c.len = static_cast<size_t>(n);
  c.data = static_cast<uint64_t>(n) * 7;
  return c;
}

TEST_F(CqTest, DataFormatKeepsEveryField) {
  fid_cq* cq = OpenCq(FI_CQ_FORMAT_DATA, 8);
  Cq* c = Cq::From(&cq->fid);
  ASSERT_NE(c, nullptr);
  int fd = -1;
  ASSERT_EQ(fi_control(&cq->fid, FI_GETWAIT, &fd), 0);
  ASSERT_TRUE(c->Post(Completion(1)));
  pollfd p = {fd, POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 0), 1);
  ASSERT_TRUE(c->Post(Completion(2)));
  fi_cq_data_entry out[4] = {};
  ASSERT_EQ(fi_cq_read(cq, out, 4), 2);
  EXPECT_EQ(out[0].op_context, Completion(1).op_context);
  EXPECT_EQ(out[1].len, 2u);
  EXPECT_EQ(out[1].data, 14u);
  EXPECT_EQ(out[1].flags, FI_SEND | FI_MSG);
  EXPECT_EQ(fi_cq_read(cq, out, 4), -FI_EAGAIN);
  EXPECT_EQ(fi_close(&cq->fid), 0);
}

TEST_F(CqTest, ContextAndMsgFormatsArePacked) {
  fid_cq* cq = OpenCq(FI_CQ_FORMAT_CONTEXT, 8);
  Cq* c = Cq::From(&cq->fid);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(c->Post(Completion(i)));
  fi_cq_entry ctx[3] = {};
  ASSERT_EQ(fi_cq_read(cq, ctx, 3), 3);
  EXPECT_EQ(ctx[2].op_context, Completion(2).op_context);
  EXPECT_EQ(fi_close(&cq->fid), 0);

  cq = OpenCq(FI_CQ_FORMAT_MSG, 8);
  c = Cq::From(&cq->fid);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(c->Post(Completion(i)));
  fi_cq_msg_entry msg[3] = {};
  fi_addr_t src[3] = {};
  ASSERT_EQ(fi_cq_readfrom(cq, msg, 3, src), 3);
  EXPECT_EQ(msg[2].len, 2u);
  EXPECT_EQ(src[0], FI_ADDR_NOTAVAIL);
  EXPECT_EQ(fi_close(&cq->fid), 0);
}

// prov_errno of a CQ error is the iWARP Terminate cause (layer << 16 |
// etype << 8 | code): fi_cq_strerror names it, not as an FI_E* number.
TEST_F(CqTest, StrerrorDecodesTheTerminateCause) {
  fid_cq* cq = OpenCq(FI_CQ_FORMAT_MSG, 8);
  char buf[128] = {};
  EXPECT_STREQ(fi_cq_strerror(cq, 0x010101, nullptr, buf, sizeof(buf)),
               "DDP tagged buffer: base or bounds violation");
  EXPECT_STREQ(buf, "DDP tagged buffer: base or bounds violation");
  EXPECT_STREQ(fi_cq_strerror(cq, 0x000102, nullptr, nullptr, 0),
               "RDMAP remote protection: access rights violation");
  EXPECT_STREQ(fi_cq_strerror(cq, 0x020001, nullptr, nullptr, 0),
               "LLP: stream lost (connection closed or reset)");
  EXPECT_STREQ(fi_cq_strerror(cq, 0x000100, nullptr, buf, 8), "RDMAP r");  // truncated copy
  EXPECT_EQ(fi_close(&cq->fid), 0);
}

TEST_F(CqTest, ErrorsKeepTheirPlaceInOrder) {
  fid_cq* cq = OpenCq(FI_CQ_FORMAT_MSG, 8);
  Cq* c = Cq::From(&cq->fid);
  ASSERT_TRUE(c->Post(Completion(1)));
  fi_cq_err_entry err{};
  err.op_context = &err;
  err.err = FI_EIO;
  err.prov_errno = 0x010101;  // DDP tagged buffer: base or bounds violation
  ASSERT_TRUE(c->PostError(err));
  ASSERT_TRUE(c->Post(Completion(3)));
  fi_cq_msg_entry out[4] = {};
  EXPECT_EQ(fi_cq_read(cq, out, 4), 1);  // the completion before the error
  EXPECT_EQ(fi_cq_read(cq, out, 4), -FI_EAVAIL);
  EXPECT_EQ(fi_cq_sread(cq, out, 4, nullptr, 1000), -FI_EAVAIL);
  fi_cq_err_entry got{};
  ASSERT_EQ(fi_cq_readerr(cq, &got, 0), 1);
  EXPECT_EQ(got.err, FI_EIO);
  EXPECT_EQ(got.op_context, &err);
  EXPECT_EQ(got.err_data_size, 0u);
  EXPECT_STREQ(fi_cq_strerror(cq, got.prov_errno, nullptr, nullptr, 0),
               "DDP tagged buffer: base or bounds violation");
  EXPECT_EQ(fi_cq_readerr(cq, &got, 0), -FI_EAGAIN);
  EXPECT_EQ(fi_cq_sread(cq, out, 4, nullptr, 1000), 1);
  EXPECT_EQ(out[0].len, 3u);
  EXPECT_EQ(fi_close(&cq->fid), 0);
}

TEST_F(CqTest, FullRingGrowsKeepsOrderAndTryWaitSeesPending) {
  fid_cq* cq = OpenCq(FI_CQ_FORMAT_CONTEXT, 2);
  Cq* c = Cq::From(&cq->fid);
  // Nothing is dropped beyond the size asked for: the ring grows, in order.
  for (int i = 1; i <= 40; ++i) ASSERT_TRUE(c->Post(Completion(i)));
  fid* fids[] = {&cq->fid};
  EXPECT_EQ(fi_trywait(fabric_, fids, 1), -FI_EAGAIN);
  fi_cq_entry out[40];
  ASSERT_EQ(fi_cq_read(cq, out, 1), 1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(out[0].op_context), 0x1001u);
  ASSERT_EQ(fi_cq_read(cq, out, 40), 39);
  for (uintptr_t i = 0; i < 39; ++i) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(out[i].op_context), 0x1000u + i + 2);
  }
  EXPECT_EQ(fi_trywait(fabric_, fids, 1), 0);
  int fd = -1;
  ASSERT_EQ(fi_control(&cq->fid, FI_GETWAIT, &fd), 0);
  pollfd p = {fd, POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 0), 0);  // drained by fi_trywait
  EXPECT_EQ(fi_close(&cq->fid), 0);
}

TEST_F(CqTest, CounterIncWakesWait) {
  fid_cntr* cntr = OpenCntr();
  Cntr* c = Cntr::From(&cntr->fid);
  ASSERT_NE(c, nullptr);
  c->Inc();
  c->Inc();
  EXPECT_EQ(fi_cntr_wait(cntr, 2, 1000), 0);
  c->IncErr();
  EXPECT_EQ(fi_cntr_readerr(cntr), 1u);
  EXPECT_EQ(fi_close(&cntr->fid), 0);
}

// CPU time of the calling thread and wall time, in milliseconds, of f().
template <class F>
std::pair<double, double> CpuAndWallMs(F f) {
  timespec c0{};
  timespec c1{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
  const auto w0 = std::chrono::steady_clock::now();
  f();
  const auto w1 = std::chrono::steady_clock::now();
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
  const double cpu = static_cast<double>(c1.tv_sec - c0.tv_sec) * 1e3 +
                     static_cast<double>(c1.tv_nsec - c0.tv_nsec) / 1e6;
  return {cpu, std::chrono::duration<double, std::milli>(w1 - w0).count()};
}

// `wait()`, a blocking call with a 300 ms timeout on a queue that stays empty,
// returns `want` after the timeout and sleeps meanwhile: a few ms of CPU,
// not most of the 300.
template <class Wait>
void ExpectSleeps(const char* what, ssize_t want, Wait wait) {
  ssize_t ret = 0;
  const auto [cpu, wall] = CpuAndWallMs([&] { ret = wait(); });
  EXPECT_EQ(ret, want) << what;
  EXPECT_GE(wall, 290.0) << what;
  EXPECT_LT(cpu, 0.3 * wall) << what << " spun: " << cpu << " ms of CPU in " << wall << " ms";
}

// A blocking read that times out on an empty queue sleeps: once one
// completion had been posted (and read), the eventfd it sleeps on used to
// stay readable for good and every later fi_cq_sread spun at full speed.
TEST_F(CqTest, SReadSleepsAfterAnEarlierCompletion) {
  fid_cq* cq = OpenCq(FI_CQ_FORMAT_CONTEXT, 8);
  Cq* c = Cq::From(&cq->fid);
  ASSERT_TRUE(c->Post(Completion(1)));
  ASSERT_TRUE(c->Post(Completion(2)));
  fi_cq_entry out[2];
  ASSERT_EQ(fi_cq_read(cq, out, 2), 2);
  ExpectSleeps("fi_cq_sread", -FI_EAGAIN, [&] { return fi_cq_sread(cq, out, 1, nullptr, 300); });
  EXPECT_EQ(fi_close(&cq->fid), 0);
}

// ... and still wakes at once for a completion another thread posts while it
// sleeps (the wake-up the eventfd is there for).
TEST_F(CqTest, SReadWakesForAnotherThreadsCompletion) {
  fid_cq* cq = OpenCq(FI_CQ_FORMAT_CONTEXT, 8);
  Cq* c = Cq::From(&cq->fid);
  ASSERT_TRUE(c->Post(Completion(1)));
  fi_cq_entry out[1];
  ASSERT_EQ(fi_cq_read(cq, out, 1), 1);
  std::thread poster([c] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    c->Post(Completion(2));
  });
  ssize_t ret = 0;
  const auto [cpu, wall] = CpuAndWallMs([&] { ret = fi_cq_sread(cq, out, 1, nullptr, 20000); });
  poster.join();
  ASSERT_EQ(ret, 1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(out[0].op_context), 0x1002u);
  EXPECT_LT(wall, 5000.0);  // the 100 ms post, not the 20 s timeout (kMaxSleepMs is 100)
  EXPECT_LT(cpu, 0.5 * wall + 20.0) << cpu << " ms of CPU in " << wall << " ms";
  EXPECT_EQ(fi_close(&cq->fid), 0);
}

TEST_F(CqTest, EqSReadSleepsAfterAnEarlierEvent) {
  fi_eq_attr attr{};
  attr.wait_obj = FI_WAIT_UNSPEC;
  attr.flags = FI_WRITE;
  fid_eq* eq = nullptr;
  ASSERT_EQ(fi_eq_open(fabric_, &attr, &eq, nullptr), 0);
  uint64_t v = 7;
  ASSERT_EQ(fi_eq_write(eq, FI_NOTIFY, &v, sizeof(v), 0), static_cast<ssize_t>(sizeof(v)));
  uint32_t event = 0;
  ASSERT_EQ(fi_eq_read(eq, &event, &v, sizeof(v), 0), static_cast<ssize_t>(sizeof(v)));
  ExpectSleeps("fi_eq_sread", -FI_EAGAIN,
               [&] { return fi_eq_sread(eq, &event, &v, sizeof(v), 300, 0); });
  EXPECT_EQ(fi_close(&eq->fid), 0);
}

TEST_F(CqTest, CounterWaitSleepsAfterAnEarlierIncrement) {
  fid_cntr* cntr = OpenCntr();
  Cntr::From(&cntr->fid)->Inc();
  ASSERT_EQ(fi_cntr_wait(cntr, 1, 1000), 0);
  ExpectSleeps("fi_cntr_wait", -FI_ETIMEDOUT, [&] { return fi_cntr_wait(cntr, 2, 300); });
  EXPECT_EQ(fi_close(&cntr->fid), 0);
}

}  // namespace
}  // namespace iwarpx::ofi
