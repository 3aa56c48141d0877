// A frame-level HTTP/2 client for the abuse and validation tests: raw frames
// over the harness's TlsClient (ALPN h2), requests HPACK-encoded by hand as
// literals without indexing (so any bytes, uppercase names included, can be
// sent), responses decoded with nghttp2's HPACK inflater.
// Thread affinity: the test thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness.h"

namespace tlsfront::itest::h2 {

enum FrameType : uint8_t {
  kData = 0,
  kHeaders = 1,
  kPriority = 2,
  kRstStream = 3,
  kSettings = 4,
  kPing = 6,
  kGoaway = 7,
  kWindowUpdate = 8,
  kContinuation = 9,
};
enum Flag : uint8_t { kEndStream = 0x1, kAck = 0x1, kEndHeaders = 0x4 };
enum ErrorCode : uint32_t {
  kNoError = 0,
  kProtocolError = 1,
  kFlowControlError = 3,
  kStreamClosed = 5,
  kRefusedStream = 7,
  kCancel = 8,
  kEnhanceYourCalm = 0xb,
};

using Fields = std::vector<std::pair<std::string, std::string>>;

struct Frame {
  uint8_t type = 0;
  uint8_t flags = 0;
  uint32_t stream = 0;
  std::string payload;
  Fields fields;  // HEADERS from the server, decoded (in arrival order, so HPACK state holds)
  std::vector<std::string> never_indexed;  // names of `fields` sent never indexed (RFC 7541 §6.2.3)
  // RST_STREAM / GOAWAY error code; GOAWAY last stream id.
  uint32_t error_code() const;
  uint32_t last_stream_id() const;
};

// One frame's bytes.
std::string frame(uint8_t type, uint8_t flags, uint32_t stream, std::string_view payload);
// HPACK (RFC 7541 §6.2.2) literal-without-indexing encoding of `fields`.
std::string hpack(const Fields& fields);
// GET https://localhost<path> pseudo-headers.
Fields get_request(const std::string& path, const std::string& authority = "localhost");

class Client {
 public:
  Client();
  ~Client();
  // Connects with ALPN h2 and sends the preface and a SETTINGS frame with
  // `settings` ({id, value} pairs; none by default).
  bool connect(int port, const std::vector<std::pair<uint16_t, uint32_t>>& settings = {});
  bool send(std::string_view bytes) { return tls_.write(bytes); }
  bool send_frame(uint8_t type, uint8_t flags, uint32_t stream, std::string_view payload) {
    return send(frame(type, flags, stream, payload));
  }
  bool send_headers(uint32_t stream, const Fields& fields, bool end_stream);

  // The next frame, or nullopt when the connection closed or `timeout` passed.
  // SETTINGS from the server are acknowledged automatically.
  std::optional<Frame> next(milliseconds timeout = kDefaultDeadline);
  // Reads until a frame matches `pred` (returned) or the connection closes /
  // the deadline passes (nullopt). Frames read on the way are kept in seen().
  std::optional<Frame> wait_for(const std::function<bool(const Frame&)>& pred,
                                milliseconds timeout = kDefaultDeadline);
  // Reads (and records) until the server closes; true if it did in time.
  bool wait_closed(milliseconds timeout = kDefaultDeadline);
  bool closed() const { return tls_.closed() && buf_.empty(); }
  // Acknowledge each DATA frame read with WINDOW_UPDATEs (stream and
  // connection), as a reading client does. Off by default: a client that
  // never opens its window is one of the cases under test.
  void set_auto_window_update(bool on) { auto_window_ = on; }
  const std::vector<Frame>& seen() const { return seen_; }

  // Status of the response HEADERS on `stream` (0 if none seen yet).
  int wait_status(uint32_t stream, milliseconds timeout = kDefaultDeadline);

 private:
  // The header block of a HEADERS frame (the server sends no CONTINUATION here).
  Fields decode(Frame& headers);
  TlsClient tls_;
  std::string buf_;
  std::vector<Frame> seen_;
  void* inflater_ = nullptr;
  bool auto_window_ = false;
};

}  // namespace tlsfront::itest::h2
