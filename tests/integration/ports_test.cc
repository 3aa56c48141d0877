// Port 0: a [[listen]] address with port 0 binds one free port that every
// worker's socket shares, and the start-up log names it; a reload keeping
// the address keeps those sockets; one added by a reload logs its real port
// too; [admin] with port 0 logs its port; port 0 twice on one host is a
// precise configuration error. The sockets are seen from outside, in
// /proc/<pid>/fd and /proc/<pid>/net/tcp{,6}.
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <set>
#include <sstream>

#include "harness.h"

namespace tlsfront::itest {
namespace {

// The inodes of the listening TCP sockets process `pid` holds on `port`
// (any local address; -1: on any port).
std::set<unsigned long> listening_sockets(pid_t pid, int port = -1) {
  const std::string proc = "/proc/" + std::to_string(pid);
  std::set<unsigned long> held;  // socket inodes among its descriptors
  if (DIR* d = ::opendir((proc + "/fd").c_str())) {
    while (dirent* e = ::readdir(d)) {
      char target[64] = {};
      const std::string link = proc + "/fd/" + e->d_name;
      if (::readlink(link.c_str(), target, sizeof(target) - 1) <= 0) continue;
      unsigned long inode = 0;
      if (std::sscanf(target, "socket:[%lu]", &inode) == 1) held.insert(inode);
    }
    ::closedir(d);
  }
  std::set<unsigned long> out;
  for (const char* table : {"/net/tcp", "/net/tcp6"}) {
    std::istringstream lines(read_file(proc + table));
    std::string line;
    std::getline(lines, line);  // the header
    while (std::getline(lines, line)) {
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
      std::istringstream f(line);
      std::string sl, local, remote, state, queues, timer, retransmits, uid, timeout;
      unsigned long inode = 0;
      f >> sl >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
      const size_t colon = local.rfind(':');
      if (state != "0A" || colon == std::string::npos) continue;  // 0A: TCP_LISTEN
      const int local_port = std::stoi(local.substr(colon + 1), nullptr, 16);
      if ((port < 0 || local_port == port) && held.count(inode)) out.insert(inode);
    }
  }
  return out;
}

class Ports : public ProxyTest {
 protected:
  bool stderr_has(const std::string& s) {
    return wait_until([&] { return proxy_.process().err().find(s) != std::string::npos; });
  }
  // The config file again, with `change` applied, and SIGHUP.
  void reload(const std::function<void(std::string&)>& change = {}) {
    std::string text = read_file(proxy_.config_path());
    if (change) change(text);
    write_file(proxy_.config_path(), text);
    proxy_.process().signal(SIGHUP);
  }
};

// Two workers, one port: the one the log names, held by two sockets of the
// proxy; a reload with the same (port-0) address keeps both.
TEST_F(Ports, WorkersShareTheLoggedPortAndAReloadKeepsTheirSockets) {
  ProxyOptions o;
  o.workers = 2;
  ASSERT_TRUE(start_proxy(o));
  ASSERT_NE(read_file(proxy_.config_path()).find("address = \"127.0.0.1:0\""), std::string::npos);
  EXPECT_TRUE(stderr_has("listening on 127.0.0.1:" + std::to_string(port()) + " (2 workers)"));
  const std::set<unsigned long> sockets = listening_sockets(proxy_.process().pid(), port());
  EXPECT_EQ(sockets.size(), 2u) << "listening sockets of the proxy on port " << port();
  const std::set<unsigned long> all = listening_sockets(proxy_.process().pid());  // [admin]'s too
  EXPECT_EQ(http_get(port(), "/before").status, 200);

  reload();
  ASSERT_TRUE(stderr_has("reload: generation 2 is live")) << proxy_.process().err();
  EXPECT_EQ(proxy_.process().err().find("reload: listening on"), std::string::npos) << proxy_.process().err();
  EXPECT_EQ(listening_sockets(proxy_.process().pid(), port()), sockets) << "not the same sockets after the reload";
  EXPECT_EQ(listening_sockets(proxy_.process().pid()), all) << "the reload bound or closed a listening socket";
  EXPECT_EQ(http_get(port(), "/after").status, 200);
}

// A port-0 address added by a reload: one free port for both workers, named
// by the reload's log line, and named again when a later reload removes it.
TEST_F(Ports, ReloadAddsAndRemovesAPortZeroAddressNamingItsPort) {
  ProxyOptions o;
  o.workers = 2;
  ASSERT_TRUE(start_proxy(o));
  const std::string added = "[[listen]]\naddress = \"[::1]:0\"\n\n";
  reload([&](std::string& text) { text.replace(text.find("[tls]"), 5, added + "[tls]"); });
  ASSERT_TRUE(stderr_has("reload: generation 2 is live")) << proxy_.process().err();
  const auto v6 = logged_port(proxy_.process().err(), "reload: listening on [::1]:", "\n");
  ASSERT_TRUE(v6) << proxy_.process().err();
  EXPECT_NE(*v6, port());
  EXPECT_EQ(listening_sockets(proxy_.process().pid(), *v6).size(), 2u);

  reload([&](std::string& text) { text.erase(text.find(added), added.size()); });
  ASSERT_TRUE(stderr_has("reload: generation 3 is live")) << proxy_.process().err();
  EXPECT_TRUE(stderr_has("no longer listening on [::1]:" + std::to_string(*v6) + ";")) << proxy_.process().err();
  EXPECT_TRUE(wait_until([&] { return listening_sockets(proxy_.process().pid(), *v6).empty(); }));
  EXPECT_EQ(listening_sockets(proxy_.process().pid(), port()).size(), 2u);
}

// [admin] address = "127.0.0.1:0": the log names the port it got, and the
// admin listener answers there.
TEST_F(Ports, AdminPortZeroIsLogged) {
  ASSERT_TRUE(start_proxy({}));
  ASSERT_NE(read_file(proxy_.config_path()).find("[admin]\naddress = \"127.0.0.1:0\""), std::string::npos);
  const auto admin = logged_port(proxy_.process().err(), "admin: http://127.0.0.1:", "/metrics and /healthz");
  ASSERT_TRUE(admin) << proxy_.process().err();
  EXPECT_EQ(*admin, proxy_.admin_port());
  EXPECT_NE(*admin, port());
  EXPECT_EQ(listening_sockets(proxy_.process().pid(), *admin).size(), 1u);
  const std::string r = plain_request(*admin, "GET /healthz HTTP/1.1\r\nHost: admin\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r;
}

// Port 0 twice on one host: the error names both places, at start-up and
// with --test, before anything is bound.
TEST_F(Ports, PortZeroTwiceOnOneHostIsAPreciseError) {
  std::string text = make_config(ProxyOptions{.upstream_servers = {backend_.address()}}, kAnyPort, dir_.file("a.log"));
  text.replace(text.find("[tls]"), 5, "[[listen]]\naddress = \"127.0.0.1:0\"\n\n[tls]");
  const std::string path = dir_.file("twice.toml");
  write_file(path, text);
  const std::string expected = path + ":7:1: listen[1].address: duplicate listen address \"127.0.0.1:0\" (first at " +
                               path + ":4:1; port 0 is one free port per host: list it once)";
  for (const bool test_only : {true, false}) {
    std::vector<std::string> argv = {TLSFRONT_BINARY, "--config", path};
    if (test_only) argv.insert(argv.begin() + 1, "--test");
    const RunResult r = run_command(dir_, argv);
    EXPECT_EQ(r.status.code, 1) << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("listening on"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace tlsfront::itest
