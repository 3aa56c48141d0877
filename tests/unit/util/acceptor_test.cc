// Acceptor on a real listening socket on 127.0.0.1: connections are handed
// over; a paused acceptor hands over none (they wait in the backlog) until
// resumed; at the open-files limit (this process's, lowered for the test) it
// reports EMFILE once and pauses itself instead of retrying.
#include "util/acceptor.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <cerrno>
#include <vector>

#include "support/loop_test.h"

namespace tlsfront {
namespace {

class AcceptorTest : public harness::LoopTest {
 protected:
  void SetUp() override {
    LoopTest::SetUp();
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    ASSERT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), len), 0);
    ASSERT_EQ(::listen(fd.get(), 16), 0);
    ASSERT_EQ(::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&sa), &len), 0);
    port_ = ntohs(sa.sin_port);
    ASSERT_EQ(acceptor_.open(&loop_, std::move(fd),
                             Acceptor::Callbacks{[this](UniqueFd c) { accepted_.push_back(std::move(c)); },
                                                 [this](int err) { errors_.push_back(err); }}),
              0);
  }
  void release_objects() override {
    acceptor_.close();
    accepted_.clear();
    clients_.clear();
  }
  void connect_client() {
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons(port_);
    ASSERT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);  // completes in the backlog
    clients_.push_back(std::move(fd));
  }

  Acceptor acceptor_;
  uint16_t port_ = 0;
  std::vector<UniqueFd> accepted_, clients_;
  std::vector<int> errors_;
};

TEST_F(AcceptorTest, HandsOverConnectionsAndNoneWhilePaused) {
  connect_client();
  ASSERT_TRUE(run_until([&] { return accepted_.size() == 1; }));
  EXPECT_TRUE(accepted_[0].valid());

  acceptor_.pause();
  EXPECT_TRUE(acceptor_.paused());
  connect_client();
  settle();
  EXPECT_EQ(accepted_.size(), 1u);  // waiting in the backlog
  acceptor_.resume();
  ASSERT_TRUE(run_until([&] { return accepted_.size() == 2; }));
  EXPECT_TRUE(errors_.empty());
}

TEST_F(AcceptorTest, PausesItselfAtTheOpenFilesLimit) {
  connect_client();
  connect_client();
  // The lowest free descriptor becomes the limit: the next accept4 fails.
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  const int lowest_free = ::dup(0);
  ASSERT_GE(lowest_free, 0);
  ::close(lowest_free);
  rlimit low = saved;
  low.rlim_cur = static_cast<rlim_t>(lowest_free);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  const bool failed = run_until([&] { return !errors_.empty(); });
  settle();  // a paused acceptor is not called again
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  ASSERT_TRUE(failed);
  EXPECT_EQ(errors_, std::vector<int>{EMFILE});
  EXPECT_TRUE(acceptor_.paused());
  EXPECT_TRUE(accepted_.empty());
  EXPECT_TRUE(is_resource_limit(errors_[0]));
  // Resumed with descriptors to spare: both pending connections come in.
  acceptor_.resume();
  ASSERT_TRUE(run_until([&] { return accepted_.size() == 2; }));
  EXPECT_EQ(errors_.size(), 1u);
}

}  // namespace
}  // namespace tlsfront
