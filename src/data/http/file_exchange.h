// FileExchange: the Exchange of a request a route with root or alias
// answers from a file (data/files/): the file, opened and checked at
// admission (files::resolve), is answered per RFC 9110 — Content-Type,
// Last-Modified, a strong ETag, Accept-Ranges, the preconditions (304,
// 412) and one byte range (206, 416; several ranges: the whole file),
// HEAD — with the route's expires, Vary: Accept-Encoding when it has
// precompressed variants, and its response_headers rules (as an upstream
// response gets them). The body is read by files::FileReader (from the
// page cache at once, else on libuv's thread pool), or taken from the
// open-file cache's copy of a small file (files::OpenFile::content), and
// passed to the sink one chunk at a time — compressed on the way when the
// route compresses, the file is of a compressible type and no precompressed
// variant was chosen (data/http/response_compression.h's rules, as for an
// upstream response: a 200 only, never a range) — only while the sink is
// not congested: the same
// backpressure as an upstream body, so a response holds one chunk (at most
// 64 KiB) beyond the client side's own buffer. The access log records it
// with no upstream.
// Phases (util/state.h):
//   Created   -> Streaming (the flush after on_request_complete: the head
//                went out, octets follow) | Done (a head without a body
//                went out, or cancelled)
//   Streaming -> Done (every octet sent, the file failed, or cancelled)
// No sink call is made once Done.
// Thread affinity: owning worker only.
#pragma once

#include <memory>
#include <string>

#include "config/config.h"
#include "data/files/file_reader.h"
#include "data/files/file_resolver.h"
#include "data/http/compression_budget.h"
#include "data/http/exchange.h"
#include "data/http/exchange_sink.h"
#include "message/header_edit.h"
#include "util/state.h"

namespace tlsfront::http {

class FileExchange final : public Exchange, public Flushable, private files::FileReader::Consumer {
 public:
  enum class Phase { Created, Streaming, Done };

  // `sink`, `route` (its files) and `record` are borrowed and outlive the
  // exchange; `response_edit`: the route's response_headers rules (null:
  // none); `file`: a Resolution of Kind::File; `compression`: the route's
  // (null: none), `budget` the worker's codec memory (null: unbounded).
  FileExchange(uv_loop_t* loop, ExchangeSink* sink, const config::FileRoute& route, files::Resolution&& file,
               const RequestRecord& record, const HeaderEdit* response_edit,
               const config::Compression* compression = nullptr, CompressionBudget* budget = nullptr);
  ~FileExchange() override;

  // Nothing: the answer waits for the whole request (on_request_complete),
  // as tlsfront's own answers do, so an HTTP/1.1 connection is not closed
  // as if the response had come before the request's end.
  void start() override;
  // The head, then the body as the sink drains, go out from flush() at the
  // end of this loop iteration: never from within the session's codec (an
  // HTTP/1.1 parser hook, an nghttp2 callback), since a cached file can be
  // answered whole at once.
  void on_request_complete() override;
  void on_output_drained() override;
  void flush() override;
  void cancel() override;
  Phase phase() const { return phase_; }

 private:
  void respond();
  void pump();
  void on_file_data(std::string_view data) override;
  void on_file_end() override;
  void on_file_error(std::string_view why) override;
  // The body's content coding for the access log (RequestRecord::content_encoding).
  void record_into(RequestRecord& record) override;
  // Compression of `head` (a 200 or 206 with its length) when the route's
  // rules say so: the encoder made and the head marked, or Vary only.
  void judge_compression(ResponseHead& head, bool body);
  // A 304's ETag and Vary as the 200 it stands for would have them.
  void judge_not_modified(ResponseHead& head, uint64_t size);
  // The encoder's output, sent; false (the response failed) when it failed.
  bool send_encoded(bool ok, const std::string& out);

  ExchangeSink* sink_;
  const config::FileRoute& route_;
  files::Resolution file_;
  const RequestRecord& record_;
  const HeaderEdit* response_edit_;
  const config::Compression* compression_;
  CompressionBudget* budget_;
  std::unique_ptr<ContentEncoder> encoder_;  // set: the body goes out compressed
  std::string_view applied_coding_;          // what encoder_ applies ("gzip", "br"), for the log
  CompressionClaim claim_;
  std::unique_ptr<files::FileReader> reader_;  // null: the file is in memory (OpenFile::content)
  uint64_t offset_ = 0;     // in memory: the next octet to send
  uint64_t remaining_ = 0;  // in memory: octets left
  Phase phase_ = Phase::Created;
};

constexpr bool legal(FileExchange::Phase from, FileExchange::Phase to) {
  using P = FileExchange::Phase;
  return (from == P::Created && (to == P::Streaming || to == P::Done)) || (from == P::Streaming && to == P::Done);
}
constexpr const char* name(FileExchange::Phase p) {
  constexpr const char* names[] = {"Created", "Streaming", "Done"};
  return names[static_cast<int>(p)];
}

}  // namespace tlsfront::http
