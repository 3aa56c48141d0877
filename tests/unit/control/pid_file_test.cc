// PidFile on the real file system, with real processes: the file holds our
// PID, a stale one is replaced, a live instance's is never taken over, and
// only our own PID is removed.
#include "control/pid_file.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "shared/temp_dir.h"

namespace tlsfront::control {
namespace {

// A child of this test (the same command name as this process) that waits
// to be killed; reaped by the destructor.
class SameNameChild {
 public:
  SameNameChild() : pid_(::fork()) {
    if (pid_ == 0) {
      ::pause();
      ::_exit(0);
    }
  }
  ~SameNameChild() { reap(); }
  void reap() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_;
};

class PidFileTest : public ::testing::Test {
 protected:
  std::string path() const { return dir_.path() + "/tlsfront.pid"; }
  void write(const std::string& text) { std::ofstream(path()) << text; }
  TempDir dir_{"tlsfront_pid_file"};
};

TEST_F(PidFileTest, HoldsOurPidUntilRemoved) {
  {
    auto f = PidFile::create(path());
    ASSERT_TRUE(f) << f.error().message();
    EXPECT_EQ(read_file(path()), std::to_string(::getpid()) + "\n");
    EXPECT_EQ(read_pid_file(path()), ::getpid());
  }
  EXPECT_FALSE(std::filesystem::exists(path()));
  // No temporary file is left beside it.
  EXPECT_FALSE(std::filesystem::exists(path() + ".tmp." + std::to_string(::getpid())));
}

TEST_F(PidFileTest, EmptyPathWritesNothing) {
  auto f = PidFile::create("");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->path(), "");
  EXPECT_FALSE(std::filesystem::exists(path()));
}

TEST_F(PidFileTest, ARunningProcesssFileIsNotTakenOver) {
  SameNameChild other;  // another instance
  ASSERT_GT(other.pid(), 0);
  write(std::to_string(other.pid()) + "\n");
  auto f = PidFile::create(path());
  ASSERT_FALSE(f);
  EXPECT_NE(f.error().message().find("names PID " + std::to_string(other.pid()) + ", a running process ("),
            std::string::npos)
      << f.error().message();
  EXPECT_EQ(read_file(path()), std::to_string(other.pid()) + "\n");
  // Another program's (here: our parent, never this test's binary), such as
  // nginx's pid file an imported configuration still names.
  write(std::to_string(::getppid()) + "\n");
  auto g = PidFile::create(path());
  ASSERT_FALSE(g);
  EXPECT_NE(g.error().message().find("another program's pid file"), std::string::npos) << g.error().message();
  EXPECT_EQ(read_file(path()), std::to_string(::getppid()) + "\n");
}

TEST_F(PidFileTest, AStaleFileIsReplaced) {
  SameNameChild gone;
  const pid_t pid = gone.pid();
  gone.reap();  // that PID now names no process
  write(std::to_string(pid) + "\n");
  auto f = PidFile::create(path());
  ASSERT_TRUE(f) << f.error().message();
  EXPECT_EQ(read_pid_file(path()), ::getpid());
  // Garbage is replaced.
  f->remove();
  write("not a pid\n");
  EXPECT_TRUE(PidFile::create(path()));
}

TEST_F(PidFileTest, AnotherProcessesFileIsNotRemoved) {
  auto f = PidFile::create(path());
  ASSERT_TRUE(f);
  write("1\n");  // a newer instance took the path over
  f->remove();
  EXPECT_EQ(read_file(path()), "1\n");
}

TEST_F(PidFileTest, MissingDirectoryIsAnErrorNamingIt) {
  const std::string p = dir_.path() + "/no/such/dir/t.pid";
  auto f = PidFile::create(p);
  ASSERT_FALSE(f);
  EXPECT_NE(f.error().message().find("pid_file \"" + p + "\": cannot create"), std::string::npos)
      << f.error().message();
  EXPECT_NE(f.error().message().find("No such file or directory"), std::string::npos);
  auto st = check_pid_file_directory(p);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("directory " + dir_.path() + "/no/such/dir"), std::string::npos)
      << st.error().message();
  EXPECT_TRUE(check_pid_file_directory(path()));
  EXPECT_TRUE(check_pid_file_directory(""));
}

}  // namespace
}  // namespace tlsfront::control
