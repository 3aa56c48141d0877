// QuicConnection: one client's QUIC connection (RFC 9000) and the HTTP/3
// session on it (RFC 9114): ngtcp2's connection, its TLS session
// (quic_tls.h), nghttp3's connection, and one Http3Stream per request
// stream. ngtcp2 and nghttp3 call back into this object; each request
// stream's codec is an Http3Stream, whose RequestStream runs the request as
// over TCP (admission, routes, limits, header rules, exchanges, the log).
//
// Life:
//   Handshake -> Open       the TLS handshake completed: HTTP/3's control
//                           and QPACK streams are opened (RFC 9114 §6.2)
//   Open -> Draining        GOAWAY sent (shutdown(): the worker stops, or
//                           [limits] keepalive_requests requests began): no
//                           new request; the connection closes
//                           kCloseAfterDrained after its last stream is done
//                           (sooner if the client closes it)
//   Handshake | Open | Draining -> Closed
//                           CONNECTION_CLOSE sent or received, the idle
//                           timeout (the transport's max_idle_timeout), a
//                           fatal error; every stream still open is logged
//                           (499 when the client had no status), the
//                           endpoint deletes the connection.
// Closed is final.
//
// Early data (0-RTT, RFC 9001 §4.6; tls/EARLY_DATA_REPLAY.md), decided
// while the ClientHello is read:
//   None     -> Accepted (GnuTLS would accept it and this node had not
//               seen the ClientHello; no shared store)
//   None     -> Claiming (the same, and the shared store is asked)
//   Claiming -> Accepted (the store's first record) | Held (seen there, or
//               no answer in redis_timeout)
// Accepted: request heads read in early data are admitted as early-data
// requests (ConnectionInfo::early_data: an early_data_methods request goes
// up at once with Early-Data: 1, any other waits in its exchange for the
// handshake). Claiming and Held: heads wait unadmitted until the claim is
// answered (Claiming) or the handshake completes; a replay never
// completes it, so nothing it sent goes up. A refusal by this node (seen,
// recording full, store unreachable now) refuses the early data in TLS:
// the client sends it again after the handshake. (quic_early_data.cc)
//
// Bounds: at most kMaxStreams concurrent request streams (the transport's
// initial_max_streams_bidi, extended by one as each closes); a request's
// body is acknowledged to the client (MAX_STREAM_DATA, MAX_DATA) only as
// the exchange takes it; response bytes are buffered up to
// kResponseHighWatermark per stream before the upstream is paused, and
// are kept until the client acknowledges them (nghttp3 may resend them).
// QPACK's dynamic table and blocked streams are bounded by the settings
// below; header sections by limits.max_header_bytes (the field section
// size limit RFC 9114 §4.2.2 advertises).
// Thread affinity: the worker's loop.
#pragma once

#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include <chrono>
#include <memory>
#include <unordered_map>
#include <vector>

#include "data/http/exchange_sink.h"
#include "data/quic/quic_endpoint.h"
#include "data/quic/quic_tls.h"
#include "util/lazy_timer.h"
#include "util/loop_context.h"
#include "util/state.h"

namespace tlsfront::quic {

class Http3Stream;

class QuicConnection final : public Deletable, public Flushable {
 public:
  static constexpr uint64_t kMaxStreams = 100;
  static constexpr uint64_t kStreamWindow = 256 * 1024;  // per request stream
  static constexpr uint64_t kConnectionWindow = 1024 * 1024;
  static constexpr size_t kResponseHighWatermark = 64 * 1024;
  static constexpr std::chrono::milliseconds kCloseAfterDrained{1000};

  enum class State { Handshake, Open, Draining, Closed };
  enum class Early { None, Claiming, Accepted, Held };
  // The path-MTU probe held behind a new connection's first answers (see
  // probe_hold_): Holding (from the start; in force once the handshake is
  // done) -> Ending (a write ended it: the probe follows that write's
  // packets) -> Over; Holding -> Over (no request open, or kProbeHoldMs
  // passed). Over is final: the hold never comes back.
  enum class ProbeHold : uint8_t { Holding, Ending, Over };

