// UpstreamPool on a real uv loop against an in-loop HTTP/1.1 server on
// 127.0.0.1:0 (a LoopTest): reuse, backend close of an idle
// connection, pool bounds, keepalive_requests, round-robin with failures.
#include "data/upstream/upstream_pool.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "support/uv_loop_test.h"
#include "util/loop_context.h"

namespace tlsfront::upstream {
namespace {

// Answers every request it reads with a fixed response; can close its peers.
class TinyServer {
 public:
  explicit TinyServer(uv_loop_t* loop) : loop_(loop) {
    listener_.init([loop](uv_tcp_t* h) { return uv_tcp_init(loop, h); }, this);
    sockaddr_in a{};
    uv_ip4_addr("127.0.0.1", 0, &a);
    uv_tcp_bind(listener_.get(), reinterpret_cast<sockaddr*>(&a), 0);
    uv_listen(listener_.stream(), 16, [](uv_stream_t* s, int) { static_cast<TinyServer*>(s->data)->accept(); });
    sockaddr_storage ss{};
    int len = sizeof(ss);
    uv_tcp_getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&ss), &len);
    port_ = ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  }
  uint16_t port() const { return port_; }
  int accepted() const { return accepted_; }
  void close_peers() { peers_.clear(); }

 private:
  struct Peer {
    UvHandle<uv_tcp_t> tcp;
    std::string in;
  };
  void accept() {
    auto peer = std::make_unique<Peer>();
    peer->tcp.init([this](uv_tcp_t* h) { return uv_tcp_init(loop_, h); }, peer.get());
    uv_accept(listener_.stream(), peer->tcp.stream());
    uv_read_start(peer->tcp.stream(), LoopContext::alloc_cb, [](uv_stream_t* s, ssize_t n, const uv_buf_t* b) {
      auto* p = static_cast<Peer*>(s->data);
      if (n <= 0) return;
      p->in.append(b->base, static_cast<size_t>(n));
      if (p->in.find("\r\n\r\n") == std::string::npos) return;
      p->in.clear();
      static const char kResp[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
      auto* req = new uv_write_t;
      uv_buf_t buf = uv_buf_init(const_cast<char*>(kResp), sizeof(kResp) - 1);
      uv_write(req, s, &buf, 1, [](uv_write_t* r, int) { delete r; });
    });
    ++accepted_;
    peers_.push_back(std::move(peer));
  }

  uv_loop_t* loop_;
  UvHandle<uv_tcp_t> listener_;
  std::vector<std::unique_ptr<Peer>> peers_;
  uint16_t port_ = 0;
  int accepted_ = 0;
};

// Records what the connection reports for one exchange.
struct Recorder : UpstreamConnection::Handler {
  bool complete = false;
  std::string body;
  int status = 0;
  std::optional<Error> error;
  void on_upstream_connected() override {}
  void on_upstream_head(http::ResponseHead&& head, bool) override { status = head.status; }
  void on_upstream_body(std::string_view d) override { body.append(d); }
  void on_upstream_complete() override { complete = true; }
  void on_upstream_error(Error e) override { error = std::move(e); }
  void on_upstream_writable() override {}
};

class UpstreamPoolTest : public UvLoopTest {
 protected:
  void SetUp() override {
    UvLoopTest::SetUp();
    ctx_ = std::make_unique<LoopContext>(&loop_);
    server_ = std::make_unique<TinyServer>(&loop_);
    cfg_.name = "t";
    cfg_.servers = {config::Endpoint{"127.0.0.1", server_->port()}};
  }
  void TearDown() override {
    pool_.reset();
    server_.reset();
    ctx_->run_deferred();
    ctx_->close();
    uv_run(&loop_, UV_RUN_DEFAULT);
    ctx_.reset();
    UvLoopTest::TearDown();
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

  std::unique_ptr<LoopContext> ctx_;
  std::unique_ptr<TinyServer> server_;
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

TEST_F(UpstreamPoolTest, KeepaliveZeroNeverPools) {
  cfg_.keepalive = 0;
  pool_ = std::make_unique<UpstreamPool>(&loop_, cfg_, cfg_.servers[0]);
  EXPECT_FALSE(exchange());
  EXPECT_EQ(pool_->idle_count(), 0u);
  EXPECT_FALSE(exchange());
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
  // Port of a listener that is gone: nothing listens there any more.
  uint16_t dead = server_->port();
  server_.reset();
  config::Endpoint ep{"127.0.0.1", dead};
  pool_ = std::make_unique<UpstreamPool>(&loop_, cfg_, ep);
  auto lease = pool_->acquire(true);
  ASSERT_TRUE(lease.ok());
  Recorder r;
  lease->conn->attach(&r, false);
  lease->conn->send("GET / HTTP/1.1\r\nHost: t\r\n\r\n");
  run_until([&] { return r.error.has_value(); });
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(r.error->code, Errc::Upstream);
  ctx_->defer_delete(std::move(lease->conn));
}

TEST_F(UpstreamPoolTest, GroupRoundRobinSkipsFailedServers) {
  cfg_.servers = {config::Endpoint{"127.0.0.1", 1}, config::Endpoint{"127.0.0.1", 2},
                  config::Endpoint{"127.0.0.1", 3}};
  UpstreamGroup group(&loop_, cfg_);
  UpstreamPool* a = group.pick({});
  UpstreamPool* b = group.pick({});
  UpstreamPool* c = group.pick({});
  EXPECT_NE(a, b);
  EXPECT_NE(b, c);
  EXPECT_EQ(group.pick({}), a);
  b->mark_failed();
  for (int i = 0; i < 6; ++i) EXPECT_NE(group.pick({}), b);
  // Every server tried: nothing left.
  EXPECT_EQ(group.pick({a, b, c}), nullptr);
  // All untried servers down: still one to try (as nginx).
  a->mark_failed();
  c->mark_failed();
  EXPECT_NE(group.pick({}), nullptr);
}

}  // namespace
}  // namespace tlsfront::upstream
