#include "transport/sctp_message_queue.h"

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

namespace iwarpx::transport {
namespace {

MessageInfo On(uint16_t stream) {
  MessageInfo info;
  info.stream = stream;
  return info;
}

TEST(SctpMessageQueueTest, WholeMessagesInArrivalOrderWithTheirInfo) {
  SctpMessageQueue q;
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.bytes(), 0u);
  const std::vector<uint8_t> a{1, 2, 3};
  q.Begin(On(3));
  q.Append(a);
  q.End();
  // The second message comes in two pieces, one received in place.
  q.Begin(On(5));
  q.Append(std::vector<uint8_t>{9});
  EXPECT_TRUE(q.open());
  EXPECT_EQ(q.open_length(), 1u);
  EXPECT_EQ(q.open_info().stream, 5u);
  EXPECT_EQ(q.messages(), 1u) << "the open message is not visible";
  MutableByteSpan room = q.Reserve(100);
  ASSERT_EQ(room.size(), 100u);
  room[0] = 8;
  room[1] = 7;
  q.Commit(2);
  q.End();
  EXPECT_FALSE(q.open());
  ASSERT_EQ(q.messages(), 2u);
  EXPECT_EQ(q.bytes(), 6 + 2 * SctpMessageQueue::kOverheadPerMessage);

  EXPECT_EQ(q.front_info().stream, 3u);
  EXPECT_EQ(std::vector<uint8_t>(q.front().begin(), q.front().end()), a);
  q.Pop();
  EXPECT_EQ(q.front_info().stream, 5u);
  EXPECT_EQ(std::vector<uint8_t>(q.front().begin(), q.front().end()),
            (std::vector<uint8_t>{9, 8, 7}));
  q.Pop();
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.bytes(), 0u);
  EXPECT_TRUE(q.front().empty());
  q.Pop();  // ignored
}

TEST(SctpMessageQueueTest, EveryMessageIsChargedItsOverhead) {
  SctpMessageQueue q;
  for (int i = 0; i < 100; ++i) {
    q.Begin(On(1));
    q.Append(std::vector<uint8_t>{static_cast<uint8_t>(i)});
    q.End();
  }
  EXPECT_EQ(q.bytes(), 100 * (1 + SctpMessageQueue::kOverheadPerMessage));
  q.Begin(On(1));  // an open message is charged too
  EXPECT_EQ(q.bytes(), 100 * (1 + SctpMessageQueue::kOverheadPerMessage) +
                           SctpMessageQueue::kOverheadPerMessage);
}

TEST(SctpMessageQueueTest, MisuseIsIgnored) {
  SctpMessageQueue q;
  EXPECT_TRUE(q.Reserve(10).empty());
  q.Commit(10);
  q.Append(std::vector<uint8_t>{1});
  q.End();
  EXPECT_EQ(q.bytes(), 0u);
  q.Begin(On(2));
  q.Begin(On(4));  // still the first
  EXPECT_EQ(q.open_info().stream, 2u);
  (void)q.Reserve(4);
  q.Commit(9);  // at most what was reserved
  EXPECT_EQ(q.open_length(), 4u);
  q.End();
  EXPECT_EQ(q.front().size(), 4u);
}

}  // namespace
}  // namespace iwarpx::transport
