// Tests for LogWriter: ordering, reopen after rename, drain on stop, and the
// bounded queue (made deterministic with a FIFO nobody reads).
#include "log/log_writer.h"

#include <fcntl.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "shared/temp_dir.h"
#include "stderr_capture.h"

namespace tlsfront::log {
namespace {

class LogWriterTest : public ::testing::Test {
 protected:
  std::unique_ptr<LogWriter> open_writer(size_t max_queued = LogWriter::kDefaultMaxQueuedBytes) {
    auto writer = LogWriter::open(path_, max_queued);
    EXPECT_TRUE(writer.ok()) << writer.error().message();
    return writer.ok() ? std::move(*writer) : nullptr;
  }

  TempDir tmp_{"tlsfront_log_writer"};
  const std::string dir_ = tmp_.path();
  const std::string path_ = tmp_.file("access.log");
};

TEST_F(LogWriterTest, OpenFailureNamesPathAndError) {
  const std::string bad = dir_ + "/missing-dir/access.log";
  auto writer = LogWriter::open(bad);
  ASSERT_FALSE(writer.ok());
  EXPECT_EQ(writer.error().code, Errc::Io);
  EXPECT_NE(writer.error().detail.find(bad), std::string::npos) << writer.error().detail;
  EXPECT_NE(writer.error().detail.find("No such file or directory"), std::string::npos)
      << writer.error().detail;
  // Nothing but the file is ever created.
  struct stat st;
  EXPECT_NE(stat((dir_ + "/missing-dir").c_str(), &st), 0);
}

TEST_F(LogWriterTest, CreatesFileWithMode0640) {
  const mode_t old_umask = umask(022);
  auto writer = open_writer();
  umask(old_umask);
  ASSERT_NE(writer, nullptr);
  struct stat st;
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0640u);
}

TEST_F(LogWriterTest, AppendsToExistingFile) {
  std::ofstream(path_) << "old line\n";
  auto writer = open_writer();
  ASSERT_NE(writer, nullptr);
  writer->write("new line\n");
  writer->flush_and_stop();
  EXPECT_EQ(read_file(path_), "old line\nnew line\n");
}

TEST_F(LogWriterTest, WritesArriveInOrder) {
  auto writer = open_writer();
  ASSERT_NE(writer, nullptr);
  std::string expected;
  for (int i = 0; i < 20000; ++i) {
    std::string batch = "line " + std::to_string(i) + "\n";
    if (i % 7 == 0) batch += "extra " + std::to_string(i) + "\n";  // multi-line batches too
    expected += batch;
    writer->write(std::move(batch));
  }
  writer->write("");  // ignored
  writer->flush_and_stop();
  EXPECT_EQ(writer->dropped_batches(), 0u);
  EXPECT_EQ(read_file(path_), expected);
}

TEST_F(LogWriterTest, ConcurrentWritersKeepPerThreadOrderAndWholeBatches) {
  auto writer = open_writer();
  ASSERT_NE(writer, nullptr);
  constexpr int kThreads = 4;
  constexpr int kLines = 5000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&writer, t] {
      for (int i = 0; i < kLines; ++i) {
        writer->write("t" + std::to_string(t) + " " + std::to_string(i) + "\n");
      }
    });
  }
  for (auto& th : threads) th.join();
  writer->flush_and_stop();
  EXPECT_EQ(writer->dropped_batches(), 0u);

  std::ifstream in(path_);
  std::vector<int> next(kThreads, 0);
  std::string line;
  int total = 0;
  while (std::getline(in, line)) {
    int t = -1, i = -1;
    ASSERT_EQ(std::sscanf(line.c_str(), "t%d %d", &t, &i), 2) << line;
    ASSERT_GE(t, 0);
    ASSERT_LT(t, kThreads);
    ASSERT_EQ(i, next[t]) << "thread " << t;
    ++next[t];
    ++total;
  }
  EXPECT_EQ(total, kThreads * kLines);
}

