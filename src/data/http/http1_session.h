// Http1Session: the HTTP/1.1 server side of one client connection (RFC 9112),
// on llhttp in strict mode. Requests are answered strictly in order: after a
// request's message ends the parser pauses, so pipelined requests wait in
// `pending_input_` until the response before them is complete. Ambiguous
// framing is answered 400 and the connection closed before anything is
// forwarded; 431 oversized head, 413 oversized body, 404 no route, 417 bad
// Expect; upstream failures become 502/504 through ExchangeSink::fail_response.
// An Upgrade request (RFC 9110 §7.8; RFC 6455 §4.1) without a body, whose
// route allows its protocol, goes up with its Upgrade; a 101 makes the
// connection a byte tunnel (RequestPhase::Tunnel) idle-limited by
// timeouts.tunnel; once the 101's read is over the connection goes to a
// TunnelSession with the tunnel's upstream side (upstream::UpstreamTunnel)
// and the request's TunnelRecord (on_tunnel_taken()): an open tunnel holds
// neither this session nor a ProxyExchange.
// The session is the HTTP/1.1 codec (StreamCodec) of one RequestStream at a
// time (data/http/request_stream.h: admission, the exchange, local answers,
// the log line). Any other answer
// is an ordinary response after which the connection closes: bytes the
// client sent after its Upgrade request are never parsed as a next request
// (no smuggling past a refused upgrade).
// Thread affinity: owning worker only.
#pragma once

#include <llhttp.h>
#include <uv.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "data/http/client_session.h"
#include "data/http/client_transport.h"
#include "data/http/local_answer.h"
#include "data/http/request_stream.h"
#include "data/http/session_env.h"
#include "message/request.h"
#include "util/state.h"

namespace tlsfront::http {

class Http1Session final : public ClientSession, private StreamCodec {
 public:
  // The request being read (one at a time):
  //   Idle     -> Head      a request's first byte (llhttp on_message_begin)
  //   Head     -> Body      its head is complete and accepted; the body, if
  //                         any, is read (forwarded, or dropped before a local answer)
  //   Body     -> Complete  the message is read whole; the parser pauses, and
  //                         pipelined bytes wait in pending_input_
  //   Complete -> Idle      its response ended and the connection stays open
  //   Complete -> Tunnel    the upstream's 101 to an Upgrade request went out:
  //                         every later client byte is the tunnel's (final:
  //                         the connection goes to a TunnelSession, or
  //                         closes if the tunnel ends before)
  // A request refused mid-way (400, 408, 413, ...) keeps its phase: the
  // connection closes after the answer (CloseMode), and Head or Body then
  // says the client may still be sending (so the transport lingers).
  enum class RequestPhase { Idle, Head, Body, Complete, Tunnel };
  // The response being written:
  //   Waiting -> Sized | Chunked | UntilClose   the final head went out, its
  //              body framed by Content-Length (or none), chunked, or the close
  //   any     -> Waiting                        the response ended
  //   Waiting -> Tunnel                         a 101 went out: the upstream's
  //                                             bytes follow unframed (final)
  enum class ResponsePhase { Waiting, Sized, Chunked, UntilClose, Tunnel };
  // What happens after the current response:
  //   KeepAlive -> AfterResponse | Closed   AfterResponse: Connection: close
  //   AfterResponse -> Closed               (the client's, a refused request,
  //                                          a drain, HTTP/1.0 without length)
  // Closed is final: close() is the one way there.
  enum class CloseMode { KeepAlive, AfterResponse, Closed };

  // `transport` is borrowed: the connection owns this session.
  Http1Session(const SessionEnv& env, ClientTransport* transport, ConnectionInfo info);
  ~Http1Session() override;
  Http1Session(const Http1Session&) = delete;
  Http1Session& operator=(const Http1Session&) = delete;

  // Plaintext from the client; `data` is valid during the call only.
  void on_data(std::string_view data) override;
  // False while the session does not want more input (a response pending,
  // upstream congested, or closing); the connection then stops reading.
  bool wants_input() const override;
  void on_timer() override;
  // The client output dropped below the low watermark.
  void on_output_drained() override;
  // The client closed (EOF, close_notify) or reset the connection.
  void on_client_closed() override;
  // Worker shutdown: close now if idle, else after the current response.
  void on_handshake_done(double tls_handshake_ms) override;
  void on_shutdown() override;
  bool close_if_idle() override;

 private:
  friend struct RequestParserCallbacks;
  // StreamCodec
  void encode_informational(const ResponseHead& head) override;
  void encode_tunnel_open(const ResponseHead& head, std::string_view protocol) override;
  void encode_head(ResponseHead&& head, bool has_body) override;
  void encode_body(std::string_view data) override;
  // Kept for the last chunk when the response is chunked and the request's
  // TE asked for trailers (RFC 9110 §10.1.4); dropped otherwise.
  void encode_trailers(const std::vector<Header>& trailers) override;
  void encode_end() override;
  bool answerable() const override { return close_ != CloseMode::Closed && response_ == ResponsePhase::Waiting; }
  void abort_response() override;
  void on_local_answer() override;
  // Hands the connection to a TunnelSession with the tunnel's upstream side.
  void on_tunnel_taken() override;
  bool output_congested() const override;
  void on_request_body_writable() override;
  const ConnectionInfo& connection_info() const override { return info_; }
  // The request's TE lists "trailers" (RFC 9110 §10.1.4).
  bool client_accepts_trailers();

  enum class TimerPurpose { None, Header, Body, Idle, Resume, Send, Tunnel };

