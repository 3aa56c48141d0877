// UpstreamPool on a real uv loop against an in-loop HTTP/1.1 server on
// 127.0.0.1:0 (harness::ScriptedUpstream answering 200 "ok", in a
// harness::LoopTest): reuse, backend close of an idle connection, pool
// bounds, keepalive_requests.
#include "data/upstream/upstream_pool.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "support/loop_test.h"
#include "../../support/data_path_upstream.h"
#include "util/loop_context.h"

namespace tlsfront::upstream {
namespace {

// Records what the connection reports for one exchange.
struct Recorder : UpstreamConnection::Handler {
  bool complete = false;
  std::string body;
  int status = 0;
  std::optional<Error> error;
  std::optional<UpstreamFailure> failure;
  void on_upstream_connected() override {}
  void on_upstream_head(http::ResponseHead&& head, bool) override { status = head.status; }
  void on_upstream_body(std::string_view d) override { body.append(d); }
  void on_upstream_complete() override { complete = true; }
  void on_upstream_error(UpstreamFailure f, Error e) override {
    failure = f;
    error = std::move(e);
  }
  void on_upstream_writable() override {}
  void on_upstream_tunnel(std::unique_ptr<UpstreamTunnel> t) override { tunnel = std::move(t); }
  std::unique_ptr<UpstreamTunnel> tunnel;
};

class UpstreamPoolTest : public harness::LoopTest {
 protected:
  void SetUp() override {
    LoopTest::SetUp();
    server_ = std::make_unique<harness::ScriptedUpstream>(&loop_);
    cfg_.name = "t";
    cfg_.servers = {config::Endpoint{"127.0.0.1", server_->port()}};
  }
  void release_objects() override {
    pool_.reset();
    server_.reset();
  }
  // One GET through the pool; returns whether the connection was reused.
  bool exchange() {
    auto lease = pool_->acquire(true);
    EXPECT_TRUE(lease.ok());
    Recorder r;
    lease->conn->attach(&r, false);
    lease->conn->send("GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    run_until([&] { return r.complete || r.error.has_value(); });
    EXPECT_TRUE(r.complete) << (r.error ? r.error->message() : "");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "ok");
    pool_->release(std::move(lease->conn));
    return lease->reused;
  }

