// The test harness's child processes (shared/process.h): a test process
// that dies without stopping them takes them with it.
#include "shared/process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shared/temp_dir.h"

namespace tlsfront::itest {
namespace {

// True once `pid` is gone or a zombie (killed, not yet reaped by whoever
// adopted it).
bool dead(pid_t pid) {
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] == 'Z';
}

TEST(Process, AChildDiesWithATestProcessThatDiesWithoutStoppingIt) {
  TempDir dir;
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t test = ::fork();
  ASSERT_GE(test, 0);
  if (test == 0) {
    // A test process that starts a child and dies at once (as an ASan abort
    // would): no destructor, no stop().
    ::close(fds[0]);
    auto* p = new Process;
    pid_t child = p->start({"/bin/sleep", "60"}, dir.file("out"), dir.file("err")) ? p->pid() : -1;
    (void)!::write(fds[1], &child, sizeof child);
    ::_exit(0);
  }
  ::close(fds[1]);
  pid_t child = -1;
  ASSERT_EQ(::read(fds[0], &child, sizeof child), static_cast<ssize_t>(sizeof child));
  ::close(fds[0]);
  ASSERT_GT(child, 0);
  int st = 0;
  ASSERT_EQ(::waitpid(test, &st, 0), test);
  const bool gone = wait_until([&] { return dead(child); }, milliseconds(5'000));
  if (!gone) ::kill(child, SIGKILL);
  EXPECT_TRUE(gone) << "the child outlived the test process that started it";
}

}  // namespace
}  // namespace tlsfront::itest