TEST_F(LogWriterTest, ReopenAfterRenameLosesNothing) {
  auto writer = open_writer();
  ASSERT_NE(writer, nullptr);
  const std::string rotated = path_ + ".1";
  std::string before, after;
  for (int i = 0; i < 1000; ++i) {
    before += "before " + std::to_string(i) + "\n";
    writer->write("before " + std::to_string(i) + "\n");
  }
  ASSERT_EQ(std::rename(path_.c_str(), rotated.c_str()), 0);  // logrotate
  writer->reopen();                                           // SIGUSR1
  for (int i = 0; i < 1000; ++i) {
    after += "after " + std::to_string(i) + "\n";
    writer->write("after " + std::to_string(i) + "\n");
  }
  writer->flush_and_stop();
  EXPECT_EQ(writer->dropped_batches(), 0u);

  const std::string old_content = read_file(rotated);
  const std::string new_content = read_file(path_);
  // Lines written before reopen() may land in either file (whatever the
  // writer had not reached yet); every line written after it is in the new one.
  EXPECT_EQ(old_content + new_content, before + after);
  ASSERT_GE(new_content.size(), after.size());
  EXPECT_EQ(new_content.substr(new_content.size() - after.size()), after);
}

TEST_F(LogWriterTest, ReopenWithoutRenameKeepsAppending) {
  auto writer = open_writer();
  ASSERT_NE(writer, nullptr);
  writer->write("one\n");
  writer->reopen();
  writer->write("two\n");
  writer->reopen();
  writer->reopen();
  writer->write("three\n");
  writer->flush_and_stop();
  EXPECT_EQ(read_file(path_), "one\ntwo\nthree\n");
}

TEST_F(LogWriterTest, FailedReopenKeepsOldFile) {
  auto writer = open_writer();
  ASSERT_NE(writer, nullptr);
  const std::string rotated = path_ + ".1";
  writer->write("first\n");
  ASSERT_EQ(std::rename(path_.c_str(), rotated.c_str()), 0);
  ASSERT_EQ(mkdir(path_.c_str(), 0755), 0);  // open(O_WRONLY) on a directory fails: EISDIR
  writer->reopen();
  writer->write("second\n");
  writer->flush_and_stop();
  EXPECT_EQ(writer->dropped_batches(), 0u);
  EXPECT_EQ(read_file(rotated), "first\nsecond\n");
}

TEST_F(LogWriterTest, FlushAndStopDrainsThenDrops) {
  auto writer = open_writer();
  ASSERT_NE(writer, nullptr);
  std::string expected;
  const std::string chunk(4096, 'x');
  for (int i = 0; i < 2000; ++i) {  // ~8 MiB queued faster than it is written
    std::string batch = std::to_string(i) + chunk + "\n";
    expected += batch;
    writer->write(std::move(batch));
  }
  writer->flush_and_stop();
  EXPECT_EQ(read_file(path_), expected);
  EXPECT_EQ(writer->dropped_batches(), 0u);

  writer->write("too late\n");
  EXPECT_EQ(writer->dropped_batches(), 1u);
  writer->flush_and_stop();  // idempotent
  writer->reopen();          // harmless after stop
  EXPECT_EQ(read_file(path_), expected);
}

TEST_F(LogWriterTest, DestructorDrains) {
  {
    auto writer = open_writer();
    ASSERT_NE(writer, nullptr);
    writer->write("a\n");
    writer->write("b\n");
  }
  EXPECT_EQ(read_file(path_), "a\nb\n");
}

