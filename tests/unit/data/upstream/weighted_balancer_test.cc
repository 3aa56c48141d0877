// Weights, backup servers, slow_start, active-check verdicts and the
// consistent-hash ring, over real (never connected) UpstreamPools.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "data/upstream/balancer.h"
#include "data/upstream/hash_key.h"
#include "support/balancer_fixture.h"

namespace tlsfront::upstream {
namespace {

using Clock = std::chrono::steady_clock;

// How many of `n` picks (each request completed before the next) each
// server got, by port.
std::map<int, int> shares(Balancer& b, int n) {
  std::map<int, int> got;
  for (int i = 0; i < n; ++i) {
    UpstreamPool* p = b.pick({});
    if (p == nullptr) continue;
    ++got[p->server().port];
  }
  return got;
}

TEST_F(BalancerTest, SmoothWeightedRoundRobinFollowsTheWeightsExactly) {
  cfg_.server_options = {{.weight = 3}, {.weight = 1}, {.weight = 1}};
  make();
  auto got = shares(balancer(), 500);
  EXPECT_EQ(got[1], 300);
  EXPECT_EQ(got[2], 100);
  EXPECT_EQ(got[3], 100);
}

TEST_F(BalancerTest, WeightedLeastRequestAndRandomShareByWeightWithinFivePercent) {
  for (auto balance : {config::Balance::LeastRequest, config::Balance::Random}) {
    cfg_.balance = balance;
    cfg_.server_options = {{.weight = 5}, {.weight = 3}, {.weight = 2}};
    make();
    // Draws: 100,000 requests put ±5 % of the smallest share (1,000 of
    // 20,000) at 8 standard deviations.
    auto got = shares(balancer(), 100'000);
    EXPECT_NEAR(got[1], 50'000, 2'500) << static_cast<int>(balance);
    EXPECT_NEAR(got[2], 30'000, 1'500) << static_cast<int>(balance);
    EXPECT_NEAR(got[3], 20'000, 1'000) << static_cast<int>(balance);
  }
}

TEST_F(BalancerTest, WeightedLeastRequestStillAvoidsAServerWithRequestsPiledUp) {
  cfg_.balance = config::Balance::LeastRequest;
  cfg_.server_options = {{.weight = 5}, {.weight = 1}, {.weight = 1}};
  make();
  UpstreamPool* heavy = nullptr;
  for (int i = 0; i < 50 && heavy == nullptr; ++i) {
    UpstreamPool* p = balancer().pick({});
    if (p->server().port == 1) heavy = p;
  }
  ASSERT_NE(heavy, nullptr);
  for (int i = 0; i < 100; ++i) heavy->begin_request();  // slow: 100 outstanding
  auto got = shares(balancer(), 1000);
  // Chosen only when both draws fall on it (about 5/7 squared, 51 %) without it.
  EXPECT_LT(got[1], 600);
  EXPECT_GT(got[1], 400);
  for (int i = 0; i < 100; ++i) heavy->end_request();
}

TEST_F(BalancerTest, BackupServersOnlyWhileEveryPrimaryIsOut) {
  cfg_.max_ejected_percent = 100;
  cfg_.server_options = {{}, {}, {.backup = true}};
  make();
  auto got = shares(balancer(), 100);
  EXPECT_EQ(got[3], 0);
  std::map<int, UpstreamPool*> by_port;
  for (int i = 0; i < 10; ++i) {
    if (UpstreamPool* p = balancer().pick({})) by_port[p->server().port] = p;
  }
  ASSERT_EQ(by_port.size(), 2u);
  const auto now = Clock::now();
  by_port[1]->health().set_down(true, now);
  got = shares(balancer(), 100);
  EXPECT_EQ(got[2], 100);  // one primary left: all of it
  by_port[2]->health().set_down(true, now);
  got = shares(balancer(), 100);
  EXPECT_EQ(got[3], 100);  // no primary: the backup
  // A primary tried already (its attempt failed): the retry goes to the backup.
  by_port[1]->health().set_down(false, now);
  UpstreamPool* backup = balancer().pick({by_port[1]});
  ASSERT_NE(backup, nullptr);
  EXPECT_EQ(backup->server().port, 3);
}

TEST_F(BalancerTest, ADownVerdictTakesAServerOutUntilLifted) {
  make();
  UpstreamPool* a = balancer().pick({});
  a->health().set_down(true, Clock::now());
  for (int i = 0; i < 6; ++i) EXPECT_NE(balancer().pick({}), a);
  a->health().set_down(false, Clock::now());
  int seen = 0;
  for (int i = 0; i < 6; ++i) seen += balancer().pick({}) == a;
  EXPECT_EQ(seen, 2);
}

TEST_F(BalancerTest, SlowStartRampsAServerThatCameBackFromTenPercent) {
  cfg_.slow_start = std::chrono::seconds(100);
  make();
  UpstreamPool* a = balancer().pick({});
  a->health().set_down(true, Clock::now());
  a->health().set_down(false, Clock::now());  // back now: 10 % of its weight
  auto got = shares(balancer(), 2100);
  // Weights 10 : 100 : 100 of 210 (±2: the round robin's phase from the
  // first pick).
  EXPECT_NEAR(got[a->server().port], 100, 2);
  // Halfway through its ramp: 50 %.
  a->health().mark_returned(Clock::now() - std::chrono::seconds(50));
  got = shares(balancer(), 2500);
  EXPECT_NEAR(got[a->server().port], 500, 2);
}

TEST(HashKey, RemoteAddressHeaderAndCookie) {
  http::RequestHead head;
  head.headers = {{"X-User", "alice", http::HeaderToken::Other},
                  {"Cookie", "a=1; session=xyz ;b=2", http::HeaderToken::Other}};
  EXPECT_EQ(request_hash({config::HashKey::Kind::RemoteAddr, ""}, head, "192.0.2.7"), ring_hash("192.0.2.7"));
  EXPECT_EQ(request_hash({config::HashKey::Kind::Header, "x-user"}, head, ""), ring_hash("alice"));
  EXPECT_EQ(request_hash({config::HashKey::Kind::Cookie, "session"}, head, ""), ring_hash("xyz"));
  EXPECT_EQ(request_hash({config::HashKey::Kind::Cookie, "sess"}, head, ""), std::nullopt);
  EXPECT_EQ(request_hash({config::HashKey::Kind::Header, "x-tenant"}, head, ""), std::nullopt);
  // The same on every node and every run: fixed values (FNV-1a, then
  // splitmix64's finalizer, computed independently).
  EXPECT_EQ(ring_hash(""), ring_hash(std::string()));
  EXPECT_EQ(ring_hash(""), 0xf52a15e9a9b5e89bULL);
  EXPECT_EQ(ring_hash("192.0.2.7"), 0x6053c3970e6a076dULL);
  EXPECT_NE(ring_hash("a"), ring_hash("b"));
}

class HashBalancerTest : public BalancerTest {
 protected:
  void SetUp() override {
    BalancerTest::SetUp();
    cfg_.balance = config::Balance::Hash;
    cfg_.hash = {config::HashKey::Kind::Header, "x-user"};
    cfg_.max_ejected_percent = 100;
    cfg_.servers.clear();
    for (uint16_t port = 1; port <= 5; ++port) cfg_.servers.push_back(config::Endpoint{"127.0.0.1", port});
  }
  // Key i's server, by port.
  std::vector<int> placement(int keys) {
    std::vector<int> out;
    for (int i = 0; i < keys; ++i) {
      UpstreamPool* p = balancer().pick({}, ring_hash("user-" + std::to_string(i)));
      out.push_back(p ? p->server().port : 0);
    }
    return out;
  }
};

TEST_F(HashBalancerTest, AKeyAlwaysGoesToOneServerAndKeysSpreadOverAll) {
  make();
  const int keys = 10'000;
  auto first = placement(keys);
  EXPECT_EQ(placement(keys), first);
  std::map<int, int> per_server;
  for (int port : first) ++per_server[port];
  ASSERT_EQ(per_server.size(), 5u);
  for (auto [port, n] : per_server) {
    EXPECT_GT(n, keys / 5 * 7 / 10) << port;  // 160 points each: within about ±30 %
    EXPECT_LT(n, keys / 5 * 13 / 10) << port;
  }
}

TEST_F(HashBalancerTest, AServerThatLeavesMovesOnlyItsOwnKeys) {
  make();
  const int keys = 10'000;
  auto before = placement(keys);
  // Port 3 leaves the group (a reload, or its name's answer): at most 1/N
  // of the keys move, all of them its own.
  cfg_.servers.erase(cfg_.servers.begin() + 2);
  make();
  auto after = placement(keys);
  int moved = 0;
  for (int i = 0; i < keys; ++i) {
    if (before[i] == after[i]) continue;
    ++moved;
    EXPECT_EQ(before[i], 3) << i;
  }
  EXPECT_LE(moved, keys / 5 * 13 / 10);
  EXPECT_GT(moved, 0);
}

TEST_F(HashBalancerTest, AKeyWhoseServerIsOutGoesToTheNextOnTheRingAndComesBack) {
  make();
  const uint64_t key = ring_hash("user-42");
  UpstreamPool* home = balancer().pick({}, key);
  ASSERT_NE(home, nullptr);
  home->health().set_down(true, Clock::now());
  UpstreamPool* next = balancer().pick({}, key);
  ASSERT_NE(next, nullptr);
  EXPECT_NE(next, home);
  EXPECT_EQ(balancer().pick({}, key), next);  // stable while it is out
  EXPECT_EQ(balancer().pick({home}, key), next);  // a retry goes there too
  home->health().set_down(false, Clock::now());
  EXPECT_EQ(balancer().pick({}, key), home);
  // No key (no such field): any server.
  std::set<UpstreamPool*> chosen;
  for (int i = 0; i < 100; ++i) chosen.insert(balancer().pick({}));
  EXPECT_GT(chosen.size(), 1u);
}

}  // namespace
}  // namespace tlsfront::upstream
