// HTTP/3 session resumption and early data (0-RTT) with a real client,
// ngtcp2's gtlsclient: its --session-file and --tp-file keep what a
// returning client keeps (the ticket, the server's transport parameters)
// and it sends its requests in 0-RTT when it has them. A resumed session
// on another node that shares the ticket keys; a GET in early data goes up
// before the handshake with Early-Data: 1, a POST waits for it; a recorded
// first flight replayed to the same node and to another sharing a Redis
// store is forwarded once (tls/EARLY_DATA_REPLAY.md).
#include <sys/stat.h>

#include <string>
#include <vector>

#include "harness.h"
#include "shared/redis_server.h"

namespace tlsfront::itest {
namespace {

constexpr const char* kGtlsclient = "/usr/bin/gtlsclient";

class Http3EarlyData : public ProxyTest {
 protected:
  Http3EarlyData() : proxy_b_(dir_b_), redis_(dir_) {}
  void SetUp() override {
    ProxyTest::SetUp();
    write_file(dir_.file("ticket.key"), std::string(80, '\x5a'));
    ::chmod(dir_.file("ticket.key").c_str(), 0600);
  }
  void TearDown() override {
    if (proxy_b_.process().pid() > 0) proxy_b_.stop();
    ProxyTest::TearDown();
    redis_.stop();
  }
  // [tls] lines: early data on, the ticket key file both nodes share, and
  // with `redis` the shared store.
  std::string tls_extra(bool redis) const {
    std::string t = "early_data = true\n";
    if (redis) {
      t += "[tls.session_cache]\nstore = \"redis\"\nredis = \"127.0.0.1:" + std::to_string(redis_.port()) +
           "\"\nredis_timeout = \"500ms\"\n";
    }
    return t + "[tls.ticket_keys]\nsource = \"files\"\nfiles = [\"" + dir_.file("ticket.key") + "\"]\n";
  }
  bool start_nodes(bool two, bool redis = false) {
    ProxyOptions o;
    o.listen_extra = "quic = true";
    o.tls_extra = tls_extra(redis);
    if (!start_proxy(o)) return false;
    if (!two) return true;
    o.upstream_servers = {backend_.address()};
    return proxy_b_.start(o);
  }
  // gtlsclient to 127.0.0.1:`port` fetching `paths`, with the session and
  // transport parameters of the previous run (written back after this one).
  RunResult fetch(int port, const std::vector<std::string>& paths, std::vector<std::string> extra = {},
                  int uri_port = 0) {
    std::vector<std::string> argv{kGtlsclient,
                                  "--exit-on-all-streams-close",
                                  "--no-quic-dump",
                                  "--no-http-dump",
                                  "--timeout=5s",
                                  "--session-file=" + dir_.file("session.pem"),
                                  "--tp-file=" + dir_.file("tp.pem")};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back("127.0.0.1");
    argv.push_back(std::to_string(port));
    for (const auto& p : paths) argv.push_back("https://localhost:" + std::to_string(uri_port ? uri_port : port) + p);
    return run_command(dir_, argv, milliseconds(20'000));
  }
  static double metric(const Proxy& proxy, const std::string& series) {
    auto m = scrape_metrics(proxy.admin_port());
    auto it = m.find(series);
    return it == m.end() ? 0 : it->second;
  }
  // The access-log line of `path` in `proxy`'s log.
  static std::string log_line(const Proxy& proxy, const std::string& path) {
    std::string found;
    wait_until([&] {
      for (const auto& line : proxy.wait_log_lines(0, milliseconds(0))) {
        if (json_string(line, "path") == path) found = line;
      }
      return !found.empty();
    });
    return found;
  }
  // The backend's requests whose request line starts with `line`.
  size_t requests_with(const std::string& line) {
    size_t n = 0;
    for (const auto& name : backend_.records("req")) n += backend_.read_record(name).rfind(line, 0) == 0;
    return n;
  }
  std::string request_with(const std::string& line) {
    for (const auto& name : backend_.records("req")) {
      std::string r = backend_.read_record(name);
      if (r.rfind(line, 0) == 0) return r;
    }
    return "";
  }

  TempDir dir_b_;
  Proxy proxy_b_;
  RedisServer redis_;
};

// A ticket issued by node A resumes on node B: both derive the same GnuTLS
// ticket master from the shared ticket key file.
TEST_F(Http3EarlyData, ASessionResumesOnAnotherNodeSharingTheTicketKeys) {
  ASSERT_TRUE(start_nodes(true));
  RunResult first = fetch(port(), {"/json/1"}, {"--disable-early-data"});
  ASSERT_TRUE(first.status.exited && first.status.code == 0) << first.err;
  std::string line_a = log_line(proxy_, "/json/1");
  EXPECT_EQ(json_raw(line_a, "ssl_session_reused"), "false") << line_a;

  RunResult second = fetch(proxy_b_.port(), {"/json/2"}, {"--disable-early-data"});
  ASSERT_TRUE(second.status.exited && second.status.code == 0) << second.err;
  std::string line_b = log_line(proxy_b_, "/json/2");
  EXPECT_EQ(json_raw(line_b, "ssl_session_reused"), "true") << line_b;
  EXPECT_EQ(json_string(line_b, "protocol"), "HTTP/3.0") << line_b;
  EXPECT_EQ(metric(proxy_b_, "tlsfront_tls_handshakes_total{kind=\"resumed_ticket\"}"), 1);
}

// RFC 8470 over HTTP/3: the GET read in early data goes up before the
// handshake completes, marked Early-Data: 1; the POST (not an
// early_data_methods method) is held until it completes and goes up
// unmarked. Both lines say ssl_early_data.
TEST_F(Http3EarlyData, AGetGoesUpEarlyAndAPostWaitsForTheHandshake) {
  ASSERT_TRUE(start_nodes(false));
  ASSERT_EQ(fetch(port(), {"/json/1"}).status.code, 0);
  RunResult r = fetch(port(), {"/json/early"});
  ASSERT_TRUE(r.status.exited && r.status.code == 0) << r.err;
  std::string line = log_line(proxy_, "/json/early");
  EXPECT_EQ(json_raw(line, "ssl_early_data"), "true") << line;
  EXPECT_EQ(json_raw(line, "ssl_session_reused"), "true") << line;
  ASSERT_TRUE(wait_until([&] { return requests_with("GET /json/early ") == 1; }));
  EXPECT_NE(request_with("GET /json/early ").find("Early-Data: 1\r\n"), std::string::npos)
      << request_with("GET /json/early ");

  write_file(dir_.file("body"), "posted in early data");
  RunResult post = fetch(port(), {"/echo"}, {"-m", "POST", "-d", dir_.file("body")});
  ASSERT_TRUE(post.status.exited && post.status.code == 0) << post.err;
  std::string post_line = log_line(proxy_, "/echo");
  EXPECT_EQ(json_raw(post_line, "ssl_early_data"), "true") << post_line;
  EXPECT_EQ(json_raw(post_line, "status"), "200") << post_line;
  ASSERT_TRUE(wait_until([&] { return requests_with("POST /echo ") == 1; }));
  EXPECT_EQ(request_with("POST /echo ").find("Early-Data"), std::string::npos) << request_with("POST /echo ");
  auto m = scrape_metrics(proxy_.admin_port());
  EXPECT_EQ(m["tlsfront_early_data_accepted_total"], 2);
  EXPECT_EQ(m["tlsfront_early_data_requests_total{action=\"sent\"}"], 1);
  EXPECT_EQ(m["tlsfront_early_data_requests_total{action=\"held\"}"], 1);
}

// An attacker on the path records the client's first flight (its Initial
// with the ClientHello, and its 0-RTT packets with the GET) and sends it
// again, to node B (same ticket keys, same Redis) and to node A itself. The
// GET reaches the backend once: node A's own recording refuses the replay
// in TLS; node B's Redis claim finds A's record, so B keeps the request
// waiting for a handshake that never completes.
TEST_F(Http3EarlyData, AReplayedFirstFlightGoesUpOnceInTheCluster) {
  if (find_tool("redis-server").empty()) GTEST_SKIP() << "redis-server not installed";
  ASSERT_TRUE(redis_.start());
  ASSERT_TRUE(start_nodes(true, true));
  ASSERT_EQ(fetch(port(), {"/json/1"}).status.code, 0);

  Process relay;
  ASSERT_TRUE(relay.start({kPython, std::string(TLSFRONT_SOURCE_DIR) + "/tests/integration/peers/quic_replay_relay.py",
                           std::to_string(port()), std::to_string(proxy_b_.port()), std::to_string(port())},
                          dir_.file("relay.out"), dir_.file("relay.err")));
  int relay_port = 0;
  ASSERT_TRUE(wait_until([&] {
    const std::string out = relay.out();
    if (out.rfind("port ", 0) != 0) return false;
    relay_port = std::stoi(out.substr(5));
    return true;
  })) << relay.err();
  RunResult r = fetch(relay_port, {"/json/replayed"}, {}, port());
  ASSERT_TRUE(r.status.exited && r.status.code == 0) << r.err;
  auto exited = relay.wait_exit(milliseconds(10'000));
  ASSERT_TRUE(exited && exited->exited && exited->code == 0) << relay.out() << relay.err();
  EXPECT_NE(relay.out().find("replayed"), std::string::npos) << relay.out();

  std::string line = log_line(proxy_, "/json/replayed");
  EXPECT_EQ(json_raw(line, "ssl_early_data"), "true") << line;
  ASSERT_TRUE(wait_until([&] {
    return metric(proxy_b_, "tlsfront_early_data_rejected_total{reason=\"replay\"}") == 1;
  })) << "node B did not find node A's claim";
  ASSERT_TRUE(wait_until([&] { return metric(proxy_, "tlsfront_early_data_rejected_total{reason=\"replay\"}") == 1; }))
      << "node A did not refuse its own replay";
  EXPECT_EQ(requests_with("GET /json/replayed "), 1u) << "a replayed early request was forwarded";
  EXPECT_TRUE(proxy_b_.wait_log_lines(0, milliseconds(0)).empty()) << "node B logged a replayed request";
}

}  // namespace
}  // namespace tlsfront::itest
