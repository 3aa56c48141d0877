// BalancerTest: an UpstreamGroup of three real (never connected) pools on
// 127.0.0.1 ports 1..3, round robin unless a test sets cfg_ otherwise
// before make().
#pragma once

#include <memory>

#include "config/config.h"
#include "data/upstream/upstream_pool.h"
#include "support/loop_test.h"

namespace tlsfront::upstream {

class BalancerTest : public harness::LoopTest {
 protected:
  void SetUp() override {
    LoopTest::SetUp();
    cfg_.name = "t";
    cfg_.servers = {config::Endpoint{"127.0.0.1", 1}, config::Endpoint{"127.0.0.1", 2},
                    config::Endpoint{"127.0.0.1", 3}};
    cfg_.balance = config::Balance::RoundRobin;
  }
  void make() { group_ = std::make_unique<UpstreamGroup>(&loop_, cfg_); }
  void release_objects() override { group_.reset(); }
  Balancer& balancer() { return group_->balancer(); }

  config::Upstream cfg_;
  std::unique_ptr<UpstreamGroup> group_;
};

}  // namespace tlsfront::upstream
