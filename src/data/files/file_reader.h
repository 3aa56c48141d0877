// FileReader: streams the octets [offset, offset + length) of an open file
// to a Consumer, one read of at most kChunk octets at a time and only when
// asked (read_more), so the response's memory is one chunk and the
// consumer's own buffer: the backpressure is the consumer not asking until
// its client drains (ExchangeSink::output_congested, as for upstream
// bodies). Each read never waits for the disk on the loop: first
// preadv2(RWF_NOWAIT) (Linux 4.14), which copies what the page cache holds
// and fails with EAGAIN rather than start I/O; what it cannot give is read
// by uv_fs_read on libuv's thread pool (UV_THREADPOOL_SIZE threads, 4 by
// default). A cached file thus costs no thread hand-off (two cross-thread
// wake-ups per read, which under load cost more than the read), a cold one
// never blocks the loop.
// A file cut short while read (truncated in place) ends in on_file_error;
// a file unlinked or renamed away keeps its octets until the descriptor
// closes, so the response completes with what was opened.
// Destroying the reader with a read in flight leaves that read to finish on
// its own: its buffer and descriptor are freed in its callback, never
// touched by the reader again.
// Thread affinity: owning worker (the loop's thread) only.
#pragma once

#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "data/files/open_beneath.h"

namespace tlsfront::files {

class FileReader {
 public:
  static constexpr size_t kChunk = 64 * 1024;

  class Consumer {
   public:
    virtual ~Consumer() = default;
    // Octets in order; `data` is valid during the call.
    virtual void on_file_data(std::string_view data) = 0;
    // Every octet of the range was delivered.
    virtual void on_file_end() = 0;
    // A read failed or the file ended early; nothing follows.
    virtual void on_file_error(std::string_view why) = 0;
  };

  // `file`: a regular file, shared with the open-file cache (its
  // descriptor stays open while a read is in flight).
  FileReader(uv_loop_t* loop, std::shared_ptr<const OpenFile> file, uint64_t offset, uint64_t length,
             Consumer* consumer);
  ~FileReader();
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  // Reads the next chunk unless one is in flight or all was delivered: from
  // the page cache at once (the consumer is called before this returns),
  // or on the thread pool (called later). Called from within on_file_data,
  // it reads after that call returns (no recursion).
  void read_more();
  bool reading() const;
  uint64_t remaining() const;

 private:
  struct Read;  // the uv_fs_t, the chunk buffer and the descriptor
  static void on_read(uv_fs_t* req);
  // The octets `got` of the chunk just read go to the consumer; false after
  // the last one (or an error).
  bool deliver(size_t got);

  uv_loop_t* loop_;
  Read* read_;
  Consumer* consumer_;
  bool delivering_ = false;  // read_more() is running
  bool again_ = false;       // read_more() was asked for again meanwhile
};

}  // namespace tlsfront::files
