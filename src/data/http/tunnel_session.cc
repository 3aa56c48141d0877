#include "data/http/tunnel_session.h"

#include <utility>

#include "log/log.h"
#include "metrics/counters.h"
#include "util/state.h"

namespace tlsfront::http {

TunnelSession::TunnelSession(const SessionEnv& env, ClientTransport* transport, const ConnectionInfo& info,
                             TunnelRecord record, std::unique_ptr<upstream::UpstreamTunnel> tunnel)
    : env_(env),
      transport_(transport),
      record_(std::move(record)),
      tunnel_(std::move(tunnel)),
      requests_(info.requests),
      tls_handshake_ms_(info.tls_handshake_ms),
      early_data_(info.early_data) {
  tunnel_->set_handler(this);
  if (transport_->buffered_output() > kOutputHighWatermark) tunnel_->pause_reading();
  arm();
}

TunnelSession::~TunnelSession() { log(); }

void TunnelSession::on_data(std::string_view data) {
  if (state_ == State::Closed) return;
  record_.bytes_received += data.size();
  if (env_.counters) env_.counters->tunnel_bytes_to_upstream.add(data.size());
  arm();
  tunnel_->send(data);
  // An idle tunnel keeps no buffer: what was read is passed on.
  transport_->release_buffers();
}

bool TunnelSession::wants_input() const {
  return state_ == State::Open && tunnel_->buffered_bytes() <= upstream::kWriteHighWatermark;
}

void TunnelSession::on_output_drained() {
  if (state_ == State::Open) tunnel_->resume_reading();
}

void TunnelSession::on_client_closed() {
  if (state_ == State::Closed) return;
  record_.response_complete = true;  // a close from either side is the tunnel's end
  close(false);
}

void TunnelSession::on_handshake_done(double tls_handshake_ms) {
  // The Upgrade request came in early data and the 101 went out before
  // the handshake ended.
  early_data_ = false;
  tls_handshake_ms_ = tls_handshake_ms;
}

void TunnelSession::on_upstream_body(std::string_view data) {
  if (state_ == State::Closed || data.empty()) return;
  transport_->send(data);
  record_.bytes_sent += data.size();
  if (env_.counters) env_.counters->tunnel_bytes_to_client.add(data.size());
  arm();
  transport_->release_buffers();  // once written (an idle tunnel keeps no buffer)
  if (transport_->buffered_output() > kOutputHighWatermark) tunnel_->pause_reading();
}

void TunnelSession::on_upstream_complete() {
  if (state_ == State::Closed) return;
  // The upstream closed the tunnel: so does the client connection.
  record_.response_complete = true;
  if (record_.upstream) record_.upstream->response_ms = tunnel_->response_ms();
  close(true);
}

void TunnelSession::on_upstream_error(upstream::UpstreamFailure failure, Error error) {
  if (state_ == State::Closed) return;
  if (record_.upstream) record_.upstream->add_error(failure);
  const ConnectionInfo facts = info();
  log::warn("conn={} client={}:{} upstream={}: {}", facts.id, facts.remote_addr, facts.remote_port,
            record_.upstream ? std::string_view(record_.upstream->addr) : std::string_view("-"), error.message());
  close(false);
}

void TunnelSession::on_upstream_writable() {
  if (wants_input()) transport_->resume_input();
}

ConnectionInfo TunnelSession::info() const {
  ConnectionInfo facts = transport_->connection_facts();
  facts.requests = requests_;
  facts.tls_handshake_ms = tls_handshake_ms_;
  facts.early_data = early_data_;
  return facts;
}

void TunnelSession::log() {
  if (!tunnel_) return;
  upstream::UpstreamTunnel::retire(tunnel_);  // maybe inside its own callback
  if (env_.counters == nullptr && env_.access_log == nullptr) return;
  record_.log_completed(env_, info(), requests_ == 1);
}

void TunnelSession::close(bool notify) {
  log();
  transition(state_, State::Closed);
  transport_->close(notify);
}

}  // namespace tlsfront::http
