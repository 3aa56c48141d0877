#include "data/quic/quic_connection.h"

#include <gnutls/crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>
#include "data/quic/http3_stream.h"
#include "log/log.h"

namespace tlsfront::quic {
namespace {

constexpr uint64_t kH3NoError = 0x0100;  // RFC 9114 §8.1
constexpr size_t kCidLen = 18;

}  // namespace

// The ngtcp2 and nghttp3 callbacks, forwarding to the connection and its streams.
struct Callbacks {
  static QuicConnection* of(void* user_data) { return static_cast<QuicConnection*>(user_data); }

  static void rand(uint8_t* dest, size_t len, const ngtcp2_rand_ctx*) { gnutls_rnd(GNUTLS_RND_RANDOM, dest, len); }

  static int get_new_connection_id(ngtcp2_conn*, ngtcp2_cid* cid, uint8_t* token, size_t cidlen, void* user) {
    QuicConnection* c = of(user);
    c->endpoint_.new_cid(cid, token, cidlen, c->lease_.credentials->ticket_keys());
    c->endpoint_.add_cid(*cid, c);
    return 0;
  }

  static int remove_connection_id(ngtcp2_conn*, const ngtcp2_cid* cid, void* user) {
    of(user)->endpoint_.remove_cid(*cid);
    return 0;
  }

  static int handshake_completed(ngtcp2_conn*, void* user) {
    QuicConnection* c = of(user);
    c->info_.tls_handshake_ms = static_cast<double>(QuicConnection::now_ns() - c->accepted_at_ns_) / 1e6;
    c->take_tls_facts();
    ngtcp2_conn_stat stat;
    ngtcp2_conn_get_conn_stat(c->conn_, &stat);
    c->info_.rtt_ms = static_cast<double>(stat.smoothed_rtt) / 1e6;
    if (c->state_ == QuicConnection::State::Handshake) transition(c->state_, QuicConnection::State::Open);
    c->handshake_done_ = true;
    c->endpoint_.on_handshake_done();
    c->hold_until_ns_ = QuicConnection::now_ns() + QuicConnection::kProbeHoldMs * 1'000'000;
    if (metrics::WorkerCounters* counters = c->env().counters) {
      counters->connections_h3.add();
      const auto kind =
          c->info_.ssl_session_reused ? metrics::HandshakeKind::ResumedTicket : metrics::HandshakeKind::Full;
      counters->handshakes[static_cast<size_t>(kind)].add();
      counters->handshake_duration[static_cast<size_t>(kind)].observe(
          std::chrono::nanoseconds(QuicConnection::now_ns() - c->accepted_at_ns_));
    }
    // A session ticket for the next connection (RFC 8446 §4.6.1), and a
    // token that lets it skip a Retry (RFC 9000 §8.1.3).
    if (c->lease_.credentials->session_tickets()) gnutls_session_ticket_send(c->tls_.native(), 1, 0);
    uint8_t token[NGTCP2_CRYPTO_MAX_REGULAR_TOKENLEN];
    const ngtcp2_ssize tokenlen = c->endpoint_.new_token(c->lease_.credentials->ticket_keys(), token,
                                                         reinterpret_cast<sockaddr*>(&c->remote_), c->remote_len_);
    if (tokenlen > 0) ngtcp2_conn_submit_new_token(c->conn_, token, static_cast<size_t>(tokenlen));
    // What was read in early data is no longer a possible replay; what
    // waited for the handshake is admitted now.
    if (c->info_.early_data) {
      c->info_.early_data = false;
      for (auto& [id, s] : c->streams_) s->on_handshake_done();
    }
    c->admit_waiting();
    if (c->goaway_due_) c->shutdown();  // the last request came in early data
    return 0;
  }

