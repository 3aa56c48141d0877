// TunnelSession: an HTTP/1.1 client connection after its Upgrade request's
// 101 (RFC 9110 §7.8, §15.2.2; RFC 6455 §4.1): no longer HTTP, a byte
// tunnel between the client and upstream::UpstreamTunnel, idle-limited by
// timeouts.tunnel. Http1Session hands the connection over once the 101's
// read is over (ClientTransport::replace_session), keeping only what the
// tunnel's one access-log line needs (TunnelRecord; the connection's facts
// are asked of the transport when the line is written,
// ClientTransport::connection_facts): an open tunnel holds this (336
// octets, the record and upstream stats inline) and one string,
// not the HTTP/1.1 session (392), its request record (456), the upstream
// stats (144) and their strings, since a worker may hold tens of thousands
// of WebSockets for hours.
//
// Backpressure both ways: client bytes are taken only while the upstream
// side holds at most kWriteHighWatermark unsent; the upstream is read only
// while the client side holds at most kOutputHighWatermark. Either side's
// close ends the tunnel (response_complete true), as do a reset or error
// on either side, timeouts.tunnel and the drain deadline (false); the line
// is written then, with the bytes of both directions. HTTP/2 tunnels (RFC
// 8441) stay streams of their Http2Session.
// Thread affinity: owning worker only.
#pragma once

#include <memory>
#include <string_view>

#include "data/http/client_session.h"
#include "data/http/client_transport.h"
#include "data/http/exchange_sink.h"
#include "data/http/request_record.h"
#include "data/http/session_env.h"
#include "data/upstream/upstream_handler.h"
#include "data/upstream/upstream_tunnel.h"

namespace tlsfront::http {

class TunnelSession final : public ClientSession, private upstream::UpstreamHandler {
 public:
  static constexpr size_t kOutputHighWatermark = 64 * 1024;  // as Http1Session's

  // Open:   bytes pass both ways
  // Closed: logged, the transport closing (final)
  enum class State { Open, Closed };

  // `env` and `transport` are borrowed (the connection's); of `info` the
  // session keeps what only it knows (requests, the handshake time, early
  // data); `tunnel` is the upstream side, open, its handler becomes this
  // session. Arms timeouts.tunnel.
  TunnelSession(const SessionEnv& env, ClientTransport* transport, const ConnectionInfo& info, TunnelRecord record,
                std::unique_ptr<upstream::UpstreamTunnel> tunnel);
  // A tunnel still open (the drain deadline, a failed client write) is
  // logged as it stands, response_complete false.
  ~TunnelSession() override;
  TunnelSession(const TunnelSession&) = delete;
  TunnelSession& operator=(const TunnelSession&) = delete;

  // ClientSession
  void on_data(std::string_view data) override;
  bool wants_input() const override;
  void on_timer() override { close(true); }  // timeouts.tunnel without a byte either way
  void on_output_drained() override;
  void on_client_closed() override;
  void on_handshake_done(double tls_handshake_ms) override;
  // A draining worker lets open tunnels run until its drain deadline.
  void on_shutdown() override {}
  bool close_if_idle() override { return false; }  // a tunnel is never idle between requests

 private:
  // UpstreamHandler: the upstream side's events.
  void on_upstream_connected() override {}
  void on_upstream_head(ResponseHead&&, bool) override {}
  void on_upstream_body(std::string_view data) override;
  void on_upstream_complete() override;
  void on_upstream_error(upstream::UpstreamFailure failure, Error error) override;
  void on_upstream_writable() override;
  void on_upstream_tunnel(std::unique_ptr<upstream::UpstreamTunnel>) override {}

  void arm() { transport_->arm_timer(env_.config->timeouts.tunnel); }
  // The connection's facts with the session's own.
  ConnectionInfo info() const;
  // Logs the tunnel and retires its upstream side (once).
  void log();
  // The one way the session ends: logged, then the transport closes.
  // `notify`: close_notify (false when cut short).
  void close(bool notify);

  const SessionEnv& env_;
  ClientTransport* transport_;
  TunnelRecord record_;
  std::unique_ptr<upstream::UpstreamTunnel> tunnel_;  // null once logged
  uint64_t requests_;        // ConnectionInfo::requests
  double tls_handshake_ms_;  // ConnectionInfo::tls_handshake_ms
  bool early_data_;          // ConnectionInfo::early_data
  State state_ = State::Open;
};

constexpr bool legal(TunnelSession::State from, TunnelSession::State to) {
  return from == TunnelSession::State::Open && to == TunnelSession::State::Closed;
}
constexpr const char* name(TunnelSession::State s) { return s == TunnelSession::State::Open ? "Open" : "Closed"; }

}  // namespace tlsfront::http