  QuicConnection(QuicEndpoint& endpoint, QuicEndpoint::Lease lease);
  ~QuicConnection() override;
  QuicConnection(const QuicConnection&) = delete;
  QuicConnection& operator=(const QuicConnection&) = delete;

  // Creates the server side for the client Initial `hd` from `from`; the
  // connection's first ID is registered with the endpoint. `validated`: its
  // token proved the address (no anti-amplification limit); `retry_odcid`:
  // the Original Destination Connection ID its Retry token carried (null
  // when no Retry came first). Errors: Errc::Io.
  [[nodiscard]] Status accept(const ngtcp2_pkt_hd& hd, const sockaddr* from, socklen_t fromlen, bool validated,
                              const ngtcp2_cid* retry_odcid);
  // A datagram for this connection (its handshake included); what it made
  // us send leaves at the end of the loop pass (schedule_write), with what
  // the pass's other datagrams made us send.
  void on_datagram(const sockaddr* from, socklen_t fromlen, const uint8_t* data, size_t len);
  // GOAWAY: the streams open now are answered, none after.
  void shutdown();
  // CONNECTION_CLOSE now (H3_NO_ERROR), logging what is still open.
  void close_now();
  bool closed() const { return state_ == State::Closed; }
  bool handshake_done() const { return handshake_done_; }
  // GnuTLS's anti-replay hook for this connection's ClientHello (`binder`:
  // its first PSK binder): true accepts the early data (see above).
  bool claim_early_data(std::string_view binder);

  // For Http3Stream.
  const http::SessionEnv& env() const { return *lease_.env; }
  const http::ConnectionInfo& info() const { return info_; }
  nghttp3_conn* h3() const { return h3_; }
  ngtcp2_conn* conn() const { return conn_; }
  uv_loop_t* loop() const { return endpoint_.loop(); }
  // Sends what is pending, at the end of this loop iteration (flush()).
  void schedule_write();
  void flush() override { write(); }
  // Request body bytes the exchange took: the client may send as many more.
  void consume(int64_t stream_id, size_t n);
  // The stream is done (nghttp3 closed it).
  void on_stream_closed(int64_t stream_id);
  bool first_access_log() { return info_.requests++ == 0; }
  // The session's SNI, cipher suite and resumption into info(): at the
  // handshake's end, and for a request admitted in early data (the
  // ClientHello was read: they are known).
  void take_tls_facts();
  // RFC 9114 §3.3: the connection's certificate is valid for `host`.
  bool certificate_covers(std::string_view host) { return tls_.certificate_covers(host); }
  // Whether a request head complete now may be admitted (the handshake is
  // done, or its early data was accepted); otherwise the stream waits for
  // admit_waiting().
  bool may_admit() const { return handshake_done_ || early_ == Early::Accepted; }

 private:
  friend struct Callbacks;
  static uint64_t now_ns() { return uv_hrtime(); }
  // (quic_connection_write.cc)
  void write();
  // The timer at ngtcp2's next expiry (or the drain's close), or at once
  // when `more` (write() stopped at its packet limit).
  void arm_timer(bool more = false);
  void on_timer();
  void setup_h3();
  // A fatal ngtcp2 or nghttp3 error (`liberr`, or an HTTP/3 application
  // error when `app` is set): CONNECTION_CLOSE, then the endpoint lets go.
  void fail(int liberr, uint64_t app_error = 0, bool app = false);
  void finish();  // -> Closed: streams logged, the endpoint retires us
  void set_path(const sockaddr* from, socklen_t fromlen);
  Http3Stream* stream(int64_t id);
  void on_early_claimed(tls::RemoteSessionStore::Claim claim);
  void admit_waiting();
  void count_early_rejected(metrics::EarlyRejection reason);