  static int recv_stream_data(ngtcp2_conn*, uint32_t flags, int64_t stream_id, uint64_t, const uint8_t* data,
                              size_t len, void* user, void*) {
    QuicConnection* c = of(user);
    c->setup_h3();
    if (!c->h3_) return NGTCP2_ERR_CALLBACK_FAILURE;
    const nghttp3_ssize n =
        nghttp3_conn_read_stream(c->h3_, stream_id, data, len, (flags & NGTCP2_STREAM_DATA_FLAG_FIN) != 0);
    if (n < 0) {
      log::info("conn={} client={}:{} h3: {}", c->info_.id, c->info_.remote_addr, c->info_.remote_port,
                nghttp3_strerror(static_cast<int>(n)));
      // The connection closes with HTTP/3's error code (RFC 9114 §8), not
      // the transport's INTERNAL_ERROR (on_datagram).
      c->h3_error_ = nghttp3_err_infer_quic_app_error_code(static_cast<int>(n));
      return NGTCP2_ERR_CALLBACK_FAILURE;
    }
    // What nghttp3 took for framing and QPACK is acknowledged now; DATA
    // payload only as the exchange takes it (QuicConnection::consume).
    c->consume(stream_id, static_cast<size_t>(n));
    if (c->goaway_due_ && c->state_ == QuicConnection::State::Open) c->shutdown();
    return 0;
  }

