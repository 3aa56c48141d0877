// RequestStream: one request on the client side from its complete head to
// its access-log line, the same for every client codec (HTTP/1.1:
// Http1Session, one at a time; HTTP/2: one per Http2Stream) — as Envoy's
// connection manager runs one ActiveStream for every codec. A codec
// translates bytes and frames into the request's events and the response's
// calls back into its framing (StreamCodec); everything between is here,
// written once:
//   - the admission sequence: a refused method (405), the codec's own check
//     of its head, then admission proper (admission.h: real client address,
//     routing, limits, header rules, the route's fixed answers) — an answer
//     to give, or the Exchange that will answer;
//   - the exchange's life (request events in, ExchangeSink calls out: this
//     object is the exchange's sink) and its retirement;
//   - tlsfront's own answers (build_local_answer), also for an exchange that
//     failed before a head went out;
//   - RFC 8441 / RFC 9220 extended CONNECT: the 101 checked and turned
//     into a 200, a 2xx to the Upgrade refused as 502;
//   - a tunnel's upstream side once taken from the exchange (after the
//     101's read), pumped both ways with backpressure — unless the codec
//     takes it for a connection of its own (on_tunnel_taken: HTTP/1.1's
//     TunnelSession, which frees the whole HTTP session);
//   - the status and the line: RequestRecord::log_completed.
// What stays in a codec: parsing and framing, flow control, its timers, the
// bytes it puts on the wire (RequestRecord::bytes_*), and when an answer is
// sent relative to the body it reads.
// Thread affinity: owning worker only.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "data/http/admission.h"
#include "data/http/exchange.h"
#include "data/http/exchange_sink.h"
#include "data/http/local_answer.h"
#include "data/http/request_record.h"
#include "data/http/session_env.h"
#include "data/upstream/upstream_handler.h"
#include "data/upstream/upstream_tunnel.h"
#include "message/request.h"
#include "util/loop_context.h"

namespace tlsfront::http {

// What a codec does with one request's response, in its framing. Calls come
// in ExchangeSink order: encode_informational()*, then encode_head() [body]*
// [trailers] encode_end(), or encode_tunnel_open() body* [encode_end()]; any
// of them after the codec's stream closed does nothing.
class StreamCodec {
 public:
  virtual ~StreamCodec() = default;
  virtual void encode_informational(const ResponseHead& head) = 0;
  // The codec takes the head: HTTP/2 keeps its fields until its HEADERS
  // frame has gone (nghttp2 points at them uncopied).
  virtual void encode_head(ResponseHead&& head, bool has_body) = 0;
  // A 101 (HTTP/1.1) or, after an extended CONNECT, the 200 it became.
  virtual void encode_tunnel_open(const ResponseHead& head, std::string_view protocol) = 0;
  virtual void encode_body(std::string_view data) = 0;
  // Dropped where the framing cannot carry them (HTTP/1.1 without chunking
  // or without TE: trailers).
  virtual void encode_trailers(const std::vector<Header>& trailers) {}
  virtual void encode_end() = 0;
  // True while a final answer may still replace the response: no final head
  // went out and the stream is open.
  virtual bool answerable() const = 0;
  // The response cannot be completed: cut it short so the client sees it
  // (HTTP/1.1 closes the connection; HTTP/2 resets the stream: INTERNAL_ERROR,
  // CONNECT_ERROR for a tunnel, RFC 9113 §8.5). Nothing once closed.
  virtual void abort_response() = 0;
  // A local answer replaces whatever the request still sends: the codec stops
  // expecting it (a connection to close after, a held body dropped).
  virtual void on_local_answer() {}
  // The tunnel's upstream side was taken from the exchange (the 101's read
  // is over); the codec may take it for itself (take_tunnel()).
  virtual void on_tunnel_taken() {}
  virtual bool output_congested() const = 0;
  virtual void on_request_body_writable() = 0;
  virtual const ConnectionInfo& connection_info() const = 0;
};

class RequestStream final : public ExchangeSink, public Flushable, private upstream::UpstreamHandler {
 public:
  // `env` and `codec` are borrowed and outlive the stream (the codec owns it).
  RequestStream(const SessionEnv& env, StreamCodec* codec) : env_(env), loop_(env.loop), codec_(codec) {}
  ~RequestStream() override;
  RequestStream(const RequestStream&) = delete;
  RequestStream& operator=(const RequestStream&) = delete;

  RequestRecord& record() { return record_; }
  const RequestRecord& record() const { return record_; }

