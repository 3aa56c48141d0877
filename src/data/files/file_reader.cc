#include "data/files/file_reader.h"

#include <memory>
#include <string>

namespace tlsfront::files {

struct FileReader::Read {
  uv_fs_t req{};
  FileReader* owner = nullptr;  // null: the reader went; free on completion
  Fd file;
  uint64_t offset = 0;
  uint64_t remaining = 0;
  bool in_flight = false;
  std::unique_ptr<char[]> buf;
};

FileReader::FileReader(uv_loop_t* loop, Fd file, uint64_t offset, uint64_t length, Consumer* consumer)
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
  Read* r = read_;
  if (r->in_flight || r->remaining == 0) return;
  if (!r->buf) r->buf = std::make_unique<char[]>(kChunk);
  const size_t n = r->remaining < kChunk ? static_cast<size_t>(r->remaining) : kChunk;
  uv_buf_t b = uv_buf_init(r->buf.get(), static_cast<unsigned>(n));
  const int rc = uv_fs_read(loop_, &r->req, r->file.get(), &b, 1, static_cast<int64_t>(r->offset), on_read);
  if (rc != 0) {
    consumer_->on_file_error(uv_strerror(rc));
    return;
  }
  r->in_flight = true;
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
  const uint64_t got = static_cast<uint64_t>(n) < r->remaining ? static_cast<uint64_t>(n) : r->remaining;
  r->offset += got;
  r->remaining -= got;
  // The consumer may destroy the reader from here on: nothing below reads `r`.
  const bool last = r->remaining == 0;
  Consumer* consumer = self->consumer_;
  consumer->on_file_data(std::string_view(r->buf.get(), static_cast<size_t>(got)));
  if (last) consumer->on_file_end();
}

}  // namespace tlsfront::files
