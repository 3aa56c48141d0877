#include "data/files/file_reader.h"

#include <sys/uio.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

namespace tlsfront::files {

struct FileReader::Read {
  uv_fs_t req{};
  FileReader* owner = nullptr;  // null: the reader went; free on completion
  std::shared_ptr<const OpenFile> file;
  uint64_t offset = 0;
  uint64_t remaining = 0;
  bool in_flight = false;
  std::unique_ptr<char[]> buf;
};

FileReader::FileReader(uv_loop_t* loop, std::shared_ptr<const OpenFile> file, uint64_t offset, uint64_t length, Consumer* consumer)
    : loop_(loop), read_(new Read), consumer_(consumer) {
  read_->owner = this;
  read_->file = std::move(file);
  read_->offset = offset;
  read_->remaining = length;
  read_->req.data = read_;
}

FileReader::~FileReader() {
  if (read_->in_flight) {
    read_->owner = nullptr;  // on_read frees it
  } else {
    delete read_;
  }
}

bool FileReader::reading() const { return read_->in_flight; }
uint64_t FileReader::remaining() const { return read_->remaining; }

void FileReader::read_more() {
  if (delivering_) {
    again_ = true;
    return;
  }
  Read* r = read_;
  delivering_ = true;
  do {
    again_ = false;
    if (r->in_flight || r->remaining == 0) break;
    // One buffer per response, no larger than the range (the first read has
    // all of it to come), never zeroed.
    if (!r->buf) r->buf = std::make_unique_for_overwrite<char[]>(r->remaining < kChunk ? r->remaining : kChunk);
    const size_t n = r->remaining < kChunk ? static_cast<size_t>(r->remaining) : kChunk;
    iovec iov{r->buf.get(), n};
    const ssize_t got = preadv2(r->file->fd.get(), &iov, 1, static_cast<off_t>(r->offset), RWF_NOWAIT);
    if (got > 0) {
      if (!deliver(static_cast<size_t>(got))) break;
      continue;  // again_ says whether the consumer asked for more
    }
    if (got == 0) {
      consumer_->on_file_error("the file is shorter than when it was opened");
      break;
    }
    if (errno != EAGAIN && errno != EOPNOTSUPP && errno != ENOSYS && errno != EINVAL) {
      consumer_->on_file_error(std::strerror(errno));
      break;
    }
    // Not in the page cache (or no RWF_NOWAIT here): the thread pool waits for it.
    uv_buf_t b = uv_buf_init(r->buf.get(), static_cast<unsigned>(n));
    const int rc = uv_fs_read(loop_, &r->req, r->file->fd.get(), &b, 1, static_cast<int64_t>(r->offset), on_read);
    if (rc != 0) {
      consumer_->on_file_error(uv_strerror(rc));
      break;
    }
    r->in_flight = true;
  } while (again_);
  delivering_ = false;
}

bool FileReader::deliver(size_t got) {
  Read* r = read_;
  const uint64_t take = got < r->remaining ? got : r->remaining;
  r->offset += take;
  r->remaining -= take;
  const bool last = r->remaining == 0;
  consumer_->on_file_data(std::string_view(r->buf.get(), static_cast<size_t>(take)));
  if (last) consumer_->on_file_end();
  return !last;
}

void FileReader::on_read(uv_fs_t* req) {
  Read* r = static_cast<Read*>(req->data);
  const ssize_t n = req->result;
  uv_fs_req_cleanup(req);
  r->in_flight = false;
  FileReader* self = r->owner;
  if (self == nullptr) {
    delete r;
    return;
  }
  if (n < 0) {
    self->consumer_->on_file_error(uv_strerror(static_cast<int>(n)));
    return;
  }
  if (n == 0) {
    self->consumer_->on_file_error("the file is shorter than when it was opened");
    return;
  }
  // The consumer's calls may ask for the next read (read_more).
  self->deliver(static_cast<size_t>(n));
}

}  // namespace tlsfront::files
