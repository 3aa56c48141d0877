// [[upstream]] servers by DNS name against a real DNS server: dnsmasq on
// 127.0.0.1 (a free port), its answers read from a hosts file the test
// rewrites and reloads (SIGHUP) mid-test, with a 1 s TTL; two real backends
// on 127.0.0.2 and 127.0.0.3, same port, the name pointing at either or
// both. Traffic follows a changed answer without a failed request, a name
// that stops resolving keeps its last addresses, and a name that does not
// resolve at start-up stops the start with its position (or, with
// resolve_at_start = false, joins once it resolves).
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "load.h"

namespace tlsfront::itest {
namespace {

constexpr const char* kDnsmasq = "/usr/sbin/dnsmasq";

// A port on 127.0.0.1 free for both UDP and TCP (dnsmasq listens on both):
// bound, read, closed; dnsmasq takes it next (start() retries on a race).
int free_dns_port() {
  for (int attempt = 0; attempt < 20; ++attempt) {
    int udp = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sin;
    int port = -1;
    if (udp >= 0 && ::bind(udp, reinterpret_cast<sockaddr*>(&sin), sizeof sin) == 0 &&
        ::getsockname(udp, reinterpret_cast<sockaddr*>(&sin), &len) == 0) {
      port = ntohs(sin.sin_port);
    }
    const int tcp = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const bool tcp_free = port > 0 && tcp >= 0 && ::bind(tcp, reinterpret_cast<sockaddr*>(&sin), sizeof sin) == 0;
    if (udp >= 0) ::close(udp);
    if (tcp >= 0) ::close(tcp);
    if (tcp_free) return port;
  }
  return -1;
}

// This process's user: dnsmasq keeps it (as root it would become "nobody",
// who cannot read the test's private directory).
std::string user_name() {
  const passwd* pw = ::getpwuid(::geteuid());
  return pw != nullptr ? pw->pw_name : "root";
}

// dnsmasq answering only from `hosts` (no upstream servers, no /etc/hosts),
// every answer with a TTL of 1 s, authoritative for .test (a name it does
// not have is NXDOMAIN, as from a real zone).
class Dnsmasq {
 public:
  explicit Dnsmasq(const TempDir& dir) : dir_(dir), hosts_(dir.file("dns.hosts")), log_(dir.file("dns.log")) {}
  // Fails the test (with dnsmasq's own words) when it never came up; a port
  // taken between free_dns_port() and dnsmasq's bind is retried.
  bool start(const std::string& hosts) {
    write_file(hosts_, hosts);
    for (int attempt = 0; attempt < 3; ++attempt) {
      port_ = free_dns_port();
      if (port_ <= 0) break;
      if (!process_.start({kDnsmasq, "--keep-in-foreground", "--port=" + std::to_string(port_),
                           "--listen-address=127.0.0.1", "--bind-interfaces", "--no-resolv", "--no-hosts",
                           "--addn-hosts=" + hosts_, "--local=/test/", "--local-ttl=1", "--log-facility=" + log_,
                           "--pid-file=", "--user=" + user_name()},
                          dir_.file("dns.out"), dir_.file("dns.err"))) {
        break;
      }
      // Ready once it has read the names (it logs "started" before).
      const bool ready = wait_until([&] {
        return !process_.running() || read_file(log_).find("read " + hosts_) != std::string::npos;
      });
      if (ready && process_.running()) return true;
      process_.stop();
    }
    ADD_FAILURE() << "dnsmasq did not start: " << diagnostics();
    return false;
  }
  // New answers: the hosts file rewritten, then re-read (SIGHUP).
  void answer(const std::string& hosts) {
    write_file(hosts_, hosts);
    process_.signal(SIGHUP);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string diagnostics() const { return process_.err() + read_file(log_); }

 private:
  const TempDir& dir_;
  std::string hosts_;
  std::string log_;
  Process process_;
  int port_ = 0;
};

class UpstreamDns : public ::testing::Test {
 protected:
  UpstreamDns() : dns_(dir_), a_(dir_, "127.0.0.2", 0, "-a"), proxy_(dir_) {}

  // The DNS server answering `hosts`, both backends, and tlsfront with one
  // upstream, "api.test" on the backends' port, `extra` in its table.
  bool start(const std::string& hosts) {
    if (!dns_.start(hosts)) return false;
    if (!a_.start()) return false;
    b_ = std::make_unique<Backend>(dir_, "127.0.0.3", a_.port(), "-b");  // the same port
    if (!b_->start()) return false;
    ProxyOptions o;
    o.upstream_servers = {name()};
    o.extra = "[resolver]\naddresses = [\"" + dns_.address() + "\"]\n";
    return proxy_.start(o);
  }
  std::string name() const { return "api.test:" + std::to_string(a_.port()); }

