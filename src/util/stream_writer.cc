#include "util/stream_writer.h"

#include <utility>

namespace tlsfront {

struct StreamWriter::WriteReq {
  uv_write_t req{};
  std::string bytes;
  StreamWriter* owner = nullptr;
};

StreamWriter::~StreamWriter() { detach(); }

void StreamWriter::attach(uv_stream_t* stream, DoneFn done, void* owner) {
  stream_ = stream;
  done_ = done;
  owner_ = owner;
}

void StreamWriter::detach() {
  if (inflight_) inflight_->owner = nullptr;
  inflight_ = nullptr;
  inflight_bytes_ = 0;
  pending_.clear();
  stream_ = nullptr;
  done_ = nullptr;
  owner_ = nullptr;
  queue_next_ = false;
}

void StreamWriter::adopt(StreamWriter& other, DoneFn done, void* owner) {
  stream_ = std::exchange(other.stream_, nullptr);
  done_ = done;
  owner_ = owner;
  pending_.swap(other.pending_);
  inflight_ = std::exchange(other.inflight_, nullptr);
  if (inflight_) inflight_->owner = this;
  inflight_bytes_ = std::exchange(other.inflight_bytes_, 0);
  bytes_written_ = other.bytes_written_;
  other.detach();
}

int StreamWriter::send_from(std::string& bytes) {
  if (bytes.empty()) return 0;
  if (inflight_ || !pending_.empty() || stream_ == nullptr || queue_next_) {
    const bool try_now = !queue_next_;
    queue_next_ = false;
    pending_.append(bytes);
    bytes.clear();
    return inflight_ ? 0 : start_write(try_now);
  }
  uv_buf_t now = uv_buf_init(bytes.data(), static_cast<unsigned>(bytes.size()));
  int n = uv_try_write(stream_, &now, 1);
  if (n < 0 && n != UV_EAGAIN) return n;
  const size_t taken = n > 0 ? static_cast<size_t>(n) : 0;
  bytes_written_ += taken;
  pending_.append(bytes, taken);
  bytes.clear();
  return pending_.empty() ? 0 : start_write(/*try_now=*/false);  // the socket is full: queue the rest
}

void StreamWriter::release_buffer() {
  if (pending_.empty()) std::string().swap(pending_);
}

int StreamWriter::start_write(bool try_now) {
  if (pending_.empty() || stream_ == nullptr) return 0;
  // Write now when the socket takes it: no request, no callback, and none of
  // the epoll_ctl that libuv 1.44 issues after every queued write completes.
  uv_buf_t now = uv_buf_init(pending_.data(), static_cast<unsigned>(pending_.size()));
  int n = try_now ? uv_try_write(stream_, &now, 1) : UV_EAGAIN;
  if (n > 0) {
    bytes_written_ += static_cast<size_t>(n);
    if (static_cast<size_t>(n) == pending_.size()) {
      pending_.clear();
      return 0;
    }
    pending_.erase(0, static_cast<size_t>(n));
  } else if (n != UV_EAGAIN) {
    return n;
  }
  auto* w = new WriteReq;
  w->bytes.swap(pending_);
  w->owner = this;
  w->req.data = w;
  uv_buf_t buf = uv_buf_init(w->bytes.data(), static_cast<unsigned>(w->bytes.size()));
  int rc = uv_write(&w->req, stream_, &buf, 1, [](uv_write_t* req, int status) {
    auto* wr = static_cast<WriteReq*>(req->data);
    StreamWriter* owner = wr->owner;
    size_t bytes = wr->bytes.size();
    delete wr;
    if (owner) owner->on_write_done(status, bytes);
  });
  if (rc != 0) {
    delete w;
    return rc;
  }
  inflight_ = w;
  inflight_bytes_ = w->bytes.size();
  return 0;
}

void StreamWriter::on_write_done(int status, size_t bytes) {
  inflight_ = nullptr;
  inflight_bytes_ = 0;
  if (status == 0) bytes_written_ += bytes;
  if (status == 0 && !pending_.empty()) {
    int rc = start_write();
    if (rc != 0) status = rc;
  }
  if (done_) done_(owner_, status, bytes);
}

}  // namespace tlsfront
