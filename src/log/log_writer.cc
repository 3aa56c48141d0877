// LogWriter: bounded queue + writer thread appending to the access-log file.
#include "log/log_writer.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>
#include <utility>
#include <vector>

#include "log/log.h"

namespace tlsfront::log {
namespace {

constexpr int kOpenFlags = O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC;
constexpr mode_t kOpenMode = 0640;
constexpr size_t kMaxIov = 64;  // well under IOV_MAX (1024 on Linux)

// Thread-safe strerror.
std::string errno_string(int err) { return std::error_code(err, std::generic_category()).message(); }

Result<UniqueFd> open_file(const std::string& path) {
  int fd;
  do {
    fd = ::open(path.c_str(), kOpenFlags, kOpenMode);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    return make_error(Errc::Io, "cannot open access log \"" + path + "\": " + errno_string(errno));
  }
  return UniqueFd(fd);
}

}  // namespace

Result<std::unique_ptr<LogWriter>> LogWriter::open(std::string path, size_t max_queued_bytes) {
  auto fd = open_file(path);
  if (!fd) return fd.take_error();
  return std::unique_ptr<LogWriter>(new LogWriter(std::move(path), std::move(*fd), max_queued_bytes));
}

Status LogWriter::check_writable(const std::string& path) {
  auto fd = open_file(path);
  if (!fd) return fd.take_error();
  return {};
}

LogWriter::LogWriter(std::string path, UniqueFd fd, size_t max_queued_bytes)
    : path_(std::move(path)), max_queued_bytes_(max_queued_bytes), fd_(std::move(fd)) {
  thread_ = std::thread([this] { run(); });
}

LogWriter::~LogWriter() { flush_and_stop(); }

void LogWriter::write(std::string batch) {
  if (batch.empty()) return;
  {
    std::lock_guard lock(mu_);
    // The first batch always fits, however large, so a single oversized batch
    // is not dropped forever; after that the limit applies.
    if (stopping_ || (queued_bytes_ > 0 && queued_bytes_ + batch.size() > max_queued_bytes_)) {
      dropped_batches_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    queued_bytes_ += batch.size();
    queue_.push_back(std::move(batch));
  }
  cv_.notify_one();
}

void LogWriter::reopen() {
  {
    std::lock_guard lock(mu_);
    reopen_requested_ = true;
  }
  cv_.notify_one();
}

void LogWriter::flush_and_stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void LogWriter::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return !queue_.empty() || reopen_requested_ || stopping_; });
    const bool reopen = std::exchange(reopen_requested_, false);
    std::deque<std::string> batches;
    batches.swap(queue_);
    lock.unlock();

    size_t bytes = 0;
    for (const auto& b : batches) bytes += b.size();
    if (reopen) reopen_file();
    if (!batches.empty()) write_batches(batches);
    report_drops();

    lock.lock();
    queued_bytes_ -= bytes;
    if (stopping_ && queue_.empty() && !reopen_requested_) break;
  }
  fd_.reset();  // stopped for good: close the file now rather than at destruction
}

void LogWriter::reopen_file() {
  auto fd = open_file(path_);
  if (!fd) {
    log::error("{}; still writing to the previous file", fd.error().message());
    return;
  }
  fd_ = std::move(*fd);
  log::info("access log \"{}\" reopened", path_);
}

void LogWriter::write_batches(std::deque<std::string>& batches) {
  size_t next = 0;    // first batch not yet fully written
  size_t offset = 0;  // bytes of batches[next] already written
  while (next < batches.size()) {
    iovec iov[kMaxIov];
    size_t count = 0;
    for (size_t i = next; i < batches.size() && count < kMaxIov; ++i, ++count) {
      const size_t skip = i == next ? offset : 0;
      iov[count].iov_base = batches[i].data() + skip;
      iov[count].iov_len = batches[i].size() - skip;
    }
    const ssize_t n = ::writev(fd_.get(), iov, static_cast<int>(count));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      const size_t lost = batches.size() - next;
      dropped_batches_.fetch_add(lost, std::memory_order_relaxed);
      if (!write_failing_) {
        log::error("access log \"{}\": write failed: {}; dropping lines until it recovers", path_,
                   errno_string(err));
        write_failing_ = true;
      }
      return;
    }
    bytes_written_.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
    // Advance past what was written; a partial write continues mid-batch.
    auto left = static_cast<size_t>(n);
    while (left > 0) {
      const size_t rest = batches[next].size() - offset;
      if (left < rest) {
        offset += left;
        break;
      }
      left -= rest;
      ++next;
      offset = 0;
    }
  }
  if (write_failing_) {
    log::info("access log \"{}\": writes recovered", path_);
    write_failing_ = false;
  }
}

void LogWriter::report_drops() {
  const uint64_t dropped = dropped_batches_.load(std::memory_order_relaxed);
  if (dropped == reported_drops_) return;
  log::warn("access log \"{}\": {} batches dropped ({} in total); queue limit {} bytes", path_,
            dropped - reported_drops_, dropped, max_queued_bytes_);
  reported_drops_ = dropped;
}

}  // namespace tlsfront::log
