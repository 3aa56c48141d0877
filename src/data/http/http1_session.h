// Http1Session: the HTTP/1.1 server side of one client connection (RFC 9112),
// on llhttp in strict mode. Requests are answered strictly in order: after a
// request's message ends the parser pauses, so pipelined requests wait in
// `pending_input_` until the response before them is complete. Ambiguous
// framing is answered 400 and the connection closed before anything is
// forwarded; 431 oversized head, 413 oversized body, 404 no route, 417 bad
// Expect; upstream failures become 502/504 through ExchangeSink::fail_response.
// Thread affinity: owning worker only.
#pragma once

#include <llhttp.h>
#include <uv.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "data/http/client_session.h"
#include "data/http/client_transport.h"
#include "data/http/exchange_sink.h"
#include "data/http/proxy_exchange.h"
#include "message/request.h"
#include "data/http/session_env.h"

namespace tlsfront::http {

class Http1Session final : public ClientSession, public ExchangeSink {
 public:
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
  void on_shutdown() override;

  // ExchangeSink
  void send_informational(const ResponseHead& head) override;
  void send_response_head(const ResponseHead& head, bool has_body) override;
  void send_response_body(std::string_view data) override;
  void end_response() override;
  void fail_response(int status, std::string_view reason) override;
  bool output_congested() const override;
  void on_request_body_writable() override;
  const ConnectionInfo& connection_info() const override { return info_; }

 private:
  friend struct RequestParserCallbacks;
  enum class TimerPurpose { None, Header, Body, Idle, Resume, Send };

  void execute(std::string_view data);
  void respond_local(int status);
  void finish_request();
  void write_access_log();
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

  SessionEnv env_;
  ClientTransport* transport_;
  ConnectionInfo info_;
  llhttp_t parser_{};
  TimerPurpose timer_ = TimerPurpose::None;

  // The request being parsed / answered.
  RequestHead req_;
  std::string field_;
  bool in_value_ = false;
  // obs-fold detection: where the current value's last span ended, and the
  // bounds of the input passed to llhttp (compared as addresses only).
  const char* value_end_ = nullptr;
  const char* input_begin_ = nullptr;
  const char* input_end_prev_ = nullptr;
  const char* field_end_ = nullptr;  // end of the last header-name span
  bool field_in_input_ = false;      // field_end_ points into the input being parsed
  bool lf_after_field_ = false;      // a LF followed the name in an earlier input
  size_t head_bytes_ = 0;
  uint64_t body_bytes_ = 0;
  int error_status_ = 0;  // set by a hook that rejects the request
  int local_status_ = 0;  // a response the proxy gives without an upstream
  std::unique_ptr<ProxyExchange> exchange_;
  bool in_request_ = false;         // message begun, not yet complete
  bool awaiting_response_ = false;  // message complete, response not yet complete
  bool response_started_ = false;
  bool chunked_out_ = false;
  bool close_after_response_ = false;
  bool closed_ = false;
  std::string pending_input_;  // pipelined bytes parsed after this response

  // Access-log facts for the current request.
  std::chrono::system_clock::time_point req_time_{};
  std::chrono::steady_clock::time_point req_start_{};
  int status_ = 0;
  uint64_t bytes_sent_ = 0;
  uint64_t bytes_received_ = 0;
  std::string user_agent_;
};

}  // namespace tlsfront::http
