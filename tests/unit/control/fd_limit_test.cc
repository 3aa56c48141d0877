// The descriptor budget and the start-up warning of control/fd_limit.h.
#include "control/fd_limit.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "util/unique_fd.h"

namespace tlsfront::control {
namespace {

config::Config two_servers() {
  config::Config c;
  c.listeners.resize(2);
  config::Upstream u;
  u.servers.resize(2);  // keepalive 32 each
  c.upstreams.push_back(u);
  return c;
}

TEST(FdBudget, BudgetCountsConnectionsPoolsListenersPerWorker) {
  const FdBudget b = fd_budget(two_servers(), 4);
  // 3 (loop) + 2 listeners + 2 x 256 connections + 32 x 2 idle upstream.
  EXPECT_EQ(b.per_worker, 3u + 2 + 512 + 64);
  EXPECT_EQ(b.total, 4 * b.per_worker + kBudgetProcessMargin);
  // A lower [limits] max_connections is what a worker can hold.
  config::Config capped = two_servers();
  capped.limits.max_connections = 10;
  EXPECT_EQ(fd_budget(capped, 4).per_worker, 3u + 2 + 20 + 64);
  capped.limits.max_connections = 10'000;
  EXPECT_EQ(fd_budget(capped, 4).per_worker, b.per_worker);
}

TEST(FdBudget, WarningNamesBothFiguresOnlyBelowTheBudget) {
  const config::Config c = two_servers();
  const uint64_t want = fd_budget(c, 2).total;
  EXPECT_FALSE(fd_limit_warning(c, 2, want).has_value());
  const auto w = fd_limit_warning(c, 2, 1024);
  ASSERT_TRUE(w.has_value());
  EXPECT_NE(w->find("(RLIMIT_NOFILE soft) is 1024, below the " + std::to_string(want)), std::string::npos) << *w;
  EXPECT_NE(w->find("2 workers x 581"), std::string::npos) << *w;
  EXPECT_NE(w->find("LimitNOFILE"), std::string::npos) << *w;
}

TEST(FdBudget, OpenDescriptorsAreCounted) {
  const auto before = open_fd_count();
  ASSERT_TRUE(before.has_value());
  UniqueFd extra(::dup(0));
  ASSERT_TRUE(extra.valid());
  EXPECT_EQ(open_fd_count(), *before + 1);
  EXPECT_GE(open_files_soft_limit(), *before + 1);
}

}  // namespace
}  // namespace tlsfront::control
