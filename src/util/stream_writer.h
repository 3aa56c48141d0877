// StreamWriter: one write queue over a uv_stream_t. Bytes handed to
// send_from() that the socket does not take at once are appended to a pending
// buffer; at most one uv_write is in flight and owns its
// bytes until its callback fires, so the owner may be destroyed with a write
// outstanding (the request outlives it and frees itself).
// Thread affinity: the owning loop's thread only.
#pragma once

#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace tlsfront {

class StreamWriter {
 public:
  // Called after each completed write with the owner given to attach() or
  // adopt(), the libuv status (0 or a UV_E* code) and the number of bytes
  // that write carried. A plain function and a pointer, not a
  // std::function: 16 octets less in every connection.
  using DoneFn = void (*)(void* owner, int status, size_t bytes);

  StreamWriter() = default;
  ~StreamWriter();
  StreamWriter(const StreamWriter&) = delete;
  StreamWriter& operator=(const StreamWriter&) = delete;

  // Borrowed `stream` must stay open while writes may be issued; `done`(`owner`, ...)
  // runs on every write completion (not after the writer is destroyed).
  void attach(uv_stream_t* stream, DoneFn done, void* owner);

  // Writes `bytes` and leaves it empty with its capacity (a caller's reused
  // buffer): when nothing is pending the socket takes what it can at once
  // straight from `bytes` (uv_try_write); the rest is copied into the queue
  // and written with uv_write. `done` runs only for queued writes. Returns a
  // UV_E* code on a synchronous failure, 0 otherwise.
  int send_from(std::string& bytes);
  // The next send_from() queues its bytes (uv_write: libuv still writes them
  // at once if it can) instead of trying the socket first, so that `done`
  // runs once they are written, in a later loop iteration. For an owner that
  // stopped pulling output at a cap of its own: the completion tells it to go
  // on, and a socket that took everything at once cannot leave the rest
  // waiting for an event that never comes.
  void queue_next() { queue_next_ = true; }

  // Bytes queued or in flight, for watermarks.
  size_t buffered_bytes() const { return pending_.size() + inflight_bytes_; }
  bool idle() const { return inflight_ == nullptr && pending_.empty(); }
  // Bytes the kernel has accepted so far, over the writer's life.
  uint64_t bytes_written() const { return bytes_written_; }

  // Frees the queue's buffer when it is empty (an idle connection's memory).
  void release_buffer();

  // Cancels the association: a write still in flight completes into the void.
  void detach();

  // Takes over `other`'s stream, queue, byte count and write in flight (whose
  // completion now runs `done` here), leaving `other` detached: a socket's
  // writes change owner without a byte reordered or lost. This writer must
  // be unattached.
  void adopt(StreamWriter& other, DoneFn done, void* owner);

 private:
  struct WriteReq;
  int start_write(bool try_now = true);
  void on_write_done(int status, size_t bytes);

  uv_stream_t* stream_ = nullptr;
  DoneFn done_ = nullptr;
  void* owner_ = nullptr;
  std::string pending_;
  WriteReq* inflight_ = nullptr;
  size_t inflight_bytes_ = 0;
  uint64_t bytes_written_ = 0;
  bool queue_next_ = false;  // queue_next(): the next send_from() queues
};

}  // namespace tlsfront
