// AcmeLock (control/acme_lock.h) against a real redis-server: one holder at
// a time, the lease, and the fencing that keeps a holder whose lease ran out
// from overwriting what the next holder wrote.
#include "control/acme_lock.h"

#include <gtest/gtest.h>

#include <thread>

#include "shared/redis_server.h"
#include "shared/temp_dir.h"
#include "tls/sealed_key.h"

namespace tlsfront::control {
namespace {

using namespace std::chrono_literals;

class AcmeLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (itest::find_tool("redis-server").empty() || itest::find_tool("redis-cli").empty()) {
      GTEST_SKIP() << "redis-server / redis-cli not installed";
    }
    ASSERT_TRUE(redis_.start());
    redis::Options o;
    o.address = config::Endpoint{"127.0.0.1", static_cast<uint16_t>(redis_.port())};
    o.timeout = 2000ms;
    client_ = std::make_unique<redis::Client>(std::move(o));
  }

  // An entry for example.com at `updated_at` (sealed, not opened: the lock
  // only moves bytes).
  static tls::StoreEntry entry(uint64_t updated_at) {
    tls::StoreEntry e;
    e.region = "eu";
    e.name = "example.com";
    e.updated_at = updated_at;
    e.key_id = "0123456789abcdef";
    e.hash = std::string(64, 'a');
    e.pairs = {{"-----BEGIN CERTIFICATE-----\n" + std::to_string(updated_at) + "\n", "sealed"}};
    return e;
  }

  std::string get(const std::string& key) const {
    auto r = redis_.cli({"GET", key});
    std::string out = r.out;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }

  itest::TempDir dir_;
  itest::RedisServer redis_{dir_};
  std::unique_ptr<redis::Client> client_;
};

TEST_F(AcmeLockTest, OneHolderAtATime) {
  AcmeLock a(*client_, "t", "eu", "node-a"), b(*client_, "t", "eu", "node-b");
  ASSERT_TRUE(a.acquire(60s).value());
  EXPECT_FALSE(b.acquire(60s).value());
  EXPECT_TRUE(a.renew(60s).value());
  EXPECT_EQ(get(a.lock_key()), std::to_string(a.token()) + ":node-a");
  a.release();
  EXPECT_EQ(get(a.lock_key()), "");
  ASSERT_TRUE(b.acquire(60s).value());
  EXPECT_GT(b.token(), a.token());  // fencing tokens only grow
}

TEST_F(AcmeLockTest, FencedPutRefusesAnExpiredHolder) {
  AcmeLock a(*client_, "t", "eu", "node-a"), b(*client_, "t", "eu", "node-b");
  ASSERT_TRUE(a.acquire(10ms).value());
  std::this_thread::sleep_for(50ms);  // a "pauses" past its lease
  ASSERT_TRUE(b.acquire(60s).value());
  EXPECT_EQ(b.put(entry(100)).value(), 1);
  // a wakes up with a certificate newer by updated_at: refused by the fence.
  EXPECT_EQ(a.put(entry(200)).value(), -1);
  EXPECT_FALSE(a.held());
  EXPECT_EQ(get("t:certs:eu:version"), "1");
  auto r = redis_.cli({"HGET", "t:cert:eu:example.com", "updated_at"});
  EXPECT_EQ(r.out, "100\n");
  // b's own later put goes through; an older one is ignored as by kPutScript.
  EXPECT_EQ(b.put(entry(300)).value(), 1);
  EXPECT_EQ(b.put(entry(250)).value(), 0);
  // And a renewal after the lease ran out finds it lost.
  AcmeLock c(*client_, "t", "other", "node-c");
  ASSERT_TRUE(c.acquire(10ms).value());
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(c.renew(60s).value());
}

}  // namespace
}  // namespace tlsfront::control
