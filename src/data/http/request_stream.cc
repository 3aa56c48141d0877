#include "data/http/request_stream.h"

#include "data/http/admission.h"
#include "data/http/extended_connect.h"
#include "data/http/proxy_exchange.h"
#include "log/log.h"

namespace tlsfront::http {

RequestStream::~RequestStream() {
  if (loop_) LoopContext::of(loop_).cancel_flush(this);
  upstream::UpstreamTunnel::retire(tunnel_);
  Exchange::retire(exchange_);
}

LocalAnswer RequestStream::admit_validated() {
  Admission admission = http::admit(env_, this, record_);
  if (!admission.exchange) return std::move(admission.answer);
  exchange_ = std::move(admission.exchange);
  return LocalAnswer{};
}

void RequestStream::map_extended_connect(std::string_view protocol) {
  websocket_accept_ = http::map_extended_connect(record_.head, protocol);
}

void RequestStream::on_output_drained() {
  if (exchange_) exchange_->on_output_drained();
  if (tunnel_) tunnel_->resume_reading();
}

void RequestStream::send_tunnel(std::string_view data) {
  if (env_.counters) env_.counters->tunnel_bytes_to_upstream.add(data.size());
  if (tunnel_) {
    tunnel_->send(data);
  } else if (exchange_) {
    exchange_->on_tunnel_data(data);
  }
}

void RequestStream::end_tunnel() {
  if (tunnel_) {
    tunnel_->shutdown_write();
  } else if (exchange_) {
    exchange_->on_tunnel_end();
  }
}

bool RequestStream::upstream_congested() const {
  if (tunnel_) return tunnel_->buffered_bytes() > upstream::kWriteHighWatermark;
  return request_body_congested();
}

void RequestStream::respond_local(LocalAnswer answer) {
  Exchange::retire(exchange_, &record_);
  if (!codec_->answerable()) {
    codec_->abort_response();
    return;
  }
  codec_->on_local_answer();
  ResponseHead head;
  std::string body;
  build_local_answer(env_, codec_->connection_info(), record_, answer, head, body);
  const bool has_body = record_.head.method != "HEAD" && !body.empty();
  send_response_head(std::move(head), has_body);
  if (has_body) send_response_body(body);
  end_response();
}

void RequestStream::retire() {
  Exchange::retire(exchange_, &record_);
  upstream::UpstreamTunnel::retire(tunnel_);
}

void RequestStream::log(std::string_view protocol, uint32_t stream_id, bool first_on_connection) {
  retire();
  record_.log_completed(env_, codec_->connection_info(), protocol, stream_id, first_on_connection);
}

void RequestStream::send_informational(const ResponseHead& head) {
  // HTTP/1.0 clients do not expect 1xx (RFC 9110 §15.2).
  if (record_.head.version_major == 1 && record_.head.version_minor == 0) return;
  codec_->encode_informational(head);
}

void RequestStream::send_response_head(ResponseHead&& head, bool has_body) {
  if (!codec_->answerable()) return;
  if (record_.head.extended_connect && head.status >= 200 && head.status < 300) {
    // RFC 9110 §9.3.6: a 2xx to CONNECT says the tunnel is open. An upstream
    // that answered the Upgrade with one did not switch: a 502, not a lie.
    const ConnectionInfo& info = codec_->connection_info();
    log::warn("conn={} client={}:{} {}: upstream answered the {} upgrade with {}, not 101", info.id,
              info.remote_addr, info.remote_port, record_.head.target, record_.head.upgrade, head.status);
    respond_local(502);
    return;
  }
  record_.status = head.status;
  codec_->encode_head(std::move(head), has_body);
}

void RequestStream::open_tunnel(const ResponseHead& upstream_head, std::string_view protocol) {
  if (!codec_->answerable()) return;
  ResponseHead head = upstream_head;
  if (record_.head.extended_connect) {
    if (!accept_upgrade_response(head, websocket_accept_)) {
      const ConnectionInfo& info = codec_->connection_info();
      log::warn("conn={} client={}:{} {}: upstream's 101 lacks the Sec-WebSocket-Accept of our key", info.id,
                info.remote_addr, info.remote_port, record_.head.target);
      respond_local(502);  // retires the exchange: its stats are the record's now
      if (record_.upstream) record_.upstream->add_error(upstream::UpstreamFailure::InvalidResponse);
      return;
    }
    // RFC 8441 §5: the 101 becomes a 2xx; what it said about the protocol
    // (Sec-WebSocket-Protocol, -Extensions) stays.
    head.status = 200;
    head.reason.clear();
    head.content_length.reset();
    std::string().swap(websocket_accept_);
  }
  record_.status = head.status;
  record_.tunnel = true;
  if (env_.counters) env_.counters->tunnels_opened.add();
  codec_->encode_tunnel_open(head, protocol);
  // What only the request's routing and the upstream request needed goes:
  // a tunnel may stay open for hours (docs/ARCHITECTURE.md, "Idle connections").
  record_.release_head_fields();
  // The exchange passes on the rest of the 101's read; then it goes.
  if (env_.loop) LoopContext::of(env_.loop).schedule_flush(this);
}

void RequestStream::send_response_body(std::string_view data) {
  if (record_.tunnel && env_.counters) env_.counters->tunnel_bytes_to_client.add(data.size());
  codec_->encode_body(data);
}

void RequestStream::fail_response(int status, std::string_view) {
  if (status == 0 || !codec_->answerable()) {
    codec_->abort_response();  // the response is on its way: all we can do is cut it short
    return;
  }
  respond_local(status);
}

void RequestStream::flush() {
  tunnel_ = ProxyExchange::take_tunnel(exchange_, this, record_);
  if (tunnel_) codec_->on_tunnel_taken();
}

void RequestStream::on_upstream_body(std::string_view data) {
  send_response_body(data);
  if (tunnel_ && codec_->output_congested()) tunnel_->pause_reading();
}

void RequestStream::on_upstream_complete() {
  if (tunnel_ && record_.upstream) record_.upstream->response_ms = tunnel_->response_ms();
  end_response();
}

void RequestStream::on_upstream_error(upstream::UpstreamFailure failure, Error error) {
  if (record_.upstream) record_.upstream->add_error(failure);
  const ConnectionInfo& info = codec_->connection_info();
  log::warn("conn={} client={}:{} tunnel upstream={}: {}", info.id, info.remote_addr, info.remote_port,
            record_.upstream ? std::string_view(record_.upstream->addr) : std::string_view("-"), error.message());
  fail_response(0, error.message());
}

}  // namespace tlsfront::http
