// tlsfront_h3client's one connection and its one request (h3client.cc
// says what the tool does): ngtcp2 for QUIC, GnuTLS through
// ngtcp2_crypto_gnutls for its TLS 1.3, nghttp3 for HTTP/3, and a blocking
// poll() loop with ngtcp2's timers.
#pragma once

#include <sys/socket.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tlsfront::h3client {

struct Options {
  std::string ca, sni = "localhost", method, protocol, data_file;
  // --then FILE --after N: FILE's bytes go after --data's once N response
  // body octets arrived (a WebSocket close frame after the echoes, say).
  std::string then_file;
  size_t then_after = 0;
  std::vector<std::pair<std::string, std::string>> headers;
  long timeout_ms = 10'000;
  // --extra N: N more GETs of the same path on their own streams, sent with
  // the request (their responses are read, not written out).
  // --packet-per-stream: every stream's data in a packet (a datagram) of
  // its own. --go-file F: the requests wait until F exists; once the
  // datagrams carrying them were sent, F.sent is created.
  size_t extra = 0;
  bool packet_per_stream = false;
  // --order: "order: EVENT" on stderr the first time each arrives:
  // "answer" (the response's first bytes), "last_answer_end" (the end of
  // the last response, --extra's included), "session_ticket" (1-RTT CRYPTO,
  // a NewSessionTicket), "new_token", "large_datagram" (a datagram above
  // 1,200 bytes: before the path's MTU is known, a PMTUD probe).
  bool order = false;
  // --linger-ms N: after the response, N ms more of reading what arrives
  // (for --order's later events); the exit status stays the response's.
  long linger_ms = 0;
  std::string go_file;
  std::string host, port, path;
};

// One request on one connection; run() returns the exit status.
class Client {
 public:
  Client(Options o, std::string body, std::string then)
      : o_(std::move(o)), body_(std::move(body)), then_(std::move(then)) {}
  ~Client();
  int run();

 private:
  bool setup();
  bool setup_tls();
  void setup_h3();
  void maybe_submit();
  bool read_packets();
  void on_read_error(int rv);
  void write();
  void close_connection();
  void done(int code, const std::string& why = {});
  void consume(int64_t stream_id, size_t n);
  void sniff_settings(int64_t stream_id, const uint8_t* data, size_t len);
  void release_body(bool send);
  std::string waiting_for() const;

