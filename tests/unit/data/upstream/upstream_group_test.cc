// UpstreamGroup over a ServerDirectory (what the control thread's resolver
// publishes; filled by hand here): a name's addresses become the group's
// servers, pools of addresses that stay are kept with what the balancer
// knows of them, pools of addresses gone drain and live on only while held.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <vector>

#include "data/upstream/server_directory.h"
#include "data/upstream/upstream_pool.h"
#include "support/loop_test.h"

namespace tlsfront::upstream {
namespace {

ResolvedAddress v4(const char* ip, int port) {
  ResolvedAddress a;
  uv_ip4_addr(ip, port, reinterpret_cast<sockaddr_in*>(&a.addr));
  a.text = std::string(ip) + ":" + std::to_string(port);
  return a;
}

FailedAttempt connect_failed() {
  FailedAttempt a;
  a.failure = UpstreamFailure::Refused;
  a.nothing_sent = true;
  a.replayable = true;
  return a;
}

class UpstreamGroupTest : public harness::LoopTest {
 protected:
  void SetUp() override {
    LoopTest::SetUp();
    cfg_.name = "api";
    cfg_.servers = {config::Endpoint{"api.test", 80}, config::Endpoint{"127.0.0.1", 9}};
    cfg_.balance = config::Balance::RoundRobin;  // every server within a few picks
  }
  void release_objects() override { group_.reset(); }
  // The addresses the group's balancer hands out, over a few turns.
  std::set<std::string> picked() {
    std::set<std::string> out;
    for (size_t i = 0; i < 2 * group_->server_count() + 2; ++i) {
      if (UpstreamPool* p = group_->balancer().pick({})) out.insert(p->address());
    }
    return out;
  }

  config::Upstream cfg_;
  ServerDirectory directory_;
  std::unique_ptr<UpstreamGroup> group_;
};

TEST_F(UpstreamGroupTest, ANameHasNoServerUntilItResolves) {
  group_ = std::make_unique<UpstreamGroup>(&loop_, cfg_, nullptr, nullptr, &directory_);
  EXPECT_EQ(group_->server_count(), 1u);  // the IP literal only
  EXPECT_EQ(picked(), (std::set<std::string>{"127.0.0.1:9"}));
  directory_.publish("api.test:80", {v4("10.0.0.1", 80), v4("10.0.0.2", 80)});
  group_->refresh_servers();
  EXPECT_EQ(group_->server_count(), 3u);
  EXPECT_EQ(picked(), (std::set<std::string>{"10.0.0.1:80", "10.0.0.2:80", "127.0.0.1:9"}));
}

TEST_F(UpstreamGroupTest, AChangedAnswerKeepsThePoolsThatStayAndDrainsTheOthers) {
  directory_.publish("api.test:80", {v4("10.0.0.1", 80), v4("10.0.0.2", 80)});
  group_ = std::make_unique<UpstreamGroup>(&loop_, cfg_, nullptr, nullptr, &directory_);
  std::shared_ptr<UpstreamPool> one, two;
  for (int i = 0; i < 6 && (!one || !two); ++i) {
    UpstreamPool* p = group_->balancer().pick({});
    if (p->address() == "10.0.0.1:80") one = p->shared_from_this();  // as an exchange holds it
    if (p->address() == "10.0.0.2:80") two = p->shared_from_this();
  }
  ASSERT_TRUE(one && two);
  group_->balancer().on_failure(two.get(), connect_failed());  // skipped for fail_timeout

  directory_.publish("api.test:80", {v4("10.0.0.2", 80), v4("10.0.0.3", 80)});
  group_->refresh_servers();
  EXPECT_EQ(group_->server_count(), 3u);
  EXPECT_TRUE(one->draining());   // gone from the answer: no new exchange; alive while held
  EXPECT_FALSE(two->draining());  // kept, the same pool
  std::set<std::string> now = picked();
  EXPECT_EQ(now.count("10.0.0.1:80"), 0u);
  EXPECT_EQ(now.count("10.0.0.2:80"), 0u) << "what the balancer knew of a kept server was lost";
  EXPECT_EQ(now.count("10.0.0.3:80"), 1u);
  EXPECT_EQ(one.use_count(), 1);  // the group let go of it
}

TEST_F(UpstreamGroupTest, TheSameAnswerAgainChangesNothing) {
  directory_.publish("api.test:80", {v4("10.0.0.1", 80)});
  group_ = std::make_unique<UpstreamGroup>(&loop_, cfg_, nullptr, nullptr, &directory_);
  UpstreamPool* before = nullptr;
  for (int i = 0; i < 2; ++i) {
    UpstreamPool* p = group_->balancer().pick({});
    if (p->address() == "10.0.0.1:80") before = p;
  }
  ASSERT_NE(before, nullptr);
  const uint64_t version = directory_.version();
  EXPECT_FALSE(directory_.publish("api.test:80", {v4("10.0.0.1", 80)}));
  EXPECT_EQ(directory_.version(), version);
  group_->refresh_servers();
  bool same = false;
  for (int i = 0; i < 2; ++i) same |= group_->balancer().pick({}) == before;
  EXPECT_TRUE(same);
}

}  // namespace
}  // namespace tlsfront::upstream