TEST_F(LogWriterTest, DropsWhenQueueIsFullWithoutBlocking) {
  // A FIFO with a reader that does not read: the writer thread blocks in
  // write(2) once the pipe buffer (64 KiB by default) is full, so the queue
  // accounting is deterministic.
  ASSERT_EQ(mkfifo(path_.c_str(), 0600), 0);
  const int reader = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(reader, 0);
  constexpr size_t kMiB = 1024 * 1024;
  auto writer = open_writer(8 * kMiB);
  ASSERT_NE(writer, nullptr);

  const std::string a(4 * kMiB, 'a');
  const std::string b(3 * kMiB, 'b');
  writer->write(a);                  // taken by the writer thread, which then blocks
  writer->write(b);                  // 7 MiB queued: fits
  writer->write(std::string(2 * kMiB, 'c'));  // 9 MiB: dropped
  writer->write(std::string(2 * kMiB, 'd'));  // dropped
  writer->write("e\n");              // 7 MiB + 2 bytes: fits
  EXPECT_EQ(writer->dropped_batches(), 2u);

  // Drain the FIFO: exactly a, b, "e\n" arrive.
  ASSERT_EQ(fcntl(reader, F_SETFL, 0), 0);  // blocking reads
  std::string received;
  const size_t want = a.size() + b.size() + 2;
  std::vector<char> buf(256 * 1024);
  while (received.size() < want) {
    const ssize_t n = ::read(reader, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    ASSERT_GT(n, 0);
    received.append(buf.data(), static_cast<size_t>(n));
  }
  writer->flush_and_stop();
  EXPECT_EQ(received.size(), want);
  EXPECT_TRUE(received == a + b + "e\n");
  // The writer closed its end: EOF, nothing more.
  EXPECT_EQ(::read(reader, buf.data(), buf.size()), 0);
  ::close(reader);
  EXPECT_EQ(writer->dropped_batches(), 2u);
}

TEST_F(LogWriterTest, OversizedFirstBatchIsAccepted) {
  auto writer = open_writer(16);
  ASSERT_NE(writer, nullptr);
  const std::string big(1000, 'z');
  writer->write(big + "\n");
  writer->flush_and_stop();
  EXPECT_EQ(read_file(path_), big + "\n");
}

// Polls `done` for up to 10 s (the writer thread works on its own).
template <typename F>
bool wait_for(F done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

std::string numbered_lines(const std::string& tag, int count) {
  std::string out;
  for (int i = 0; i < count; ++i) out += "{\"" + tag + "\":" + std::to_string(i) + ",\"pad\":\"0123456789abcdef\"}\n";
  return out;
}

// A full disk, made real and deterministic with RLIMIT_FSIZE: the kernel
// writes up to the limit (a partial line) and then fails with EFBIG, as a
// full filesystem does with ENOSPC. Afterwards the file holds whole lines
// only, the drop is reported once with the real errno and a line count, and
// writing resumes when space returns.
TEST_F(LogWriterTest, FailedWriteLeavesNoPartialLineAndReportsOnce) {
  struct rlimit saved;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  if (saved.rlim_max != RLIM_INFINITY) GTEST_SKIP() << "RLIMIT_FSIZE hard limit is set";
  struct sigaction ignore {}, saved_xfsz {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGXFSZ, &ignore, &saved_xfsz), 0);  // EFBIG instead of death

  StderrCapture stderr_lines;
  auto writer = open_writer();
  ASSERT_NE(writer, nullptr);
  const std::string before = numbered_lines("before", 200);  // keeps the limit above the stderr capture's size
  writer->write(before);
  ASSERT_TRUE(wait_for([&] { return writer->bytes_written() == before.size(); }));

  struct rlimit full = saved;
  full.rlim_cur = before.size() + 20;  // room for part of one line
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &full), 0);
  const std::string lost = numbered_lines("lost", 3);
  for (int i = 0; i < 5; ++i) writer->write(lost);
  const bool dropped = wait_for([&] { return writer->dropped_lines() == 15; });
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &saved), 0);  // space returns
  EXPECT_TRUE(dropped) << writer->dropped_lines();

  const std::string after = numbered_lines("after", 2);
  writer->write(after);
  writer->flush_and_stop();
  sigaction(SIGXFSZ, &saved_xfsz, nullptr);
  stderr_lines.restore();

  const std::string content = read_file(path_);
  EXPECT_TRUE(content == before + after) << "after the first lines: " << content.substr(std::min(content.size(), before.size()));
  EXPECT_EQ(writer->dropped_batches(), 5u);
  const std::string err = stderr_lines.contents();
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 2) << err;  // the failure, the recovery
  EXPECT_NE(err.find("write failed: File too large; dropping lines until it recovers"), std::string::npos) << err;
  EXPECT_NE(err.find("writes recovered; 15 lines were dropped (File too large)"), std::string::npos) << err;
  EXPECT_EQ(err.find("queue"), std::string::npos) << err;
}

}  // namespace
}  // namespace tlsfront::log