  static Client* of(void* user) { return static_cast<Client*>(user); }
  // ngtcp2.
  static void rand_cb(uint8_t* dest, size_t len, const ngtcp2_rand_ctx*) { gnutls_rnd(GNUTLS_RND_RANDOM, dest, len); }
  static int get_new_connection_id(ngtcp2_conn*, ngtcp2_cid* cid, uint8_t* token, size_t cidlen, void*) {
    cid->datalen = cidlen;
    gnutls_rnd(GNUTLS_RND_RANDOM, cid->data, cidlen);
    gnutls_rnd(GNUTLS_RND_RANDOM, token, NGTCP2_STATELESS_RESET_TOKENLEN);
    return 0;
  }
  static int handshake_completed(ngtcp2_conn*, void* user);
  static int recv_stream_data(ngtcp2_conn*, uint32_t flags, int64_t stream_id, uint64_t, const uint8_t* data,
                              size_t len, void* user, void*);
  static int acked_stream_data_offset(ngtcp2_conn*, int64_t stream_id, uint64_t, uint64_t datalen, void* user, void*) {
    Client* c = of(user);
    if (c->h3_ && nghttp3_conn_add_ack_offset(c->h3_, stream_id, datalen) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
    return 0;
  }
  static int stream_close(ngtcp2_conn*, uint32_t flags, int64_t stream_id, uint64_t app_error_code, void* user, void*);
  static int stream_reset(ngtcp2_conn*, int64_t stream_id, uint64_t, uint64_t app_error_code, void* user, void*);
  static int stream_stop_sending(ngtcp2_conn*, int64_t stream_id, uint64_t, void* user, void*) {
    Client* c = of(user);
    if (c->h3_ && nghttp3_conn_shutdown_stream_read(c->h3_, stream_id) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
    return 0;
  }
  static int extend_max_stream_data(ngtcp2_conn*, int64_t stream_id, uint64_t, void* user, void*) {
    Client* c = of(user);
    if (c->h3_ && nghttp3_conn_unblock_stream(c->h3_, stream_id) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
    return 0;
  }
  // nghttp3.
  static int h3_recv_data(nghttp3_conn*, int64_t stream_id, const uint8_t* data, size_t len, void* user, void*) {
    of(user)->consume(stream_id, len);
    if (stream_id != of(user)->request_) return 0;  // an --extra request's
    if (len > 0 && std::fwrite(data, 1, len, stdout) != len) return NGHTTP3_ERR_CALLBACK_FAILURE;
    of(user)->on_body_received(len);
    return 0;
  }
  static int h3_deferred_consume(nghttp3_conn*, int64_t stream_id, size_t consumed, void* user, void*) {
    of(user)->consume(stream_id, consumed);
    return 0;
  }
  static int h3_recv_header(nghttp3_conn*, int64_t stream_id, int32_t, nghttp3_rcbuf* name, nghttp3_rcbuf* value,
                            uint8_t, void* user, void*);
  static int h3_end_headers(nghttp3_conn*, int64_t stream_id, int, void* user, void*);
  static int h3_end_stream(nghttp3_conn*, int64_t stream_id, void* user, void*) {
    if (stream_id == of(user)->request_) of(user)->fin_received_ = true;
    if (++of(user)->answers_ended_ == 1 + of(user)->o_.extra) of(user)->note("last_answer_end");
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
  static nghttp3_ssize read_body(nghttp3_conn*, int64_t, nghttp3_vec* vec, size_t veccnt, uint32_t* pflags, void* user,
                                 void*);

  // --then: its bytes join the body once --after octets were received.
  void on_body_received(size_t n);

  Options o_;
  std::string body_;
  std::string then_;     // --then's bytes, until due
  size_t received_ = 0;  // response body octets
  size_t body_offset_ = 0;
  bool tunnel_ = false;          // CONNECT with --protocol and --data: the body waits for a 2xx
  bool body_released_ = false;   // the body may go
  bool body_cancelled_ = false;  // a tunnel that was refused: FIN without the body

  int fd_ = -1;
  sockaddr_storage local_{}, remote_{};
  socklen_t local_len_ = 0, remote_len_ = 0;
  ngtcp2_path path_{};
  ngtcp2_conn* conn_ = nullptr;
  ngtcp2_crypto_conn_ref conn_ref_{};
  gnutls_certificate_credentials_t cred_ = nullptr;
  gnutls_session_t tls_ = nullptr;
  nghttp3_conn* h3_ = nullptr;
  bool handshake_done_ = false;

  std::map<int64_t, std::string> control_sniff_;  // the server's unidirectional streams' first octets
  bool settings_seen_ = false;
  uint64_t enable_connect_protocol_ = 0;

  int64_t request_ = -1;
  bool sent_marked_ = false;  // --go-file's F.sent exists
  std::vector<std::string> seen_;  // --order's events so far
  size_t answers_ended_ = 0;       // responses read to their end (with --extra's)
  void note(const char* event);
  void linger();
  static int recv_crypto_data(ngtcp2_conn* conn, ngtcp2_crypto_level level, uint64_t offset, const uint8_t* data,
                              size_t len, void* user);
  static int recv_new_token(ngtcp2_conn*, const ngtcp2_vec*, void* user) {
    of(user)->note("new_token");
    return 0;
  }
  int status_ = -1;
  bool fin_received_ = false;

  int result_ = -1;  // the exit status, once known
  int liberr_ = 0;   // an ngtcp2 error that ends the connection
  uint64_t h3_error_ = 0;
  bool peer_closed_ = false;
};

}  // namespace tlsfront::h3client
