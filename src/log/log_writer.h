// LogWriter: owns the access-log file and a background thread that appends
// batches of lines to it, so no worker loop ever blocks on disk I/O. Workers
// hand over whole batches (see AccessLog in access_log.h); the queue is
// bounded in bytes and a batch that does not fit is dropped and counted
// rather than blocking the caller. reopen() supports logrotate: after the
// rotated file is renamed, SIGUSR1 makes the control loop call reopen(), and
// the writer thread opens the path again before its next write.
//
// Whole lines or none: when a write fails part-way through a line (ENOSPC,
// EFBIG, EIO), the bytes of that line already in the file are truncated away
// (or, if truncating fails, the next write starts with a newline), so the
// file never holds a line that is half of one record and half of another.
// Drops are reported on stderr at most once per kReportInterval, with the
// count of lines and the cause (the errno, or the queue limit).
//
// Thread affinity: write(), reopen() and dropped_batches() from any thread;
// open(), flush_and_stop() and the destructor from the owning (control) thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "log/log_batch.h"
#include "util/result.h"
#include "util/unique_fd.h"

namespace tlsfront::log {

class LogWriter {
 public:
  // Bytes that may wait in the queue (including the batches being written)
  // before further batches are dropped.
  static constexpr size_t kDefaultMaxQueuedBytes = 64 * 1024 * 1024;
  // At most one drop report per cause per interval.
  static constexpr std::chrono::seconds kReportInterval{10};

  // Opens `path` with O_WRONLY|O_APPEND|O_CREAT|O_CLOEXEC, mode 0640 (the
  // directory must exist; nothing else is created), and starts the writer
  // thread. `max_queued_bytes` bounds the queue (tests lower it).
  // Errc::Io when the file cannot be opened; the detail names `path` and the
  // system error. The result is owned by the caller.
  [[nodiscard]] static Result<std::unique_ptr<LogWriter>> open(
      std::string path, size_t max_queued_bytes = kDefaultMaxQueuedBytes);

  // Whether open() would succeed, creating nothing (`tlsfront --test`,
  // which may run as another user than the server): an existing `path` is
  // opened for appending and closed; for a missing one its directory must
  // exist and be writable and searchable by this user. Errc::Io naming the
  // file (and the directory).
  [[nodiscard]] static Status check_writable(const std::string& path);

  // Calls flush_and_stop().
  ~LogWriter();

  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;

  // Queues `batch` (complete lines) to be appended in order, taking
  // ownership. Never blocks on I/O: if adding it would take the queue over the
  // limit (an empty queue accepts any batch), or the writer has been stopped,
  // the batch is discarded and counted. Empty batches are ignored. Any thread.
  void write(LogBatch batch);
  // write() of a copy of `batch`.
  void write(std::string_view batch) { write(LogBatch(batch)); }

  // Asks the writer thread to reopen the path before its next write (after
  // logrotate renamed the file). If reopening fails, the old fd is kept and
  // an error is logged. Any thread; async-signal-unsafe (takes a mutex), so
  // call it from the control loop, not from a signal handler.
  void reopen();

  // Writes everything queued so far, closes the file, then stops and joins
  // the writer thread. Later write() calls are dropped. Idempotent. Owning
  // thread only.
  void flush_and_stop();

  // Batches (and the lines in them) discarded so far: queue over the limit,
  // written after stop, or lost to a failed write(2) (disk full, I/O error;
  // a batch written in part counts once, with the lines not in the file).
  // Any thread.
  uint64_t dropped_batches() const { return dropped_batches_.load(std::memory_order_relaxed); }
  uint64_t dropped_lines() const { return dropped_lines_.load(std::memory_order_relaxed); }
  // Bytes written to the file so far (metrics). Any thread.
  uint64_t bytes_written() const { return bytes_written_.load(std::memory_order_relaxed); }

 private:
  LogWriter(std::string path, UniqueFd fd, size_t max_queued_bytes);

  void run();
  void reopen_file();
  // Logs what was dropped since the last report, if kReportInterval has
  // passed (or `now_anyway`: at stop).
  void report_drops(bool now_anyway);
  // Appends `batches` to fd_ with writev, handling EINTR and partial writes;
  // on a write error drops the rest (see on_write_error()).
  void write_batches(std::deque<LogBatch>& batches);
  // The write of batches[next] failed with `err` after `offset` of its bytes
  // reached the file: cuts that partial line off the file and counts the rest.
  void on_write_error(int err, const std::deque<LogBatch>& batches, size_t next, size_t offset);
  // Writes the newline owed after a partial line that could not be truncated.
  // False (and the error handled) when that write fails too.
  bool write_owed_newline();

  const std::string path_;
  const size_t max_queued_bytes_;
  UniqueFd fd_;  // writer thread only (and the constructor)

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<LogBatch> queue_;     // guarded by mu_
  size_t queued_bytes_ = 0;        // guarded by mu_; includes batches being written
  bool reopen_requested_ = false;  // guarded by mu_
  bool stopping_ = false;          // guarded by mu_

  std::atomic<uint64_t> dropped_batches_{0};
  std::atomic<uint64_t> dropped_lines_{0};
  std::atomic<uint64_t> queue_dropped_lines_{0};  // the part of dropped_lines_ dropped by write()
  std::atomic<uint64_t> bytes_written_{0};
  // Writer thread only:
  bool failing_ = false;       // the last write failed; cleared by the next good one
  int last_error_ = 0;         // errno of the last failed write
  bool newline_owed_ = false;  // the file ends in a partial line that could not be cut
  uint64_t failure_lines_ = 0;           // lines lost since writes started failing
  uint64_t error_lines_unreported_ = 0;  // of those, not yet in a report
  uint64_t queue_lines_reported_ = 0;
  std::chrono::steady_clock::time_point last_report_{};
  std::thread thread_;
};

}  // namespace tlsfront::log
