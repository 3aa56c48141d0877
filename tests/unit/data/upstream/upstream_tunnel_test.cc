// The hand-over at a 101: an UpstreamConnection gives its socket to an
// UpstreamTunnel (data/upstream/upstream_tunnel.h) with no byte lost or
// reordered either way, against a raw loopback backend driven by the test.
#include "data/upstream/upstream_tunnel.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "data/upstream/upstream_connection.h"
#include "support/loop_test.h"

namespace tlsfront::upstream {
namespace {

// The events in order; the client bytes it sends once the 101's head is in
// (as a session passes on what its client sent after the request).
struct TunnelRecorder : UpstreamHandler {
  std::vector<std::string> events;
  std::string body;
  bool complete = false;
  std::unique_ptr<UpstreamTunnel> tunnel;
  void on_upstream_connected() override {}
  void on_upstream_head(http::ResponseHead&& head, bool) override {
    events.push_back("head " + std::to_string(head.status));
    if (tunnel) tunnel->send("held-by-the-client ");
  }
  void on_upstream_body(std::string_view d) override {
    events.push_back("body " + std::string(d));
    body.append(d);
  }
  void on_upstream_complete() override {
    events.push_back("complete");
    complete = true;
  }
  void on_upstream_error(UpstreamFailure, Error e) override { events.push_back("error " + e.message()); }
  void on_upstream_writable() override {}
  void on_upstream_tunnel(std::unique_ptr<UpstreamTunnel> t) override {
    events.push_back("tunnel");
    tunnel = std::move(t);
  }
};

class UpstreamTunnelTest : public harness::LoopTest {
 protected:
  void SetUp() override {
    LoopTest::SetUp();
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    ASSERT_GE(listen_fd_, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    ASSERT_EQ(::listen(listen_fd_, 4), 0);
    socklen_t len = sizeof(a);
    ASSERT_EQ(::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len), 0);
    std::memcpy(&addr_, &a, sizeof(a));
    cfg_.name = "t";
  }
  void release_objects() override {
    rec_.tunnel.reset();
    conn_.reset();
    if (peer_fd_ >= 0) ::close(peer_fd_);
    ::close(listen_fd_);
  }
  // Reads what the proxy sent so far into `seen_`; true once it sent EOF.
  bool read_peer() {
    char buf[4096];
    for (;;) {
      ssize_t n = ::recv(peer_fd_, buf, sizeof(buf), MSG_DONTWAIT);
      if (n > 0) {
        seen_.append(buf, static_cast<size_t>(n));
        continue;
      }
      return n == 0;
    }
  }
  void send_peer(std::string_view bytes) {
    ASSERT_EQ(::send(peer_fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  }

  int listen_fd_ = -1;
  int peer_fd_ = -1;
  sockaddr_storage addr_{};
  std::string seen_;
  config::Upstream cfg_;
  TunnelRecorder rec_;
  std::unique_ptr<UpstreamConnection> conn_;
};

TEST_F(UpstreamTunnelTest, TheSocketChangesHandsAtThe101WithNoByteLostOrReordered) {
  conn_ = std::make_unique<UpstreamConnection>(&loop_, nullptr, cfg_);
  ASSERT_TRUE(conn_->connect(addr_).ok());
  conn_->attach(&rec_, false, /*upgrade=*/true);
  const std::string request = "GET /ws HTTP/1.1\r\nHost: t\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n";
  conn_->send(request);
  ASSERT_TRUE(run_until([&] { return (peer_fd_ = ::accept(listen_fd_, nullptr, nullptr)) >= 0; }));
  ASSERT_TRUE(run_until([&] { return read_peer(), seen_.size() >= request.size(); }));
  EXPECT_EQ(seen_, request);

  // The 101 and the first tunnel bytes in one write: the connection passes
  // on the head and those bytes, the socket is the tunnel's from the head on.
  send_peer("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nfirst ");
  ASSERT_TRUE(run_until([&] { return rec_.body == "first "; }));
  ASSERT_NE(rec_.tunnel, nullptr);
  EXPECT_EQ(conn_->state(), UpstreamConnection::State::Closed);
  EXPECT_EQ((std::vector<std::string>{"tunnel", "head 101", "body first "}), rec_.events);
  conn_.reset();  // the tunnel goes on without it

  send_peer("second");
  ASSERT_TRUE(run_until([&] { return rec_.body == "first second"; }));

  rec_.tunnel->send("after-the-101");
  rec_.tunnel->shutdown_write();  // a FIN once everything queued is written
  ASSERT_TRUE(run_until([&] { return read_peer(); }));
  EXPECT_EQ(seen_, request + "held-by-the-client after-the-101");
  rec_.tunnel->send("never");  // nothing goes after the FIN

  ::close(std::exchange(peer_fd_, -1));  // the backend's FIN ends the tunnel
  ASSERT_TRUE(run_until([&] { return rec_.complete; }));
  EXPECT_EQ(rec_.tunnel->state(), UpstreamTunnel::State::Closed);
  EXPECT_EQ(rec_.events.back(), "complete");
}

TEST_F(UpstreamTunnelTest, AWriteInFlightAtTheHandOverCompletesForTheTunnel) {
  conn_ = std::make_unique<UpstreamConnection>(&loop_, nullptr, cfg_);
  ASSERT_TRUE(conn_->connect(addr_).ok());
  conn_->attach(&rec_, false, /*upgrade=*/true);
  // A request the backend does not read at once: most of it waits in the
  // writer's queue or in flight when the 101 comes.
  const std::string request =
      "POST /ws HTTP/1.1\r\nHost: t\r\nConnection: Upgrade\r\nUpgrade: x\r\nContent-Length: 8388608\r\n\r\n";
  const std::string body(8 * 1024 * 1024, 'b');
  conn_->send(request);
  conn_->send(body);
  ASSERT_TRUE(run_until([&] { return (peer_fd_ = ::accept(listen_fd_, nullptr, nullptr)) >= 0; }));
  settle();
  ASSERT_GT(conn_->buffered_bytes(), 0u) << "the socket took the whole body at once: nothing is in flight";
  send_peer("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: x\r\n\r\n");
  ASSERT_TRUE(run_until([&] { return rec_.tunnel != nullptr; }));
  ASSERT_GT(rec_.tunnel->buffered_bytes(), 0u);
  rec_.tunnel->shutdown_write();
  ASSERT_TRUE(run_until([&] { return read_peer(); }));
  EXPECT_EQ(seen_.size(), request.size() + body.size() + std::string("held-by-the-client ").size());
  EXPECT_EQ(seen_.substr(request.size(), body.size()), body);
  EXPECT_EQ(rec_.tunnel->bytes_written(), seen_.size());
  EXPECT_EQ(std::count(rec_.events.begin(), rec_.events.end(), "complete"), 0);
}

}  // namespace
}  // namespace tlsfront::upstream
