// The client side of data-path unit tests: parse_responses() reads what an
// Http1Session sent (llhttp, response mode), and H2Client is an nghttp2
// client session talking to an Http2Session through its FakeTransport.
// Thread affinity: the test's thread.
#pragma once

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "data/http/client_session.h"
#include "data_path_transport.h"
#include "data_path_upstream.h"

namespace tlsfront::harness {

struct ParsedResponse {
  int status = 0;
  HeaderPairs headers;
  std::string body;
  bool complete = false;  // the message ended (a cut-short body is not complete)
  std::string header(std::string_view name) const { return find_header(headers, name); }
};

// The responses in `bytes`, 1xx included, in order. `head_responses`: the
// indexes (in the returned order) that answer HEAD requests (no body).
// Parsing stops at the first malformed byte; `rest`, when given, gets
// whatever was not a complete response.
std::vector<ParsedResponse> parse_responses(std::string_view bytes, const std::set<size_t>& head_responses = {},
                                            std::string* rest = nullptr);

class H2Client {
 public:
  struct Stream {
    int status = 0;
    HeaderPairs headers;
    std::string body;
    bool closed = false;
    uint32_t error_code = 0;  // of the stream's close (RST_STREAM from the server, or our own)
    std::string header(std::string_view name) const { return find_header(headers, name); }
  };

  // Queues the connection preface and an empty SETTINGS frame.
  H2Client();
  ~H2Client();
  H2Client(const H2Client&) = delete;
  H2Client& operator=(const H2Client&) = delete;

  // A request on a new stream (:scheme https, :authority "example.test"
  // unless `headers` hold one); `body` sent as DATA when given. Returns the stream id.
  int32_t submit(std::string_view method, std::string_view path, const HeaderPairs& headers = {},
                 std::optional<std::string> body = std::nullopt);
  void reset(int32_t stream_id, uint32_t error_code = NGHTTP2_CANCEL);

  // Moves bytes both ways once: what the server sent (transport output) in,
  // what this client has to send into `session`.
  void pump(FakeTransport& transport, http::ClientSession& session);

  const Stream& stream(int32_t id) { return streams_[id]; }
  bool goaway_received() const { return goaway_; }
  bool failed() const { return failed_; }  // the server's bytes broke the client session

 private:
  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                       const uint8_t* value, size_t valuelen, uint8_t, void* self);
  static int on_data(nghttp2_session*, uint8_t, int32_t id, const uint8_t* data, size_t len, void* self);
  static int on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* self);
  static int on_close(nghttp2_session*, int32_t id, uint32_t error_code, void* self);

  nghttp2_session* session_ = nullptr;
  std::map<int32_t, Stream> streams_;
  std::map<int32_t, std::unique_ptr<std::string>> bodies_;  // request bodies not yet sent
  bool goaway_ = false;
  bool failed_ = false;
};

}  // namespace tlsfront::harness
