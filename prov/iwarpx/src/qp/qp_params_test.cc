#include "qp/qp_params.h"

#include <array>
#include <cstdint>

#include <gtest/gtest.h>

namespace iwarpx::qp {
namespace {

TEST(QpParamsTest, EqualParametersShareOneCopy) {
  wire::MpaOutcome mpa;
  mpa.ird = mpa.ord = 16;
  mpa.send_imm = true;
  QpConfig cfg;
  cfg.rx_staging_initial = 256;
  auto a = ShareQpParams(mpa, cfg);
  auto b = ShareQpParams(mpa, cfg);
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(a->config.rx_staging_initial, 256u);
  EXPECT_TRUE(a->mpa.send_imm);
  EXPECT_EQ(a->mpa.ird, 16);
}

TEST(QpParamsTest, AnyDifferenceMakesItsOwnCopy) {
  wire::MpaOutcome mpa;
  QpConfig cfg;
  auto base = ShareQpParams(mpa, cfg);
  wire::MpaOutcome m2 = mpa;
  m2.crc = true;
  QpConfig c2 = cfg;
  c2.rx_budget_bytes += 1;
  wire::MpaOutcome m3 = mpa;
  m3.peer_ord = 3;
  auto x = ShareQpParams(m2, cfg);
  auto y = ShareQpParams(mpa, c2);
  auto z = ShareQpParams(m3, cfg);
  EXPECT_NE(x.get(), base.get());
  EXPECT_NE(y.get(), base.get());
  EXPECT_NE(z.get(), base.get());
  EXPECT_TRUE(x->mpa.crc);
  EXPECT_EQ(y->config.rx_budget_bytes, cfg.rx_budget_bytes + 1);
  EXPECT_EQ(z->mpa.peer_ord, 3);
  // Four kept at once (the cache's size): each found again.
  EXPECT_EQ(ShareQpParams(mpa, cfg).get(), base.get());
  EXPECT_EQ(ShareQpParams(m2, cfg).get(), x.get());
}

TEST(QpParamsTest, TheCopyDoesNotKeepThePeersPrivateData) {
  const std::array<uint8_t, 4> pd{1, 2, 3, 4};
  wire::MpaOutcome mpa;
  mpa.peer_private_data = ByteSpan(pd.data(), pd.size());
  auto p = ShareQpParams(mpa, QpConfig{});
  EXPECT_TRUE(p->mpa.peer_private_data.empty());
}

}  // namespace
}  // namespace iwarpx::qp
