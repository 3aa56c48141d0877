// ScriptedUpstream: a small HTTP/1.1 server on the test's own uv loop, bound
// to 127.0.0.1:0, for unit tests of the data path (sessions, ProxyExchange,
// UpstreamPool). It parses requests with llhttp and records each one; what it
// answers is scripted per request (Reply, consumed in arrival order; when the
// script is empty, the default reply: 200 "ok"). A request whose reply is
// empty stays unanswered until the test writes or closes itself.
// Thread affinity: the loop's thread only.
#pragma once

#include <llhttp.h>
#include <uv.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/uv_handle.h"

namespace tlsfront::harness {

using HeaderPairs = std::vector<std::pair<std::string, std::string>>;
// The value of the first field named `name` (case-insensitive); "" when absent.
std::string find_header(const HeaderPairs& headers, std::string_view name);
bool has_header(const HeaderPairs& headers, std::string_view name);

// Gathers llhttp's header-field / header-value spans (which may arrive in
// pieces) into name/value pairs.
struct HeaderCollector {
  std::string field;
  bool in_value = false;
  void reset() {
    field.clear();
    in_value = false;
  }
  void on_field(const char* at, size_t n);
  void on_value(HeaderPairs& headers, const char* at, size_t n);
};

// What the server does with one request.
struct Reply {
  std::string at_head;         // written once the request head is in (a 100, or an early answer)
  bool close_at_head = false;  // then closes the connection (at_head empty: "close before answering")
  std::string at_end;          // written once the whole request (body included) is in
  bool close_at_end = false;   // then closes the connection

  // 200 with `body` and Content-Length, once the request is whole.
  static Reply ok(std::string_view body = "ok");
  // A complete raw response written once the request is whole.
  static Reply raw(std::string response) { return Reply{{}, false, std::move(response), false}; }
  // Reads the head, then closes without answering.
  static Reply close_before_answering() { return Reply{{}, true, {}, false}; }
  // Answers `response` as soon as the head is in, before the body ends.
  static Reply early(std::string response) { return Reply{std::move(response), false, {}, false}; }
  // Answers nothing: the test writes (write()) or closes (close()) itself.
  static Reply hold() { return Reply{}; }
};

// One request as the server read it.
struct SeenRequest {
  size_t connection = 0;  // index in accept order
  std::string method;
  std::string target;
  HeaderPairs headers;
  std::string body;  // decoded (chunk framing removed)
  bool chunked = false;
  bool complete = false;  // the whole message was read
  std::string header(std::string_view name) const { return find_header(headers, name); }
  bool has_header(std::string_view name) const { return harness::has_header(headers, name); }
};

class ScriptedUpstream {
 public:
  explicit ScriptedUpstream(uv_loop_t* loop);
  ~ScriptedUpstream();
  ScriptedUpstream(const ScriptedUpstream&) = delete;
  ScriptedUpstream& operator=(const ScriptedUpstream&) = delete;

  uint16_t port() const { return port_; }
  // Replies for the next requests, in arrival order.
  void script(Reply reply) { script_.push_back(std::move(reply)); }
  // The reply for requests arriving when the script is empty.
  void set_default(Reply reply) { default_ = std::move(reply); }

  int accepted() const { return static_cast<int>(peers_.size()); }
  const std::vector<SeenRequest>& requests() const { return requests_; }
  // Writes raw bytes on the connection that carried request `index` (a held
  // or slow answer); no-op when that connection is closed.
  void write(size_t request_index, std::string_view bytes);
  // Closes the connection that carried request `index`.
  void close(size_t request_index);
  // Closes every connection (the backend dropping its keepalive connections).
  void close_peers();
  // True once the proxy closed (EOF or reset) connection `connection`, or we did.
  bool connection_closed(size_t connection) const;
  // Connections still open on the server side.
  int open_connections() const;
  // Stops listening: later connects are refused.
  void stop_listening() { listener_.close(); }

 private:
  struct Peer {
    ScriptedUpstream* server = nullptr;
    size_t index = 0;
    UvHandle<uv_tcp_t> tcp;
    llhttp_t parser{};
    HeaderCollector collector;
    size_t current = 0;  // index in requests_ of the request being read
    Reply reply;
    bool closed = false;
  };
  friend struct UpstreamParserHooks;
  void accept();
  void on_read(Peer* peer, ssize_t n, const uv_buf_t* buf);
  void send_on(Peer* peer, std::string_view bytes);
  void close_peer(Peer* peer);
  Reply next_reply();

  uv_loop_t* loop_;
  UvHandle<uv_tcp_t> listener_;
  uint16_t port_ = 0;
  std::vector<std::unique_ptr<Peer>> peers_;
  std::vector<SeenRequest> requests_;
  std::deque<Reply> script_;
  Reply default_ = Reply::ok();
};

// A loopback port nothing listens on (bound, then closed): connects are refused.
uint16_t refused_port(uv_loop_t* loop);

}  // namespace tlsfront::harness