  bool in_request() const { return request_ == RequestPhase::Head || request_ == RequestPhase::Body; }
  void execute(std::string_view data);
  // tlsfront's own answer (an error, a route's return or redirect, the
  // HTTPS redirect), framed as an upstream response; then finish_request().
  void respond_local(LocalAnswer answer) { stream().respond_local(std::move(answer)); }
  void respond_local(int status) { respond_local(LocalAnswer{status}); }
  // An exchange answers the current request.
  bool has_exchange() const { return stream_ && stream_->has_exchange(); }
  void finish_request();
  // Retires the exchange (its stats go into the record) and logs the request.
  void log_request();
  // The one way the session ends: a request still in flight is logged (and
  // its exchange retired), then the transport closes. `notify`:
  // close_notify (false when a response is cut short).
  void close(bool notify);
  void close_after_response() {
    if (close_ == CloseMode::KeepAlive) transition(close_, CloseMode::AfterResponse);
  }
  void arm(TimerPurpose purpose);
  int reject(int status);

  // llhttp hooks.
  int on_message_begin();
  int on_url(const char* at, size_t len);
  int on_header_field(const char* at, size_t len);
  int on_header_value(const char* at, size_t len);
  int on_headers_complete();
  int on_body(const char* at, size_t len);
  int on_message_complete();
  int validate_head();

  const SessionEnv& env_;  // the connection's WorkerGeneration's (outlives the session)
  ClientTransport* transport_;
  ConnectionInfo info_;
  TimerPurpose timer_ = TimerPurpose::None;
  RequestPhase request_ = RequestPhase::Idle;
  ResponsePhase response_ = ResponsePhase::Waiting;
  CloseMode close_ = CloseMode::KeepAlive;

  // The request being read / answered, from its first byte until the
  // connection goes idle (an idle keepalive connection keeps none).
  // stream() makes one when there is none.
  RequestStream& stream() {
    if (!stream_) stream_ = std::make_unique<RequestStream>(env_, static_cast<StreamCodec*>(this));
    return *stream_;
  }
  RequestRecord& record() { return stream().record(); }
  std::unique_ptr<RequestStream> stream_;
  std::optional<int> rejection_;    // the status a parser hook refused the request with
  // Answered without an upstream once the message is read (404, 301); on
  // the heap, so that an idle session fits in 448 octets (an allocator size
  // class below 512).
  std::unique_ptr<LocalAnswer> local_answer_;
  std::string pending_input_;        // pipelined bytes parsed after this response
  std::string trailer_section_;      // "name: value\r\n" lines for the last chunk (send_trailers)

  // Header-line scanning across llhttp spans (obs-fold detection, head size).
  // Pointers are compared by address only, never dereferenced after the
  // input they point into is gone.
  struct HeadScan {
    std::string field;                   // the header name being read
    bool in_value = false;               // a value span of `field` has started
    const char* value_end = nullptr;     // where the current value's last span ended
    const char* input_begin = nullptr;   // the input passed to llhttp now
    const char* input_end_prev = nullptr;  // the end of the previous input
    const char* field_end = nullptr;     // end of the last header-name span
    bool field_in_input = false;         // field_end points into the input being parsed
    bool lf_after_field = false;         // a LF followed the name in an earlier input
    size_t head_bytes = 0;               // against limits.max_header_bytes
    // A chunked body's trailer fields (RFC 9112 §7.1.2): read and counted,
    // never added to the head, whose fields an exchange's HTTP/2 request
    // points into (http::H2RequestFields) while it may still be retried.
    std::vector<Header> trailers;
  };
  // What reading requests needs, from a request's first byte until the
  // connection goes idle or becomes a tunnel: an idle connection keeps
  // none, and the next request starts on a fresh llhttp (at a message
  // boundary, the same state as resuming the old one).
  struct Reader {
    llhttp_t parser{};
    HeadScan scan;
  };
  // The reader, made (llhttp_init) when there is none.
  Reader& reader();
  // Frees the reader, or, while llhttp runs (parsing_), once execute() ends.
  void drop_reader();
  std::unique_ptr<Reader> reader_;
  bool parsing_ = false;      // execute() is running: the reader stays
  bool drop_reader_ = false;  // drop_reader() was asked for while parsing_
};
// Every idle HTTP/1.1 connection holds one: 448 octets is an allocator size
// class (mimalloc's), one more octet costs 64.
static_assert(sizeof(Http1Session) <= 448, "Http1Session outgrew 448 octets");

// The transition tables (util/state.h).
constexpr bool legal(Http1Session::RequestPhase from, Http1Session::RequestPhase to) {
  using P = Http1Session::RequestPhase;
  return (from == P::Idle && to == P::Head) || (from == P::Head && to == P::Body) ||
         (from == P::Body && to == P::Complete) || (from == P::Complete && to == P::Idle) ||
         (from == P::Complete && to == P::Tunnel);
}
constexpr const char* name(Http1Session::RequestPhase p) {
  constexpr const char* names[] = {"Idle", "Head", "Body", "Complete", "Tunnel"};
  return names[static_cast<int>(p)];
}
constexpr bool legal(Http1Session::ResponsePhase from, Http1Session::ResponsePhase to) {
  using P = Http1Session::ResponsePhase;
  if (from == P::Tunnel) return false;
  return (from == P::Waiting) != (to == P::Waiting);
}
constexpr const char* name(Http1Session::ResponsePhase p) {
  constexpr const char* names[] = {"Waiting", "Sized", "Chunked", "UntilClose", "Tunnel"};
  return names[static_cast<int>(p)];
}
constexpr bool legal(Http1Session::CloseMode from, Http1Session::CloseMode to) {
  return static_cast<int>(to) > static_cast<int>(from);
}
constexpr const char* name(Http1Session::CloseMode m) {
  constexpr const char* names[] = {"KeepAlive", "AfterResponse", "Closed"};
  return names[static_cast<int>(m)];
}

}  // namespace tlsfront::http