  std::unique_ptr<harness::ScriptedUpstream> server_;
  config::Upstream cfg_;
  std::unique_ptr<UpstreamPool> pool_;
};

TEST_F(UpstreamPoolTest, ReusesIdleConnectionLifo) {
  pool_ = std::make_unique<UpstreamPool>(&loop_, cfg_, cfg_.servers[0]);
  EXPECT_FALSE(exchange());
  EXPECT_EQ(pool_->idle_count(), 1u);
  EXPECT_TRUE(exchange());
  EXPECT_TRUE(exchange());
  EXPECT_EQ(server_->accepted(), 1);
}

TEST_F(UpstreamPoolTest, DropsIdleConnectionTheBackendClosed) {
  pool_ = std::make_unique<UpstreamPool>(&loop_, cfg_, cfg_.servers[0]);
  EXPECT_FALSE(exchange());
  ASSERT_EQ(pool_->idle_count(), 1u);
  server_->close_peers();
  run_until([&] { return pool_->idle_count() == 0; });
  EXPECT_EQ(pool_->idle_count(), 0u);
  EXPECT_FALSE(exchange());  // a fresh connection, not the dead one
  EXPECT_EQ(server_->accepted(), 2);
}

TEST_F(UpstreamPoolTest, AcquireNeverHandsOutAConnectionThatIsNotIdle) {
  pool_ = std::make_unique<UpstreamPool>(&loop_, cfg_, cfg_.servers[0]);
  auto lease = pool_->acquire(true);
  ASSERT_TRUE(lease.ok());
  Recorder r;
  lease->conn->attach(&r, false);
  lease->conn->send("GET / HTTP/1.1\r\nHost: t\r\n\r\n");
  run_until([&] { return r.complete; });
  UpstreamConnection* parked = lease->conn.get();
  pool_->release(std::move(lease->conn));
  ASSERT_EQ(pool_->idle_count(), 1u);
  parked->close();  // closed without the pool hearing of it
  // Even without the open check (a request that could be retried).
  auto next = pool_->acquire(true, /*check_open=*/false);
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(next->reused);
  EXPECT_EQ(next->conn->state(), UpstreamConnection::State::Connecting);  // a new one
  EXPECT_EQ(pool_->idle_count(), 0u);
  ctx_->defer_delete(std::move(next->conn));
}

TEST_F(UpstreamPoolTest, KeepaliveZeroNeverPools) {
  cfg_.keepalive = 0;
  pool_ = std::make_unique<UpstreamPool>(&loop_, cfg_, cfg_.servers[0]);
  EXPECT_FALSE(exchange());
  EXPECT_EQ(pool_->idle_count(), 0u);
  EXPECT_FALSE(exchange());
}

// More exchanges at once than `keepalive`: the surplus connections stay
// idle for UpstreamPool::kSurplusIdle and carry the next burst (nginx would
// close one and open another), then close, leaving `keepalive` idle.
TEST_F(UpstreamPoolTest, SurplusConnectionsLingerThenClose) {
  cfg_.keepalive = 1;
  pool_ = std::make_unique<UpstreamPool>(&loop_, cfg_, cfg_.servers[0]);
  auto burst = [&] {
    std::vector<UpstreamPool::Lease> leases;
    std::vector<std::unique_ptr<Recorder>> recorders;
    int reused = 0;
    for (int i = 0; i < 2; ++i) {
      auto lease = pool_->acquire(true);
      EXPECT_TRUE(lease.ok());
      reused += lease->reused ? 1 : 0;
      recorders.push_back(std::make_unique<Recorder>());
      lease->conn->attach(recorders.back().get(), false);
      lease->conn->send("GET / HTTP/1.1\r\nHost: t\r\n\r\n");
      leases.push_back(std::move(*lease));
    }
    run_until([&] { return recorders[0]->complete && recorders[1]->complete; });
    for (auto& l : leases) pool_->release(std::move(l.conn));
    return reused;
  };
  EXPECT_EQ(burst(), 0);
  EXPECT_EQ(pool_->idle_count(), 2u);  // one beyond keepalive, for a while
  EXPECT_EQ(burst(), 2);
  EXPECT_EQ(server_->accepted(), 2);
  run_until([&] { return pool_->idle_count() < 2; });
  EXPECT_EQ(pool_->idle_count(), 1u);  // the surplus one closed, the other stays
  EXPECT_TRUE(exchange());
  EXPECT_EQ(server_->accepted(), 2);
}

TEST_F(UpstreamPoolTest, KeepaliveRequestsLimitsReuse) {
  cfg_.keepalive_requests = 2;
  pool_ = std::make_unique<UpstreamPool>(&loop_, cfg_, cfg_.servers[0]);
  EXPECT_FALSE(exchange());
  EXPECT_TRUE(exchange());   // second request on the connection: then retired
  EXPECT_FALSE(exchange());  // a new connection
  EXPECT_EQ(server_->accepted(), 2);
}

TEST_F(UpstreamPoolTest, RefusedConnectIsAnUpstreamError) {
  config::Endpoint ep{"127.0.0.1", harness::refused_port(&loop_)};
  pool_ = std::make_unique<UpstreamPool>(&loop_, cfg_, ep);
  auto lease = pool_->acquire(true);
  ASSERT_TRUE(lease.ok());
  Recorder r;
  lease->conn->attach(&r, false);
  lease->conn->send("GET / HTTP/1.1\r\nHost: t\r\n\r\n");
  run_until([&] { return r.error.has_value(); });
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(r.error->code, Errc::Upstream);
  EXPECT_EQ(r.failure, UpstreamFailure::Refused);
  ctx_->defer_delete(std::move(lease->conn));
}

}  // namespace
}  // namespace tlsfront::upstream
