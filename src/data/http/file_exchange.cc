#include "data/http/file_exchange.h"

#include <ctime>

#include "data/files/file_rules.h"
#include "data/files/mime_types.h"
#include "data/http/header_plan.h"
#include "data/http/response_compression.h"
#include "log/log.h"

namespace tlsfront::http {
namespace {

// Built in place: one string construction per name and value.
void add(ResponseHead& head, std::string_view name, std::string_view value) {
  Header& h = head.headers.emplace_back();
  h.name.assign(name);
  h.value.assign(value);
}

// http_date(now), made once a second per thread.
const std::string& date_now(time_t now) {
  thread_local time_t at = -1;
  thread_local std::string text;
  if (now != at) {
    at = now;
    text = files::http_date(now);
  }
  return text;
}

// The compressor's output, handed to the sink (which copies it) at once:
// one buffer per worker thread.
std::string& encoded_scratch() {
  thread_local std::string scratch;
  scratch.clear();
  return scratch;
}

}  // namespace

FileExchange::FileExchange(uv_loop_t* loop, ExchangeSink* sink, const config::FileRoute& route,
                           files::Resolution&& file, const RequestRecord& record, const HeaderEdit* response_edit,
                           const config::Compression* compression, CompressionBudget* budget)
    : Exchange(loop), sink_(sink), route_(route), file_(std::move(file)), record_(record),
      response_edit_(response_edit),
      compression_(compression != nullptr && !compression->encodings.empty() ? compression : nullptr),
      budget_(budget) {}

FileExchange::~FileExchange() { LoopContext::of(loop_).cancel_flush(this); }

void FileExchange::start() {}

void FileExchange::on_request_complete() { LoopContext::of(loop_).schedule_flush(this); }

void FileExchange::on_output_drained() { LoopContext::of(loop_).schedule_flush(this); }

void FileExchange::flush() {
  if (phase_ == Phase::Created) {
    respond();
  } else {
    pump();
  }
}

void FileExchange::respond() {
  const files::OpenFile& file = *file_.file;
  const struct stat& st = file.st;
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  const time_t mtime = st.st_mtim.tv_sec;
  // A precompressed variant's tag names its coding (never the file's own).
  std::string variant_etag;
  if (!file_.coding.empty()) {
    variant_etag = files::strong_etag(static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                                      size, file_.coding);
  }
  const std::string& etag = file_.coding.empty() ? file.etag : variant_etag;
  const files::FileAnswer answer = files::evaluate(files::preconditions_of(record_.head), etag, mtime, size);

  ResponseHead head;
  head.status = answer.status;
  head.headers.reserve(12);
  add(head, "Server", "tlsfront");
  const time_t now = std::time(nullptr);
  add(head, "Date", date_now(now));  // an origin server's (RFC 9110 §6.6.1)
  const bool representation = answer.status == 200 || answer.status == 206 || answer.status == 304;
  if (answer.status != 304 && answer.status != 412) {
    add(head, "Content-Type", files::content_type_for(file_.type_path, route_.types));
  }
  if (representation) {
    add(head, "Last-Modified", file.last_modified);
    add(head, "ETag", etag);
    if (!route_.precompressed.empty()) add(head, "Vary", "Accept-Encoding");
    if (!file_.coding.empty() && answer.status != 304) add(head, "Content-Encoding", file_.coding);
    if (route_.expires_s) {
      add(head, "Expires", files::http_date(now + static_cast<time_t>(*route_.expires_s)));
      add(head, "Cache-Control", "max-age=" + std::to_string(*route_.expires_s));
    }
  }
  if (answer.status == 200 || answer.status == 206) add(head, "Accept-Ranges", "bytes");
  if (answer.status == 206) {
    add(head, "Content-Range", "bytes " + std::to_string(answer.offset) + "-" +
                                   std::to_string(answer.offset + answer.length - 1) + "/" + std::to_string(size));
  }
  if (answer.status == 416) add(head, "Content-Range", "bytes */" + std::to_string(size));
  if (response_edit_ != nullptr && !response_edit_->empty()) {
    apply_edit(head.headers, *response_edit_, header_vars(sink_->connection_info(), record_));
  }
  // A 304's length is not stated (the selected representation's would be,
  // RFC 9110 §8.6, but its Content-Encoding is not sent either); 412, 416:
  // an empty body.
  if (answer.status != 304) head.content_length = answer.length;
  const bool body = record_.head.method != "HEAD" && answer.length > 0 &&
                    (answer.status == 200 || answer.status == 206);
  // A precompressed variant is sent as it is (its Content-Encoding is set).
  if (compression_ != nullptr && (answer.status == 200 || answer.status == 206)) judge_compression(head, body);
  if (compression_ != nullptr && answer.status == 304 && file_.coding.empty()) judge_not_modified(head, size);
  transition(phase_, body ? Phase::Streaming : Phase::Done);
  ExchangeSink* sink = sink_;
  sink->send_response_head(std::move(head), body);
  if (!body) {
    file_.file.reset();
    sink->end_response();
    return;
  }
  if (phase_ != Phase::Streaming) return;  // cancelled by the head's write
  offset_ = answer.offset;
  remaining_ = answer.length;
  if (!file.in_memory) {
    reader_ = std::make_unique<files::FileReader>(loop_, file_.file, answer.offset, answer.length,
                                                   static_cast<files::FileReader::Consumer*>(this));
  }
  pump();
}

void FileExchange::judge_compression(ResponseHead& head, bool body) {
  const std::optional<ContentCoding> accepted = accepted_coding(*compression_, record_.head);
  switch (judge_response(*compression_, record_.head.method, head, body && accepted.has_value())) {
    case CompressionVerdict::Untouched:
      return;
    case CompressionVerdict::VaryOnly:
      add_vary_accept_encoding(head.headers);
      return;
    case CompressionVerdict::Compress:
      encoder_ = make_content_encoder(*accepted, compression_level(*compression_, *accepted), head.content_length);
      if (encoder_) {
        bool admitted = false;
        claim_ = CompressionClaim::admit(budget_, *encoder_, compression_->max_memory, admitted);
        if (!admitted) encoder_.reset();  // the worker's codecs hold max_memory already
      }
      if (encoder_) {
        mark_compressed(head, *accepted);
        applied_coding_ = coding_name(*accepted);
      } else {
        add_vary_accept_encoding(head.headers);  // no memory for a codec: the identity body
      }
      return;
  }
}

void FileExchange::judge_not_modified(ResponseHead& head, uint64_t size) {
  // The 200 this 304 stands for, as judge_compression would see it.
  ResponseHead probe;
  probe.status = 200;
  probe.content_length = size;
  probe.headers = head.headers;
  add(probe, "Content-Type", files::content_type_for(file_.type_path, route_.types));
  const bool accepted = accepted_coding(*compression_, record_.head).has_value();
  switch (judge_response(*compression_, record_.head.method, probe, accepted)) {
    case CompressionVerdict::Untouched:
      return;
    case CompressionVerdict::Compress:
      // The compressed representation's tag (mark_compressed's), as its 200 had.
      for (Header& h : head.headers) {
        if (iequals(h.name, "etag") && !h.value.starts_with("W/")) h.value.insert(0, "W/");
      }
      [[fallthrough]];
    case CompressionVerdict::VaryOnly:
      add_vary_accept_encoding(head.headers);
      return;
  }
}

bool FileExchange::send_encoded(bool ok, const std::string& out) {
  if (!ok) {
    encoder_.reset();
    claim_ = CompressionClaim();
    log::warn("file {}: response compression failed (out of memory); response cut short", file_.type_path);
    transition(phase_, Phase::Done);
    sink_->fail_response(500, "response compression failed");
    return false;
  }
  if (!out.empty()) sink_->send_response_body(out);
  return true;
}

void FileExchange::pump() {
  if (phase_ != Phase::Streaming) return;
  if (reader_) {
    if (!sink_->output_congested()) reader_->read_more();
    return;
  }
  // Held in memory: a chunk at a time while the client side takes it, as
  // the reader would give it.
  const std::string& content = file_.file->content;
  while (phase_ == Phase::Streaming && remaining_ > 0 && !sink_->output_congested()) {
    const size_t n = remaining_ < files::FileReader::kChunk ? static_cast<size_t>(remaining_) : files::FileReader::kChunk;
    const uint64_t at = offset_;
    offset_ += n;
    remaining_ -= n;
    on_file_data(std::string_view(content).substr(static_cast<size_t>(at), n));
  }
  if (phase_ == Phase::Streaming && remaining_ == 0) on_file_end();
}

void FileExchange::on_file_data(std::string_view data) {
  if (phase_ != Phase::Streaming) return;
  if (encoder_) {
    std::string& out = encoded_scratch();
    if (!send_encoded(encoder_->write(data, out), out)) return;
    if (encoder_) claim_.follow(*encoder_);
  } else {
    sink_->send_response_body(data);
  }
  if (reader_ && reader_->remaining() > 0) pump();
}

void FileExchange::on_file_end() {
  if (phase_ != Phase::Streaming) return;
  if (encoder_) {
    std::string& out = encoded_scratch();
    if (!send_encoded(encoder_->finish(out), out)) return;
    if (encoder_) claim_.complete(*encoder_);
    encoder_.reset();
    claim_ = CompressionClaim();
  }
  if (phase_ != Phase::Streaming) return;  // cancelled by the last write
  transition(phase_, Phase::Done);
  sink_->end_response();
}

void FileExchange::on_file_error(std::string_view why) {
  if (phase_ != Phase::Streaming) return;
  log::warn("file {}: {}; response cut short", file_.type_path, why);
  transition(phase_, Phase::Done);
  sink_->fail_response(500, why);
}

void FileExchange::record_into(RequestRecord& record) {
  record.content_encoding = !file_.coding.empty() ? file_.coding : applied_coding_;
}

void FileExchange::cancel() {
  // The reader stays until the exchange is deleted: cancel() may come from
  // within its callback (a sink call that failed the client).
  if (phase_ != Phase::Done) transition(phase_, Phase::Done);
}

}  // namespace tlsfront::http
