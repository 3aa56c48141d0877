// AdminServer on a real loop: [admin] address with port 0 listens on a free
// port, and address() (what the start-up log names) is that port.
#include "control/admin_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <string>

#include "support/loop_test.h"
#include "util/unique_fd.h"

namespace tlsfront::control {
namespace {

class AdminServerTest : public harness::LoopTest {
 protected:
  // GET `path` from 127.0.0.1:`port`, the loop running meanwhile; the
  // response as received until the server closed.
  std::string get(uint16_t port, const std::string& path) {
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    // Completes in the kernel's backlog, before the loop accepts.
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return "connect failed";
    const std::string request = "GET " + path + " HTTP/1.1\r\nHost: admin\r\n\r\n";
    if (::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) {
      return "send failed";
    }
    std::string got;
    bool closed = false;
    run_until([&] {
      char buf[4096];
      const ssize_t n = ::recv(fd.get(), buf, sizeof(buf), MSG_DONTWAIT);
      if (n > 0) got.append(buf, static_cast<size_t>(n));
      closed = n == 0;
      return closed;
    });
    EXPECT_TRUE(closed) << got;
    return got;
  }
};

TEST_F(AdminServerTest, PortZeroListensOnAFreePortAndNamesIt) {
  auto admin = AdminServer::start(&loop_, config::Endpoint{"127.0.0.1", 0},
                                  {[] { return std::string("m 1\n"); }, [] { return true; }});
  ASSERT_TRUE(admin.ok()) << admin.error().message();
  const config::Endpoint bound = (*admin)->address();
  EXPECT_EQ(bound.host, "127.0.0.1");
  ASSERT_NE(bound.port, 0);
  const std::string r = get(bound.port, "/healthz");
  EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r;
  EXPECT_EQ(r.substr(r.size() - 3), "ok\n") << r;
}

}  // namespace
}  // namespace tlsfront::control