  TempDir dir_;
  Dnsmasq dns_;
  Backend a_;
  std::unique_ptr<Backend> b_;
  Proxy proxy_;
};

TEST_F(UpstreamDns, TrafficFollowsAChangedAnswerWithoutAFailedRequest) {
  ASSERT_TRUE(start("127.0.0.2 api.test\n"));
  Load load(proxy_.port(), 2);
  ASSERT_TRUE(wait_until([&] { return a_.count("req") >= 20; })) << "no traffic to 127.0.0.2";
  EXPECT_EQ(b_->count("req"), 0u);

  dns_.answer("127.0.0.3 api.test\n");
  // Within the TTL (1 s) and a query: the new address takes the traffic.
  ASSERT_TRUE(wait_until([&] { return b_->count("req") >= 20; })) << "traffic did not move to 127.0.0.3";
  const size_t a_after = a_.count("req");
  const size_t b_after = b_->count("req");
  ASSERT_TRUE(wait_until([&] { return b_->count("req") >= b_after + 50; }));
  EXPECT_EQ(a_.count("req"), a_after) << "requests still reach the address the name no longer has";

  // Both: both get requests.
  dns_.answer("127.0.0.2 api.test\n127.0.0.3 api.test\n");
  ASSERT_TRUE(wait_until([&] { return a_.count("req") >= a_after + 20; })) << "127.0.0.2 did not rejoin";
  load.finish();
  EXPECT_EQ(load.failed.load(), 0) << load.ok.load() << " requests succeeded";
  EXPECT_GT(load.ok.load(), 100);
  const std::string err = proxy_.process().err();
  EXPECT_NE(err.find("upstream server " + name() + ": now resolves to 127.0.0.3:"), std::string::npos) << err;
}

TEST_F(UpstreamDns, ANameThatStopsResolvingKeepsItsLastAddresses) {
  ASSERT_TRUE(start("127.0.0.2 api.test\n"));
  ASSERT_EQ(http_get(proxy_.port(), "/before").status, 200);
  dns_.answer("");  // no record at all
  ASSERT_TRUE(wait_until([&] { return proxy_.process().err().find("does not resolve") != std::string::npos; }))
      << proxy_.process().err();
  for (int i = 0; i < 10; ++i) {
    HttpResponse r = http_get(proxy_.port(), "/after");
    ASSERT_EQ(r.curl_code, 0) << r.error;
    EXPECT_EQ(r.status, 200) << i;
  }
  EXPECT_EQ(a_.count("req"), 11u);
  const std::string err = proxy_.process().err();
  EXPECT_NE(err.find("keeping its last addresses (127.0.0.2:"), std::string::npos) << err;
  const std::string upstreams =
      plain_request(proxy_.admin_port(), "GET /upstreams HTTP/1.1\r\nHost: admin\r\n\r\n");
  EXPECT_NE(upstreams.find("\"server\":\"" + name() + "\",\"address\":\"127.0.0.2:" + std::to_string(a_.port()) +
                           "\",\"dns\":\"failing\",\"dns_error\":"),
            std::string::npos)
      << upstreams;
  // Once per change of state, not once per retry.
  ::usleep(2'500'000);  // two more retries (1 s apart), which must not log
  const std::string later = proxy_.process().err();
  size_t lines = 0;
  for (size_t at = later.find("does not resolve"); at != std::string::npos; at = later.find("does not resolve", at + 1))
    ++lines;
  EXPECT_EQ(lines, 1u) << later;
  // The metrics say the same: answers, then failures, and an answer that ages.
  auto metrics = scrape_metrics(proxy_.admin_port());
  const std::string labels = "{name=\"" + name() + "\"";
  EXPECT_GE(metrics["tlsfront_upstream_dns_resolutions_total" + labels + ",result=\"ok\"}"], 1.0);
  EXPECT_GE(metrics["tlsfront_upstream_dns_resolutions_total" + labels + ",result=\"no_address\"}"] +
                metrics["tlsfront_upstream_dns_resolutions_total" + labels + ",result=\"nxdomain\"}"],
            3.0);
  EXPECT_GE(metrics["tlsfront_upstream_dns_answer_age_seconds" + labels + "}"], 2.5);
}

TEST_F(UpstreamDns, ANameThatDoesNotResolveAtStartUpStopsTheStartWithItsPosition) {
  ASSERT_TRUE(dns_.start("127.0.0.2 other.test\n"));
  ASSERT_TRUE(a_.start());
  ProxyOptions o;
  o.upstream_servers = {"api.test:" + std::to_string(a_.port())};
  o.extra = "[resolver]\naddresses = [\"" + dns_.address() + "\"]\n";
  const std::string path = dir_.file("tlsfront.toml");
  write_file(path, make_config(o, kAnyPort, dir_.file("access.log")));
  Process p;
  ASSERT_TRUE(p.start({TLSFRONT_BINARY, "--config", path}, dir_.file("start.out"), dir_.file("start.err")));
  auto status = p.wait_exit(milliseconds(15'000));
  ASSERT_TRUE(status.has_value()) << "tlsfront did not exit";
  EXPECT_NE(status->code, 0);
  const std::string err = p.err();
  EXPECT_NE(err.find("tlsfront.toml:"), std::string::npos) << err;
  EXPECT_NE(err.find("upstream[0].servers[0]: \"api.test:" + std::to_string(a_.port()) + "\" does not resolve"),
            std::string::npos)
      << err;
}

TEST_F(UpstreamDns, WithResolveAtStartFalseANameJoinsOnceItResolves) {
  ASSERT_TRUE(dns_.start("127.0.0.2 other.test\n"));
  ASSERT_TRUE(a_.start());
  ProxyOptions o;
  o.upstream_servers = {"api.test:" + std::to_string(a_.port())};
  o.upstream_extra = "resolve_at_start = false\n";
  o.extra = "[resolver]\naddresses = [\"" + dns_.address() + "\"]\n";
  ASSERT_TRUE(proxy_.start(o));
  EXPECT_EQ(http_get(proxy_.port(), "/none").status, 502);  // no address yet: no live upstream
  dns_.answer("127.0.0.2 api.test\n");
  EXPECT_TRUE(wait_until([&] { return http_get(proxy_.port(), "/joined").status == 200; }));
  EXPECT_GE(a_.count("req"), 1u);
}

}  // namespace
}  // namespace tlsfront::itest