  static int acked_stream_data_offset(ngtcp2_conn*, int64_t stream_id, uint64_t, uint64_t datalen, void* user, void*) {
    QuicConnection* c = of(user);
    if (c->h3_ && nghttp3_conn_add_ack_offset(c->h3_, stream_id, datalen) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
    return 0;
  }

  static int stream_close(ngtcp2_conn* conn, uint32_t flags, int64_t stream_id, uint64_t app_error_code, void* user,
                          void*) {
    QuicConnection* c = of(user);
    if (!(flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET)) app_error_code = kH3NoError;
    if (c->h3_) {
      const int rv = nghttp3_conn_close_stream(c->h3_, stream_id, app_error_code);
      if (rv != 0 && rv != NGHTTP3_ERR_STREAM_NOT_FOUND) return NGTCP2_ERR_CALLBACK_FAILURE;
    }
    // A request stream's slot goes back to the client (RFC 9000 §4.6).
    if (ngtcp2_is_bidi_stream(stream_id) && !ngtcp2_conn_is_local_stream(conn, stream_id)) {
      ngtcp2_conn_extend_max_streams_bidi(conn, 1);
    }
    return 0;
  }

  static int stream_reset(ngtcp2_conn*, int64_t stream_id, uint64_t, uint64_t, void* user, void*) {
    QuicConnection* c = of(user);
    if (c->h3_ && nghttp3_conn_shutdown_stream_read(c->h3_, stream_id) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
    return 0;
  }

  static int stream_stop_sending(ngtcp2_conn*, int64_t stream_id, uint64_t, void* user, void*) {
    return stream_reset(nullptr, stream_id, 0, 0, user, nullptr);
  }

  static int extend_max_remote_streams_bidi(ngtcp2_conn*, uint64_t max_streams, void* user) {
    QuicConnection* c = of(user);
    if (c->h3_) nghttp3_conn_set_max_client_streams_bidi(c->h3_, max_streams);
    return 0;
  }

  static int extend_max_stream_data(ngtcp2_conn*, int64_t stream_id, uint64_t, void* user, void*) {
    QuicConnection* c = of(user);
    if (c->h3_ && nghttp3_conn_unblock_stream(c->h3_, stream_id) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
    return 0;
  }

  // nghttp3.
  static int h3_acked_stream_data(nghttp3_conn*, int64_t stream_id, uint64_t datalen, void* user, void*) {
    if (Http3Stream* s = of(user)->stream(stream_id)) s->on_acked(datalen);
    return 0;
  }
  static int h3_stream_close(nghttp3_conn*, int64_t stream_id, uint64_t app_error_code, void* user, void*) {
    of(user)->on_stream_closed(stream_id);
    return 0;
  }
  static int h3_recv_data(nghttp3_conn*, int64_t stream_id, const uint8_t* data, size_t len, void* user, void*) {
    if (Http3Stream* s = of(user)->stream(stream_id)) {
      s->on_request_data(std::string_view(reinterpret_cast<const char*>(data), len));
    } else {
      of(user)->consume(stream_id, len);
    }
    return 0;
  }
  static int h3_deferred_consume(nghttp3_conn*, int64_t stream_id, size_t consumed, void* user, void*) {
    of(user)->consume(stream_id, consumed);
    return 0;
  }
  static int h3_begin_headers(nghttp3_conn* h3, int64_t stream_id, void* user, void*) {
    QuicConnection* c = of(user);
    // Handshake (early data, 0-RTT), Open, or Draining: nghttp3 rejects a
    // stream at or above our GOAWAY's ID (H3_REQUEST_REJECTED) and calls
    // no one; one below it was promised an answer (RFC 9114 §5.2).
    if (c->state_ == QuicConnection::State::Closed) return 0;
    auto s = std::make_unique<Http3Stream>(c, stream_id);
    nghttp3_conn_set_stream_user_data(h3, stream_id, s.get());
    c->streams_[stream_id] = std::move(s);
    // [limits] keepalive_requests: this is the last request served; GOAWAY
    // (RFC 9114 §5.2) once nghttp3 has read it, or once the handshake is
    // done if it came in early data. The client's next request opens a new
    // connection (resuming the session); one it sent before the GOAWAY
    // reached it is rejected (H3_REQUEST_REJECTED) and retried.
    if (++c->requests_begun_ == c->env().config->limits.keepalive_requests) c->goaway_due_ = true;
    return 0;
  }
  static int h3_recv_header(nghttp3_conn*, int64_t stream_id, int32_t, nghttp3_rcbuf* name, nghttp3_rcbuf* value,
                            uint8_t, void* user, void*) {
    if (Http3Stream* s = of(user)->stream(stream_id)) {
      const nghttp3_vec n = nghttp3_rcbuf_get_buf(name);
      const nghttp3_vec v = nghttp3_rcbuf_get_buf(value);
      s->on_header(std::string_view(reinterpret_cast<const char*>(n.base), n.len),
                   std::string_view(reinterpret_cast<const char*>(v.base), v.len));
    }
    return 0;
  }
  static int h3_end_headers(nghttp3_conn*, int64_t stream_id, int fin, void* user, void*) {
    if (Http3Stream* s = of(user)->stream(stream_id)) s->on_request_head(fin != 0);
    return 0;
  }
  static int h3_end_stream(nghttp3_conn*, int64_t stream_id, void* user, void*) {
    if (Http3Stream* s = of(user)->stream(stream_id)) s->on_request_end();
    return 0;
  }
  static int h3_stop_sending(nghttp3_conn*, int64_t stream_id, uint64_t app_error_code, void* user, void*) {
    ngtcp2_conn_shutdown_stream_read(of(user)->conn_, stream_id, app_error_code);
    return 0;
  }
  static int h3_reset_stream(nghttp3_conn*, int64_t stream_id, uint64_t app_error_code, void* user, void*) {
    ngtcp2_conn_shutdown_stream_write(of(user)->conn_, stream_id, app_error_code);
    return 0;
  }
};

QuicConnection::QuicConnection(QuicEndpoint& endpoint, QuicEndpoint::Lease lease)
    : endpoint_(endpoint), lease_(std::move(lease)) {
  timer_.init(
      endpoint_.loop(), [](void* self) { static_cast<QuicConnection*>(self)->on_timer(); }, this);
}

QuicConnection::~QuicConnection() {
  alive_.reset();
  LoopContext::of(endpoint_.loop()).cancel_flush(this);
  timer_.close();
  streams_.clear();
  if (h3_) nghttp3_conn_del(h3_);
  if (conn_) ngtcp2_conn_del(conn_);
}

Http3Stream* QuicConnection::stream(int64_t id) {
  auto it = streams_.find(id);
  return it == streams_.end() ? nullptr : it->second.get();
}

void QuicConnection::set_path(const sockaddr* from, socklen_t fromlen) {
  std::memcpy(&remote_, from, fromlen);
  remote_len_ = fromlen;
  path_.local.addr = const_cast<sockaddr*>(endpoint_.local_addr());
  path_.local.addrlen = endpoint_.local_addrlen();
  path_.remote.addr = reinterpret_cast<sockaddr*>(&remote_);
  path_.remote.addrlen = remote_len_;
}

Status QuicConnection::accept(const ngtcp2_pkt_hd& hd, const sockaddr* from, socklen_t fromlen, bool validated,
                              const ngtcp2_cid* retry_odcid) {
  accepted_at_ns_ = now_ns();
  set_path(from, fromlen);
  info_.id = lease_.connection_id;
  info_.listener = lease_.listener;
  info_.remote_addr = lease_.client_addr;
  info_.remote_port = lease_.client_port;
  info_.alpn = "h3";
  info_.ssl_protocol = "TLSv1.3";
  info_.trust_request_id = lease_.listener && lease_.listener->trust_request_id;
  info_.set_server_port(lease_.listener ? lease_.listener->address.port : 0);

  ngtcp2_callbacks cb{};
  cb.recv_client_initial = ngtcp2_crypto_recv_client_initial_cb;
  cb.recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb;
  cb.encrypt = ngtcp2_crypto_encrypt_cb;
  cb.decrypt = ngtcp2_crypto_decrypt_cb;
  cb.hp_mask = ngtcp2_crypto_hp_mask_cb;
  cb.update_key = ngtcp2_crypto_update_key_cb;
  cb.delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
  cb.delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
  cb.get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
  cb.version_negotiation = ngtcp2_crypto_version_negotiation_cb;
  cb.rand = Callbacks::rand;
  cb.get_new_connection_id = Callbacks::get_new_connection_id;
  cb.remove_connection_id = Callbacks::remove_connection_id;
  cb.handshake_completed = Callbacks::handshake_completed;
  cb.recv_stream_data = Callbacks::recv_stream_data;
  cb.acked_stream_data_offset = Callbacks::acked_stream_data_offset;
  cb.stream_close = Callbacks::stream_close;
  cb.stream_reset = Callbacks::stream_reset;
  cb.stream_stop_sending = Callbacks::stream_stop_sending;
  cb.extend_max_remote_streams_bidi = Callbacks::extend_max_remote_streams_bidi;
  cb.extend_max_stream_data = Callbacks::extend_max_stream_data;

  ngtcp2_settings settings;
  ngtcp2_settings_default(&settings);
  settings.initial_ts = accepted_at_ns_;
  settings.max_window = 4 * kConnectionWindow;
  settings.max_stream_window = 4 * kStreamWindow;
  // timeouts.handshake bounds a QUIC handshake as it bounds a TCP one.
  settings.handshake_timeout =
      static_cast<ngtcp2_duration>(env().config->timeouts.handshake.count()) * NGTCP2_MILLISECONDS;

  ngtcp2_transport_params params;
  ngtcp2_transport_params_default(&params);
  params.initial_max_stream_data_bidi_remote = kStreamWindow;
  params.initial_max_stream_data_uni = kStreamWindow;
  params.initial_max_data = kConnectionWindow;
  params.initial_max_streams_bidi = kMaxStreams;
  params.initial_max_streams_uni = 3;  // the client's control and QPACK streams (RFC 9114 §6.2)
  const auto idle = env().config->timeouts.keepalive;
  params.max_idle_timeout = static_cast<ngtcp2_duration>(idle.count()) * NGTCP2_MILLISECONDS;
  // RFC 9000 §7.3: after a Retry, the original DCID is the one the token
  // carried, and the Retry's SCID (this Initial's DCID) is named too.
  params.original_dcid = retry_odcid ? *retry_odcid : hd.dcid;
  if (retry_odcid) {
    params.retry_scid = hd.dcid;
    params.retry_scid_present = 1;
  }
  params.stateless_reset_token_present = 1;
  if (validated) settings.token = hd.token;  // the address is proven: no anti-amplification limit

  ngtcp2_cid scid;
  endpoint_.new_cid(&scid, params.stateless_reset_token, kCidLen, lease_.credentials->ticket_keys());
  const int rv =
      ngtcp2_conn_server_new(&conn_, &hd.scid, &scid, &path_, hd.version, &cb, &settings, &params, nullptr, this);
  if (rv != 0) return make_error(Errc::Io, fmt::format("ngtcp2_conn_server_new: {}", ngtcp2_strerror(rv)));
  conn_ref_.get_conn = [](ngtcp2_crypto_conn_ref* ref) { return static_cast<QuicConnection*>(ref->user_data)->conn_; };
  conn_ref_.user_data = this;
  const bool early_data = env().config->tls.early_data;
  if (auto st = tls_.init(*lease_.credentials, &conn_ref_, early_data ? endpoint_.anti_replay() : nullptr); !st) {
    return st;
  }
  ngtcp2_conn_set_tls_native_handle(conn_, tls_.native());
  endpoint_.add_cid(scid, this);
  endpoint_.add_cid(hd.dcid, this);  // the client's retransmitted Initials still name its own DCID
  return {};
}

void QuicConnection::take_tls_facts() {
  info_.sni = tls_.server_name();
  info_.ssl_cipher = tls_.cipher();
  info_.ssl_session_reused = tls_.resumed();
  info_.ssl_resumption = info_.ssl_session_reused ? "ticket" : "none";
}

void QuicConnection::setup_h3() {
  if (h3_ || state_ == State::Closed) return;
  if (ngtcp2_conn_get_streams_uni_left(conn_) < 3) return;
  nghttp3_callbacks cb{};
  cb.acked_stream_data = Callbacks::h3_acked_stream_data;
  cb.stream_close = Callbacks::h3_stream_close;
  cb.recv_data = Callbacks::h3_recv_data;
  cb.deferred_consume = Callbacks::h3_deferred_consume;
  cb.begin_headers = Callbacks::h3_begin_headers;
  cb.recv_header = Callbacks::h3_recv_header;
  cb.end_headers = Callbacks::h3_end_headers;
  cb.end_stream = Callbacks::h3_end_stream;
  cb.stop_sending = Callbacks::h3_stop_sending;
  cb.reset_stream = Callbacks::h3_reset_stream;
  nghttp3_settings settings;
  nghttp3_settings_default(&settings);
  settings.max_field_section_size = env().config->limits.max_header_bytes;
  settings.qpack_max_dtable_capacity = 4096;
  settings.qpack_blocked_streams = 100;
  // RFC 9220: WebSocket over HTTP/3 (extended CONNECT), while a route allows an upgrade.
  const auto& routes = env().config->routes;
  settings.enable_connect_protocol =
      std::any_of(routes.begin(), routes.end(), [](const config::Route& r) { return !r.upgrade.empty(); }) ? 1 : 0;
  if (nghttp3_conn_server_new(&h3_, &cb, &settings, nghttp3_mem_default(), this) != 0) {
    h3_ = nullptr;
    return;
  }
  nghttp3_conn_set_max_client_streams_bidi(h3_, kMaxStreams);
  int64_t control = -1, enc = -1, dec = -1;
  if (ngtcp2_conn_open_uni_stream(conn_, &control, nullptr) != 0 ||
      nghttp3_conn_bind_control_stream(h3_, control) != 0 || ngtcp2_conn_open_uni_stream(conn_, &enc, nullptr) != 0 ||
      ngtcp2_conn_open_uni_stream(conn_, &dec, nullptr) != 0 || nghttp3_conn_bind_qpack_streams(h3_, enc, dec) != 0) {
    nghttp3_conn_del(h3_);
    h3_ = nullptr;
  }
}

void QuicConnection::on_datagram(const sockaddr* from, socklen_t fromlen, const uint8_t* data, size_t len) {
  if (state_ == State::Closed) return;
  sockaddr_storage from_copy{};
  std::memcpy(&from_copy, from, fromlen);
  ngtcp2_path path{};
  path.local.addr = const_cast<sockaddr*>(endpoint_.local_addr());
  path.local.addrlen = endpoint_.local_addrlen();
  path.remote.addr = reinterpret_cast<sockaddr*>(&from_copy);
  path.remote.addrlen = fromlen;
  ngtcp2_pkt_info pi{};
  const int rv = ngtcp2_conn_read_pkt(conn_, &path, &pi, data, len, now_ns());
  if (rv != 0) {
    if (rv == NGTCP2_ERR_DRAINING || rv == NGTCP2_ERR_CLOSING || rv == NGTCP2_ERR_DROP_CONN) {
      finish();
      return;
    }
    if (rv == NGTCP2_ERR_CRYPTO) {
      log::info("conn={} client={}:{} quic handshake failed: TLS alert {}", info_.id, info_.remote_addr,
                info_.remote_port, ngtcp2_conn_get_tls_alert(conn_));
    }
    if (h3_error_ != 0) {
      fail(0, h3_error_, true);
    } else {
      fail(rv);
    }
    return;
  }
  // The client's address may have changed (migration): answers go where
  // ngtcp2's current path says.
  const ngtcp2_path* current = ngtcp2_conn_get_path(conn_);
  if (current->remote.addrlen != remote_len_ || std::memcmp(current->remote.addr, &remote_, remote_len_) != 0) {
    set_path(current->remote.addr, static_cast<socklen_t>(current->remote.addrlen));
    info_.migrated = true;
  }
  // What this datagram made us send leaves with what the loop pass's other
  // datagrams (libuv reads up to 32 per pass) and the streams' responses
  // made us send: one write per connection per pass, its packets full and
  // in one UDP GSO batch, and an ACK that covers them all (ngtcp2 decides
  // whether one is due now or after the ack delay, RFC 9000 §13.2.1).
  schedule_write();
}

void QuicConnection::schedule_write() {
  if (state_ != State::Closed) LoopContext::of(endpoint_.loop()).schedule_flush(this);
}

void QuicConnection::consume(int64_t stream_id, size_t n) {
  if (n == 0 || state_ == State::Closed) return;
  ngtcp2_conn_extend_max_stream_offset(conn_, stream_id, n);
  ngtcp2_conn_extend_max_offset(conn_, n);
}

void QuicConnection::on_stream_closed(int64_t stream_id) {
  auto it = streams_.find(stream_id);
  if (it == streams_.end()) return;
  it->second->on_closed(0);
  LoopContext::of(endpoint_.loop()).defer_delete(std::move(it->second));
  streams_.erase(it);
}

void QuicConnection::shutdown() {
  if (state_ == State::Closed || state_ == State::Draining) return;  // (GOAWAY sent)
  if (state_ != State::Open || !h3_) {
    close_now();
    return;
  }
  transition(state_, State::Draining);
  nghttp3_conn_submit_shutdown_notice(h3_);
  nghttp3_conn_shutdown(h3_);
  schedule_write();
}

void QuicConnection::close_now() { fail(0, kH3NoError, true); }

void QuicConnection::fail(int liberr, uint64_t app_error, bool app) {
  if (state_ == State::Closed) return;
  if (conn_ && !ngtcp2_conn_is_in_closing_period(conn_) && !ngtcp2_conn_is_in_draining_period(conn_)) {
    ngtcp2_connection_close_error ccerr;
    ngtcp2_connection_close_error_default(&ccerr);
    if (app) {
      ngtcp2_connection_close_error_set_application_error(&ccerr, app_error, nullptr, 0);
    } else if (liberr == NGTCP2_ERR_CRYPTO) {
      ngtcp2_connection_close_error_set_transport_error_tls_alert(&ccerr, ngtcp2_conn_get_tls_alert(conn_), nullptr, 0);
    } else {
      ngtcp2_connection_close_error_set_transport_error_liberr(&ccerr, liberr, nullptr, 0);
    }
    uint8_t buf[NGTCP2_MAX_UDP_PAYLOAD_SIZE];
    ngtcp2_path_storage ps;
    ngtcp2_path_storage_zero(&ps);
    ngtcp2_pkt_info pi{};
    const ngtcp2_ssize n = ngtcp2_conn_write_connection_close(conn_, &ps.path, &pi, buf, sizeof buf, &ccerr, now_ns());
    if (n > 0) endpoint_.send(ps.path.remote.addr, buf, static_cast<size_t>(n));
  }
  finish();
}

void QuicConnection::finish() {
  if (state_ == State::Closed) return;
  transition(state_, State::Closed);
  timer_.stop();
  for (auto& [id, s] : streams_) {
    s->on_closed(0);
    LoopContext::of(endpoint_.loop()).defer_delete(std::move(s));
  }
  streams_.clear();
  endpoint_.retire(this);
}

}  // namespace tlsfront::quic
