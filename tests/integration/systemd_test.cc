// systemd integration: the unit files pass `systemd-analyze verify`; the
// proxy speaks the sd_notify protocol (READY=1 once serving, RELOADING=1 and
// READY=1 around a reload, STOPPING=1 on SIGTERM) to a real $NOTIFY_SOCKET
// datagram socket; and it adopts a socket passed the sd_listen_fds way, so a
// restart refuses no connection.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "harness.h"

namespace tlsfront::itest {
namespace {

// Datagrams received on `fd` until one contains `what` or `timeout` passes.
bool receive_until(int fd, const std::string& what, milliseconds timeout, std::string& all) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
    if (::poll(&p, 1, static_cast<int>(std::max<long long>(left, 1))) <= 0) continue;
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) continue;
    all.append(buf, static_cast<size_t>(n));
    all.push_back('\n');
    if (all.find(what) != std::string::npos) return true;
  }
  return false;
}

class Systemd : public ProxyTest {};

TEST_F(Systemd, NotifiesReadyThenStopping) {
  const std::string path = dir_.file("notify");
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(path.size(), sizeof(addr.sun_path));
  std::strcpy(addr.sun_path, path.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);

  ::setenv("NOTIFY_SOCKET", path.c_str(), 1);
  const bool started = start_proxy();
  ::unsetenv("NOTIFY_SOCKET");
  ASSERT_TRUE(started);
  std::string got;
  EXPECT_TRUE(receive_until(fd, "READY=1", milliseconds(5'000), got)) << got;
  EXPECT_NE(got.find("STATUS=serving"), std::string::npos) << got;

  got.clear();
  proxy_.process().signal(SIGHUP);
  EXPECT_TRUE(receive_until(fd, "READY=1", milliseconds(5'000), got)) << got;
  EXPECT_NE(got.find("RELOADING=1\nMONOTONIC_USEC="), std::string::npos) << got;
  EXPECT_LT(got.find("RELOADING=1"), got.find("READY=1")) << got;
  EXPECT_NE(got.find("STATUS=serving generation 2"), std::string::npos) << got;

  proxy_.process().signal(SIGTERM);
  EXPECT_TRUE(receive_until(fd, "STOPPING=1", milliseconds(5'000), got)) << got;
  auto status = proxy_.process().wait_exit(milliseconds(10'000));
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->code, 0);
  ::close(fd);
}

TEST_F(Systemd, UnitFilesVerify) {
  const char* analyze = "/usr/bin/systemd-analyze";
  struct stat st {};
  if (::stat(analyze, &st) != 0) GTEST_SKIP() << "systemd-analyze is not installed";
  std::vector<std::string> copies;
  for (const char* name : {"tlsfront.service", "tlsfront.socket"}) {
    const auto unit = std::filesystem::path(TLSFRONT_SOURCE_DIR) / "systemd" / name;
    std::ifstream in(unit);
    ASSERT_TRUE(in) << unit;
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // Point ExecStart/ExecStartPre/ExecReload at the binary under test (verify checks it exists).
    for (size_t at; (at = text.find("/usr/local/bin/tlsfront")) != std::string::npos;) {
      text.replace(at, std::strlen("/usr/local/bin/tlsfront"), TLSFRONT_BINARY);
    }
    copies.push_back(dir_.file(name));
    std::ofstream(copies.back()) << text;
  }
  RunResult r = run_command(dir_, {analyze, "verify", copies[0], copies[1]});
  EXPECT_EQ(r.status.code, 0) << r.err << r.out;
  EXPECT_EQ(r.err.find("tlsfront.service:"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("tlsfront.socket:"), std::string::npos) << r.err;
}

// What systemd does for a tlsfront.socket unit: it owns the listening socket
// and passes it as fd 3 with LISTEN_FDS=1 and LISTEN_PID=<the service's pid>.
// The test holds the socket the same way, so it outlives each instance.
class SocketActivation : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(backend_.start());
    listen_fd_ = listen_loopback(511, port_);
    ASSERT_GE(listen_fd_, 0);
    config_ = dir_.file("tlsfront.toml");
    ProxyOptions o;
    o.upstream_servers = {backend_.address()};
    write_file(config_, make_config(o, port_, dir_.file("access.log")));
  }
  void TearDown() override {
    for (auto& p : instances_) p->stop();
    backend_.stop();
    if (listen_fd_ >= 0) ::close(listen_fd_);
  }
  // Starts an instance on the held socket; true once it answers a handshake.
  bool start_instance() {
    instances_.push_back(std::make_unique<Process>());
    const std::string n = std::to_string(instances_.size());
    if (!instances_.back()->start({"/bin/sh", "-c", "LISTEN_FDS=1 LISTEN_PID=$$ exec \"$@\"", "sh", TLSFRONT_BINARY,
                                   "--config", config_},
                                  dir_.file("tlsfront" + n + ".out"), dir_.file("tlsfront" + n + ".err"), listen_fd_)) {
      return false;
    }
    return wait_tls_ready(port_);
  }
  TempDir dir_;
  Backend backend_{dir_};
  int listen_fd_ = -1;
  int port_ = 0;
  std::string config_;
  std::vector<std::unique_ptr<Process>> instances_;
};

TEST_F(SocketActivation, AdoptsThePassedSocket) {
  ASSERT_TRUE(start_instance()) << instances_.back()->err();
  EXPECT_TRUE(wait_until([&] {
    return instances_[0]->err().find("socket from systemd (socket activation)") != std::string::npos;
  })) << instances_[0]->err();
  EXPECT_EQ(http_get(port_, "/").status, 200);
}

// systemd.socket cannot set TCP Fast Open (Debian 12's systemd rejects
// FastOpen=): tlsfront sets the [[listen]]'s queue length on the passed socket,
// which the test shares (the kernel reports the queue length in getsockopt).
TEST_F(SocketActivation, SetsTcpFastOpenOnThePassedSocket) {
  ProxyOptions o;
  o.upstream_servers = {backend_.address()};
  o.listen_extra = "tcp_fastopen = 16\n";
  write_file(config_, make_config(o, port_, dir_.file("access.log")));
  int qlen = -1;
  socklen_t len = sizeof(qlen);
  ASSERT_EQ(::getsockopt(listen_fd_, IPPROTO_TCP, TCP_FASTOPEN, &qlen, &len), 0);
  ASSERT_EQ(qlen, 0);  // as systemd passes it
  ASSERT_TRUE(start_instance()) << instances_.back()->err();
  ASSERT_EQ(::getsockopt(listen_fd_, IPPROTO_TCP, TCP_FASTOPEN, &qlen, &len), 0);
  EXPECT_EQ(qlen, 16);
  EXPECT_EQ(http_get(port_, "/").status, 200);
}

// A restart (stop, then start the new binary) under load: connections made
// while no instance runs wait in the held socket's backlog; none is refused.
TEST_F(SocketActivation, RestartUnderLoadRefusesNothing) {
  ASSERT_TRUE(start_instance()) << instances_.back()->err();
  LoadLoop load([&](int, const LoadLoop::Record& record) {
    HttpRequest req;
    req.headers = {"Connection: close"};  // a new connection (and handshake) every time
    req.timeout = std::chrono::milliseconds(15'000);
    record(CurlClient(port_).perform(req));
  });
  EXPECT_TRUE(load.wait_ok(10));
  ExitStatus st = instances_[0]->stop(milliseconds(10'000));
  EXPECT_EQ(st.code, 0) << instances_[0]->err();
  ASSERT_TRUE(start_instance()) << instances_.back()->err();
  EXPECT_TRUE(load.wait_ok(10));
  load.stop();
  EXPECT_EQ(load.failed(), 0) << "first failure: " << load.first_failure();
}

}  // namespace
}  // namespace tlsfront::itest
