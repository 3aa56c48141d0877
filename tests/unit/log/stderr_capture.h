// StderrCapture: points fd 2 at a temp file for its lifetime, so a test can
// read back the error-log lines the code under test wrote.
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

namespace tlsfront::log {

// Points stderr at a temp file for its lifetime; contents() reads it back.
class StderrCapture {
 public:
  StderrCapture() {
    char path[] = "/tmp/tlsfront_log_test_XXXXXX";
    const int fd = mkstemp(path);
    EXPECT_GE(fd, 0);
    path_ = path;
    ::close(fd);
    const int append_fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    EXPECT_GE(append_fd, 0);
    saved_stderr_ = ::dup(STDERR_FILENO);
    ::dup2(append_fd, STDERR_FILENO);
    ::close(append_fd);
  }
  ~StderrCapture() {
    restore();
    ::unlink(path_.c_str());
  }
  void restore() {
    if (saved_stderr_ < 0) return;
    ::dup2(saved_stderr_, STDERR_FILENO);
    ::close(saved_stderr_);
    saved_stderr_ = -1;
  }
  std::string contents() const {
    std::ifstream in(path_, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

 private:
  std::string path_;
  int saved_stderr_ = -1;
};

}  // namespace tlsfront::log
