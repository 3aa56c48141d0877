// systemd integration: the unit file passes `systemd-analyze verify`, and the
// proxy speaks the sd_notify protocol (READY=1 once serving, STOPPING=1 on
// SIGTERM) to a real $NOTIFY_SOCKET datagram socket.
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

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

  proxy_.process().signal(SIGTERM);
  EXPECT_TRUE(receive_until(fd, "STOPPING=1", milliseconds(5'000), got)) << got;
  auto status = proxy_.process().wait_exit(milliseconds(10'000));
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->code, 0);
  ::close(fd);
}

TEST_F(Systemd, UnitFileVerifies) {
  const char* analyze = "/usr/bin/systemd-analyze";
  struct stat st {};
  if (::stat(analyze, &st) != 0) GTEST_SKIP() << "systemd-analyze is not installed";
  const auto unit = std::filesystem::path(__FILE__).parent_path() / "../../systemd/tlsfront.service";
  std::ifstream in(unit);
  ASSERT_TRUE(in) << unit;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Point ExecStart/ExecStartPre at the binary under test (verify checks it exists).
  for (size_t at; (at = text.find("/usr/local/bin/tlsfront")) != std::string::npos;) {
    text.replace(at, std::strlen("/usr/local/bin/tlsfront"), TLSFRONT_BINARY);
  }
  const std::string copy = dir_.file("tlsfront.service");
  std::ofstream(copy) << text;
  RunResult r = run_command(dir_, {analyze, "verify", copy});
  EXPECT_EQ(r.status.code, 0) << r.err << r.out;
  EXPECT_EQ(r.err.find("tlsfront.service:"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tlsfront::itest