  // The admission sequence on a complete head: refused_method() (405, RFC
  // 9110 §9.3.6), then `validate` (the codec's own rules: 0 to go on, a
  // status to answer, or < 0 when the codec already ended the stream), then
  // admit(). Returns the answer to give (status > 0; head_refused before
  // admit()), nothing (status 0) with the exchange made but not started, or
  // status < 0 from `validate`.
  template <class Validate>
  LocalAnswer admit(Validate&& validate) {
    int status = refused_method(record_.head);
    if (status == 0) status = validate();
    if (status != 0) {
      LocalAnswer refused;
      refused.status = status;
      refused.head_refused = true;
      return refused;
    }
    return admit_validated();
  }
  // An RFC 8441 extended CONNECT (`:protocol`) as the HTTP/1.1 Upgrade
  // request it goes up as (data/http/extended_connect.h); the upstream's
  // 101 is checked against what this returns when it comes.
  void map_extended_connect(std::string_view protocol);

  bool has_exchange() const { return exchange_ != nullptr; }
  bool has_tunnel() const { return tunnel_ != nullptr; }

  // Request events, passed to the exchange (nothing when there is none).
  void start() { if (exchange_) exchange_->start(); }
  void on_handshake_done() { if (exchange_) exchange_->on_handshake_done(); }
  void on_request_body(std::string_view data) { if (exchange_) exchange_->on_request_body(data); }
  void on_request_trailers(std::vector<Header>&& trailers) {
    if (exchange_) exchange_->on_request_trailers(std::move(trailers));
  }
  void on_request_complete() { if (exchange_) exchange_->on_request_complete(); }
  bool request_body_congested() const { return exchange_ && exchange_->request_body_congested(); }
  // The client side drained: the exchange or the tunnel produces more.
  void on_output_drained();

  // Tunnel bytes from the client, to the exchange (before the tunnel was
  // taken from it) or the tunnel; their end (the client's FIN / END_STREAM).
  void send_tunnel(std::string_view data);
  void end_tunnel();
  // The upstream side holds more than kWriteHighWatermark of the client's
  // tunnel bytes (or of its body): the codec stops taking them.
  bool upstream_congested() const;
  // Takes the tunnel's upstream side (after on_tunnel_taken()); its handler
  // is to be set by the new owner.
  std::unique_ptr<upstream::UpstreamTunnel> take_tunnel() { return std::move(tunnel_); }

  // tlsfront's own answer, sent as an upstream's response would be (a HEAD
  // request gets the head only); the exchange, if any, retires first. When
  // the codec is no longer answerable() the response is cut short instead.
  void respond_local(LocalAnswer answer);
  void respond_local(int status) {
    LocalAnswer answer;
    answer.status = status;
    respond_local(std::move(answer));
  }
  // The exchange and tunnel stop (no further sink call); what they know
  // for the log goes into the record. Idempotent.
  void retire();
  // retire(), then the request's counters and access-log line
  // (RequestRecord::log_completed). `stream_id`: 0 on HTTP/1.1.
  void log(std::string_view protocol, uint32_t stream_id, bool first_on_connection);

  // ExchangeSink
  void send_informational(const ResponseHead& head) override;
  void send_response_head(ResponseHead&& head, bool has_body) override;
  void open_tunnel(const ResponseHead& head, std::string_view protocol) override;
  void send_response_body(std::string_view data) override;
  void send_trailers(const std::vector<Header>& trailers) override { codec_->encode_trailers(trailers); }
  void end_response() override { codec_->encode_end(); }
  void fail_response(int status, std::string_view reason) override;
  bool output_congested() const override { return codec_->output_congested(); }
  void on_request_body_writable() override { codec_->on_request_body_writable(); }
  const ConnectionInfo& connection_info() const override { return codec_->connection_info(); }

  // Takes the tunnel from the exchange once the 101's read is over
  // (scheduled by open_tunnel()).
  void flush() override;

 private:
  LocalAnswer admit_validated();
  // UpstreamHandler: the tunnel's upstream side, once taken from the exchange.
  void on_upstream_connected() override {}
  void on_upstream_head(ResponseHead&&, bool) override {}
  void on_upstream_body(std::string_view data) override;
  void on_upstream_complete() override;
  void on_upstream_error(upstream::UpstreamFailure failure, Error error) override;
  void on_upstream_writable() override { codec_->on_request_body_writable(); }
  void on_upstream_tunnel(std::unique_ptr<upstream::UpstreamTunnel>) override {}

  const SessionEnv& env_;
  // The loop, for the destructor: an HTTP/2 stream may be freed after its
  // connection and the generation whose SessionEnv `env_` is.
  uv_loop_t* const loop_;
  StreamCodec* codec_;
  RequestRecord record_;
  std::unique_ptr<Exchange> exchange_;
  std::unique_ptr<upstream::UpstreamTunnel> tunnel_;
  std::string websocket_accept_;  // what the upstream's 101 must carry ("": not checked)
};

}  // namespace tlsfront::http
