// LogWriter: bounded queue + writer thread appending to the access-log file.
#include "log/log_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "log/log.h"

namespace tlsfront::log {
namespace {

constexpr int kOpenFlags = O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC;
constexpr mode_t kOpenMode = 0640;
constexpr size_t kMaxIov = 64;  // well under IOV_MAX (1024 on Linux)

uint64_t count_lines(std::string_view bytes) {
  return static_cast<uint64_t>(std::count(bytes.begin(), bytes.end(), '\n'));
}

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
  // An existing file is opened as open() does, less O_CREAT (O_NONBLOCK: a
  // FIFO with no reader fails instead of blocking); a missing one needs a
  // directory this user may create it in.
  int fd;
  do {
    fd = ::open(path.c_str(), (kOpenFlags & ~O_CREAT) | O_NONBLOCK);
  } while (fd < 0 && errno == EINTR);
  if (fd >= 0) {
    ::close(fd);
    return {};
  }
  if (errno != ENOENT) return make_error(Errc::Io, "cannot open access log \"" + path + "\": " + errno_string(errno));
  std::string dir = path.substr(0, path.rfind('/'));
  if (dir.empty()) dir = "/";
  struct stat st {};
  int err = 0;
  if (::stat(dir.c_str(), &st) != 0) {
    err = errno;
  } else if (!S_ISDIR(st.st_mode)) {
    err = ENOTDIR;
  } else if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    err = errno;
  }
  if (err == 0) return {};
  return make_error(Errc::Io,
                    "cannot create access log \"" + path + "\": directory \"" + dir + "\": " + errno_string(err));
}

LogWriter::LogWriter(std::string path, UniqueFd fd, size_t max_queued_bytes)
    : path_(std::move(path)), max_queued_bytes_(max_queued_bytes), fd_(std::move(fd)) {
  thread_ = std::thread([this] { run(); });
}

LogWriter::~LogWriter() { flush_and_stop(); }

void LogWriter::write(LogBatch batch) {
  if (batch.empty()) return;
  {
    std::lock_guard lock(mu_);
    // The first batch always fits, however large, so a single oversized batch
    // is not dropped forever; after that the limit applies.
    if (!stopping_ && (queued_bytes_ == 0 || queued_bytes_ + batch.size() <= max_queued_bytes_)) {
      queued_bytes_ += batch.size();
      queue_.push_back(std::move(batch));  // leaves `batch` empty
    }
  }
  if (!batch.empty()) {  // dropped
    const uint64_t lines = count_lines(batch.view());
    dropped_batches_.fetch_add(1, std::memory_order_relaxed);
    dropped_lines_.fetch_add(lines, std::memory_order_relaxed);
    queue_dropped_lines_.fetch_add(lines, std::memory_order_relaxed);
    return;
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
    std::deque<LogBatch> batches;
    batches.swap(queue_);
    lock.unlock();

    size_t bytes = 0;
    for (const auto& b : batches) bytes += b.size();
    if (reopen) reopen_file();
    if (!batches.empty()) write_batches(batches);
    report_drops(false);

    lock.lock();
    queued_bytes_ -= bytes;
    if (stopping_ && queue_.empty() && !reopen_requested_) break;
  }
  report_drops(true);
  fd_.reset();  // stopped for good: close the file now rather than at destruction
}

void LogWriter::reopen_file() {
  auto fd = open_file(path_);
  if (!fd) {
    log::error("{}; still writing to the previous file", fd.error().message());
    return;
  }
  fd_ = std::move(*fd);
  newline_owed_ = false;  // a partial line left behind is in the renamed file
  log::info("access log \"{}\" reopened", path_);
}

void LogWriter::write_batches(std::deque<LogBatch>& batches) {
  if (!write_owed_newline()) {
    on_write_error(errno, batches, 0, 0);
    return;
  }
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
      on_write_error(errno, batches, next, offset);
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
  if (failing_) {
    log::info("access log \"{}\": writes recovered; {} lines were dropped ({})", path_, failure_lines_,
              errno_string(last_error_));
    failing_ = false;
    failure_lines_ = 0;
    error_lines_unreported_ = 0;
  }
}

void LogWriter::on_write_error(int err, const std::deque<LogBatch>& batches, size_t next, size_t offset) {
  uint64_t lines = 0;
  for (size_t i = next; i < batches.size(); ++i) {
    lines += count_lines(batches[i].view().substr(i == next ? offset : 0));
  }
  dropped_batches_.fetch_add(batches.size() - next, std::memory_order_relaxed);
  dropped_lines_.fetch_add(lines, std::memory_order_relaxed);
  failure_lines_ += lines;
  error_lines_unreported_ += lines;
  last_error_ = err;

  // Batches hold whole lines, so the file's partial line is the part of
  // batches[next] after its last newline written.
  if (offset > 0) {
    const std::string_view batch = batches[next].view();
    const size_t newline = batch.rfind('\n', offset - 1);
    const size_t partial = newline == std::string_view::npos ? offset : offset - newline - 1;
    struct stat st;
    if (partial > 0 && (::fstat(fd_.get(), &st) != 0 || st.st_size < static_cast<off_t>(partial) ||
                        ::ftruncate(fd_.get(), st.st_size - static_cast<off_t>(partial)) != 0)) {
      newline_owed_ = true;
    }
  }
  if (!failing_) {
    failing_ = true;
    log::error("access log \"{}\": write failed: {}; dropping lines until it recovers", path_, errno_string(err));
    last_report_ = std::chrono::steady_clock::now();
    error_lines_unreported_ = 0;  // this line announced them; the next report counts from here
  }
}

bool LogWriter::write_owed_newline() {
  while (newline_owed_) {
    const ssize_t n = ::write(fd_.get(), "\n", 1);
    if (n == 1) {
      bytes_written_.fetch_add(1, std::memory_order_relaxed);
      newline_owed_ = false;
    } else if (n < 0 && errno != EINTR) {
      return false;
    }
  }
  return true;
}

void LogWriter::report_drops(bool now_anyway) {
  const uint64_t queue_lines = queue_dropped_lines_.load(std::memory_order_relaxed) - queue_lines_reported_;
  if (queue_lines == 0 && error_lines_unreported_ == 0) return;
  const auto now = std::chrono::steady_clock::now();
  if (!now_anyway && now - last_report_ < kReportInterval) return;
  last_report_ = now;
  if (error_lines_unreported_ > 0) {
    log::warn("access log \"{}\": {} more lines dropped: write failed: {}", path_, error_lines_unreported_,
              errno_string(last_error_));
    error_lines_unreported_ = 0;
  }
  if (queue_lines > 0) {
    log::warn("access log \"{}\": {} lines dropped: the write queue was over its limit of {} bytes", path_,
              queue_lines, max_queued_bytes_);
    queue_lines_reported_ += queue_lines;
  }
}

}  // namespace tlsfront::log