  QuicEndpoint& endpoint_;
  QuicEndpoint::Lease lease_;
  State state_ = State::Handshake;
  Early early_ = Early::None;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // for the store's claim callback
  ngtcp2_conn* conn_ = nullptr;
  nghttp3_conn* h3_ = nullptr;
  ngtcp2_crypto_conn_ref conn_ref_{};
  QuicTlsSession tls_;
  http::ConnectionInfo info_;
  sockaddr_storage remote_{};
  socklen_t remote_len_ = 0;
  ngtcp2_path path_{};
  LazyTimer timer_;
  uint64_t accepted_at_ns_ = 0;
  bool handshake_done_ = false;
  uint64_t requests_begun_ = 0;  // request streams whose headers began
  bool goaway_due_ = false;      // the keepalive_requests-th began: shutdown() when Open
  uint64_t close_at_ns_ = 0;     // Draining, no stream left: CONNECTION_CLOSE then (now_ns()); 0: not due
  uint64_t h3_error_ = 0;  // nghttp3 refused the peer's HTTP/3: its application error code
  std::unordered_map<int64_t, std::unique_ptr<Http3Stream>> streams_;
  // The first answers go ahead of the path-MTU probe. ngtcp2 starts PMTUD
  // at the handshake's end and writes its probe (a 1,406-byte PING) first
  // in the next write: a new client's request comes with its Finished and
  // its answer a moment later (the upstream's), so on a slow link the
  // probe was on the bottleneck ahead of it. While a request is open after
  // the handshake, packets are written no larger than the path's current
  // maximum, which no probe fits (ngtcp2 0.12 has no call that starts
  // PMTUD later), until a write has ended the answer of every request
  // begun so far (their FINs; ten requests at once: all ten) or has
  // written kProbeHoldBytes of answers — the probe then follows that
  // write's packets — or kProbeHoldMs have passed. A connection without a
  // request at the handshake's end, or whose answers went in early data,
  // has no hold.
  static constexpr uint64_t kProbeHoldMs = 200;
  static constexpr uint64_t kProbeHoldBytes = 16 * 1024;
  ProbeHold probe_hold_ = ProbeHold::Holding;
  uint64_t hold_until_ns_ = 0;
  uint64_t answer_bytes_ = 0;   // request-stream bytes written during the hold
  uint64_t answers_ended_ = 0;  // request streams whose FIN was written during the hold
  // Answer bytes written: `written` of the `total` offered, FIN with them.
  void note_answer_written(int64_t stream_id, ngtcp2_ssize written, size_t total, bool fin);
};

constexpr bool legal(QuicConnection::State from, QuicConnection::State to) {
  using S = QuicConnection::State;
  if (to == S::Closed) return from != S::Closed;
  return (from == S::Handshake && to == S::Open) || (from == S::Open && to == S::Draining);
}
constexpr const char* name(QuicConnection::State s) {
  constexpr const char* names[] = {"Handshake", "Open", "Draining", "Closed"};
  return names[static_cast<int>(s)];
}
constexpr bool legal(QuicConnection::ProbeHold from, QuicConnection::ProbeHold to) {
  using P = QuicConnection::ProbeHold;
  return (from == P::Holding && (to == P::Ending || to == P::Over)) || (from == P::Ending && to == P::Over);
}
constexpr const char* name(QuicConnection::ProbeHold p) {
  constexpr const char* names[] = {"Holding", "Ending", "Over"};
  return names[static_cast<int>(p)];
}
constexpr bool legal(QuicConnection::Early from, QuicConnection::Early to) {
  using E = QuicConnection::Early;
  return (from == E::None && (to == E::Accepted || to == E::Claiming)) ||
         (from == E::Claiming && (to == E::Accepted || to == E::Held));
}
constexpr const char* name(QuicConnection::Early e) {
  constexpr const char* names[] = {"None", "Claiming", "Accepted", "Held"};
  return names[static_cast<int>(e)];
}

}  // namespace tlsfront::quic
