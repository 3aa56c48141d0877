// RedisNodesTest: the fixture of the tests where two tlsfront nodes share a
// real redis-server on loopback (sessions, ticket keys, rate limits): the
// Redis (redis_, started by the test), a second node (proxy_b_ in dir_b_)
// stopped by PID at the end and required to exit 0, and a skip when
// redis-server or redis-cli is missing.
#pragma once

#include <iostream>

#include "harness.h"
#include "shared/redis_server.h"

namespace tlsfront::itest {

class RedisNodesTest : public ProxyTest {
 protected:
  RedisNodesTest() : redis_(dir_), proxy_b_(dir_b_) {}

  void SetUp() override {
    if (find_tool("redis-server").empty() || find_tool("redis-cli").empty()) {
      GTEST_SKIP() << "redis-server / redis-cli not installed";
    }
    ProxyTest::SetUp();
  }

  void TearDown() override {
    if (proxy_b_.process().pid() > 0) {
      ExitStatus st = proxy_b_.stop();
      EXPECT_TRUE(st.exited && st.code == 0) << "node B did not exit 0 on SIGTERM";
      if (HasFailure()) std::cerr << "---- node B stderr:\n" << proxy_b_.process().err();
    }
    ProxyTest::TearDown();
    redis_.stop();
  }

  RedisServer redis_;
  TempDir dir_b_;
  Proxy proxy_b_;
};

}  // namespace tlsfront::itest
