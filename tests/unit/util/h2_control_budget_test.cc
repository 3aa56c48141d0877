// H2ControlBudget and TokenBucket: which frames are charged, the credit real
// work earns, the bucket's burst and refill (driven by an explicit clock).
#include "util/h2_control_budget.h"

#include <gtest/gtest.h>

#include "util/token_bucket.h"

namespace tlsfront {
namespace {

nghttp2_frame_hd hd(uint8_t type, uint8_t flags = 0, size_t length = 0, int32_t stream = 1) {
  nghttp2_frame_hd h{};
  h.type = type;
  h.flags = flags;
  h.length = length;
  h.stream_id = stream;
  return h;
}

bool unproductive(const nghttp2_frame_hd& h, bool exhausted = false) {
  return H2ControlBudget::unproductive(h, [exhausted](int32_t) { return exhausted; });
}

TEST(H2ControlBudget, ChargesFramesThatMoveNothingForward) {
  EXPECT_TRUE(unproductive(hd(NGHTTP2_DATA)));
  EXPECT_FALSE(unproductive(hd(NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM)));
  EXPECT_FALSE(unproductive(hd(NGHTTP2_DATA, 0, 1)));
  EXPECT_TRUE(unproductive(hd(NGHTTP2_PRIORITY)));
  EXPECT_TRUE(unproductive(hd(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, 0)));
  EXPECT_TRUE(unproductive(hd(NGHTTP2_PING, 0, 8, 0)));
  EXPECT_TRUE(unproductive(hd(NGHTTP2_GOAWAY, 0, 8, 0)));
  EXPECT_TRUE(unproductive(hd(NGHTTP2_WINDOW_UPDATE, 0, 4, 0)));
  EXPECT_FALSE(unproductive(hd(NGHTTP2_WINDOW_UPDATE, 0, 4, 0), /*exhausted=*/true));
  EXPECT_TRUE(unproductive(hd(0x20)));  // unknown type
  EXPECT_TRUE(unproductive(hd(0x10)));  // PRIORITY_UPDATE
  EXPECT_FALSE(unproductive(hd(NGHTTP2_HEADERS)));
  EXPECT_FALSE(unproductive(hd(NGHTTP2_RST_STREAM)));
  EXPECT_FALSE(unproductive(hd(NGHTTP2_CONTINUATION)));
}

TEST(H2ControlBudget, TheBurstRunsOutAndRealWorkEarnsCredit) {
  H2ControlBudget budget;
  // The bucket's clock starts at the epoch: now() is long past it, so it is
  // full; a burst of charges within the same instant empties it.
  int charged = 0;
  while (budget.charge() && charged < 100'000) ++charged;
  EXPECT_GE(charged, static_cast<int>(H2ControlBudget::kBurst));
  EXPECT_LT(charged, static_cast<int>(H2ControlBudget::kBurst) + 100);  // a few refilled meanwhile, no more
  EXPECT_FALSE(budget.charge());
  for (int i = 0; i < 10; ++i) budget.earn();
  for (uint32_t i = 0; i < 10 * H2ControlBudget::kCreditPerEarn; ++i) EXPECT_TRUE(budget.charge()) << i;
  // Credit is capped: a long download does not buy an unbounded flood later.
  H2ControlBudget rich;
  for (int i = 0; i < 1'000'000; ++i) rich.earn();
  int free_frames = 0;
  while (rich.charge() && free_frames < 100'000) ++free_frames;
  EXPECT_LT(free_frames, 2 * static_cast<int>(H2ControlBudget::kBurst) + 200);
}

// Flow control feedback is free by the octet: WINDOW_UPDATEs are free while
// they return octets sent (also on a stream already closed), each takes its
// increment off (at least one octet, even unseen by on_frame_recv), and
// once all are returned the next one is charged again.
TEST(H2ControlBudget, WindowUpdatesThatReturnSentOctetsAreFree) {
  H2ControlBudget budget;
  const auto not_needed = [](int32_t) { return false; };
  nghttp2_frame f{};
  f.hd = hd(NGHTTP2_WINDOW_UPDATE, 0, 4, 1);
  // One instant throughout: the bucket, once spent, does not refill.
  const auto now = TokenBucket::Clock::now();
  auto update = [&](int32_t stream, uint32_t increment, bool seen = true) {
    f.hd.stream_id = stream;
    f.window_update.window_size_increment = static_cast<int32_t>(increment);
    const bool admitted = budget.admit(f.hd, not_needed, now);
    if (seen) budget.received(f);
    return admitted;
  };
  // Spend the bucket, so that any charged frame shows.
  while (budget.charge(now)) {
  }
  EXPECT_FALSE(update(1, 1));
  EXPECT_FALSE(update(0, 1));
  budget.sent_data(100);
  budget.sent_data(20);  // 120 octets; 6 credits from the two DATA frames
  EXPECT_TRUE(update(1, 60));
  EXPECT_TRUE(update(3, 59, /*seen=*/false));  // a closed stream: one octet taken
  EXPECT_TRUE(update(5, 58));                  // 1 octet left
  EXPECT_TRUE(update(7, 1000));                // takes it: none left, no debt
  for (uint32_t i = 0; i < 2 * H2ControlBudget::kCreditPerEarn; ++i) EXPECT_TRUE(update(1, 1)) << i;  // credit
  EXPECT_FALSE(update(1, 1));
  EXPECT_TRUE(update(0, 120));  // the connection's count is its own
  EXPECT_FALSE(update(0, 1));
  // Other frames are charged as before: a PING after all that is not free.
  EXPECT_FALSE(budget.admit(hd(NGHTTP2_PING, 0, 8, 0), not_needed, now));
  EXPECT_TRUE(budget.admit(hd(NGHTTP2_HEADERS), not_needed, now));
}

TEST(TokenBucket, RefillsAtItsRateUpToItsBurst) {
  using C = TokenBucket::Clock;
  const C::time_point t0{};
  TokenBucket b(3, 2, t0);
  EXPECT_TRUE(b.take(t0));
  EXPECT_TRUE(b.take(t0));
  EXPECT_TRUE(b.take(t0));
  EXPECT_FALSE(b.take(t0));
  EXPECT_FALSE(b.take(t0 + std::chrono::milliseconds(400)));  // 0.8 tokens
  EXPECT_TRUE(b.take(t0 + std::chrono::milliseconds(500)));   // 1.0
  // A long pause refills to the burst, no more.
  const auto later = t0 + std::chrono::seconds(60);
  int n = 0;
  while (b.take(later)) ++n;
  EXPECT_EQ(n, 3);
}

}  // namespace
}  // namespace tlsfront
