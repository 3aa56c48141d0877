#include "h3client/client.h"

#include <netdb.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace tlsfront::h3client {
namespace {

constexpr uint64_t kH3NoError = 0x0100;                    // RFC 9114 §8.1
constexpr uint64_t kSettingsEnableConnectProtocol = 0x08;  // RFC 9220 §5
constexpr uint64_t kStreamWindow = 256 * 1024;
constexpr uint64_t kConnectionWindow = 1024 * 1024;
constexpr size_t kBodyChunk = 16 * 1024;  // one DATA frame per read_data call
constexpr size_t kMaxControlSniff = 4096;
constexpr const char* kPriorities =
    "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:"
    "%DISABLE_TLS13_COMPAT_MODE";

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

// A QUIC variable-length integer (RFC 9000 §16) at `*pos`; false if `buf`
// ends first.
bool read_varint(const std::string& buf, size_t* pos, uint64_t* out) {
  if (*pos >= buf.size()) return false;
  const auto first = static_cast<uint8_t>(buf[*pos]);
  const size_t len = size_t{1} << (first >> 6);
  if (*pos + len > buf.size()) return false;
  uint64_t v = first & 0x3f;
  for (size_t i = 1; i < len; ++i) v = (v << 8) | static_cast<uint8_t>(buf[*pos + i]);
  *pos += len;
  *out = v;
  return true;
}

}  // namespace

Client::~Client() {
  if (h3_) nghttp3_conn_del(h3_);
  if (conn_) ngtcp2_conn_del(conn_);
  if (tls_) gnutls_deinit(tls_);
  if (cred_) gnutls_certificate_free_credentials(cred_);
  if (fd_ >= 0) close(fd_);
}

void Client::done(int code, const std::string& why) {
  if (result_ >= 0) return;
  result_ = code;
  if (!why.empty()) std::fprintf(stderr, "%s\n", why.c_str());
}

void Client::note(const char* event) {
  if (!o_.order || std::find(seen_.begin(), seen_.end(), event) != seen_.end()) return;
  seen_.emplace_back(event);
  std::fprintf(stderr, "order: %s\n", event);
}

int Client::recv_crypto_data(ngtcp2_conn* conn, ngtcp2_crypto_level level, uint64_t offset, const uint8_t* data,
                             size_t len, void* user) {
  if (level == NGTCP2_CRYPTO_LEVEL_APPLICATION) of(user)->note("session_ticket");
  return ngtcp2_crypto_recv_crypto_data_cb(conn, level, offset, data, len, user);
}

void Client::consume(int64_t stream_id, size_t n) {
  if (n == 0) return;
  ngtcp2_conn_extend_max_stream_offset(conn_, stream_id, n);
  ngtcp2_conn_extend_max_offset(conn_, n);
}

bool Client::setup_tls() {
  if (int rc = gnutls_certificate_allocate_credentials(&cred_); rc != 0) {
    done(1, std::string("gnutls credentials: ") + gnutls_strerror(rc));
    return false;
  }
  const int loaded = o_.ca.empty() ? gnutls_certificate_set_x509_system_trust(cred_)
                                   : gnutls_certificate_set_x509_trust_file(cred_, o_.ca.c_str(), GNUTLS_X509_FMT_PEM);
  if (loaded <= 0) {
    done(1, "no trusted certificate in " + (o_.ca.empty() ? std::string("the system store") : o_.ca) +
                (loaded < 0 ? std::string(": ") + gnutls_strerror(loaded) : std::string()));
    return false;
  }
  if (int rc = gnutls_init(&tls_, GNUTLS_CLIENT | GNUTLS_NO_END_OF_EARLY_DATA); rc != 0) {
    tls_ = nullptr;
    done(1, std::string("gnutls_init: ") + gnutls_strerror(rc));
    return false;
  }
  static const unsigned char kAlpn[] = "h3";
  gnutls_datum_t alpn{const_cast<unsigned char*>(kAlpn), 2};
  if (gnutls_priority_set_direct(tls_, kPriorities, nullptr) != 0 ||
      ngtcp2_crypto_gnutls_configure_client_session(tls_) != 0 ||
      gnutls_credentials_set(tls_, GNUTLS_CRD_CERTIFICATE, cred_) != 0 ||
      gnutls_alpn_set_protocols(tls_, &alpn, 1, GNUTLS_ALPN_MANDATORY) != 0 ||
      gnutls_server_name_set(tls_, GNUTLS_NAME_DNS, o_.sni.data(), o_.sni.size()) != 0) {
    done(1, "GnuTLS session setup failed");
    return false;
  }
  // The handshake fails unless the chain leads to --ca and names --sni.
  gnutls_session_set_verify_cert(tls_, o_.sni.c_str(), 0);
  conn_ref_.get_conn = [](ngtcp2_crypto_conn_ref* ref) { return static_cast<Client*>(ref->user_data)->conn_; };
  conn_ref_.user_data = this;
  gnutls_session_set_ptr(tls_, &conn_ref_);
  return true;
}

bool Client::setup() {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(o_.host.c_str(), o_.port.c_str(), &hints, &res); rc != 0) {
    done(1, o_.host + ": " + gai_strerror(rc));
    return false;
  }
  fd_ = socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  std::memcpy(&remote_, res->ai_addr, res->ai_addrlen);
  remote_len_ = res->ai_addrlen;
  freeaddrinfo(res);
  local_len_ = sizeof local_;
  if (fd_ < 0 || connect(fd_, reinterpret_cast<sockaddr*>(&remote_), remote_len_) != 0 ||
      getsockname(fd_, reinterpret_cast<sockaddr*>(&local_), &local_len_) != 0) {
    done(1, std::string("UDP socket: ") + std::strerror(errno));
    return false;
  }
  path_.local.addr = reinterpret_cast<sockaddr*>(&local_);
  path_.local.addrlen = local_len_;
  path_.remote.addr = reinterpret_cast<sockaddr*>(&remote_);
  path_.remote.addrlen = remote_len_;
  if (!setup_tls()) return false;

  ngtcp2_callbacks cb{};
  cb.client_initial = ngtcp2_crypto_client_initial_cb;
  cb.recv_crypto_data = recv_crypto_data;
  cb.recv_new_token = recv_new_token;
  cb.encrypt = ngtcp2_crypto_encrypt_cb;
  cb.decrypt = ngtcp2_crypto_decrypt_cb;
  cb.hp_mask = ngtcp2_crypto_hp_mask_cb;
  cb.recv_retry = ngtcp2_crypto_recv_retry_cb;
  cb.update_key = ngtcp2_crypto_update_key_cb;
  cb.delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
  cb.delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
  cb.get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
  cb.version_negotiation = ngtcp2_crypto_version_negotiation_cb;
  cb.rand = rand_cb;
  cb.get_new_connection_id = get_new_connection_id;
  cb.handshake_completed = handshake_completed;
  cb.recv_stream_data = recv_stream_data;
  cb.acked_stream_data_offset = acked_stream_data_offset;
  cb.stream_close = stream_close;
  cb.stream_reset = stream_reset;
  cb.stream_stop_sending = stream_stop_sending;
  cb.extend_max_stream_data = extend_max_stream_data;

  ngtcp2_settings settings;
  ngtcp2_settings_default(&settings);
  settings.initial_ts = now_ns();
  settings.handshake_timeout = static_cast<ngtcp2_duration>(o_.timeout_ms) * NGTCP2_MILLISECONDS;
  ngtcp2_transport_params params;
  ngtcp2_transport_params_default(&params);
  params.initial_max_stream_data_bidi_local = kStreamWindow;
  params.initial_max_stream_data_uni = kStreamWindow;
  params.initial_max_data = kConnectionWindow;
  params.initial_max_streams_bidi = 0;  // a server opens none in HTTP/3
  params.initial_max_streams_uni = 3;   // its control and QPACK streams (RFC 9114 §6.2)
  params.max_idle_timeout = static_cast<ngtcp2_duration>(o_.timeout_ms) * NGTCP2_MILLISECONDS;

  ngtcp2_cid dcid{}, scid{};
  dcid.datalen = 18;
  scid.datalen = 17;
  gnutls_rnd(GNUTLS_RND_RANDOM, dcid.data, dcid.datalen);
  gnutls_rnd(GNUTLS_RND_RANDOM, scid.data, scid.datalen);
  const int rv =
      ngtcp2_conn_client_new(&conn_, &dcid, &scid, &path_, NGTCP2_PROTO_VER_V1, &cb, &settings, &params, nullptr, this);
  if (rv != 0) {
    conn_ = nullptr;
    done(1, std::string("ngtcp2_conn_client_new: ") + ngtcp2_strerror(rv));
    return false;
  }
  ngtcp2_conn_set_tls_native_handle(conn_, tls_);
  return true;
}

int Client::handshake_completed(ngtcp2_conn*, void* user) {
  Client* c = of(user);
  gnutls_datum_t alpn{};
  if (gnutls_alpn_get_selected_protocol(c->tls_, &alpn) != 0 || alpn.size != 2 ||
      std::memcmp(alpn.data, "h3", 2) != 0) {
    c->done(1, "the server did not select ALPN h3");
    return NGTCP2_ERR_CALLBACK_FAILURE;
  }
  c->handshake_done_ = true;
  c->setup_h3();
  return c->h3_ ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}

void Client::setup_h3() {
  if (h3_) return;
  nghttp3_callbacks cb{};
  cb.recv_data = h3_recv_data;
  cb.deferred_consume = h3_deferred_consume;
  cb.recv_header = h3_recv_header;
  cb.end_headers = h3_end_headers;
  cb.recv_trailer = h3_recv_header;
  cb.end_stream = h3_end_stream;
  cb.stop_sending = h3_stop_sending;
  cb.reset_stream = h3_reset_stream;
  nghttp3_settings settings;
  nghttp3_settings_default(&settings);
  settings.qpack_max_dtable_capacity = 4096;
  settings.qpack_blocked_streams = 100;
  if (nghttp3_conn_client_new(&h3_, &cb, &settings, nghttp3_mem_default(), this) != 0) {
    h3_ = nullptr;
    done(1, "nghttp3_conn_client_new failed");
    return;
  }
  int64_t control = -1, enc = -1, dec = -1;
  if (ngtcp2_conn_open_uni_stream(conn_, &control, nullptr) != 0 ||
      nghttp3_conn_bind_control_stream(h3_, control) != 0 || ngtcp2_conn_open_uni_stream(conn_, &enc, nullptr) != 0 ||
      ngtcp2_conn_open_uni_stream(conn_, &dec, nullptr) != 0 || nghttp3_conn_bind_qpack_streams(h3_, enc, dec) != 0) {
    nghttp3_conn_del(h3_);
    h3_ = nullptr;
    done(1, "cannot open the HTTP/3 control and QPACK streams");
  }
}

// nghttp3 0.8 says nothing of the server's SETTINGS: its control stream's
// first frame is read here too (RFC 9114 §6.2.1, §7.2.4).
void Client::sniff_settings(int64_t stream_id, const uint8_t* data, size_t len) {
  if (settings_seen_ || (stream_id & 0x3) != 0x3) return;  // server-initiated unidirectional only
  auto it = control_sniff_.find(stream_id);
  if (it == control_sniff_.end()) it = control_sniff_.emplace(stream_id, std::string()).first;
  std::string& buf = it->second;
  if (buf.size() > kMaxControlSniff) return;  // not a control stream, or a SETTINGS too long to read
  buf.append(reinterpret_cast<const char*>(data), len);
  size_t pos = 0;
  uint64_t type = 0, frame_type = 0, frame_len = 0;
  if (!read_varint(buf, &pos, &type)) return;
  if (type != 0x00) {  // QPACK encoder/decoder or push: not the control stream
    buf.assign(kMaxControlSniff + 1, '\0');
    return;
  }
  if (!read_varint(buf, &pos, &frame_type) || !read_varint(buf, &pos, &frame_len)) return;
  if (frame_type != 0x04 || frame_len > kMaxControlSniff) {
    buf.assign(kMaxControlSniff + 1, '\0');  // nghttp3 will close the connection (H3_MISSING_SETTINGS)
    return;
  }
  if (buf.size() - pos < frame_len) return;
  const std::string payload = buf.substr(pos, frame_len);
  settings_seen_ = true;
  control_sniff_.clear();
  for (size_t p = 0; p < payload.size();) {
    uint64_t id = 0, value = 0;
    if (!read_varint(payload, &p, &id) || !read_varint(payload, &p, &value)) break;
    if (id == kSettingsEnableConnectProtocol) enable_connect_protocol_ = value;
  }
}

int Client::recv_stream_data(ngtcp2_conn*, uint32_t flags, int64_t stream_id, uint64_t, const uint8_t* data, size_t len,
                             void* user, void*) {
  Client* c = of(user);
  if (stream_id == c->request_) c->note("answer");
  c->sniff_settings(stream_id, data, len);
  c->setup_h3();
  if (!c->h3_) return NGTCP2_ERR_CALLBACK_FAILURE;
  const nghttp3_ssize n =
      nghttp3_conn_read_stream(c->h3_, stream_id, data, len, (flags & NGTCP2_STREAM_DATA_FLAG_FIN) != 0);
  if (n < 0) {
    c->h3_error_ = nghttp3_err_infer_quic_app_error_code(static_cast<int>(n));
    c->done(1, std::string("HTTP/3: ") + nghttp3_strerror(static_cast<int>(n)));
    return NGTCP2_ERR_CALLBACK_FAILURE;
  }
  c->consume(stream_id, static_cast<size_t>(n));  // framing and QPACK; DATA payload in h3_recv_data
  return 0;
}

int Client::stream_close(ngtcp2_conn*, uint32_t flags, int64_t stream_id, uint64_t app_error_code, void* user, void*) {
  Client* c = of(user);
  if (!(flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET)) app_error_code = kH3NoError;
  if (c->h3_) {
    const int rv = nghttp3_conn_close_stream(c->h3_, stream_id, app_error_code);
    if (rv != 0 && rv != NGHTTP3_ERR_STREAM_NOT_FOUND) return NGTCP2_ERR_CALLBACK_FAILURE;
  }
  if (stream_id == c->request_) {
    if (c->fin_received_) {
      c->done(0);
    } else {
      char why[64];
      std::snprintf(why, sizeof why, "reset: 0x%llx", static_cast<unsigned long long>(app_error_code));
      c->done(2, why);
    }
  }
  return 0;
}

// The server's RESET_STREAM: the response can no longer end well; the
// request's side is not waited for.
int Client::stream_reset(ngtcp2_conn*, int64_t stream_id, uint64_t, uint64_t app_error_code, void* user, void*) {
  Client* c = of(user);
  if (c->h3_ && nghttp3_conn_shutdown_stream_read(c->h3_, stream_id) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
  if (stream_id == c->request_ && !c->fin_received_) {
    char why[64];
    std::snprintf(why, sizeof why, "reset: 0x%llx", static_cast<unsigned long long>(app_error_code));
    c->done(2, why);
  }
  return 0;
}

int Client::h3_recv_header(nghttp3_conn*, int64_t stream_id, int32_t, nghttp3_rcbuf* name, nghttp3_rcbuf* value,
                           uint8_t, void* user, void*) {
  Client* c = of(user);
  const nghttp3_vec n = nghttp3_rcbuf_get_buf(name);
  const nghttp3_vec v = nghttp3_rcbuf_get_buf(value);
  std::fprintf(stderr, "%.*s: %.*s\n", static_cast<int>(n.len), reinterpret_cast<const char*>(n.base),
               static_cast<int>(v.len), reinterpret_cast<const char*>(v.base));
  if (stream_id == c->request_ && n.len == 7 && std::memcmp(n.base, ":status", 7) == 0) {
    c->status_ = std::atoi(std::string(reinterpret_cast<const char*>(v.base), v.len).c_str());
  }
  return 0;
}

int Client::h3_end_headers(nghttp3_conn*, int64_t stream_id, int, void* user, void*) {
  Client* c = of(user);
  if (stream_id != c->request_ || c->status_ < 200) return 0;  // an interim (1xx) response
  if (c->tunnel_ && !c->body_released_) c->release_body(c->status_ < 300);
  return 0;
}

void Client::release_body(bool send) {
  body_released_ = true;
  body_cancelled_ = !send;
  nghttp3_conn_resume_stream(h3_, request_);
}

nghttp3_ssize Client::read_body(nghttp3_conn*, int64_t, nghttp3_vec* vec, size_t veccnt, uint32_t* pflags, void* user,
                                void*) {
  Client* c = of(user);
  if (c->tunnel_ && !c->body_released_) return NGHTTP3_ERR_WOULDBLOCK;
  const size_t left = c->body_cancelled_ ? 0 : c->body_.size() - c->body_offset_;
  const size_t n = std::min(left, kBodyChunk);
  if (n > 0 && veccnt > 0) {
    vec[0].base = reinterpret_cast<uint8_t*>(c->body_.data() + c->body_offset_);
    vec[0].len = n;
    c->body_offset_ += n;
  }
  if (n == 0 && !c->body_cancelled_ && !c->then_.empty()) return NGHTTP3_ERR_WOULDBLOCK;  // --then not yet due
  if (c->body_cancelled_ || (c->body_offset_ == c->body_.size() && c->then_.empty())) *pflags |= NGHTTP3_DATA_FLAG_EOF;
  return n > 0 && veccnt > 0 ? 1 : 0;
}

void Client::on_body_received(size_t n) {
  received_ += n;
  if (then_.empty() || received_ < o_.then_after || request_ < 0) return;
  body_.append(then_);
  then_.clear();
  nghttp3_conn_resume_stream(h3_, request_);
}

void Client::maybe_submit() {
  if (request_ >= 0 || !h3_ || result_ >= 0) return;
  if (!o_.go_file.empty() && access(o_.go_file.c_str(), F_OK) != 0) return;
  if (!o_.protocol.empty()) {
    if (!settings_seen_) return;
    if (enable_connect_protocol_ != 1) {
      done(3, "no SETTINGS_ENABLE_CONNECT_PROTOCOL");
      return;
    }
  }
  const int rv = ngtcp2_conn_open_bidi_stream(conn_, &request_, nullptr);
  if (rv == NGTCP2_ERR_STREAM_ID_BLOCKED) return;  // the server allows no stream yet
  if (rv != 0) {
    done(1, std::string("ngtcp2_conn_open_bidi_stream: ") + ngtcp2_strerror(rv));
    return;
  }
  const std::string method = !o_.method.empty() ? o_.method : !o_.protocol.empty() ? "CONNECT" : "GET";
  const std::string authority = o_.sni + ":" + o_.port;
  std::vector<std::pair<std::string, std::string>> fields{
      {":method", method}, {":scheme", "https"}, {":authority", authority}, {":path", o_.path}};
  if (!o_.protocol.empty()) fields.emplace_back(":protocol", o_.protocol);
  fields.insert(fields.end(), o_.headers.begin(), o_.headers.end());
  std::vector<nghttp3_nv> nva;
  for (auto& [name, value] : fields) {
    nva.push_back(nghttp3_nv{reinterpret_cast<uint8_t*>(name.data()), reinterpret_cast<uint8_t*>(value.data()),
                             name.size(), value.size(), NGHTTP3_NV_FLAG_NONE});
  }
  const bool has_body = !o_.data_file.empty();
  tunnel_ = has_body && !o_.protocol.empty();
  nghttp3_data_reader reader{read_body};
  if (int rc =
          nghttp3_conn_submit_request(h3_, request_, nva.data(), nva.size(), has_body ? &reader : nullptr, nullptr);
      rc != 0) {
    done(1, std::string("nghttp3_conn_submit_request: ") + nghttp3_strerror(rc));
    return;
  }
  for (size_t i = 0; i < o_.extra; ++i) {
    int64_t id = -1;
    if (ngtcp2_conn_open_bidi_stream(conn_, &id, nullptr) != 0 ||
        nghttp3_conn_submit_request(h3_, id, nva.data(), nva.size(), nullptr, nullptr) != 0) {
      done(1, "an --extra request could not be opened");
      return;
    }
  }
}

void Client::write() {
  if (result_ >= 0) return;
  uint8_t buf[NGTCP2_MAX_PMTUD_UDP_PAYLOAD_SIZE];
  const uint64_t ts = now_ns();
  for (;;) {
    int64_t stream_id = -1;
    int fin = 0;
    nghttp3_vec vec[16];
    nghttp3_ssize veccnt = 0;
    if (h3_ && ngtcp2_conn_get_max_data_left(conn_) > 0) {
      veccnt = nghttp3_conn_writev_stream(h3_, &stream_id, &fin, vec, 16);
      if (veccnt < 0) {
        h3_error_ = nghttp3_err_infer_quic_app_error_code(static_cast<int>(veccnt));
        done(1, std::string("HTTP/3: ") + nghttp3_strerror(static_cast<int>(veccnt)));
        return;
      }
    }
    ngtcp2_ssize datalen = -1;
    uint32_t flags = o_.packet_per_stream ? 0 : NGTCP2_WRITE_STREAM_FLAG_MORE;
    if (fin) flags |= NGTCP2_WRITE_STREAM_FLAG_FIN;
    ngtcp2_pkt_info pi{};
    const ngtcp2_ssize n = ngtcp2_conn_writev_stream(
        conn_, nullptr, &pi, buf, std::min(sizeof buf, ngtcp2_conn_get_max_tx_udp_payload_size(conn_)), &datalen, flags,
        stream_id, reinterpret_cast<const ngtcp2_vec*>(vec), static_cast<size_t>(veccnt), ts);
    if (n < 0) {
      if (n == NGTCP2_ERR_STREAM_DATA_BLOCKED) {
        nghttp3_conn_block_stream(h3_, stream_id);
        continue;
      }
      if (n == NGTCP2_ERR_STREAM_SHUT_WR) {
        nghttp3_conn_shutdown_stream_write(h3_, stream_id);
        continue;
      }
      if (n == NGTCP2_ERR_WRITE_MORE) {
        if (nghttp3_conn_add_write_offset(h3_, stream_id, static_cast<size_t>(datalen)) != 0) {
          done(1, "nghttp3_conn_add_write_offset failed");
          return;
        }
        continue;
      }
      liberr_ = static_cast<int>(n);
      done(1, std::string("ngtcp2_conn_writev_stream: ") + ngtcp2_strerror(liberr_));
      return;
    }
    if (datalen >= 0 && stream_id >= 0 &&
        nghttp3_conn_add_write_offset(h3_, stream_id, static_cast<size_t>(datalen)) != 0) {
      done(1, "nghttp3_conn_add_write_offset failed");
      return;
    }
    if (n == 0) break;
    if (send(fd_, buf, static_cast<size_t>(n), 0) < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      done(1, std::string("send: ") + std::strerror(errno));
      return;
    }
  }
  ngtcp2_conn_update_pkt_tx_time(conn_, ts);
}

void Client::on_read_error(int rv) {
  if (rv == NGTCP2_ERR_DRAINING || rv == NGTCP2_ERR_CLOSING || rv == NGTCP2_ERR_DROP_CONN) {
    peer_closed_ = true;
    ngtcp2_connection_close_error ccerr;
    ngtcp2_conn_get_connection_close_error(conn_, &ccerr);
    char why[512];
    std::snprintf(why, sizeof why, "connection closed by the server: %s error 0x%llx%s%.*s",
                  ccerr.type == NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_APPLICATION ? "application" : "transport",
                  static_cast<unsigned long long>(ccerr.error_code), ccerr.reasonlen ? ": " : "",
                  static_cast<int>(ccerr.reasonlen), reinterpret_cast<const char*>(ccerr.reason));
    done(1, why);
    return;
  }
  liberr_ = rv;
  if (rv == NGTCP2_ERR_CRYPTO) {
    std::string why = "TLS handshake failed (alert " + std::to_string(ngtcp2_conn_get_tls_alert(conn_)) + ")";
    if (const unsigned status = gnutls_session_get_verify_cert_status(tls_); status != 0) {
      gnutls_datum_t text{};
      if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &text, 0) == 0) {
        why += ": certificate verification failed: " + std::string(reinterpret_cast<char*>(text.data), text.size);
        gnutls_free(text.data);
      }
    }
    done(1, why);
    return;
  }
  done(1, std::string("QUIC: ") + ngtcp2_strerror(rv));
}

bool Client::read_packets() {
  uint8_t buf[65536];
  for (int i = 0; i < 256; ++i) {
    const ssize_t n = recv(fd_, buf, sizeof buf, 0);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return true;
      const bool refused = errno == ECONNREFUSED;  // ICMP port unreachable
      done(1, std::string("recv: ") + std::strerror(errno) +
                  (refused ? " (nothing listens on UDP " + o_.host + " port " + o_.port + ")" : ""));
      return false;
    }
    if (n > NGTCP2_MAX_UDP_PAYLOAD_SIZE) note("large_datagram");
    ngtcp2_pkt_info pi{};
    const int rv = ngtcp2_conn_read_pkt(conn_, &path_, &pi, buf, static_cast<size_t>(n), now_ns());
    if (rv != 0) {
      on_read_error(rv);
      return false;
    }
    if (result_ >= 0) return true;
  }
  return true;
}

void Client::linger() {
  const uint64_t deadline = now_ns() + static_cast<uint64_t>(o_.linger_ms) * 1'000'000u;
  uint8_t buf[65536];
  for (uint64_t now = now_ns(); now < deadline; now = now_ns()) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>((deadline - now + 999'999) / 1'000'000)) <= 0) continue;
    for (;;) {
      const ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n < 0) break;
      if (n > NGTCP2_MAX_UDP_PAYLOAD_SIZE) note("large_datagram");
      ngtcp2_pkt_info pi{};
      if (ngtcp2_conn_read_pkt(conn_, &path_, &pi, buf, static_cast<size_t>(n), now_ns()) != 0) return;
    }
  }
}

void Client::close_connection() {
  if (!conn_ || peer_closed_ || ngtcp2_conn_is_in_closing_period(conn_) || ngtcp2_conn_is_in_draining_period(conn_)) {
    return;
  }
  ngtcp2_connection_close_error ccerr;
  ngtcp2_connection_close_error_default(&ccerr);
  if (h3_error_ != 0) {
    ngtcp2_connection_close_error_set_application_error(&ccerr, h3_error_, nullptr, 0);
  } else if (liberr_ == NGTCP2_ERR_CRYPTO) {
    ngtcp2_connection_close_error_set_transport_error_tls_alert(&ccerr, ngtcp2_conn_get_tls_alert(conn_), nullptr, 0);
  } else if (liberr_ != 0) {
    ngtcp2_connection_close_error_set_transport_error_liberr(&ccerr, liberr_, nullptr, 0);
  } else {
    ngtcp2_connection_close_error_set_application_error(&ccerr, kH3NoError, nullptr, 0);
  }
  uint8_t buf[NGTCP2_MAX_UDP_PAYLOAD_SIZE];
  ngtcp2_pkt_info pi{};
  const ngtcp2_ssize n = ngtcp2_conn_write_connection_close(conn_, nullptr, &pi, buf, sizeof buf, &ccerr, now_ns());
  if (n > 0) (void)send(fd_, buf, static_cast<size_t>(n), 0);
}

std::string Client::waiting_for() const {
  if (!handshake_done_) return "the handshake";
  if (request_ < 0) return o_.protocol.empty() ? "a request stream" : "the server's SETTINGS";
  if (status_ < 200) return "the response";
  return "the end of the response";
}

int Client::run() {
  const uint64_t deadline = now_ns() + static_cast<uint64_t>(o_.timeout_ms) * 1'000'000u;
  if (setup()) write();
  while (result_ < 0) {
    uint64_t now = now_ns();
    if (now >= deadline) {
      done(1, "timeout after " + std::to_string(o_.timeout_ms) + " ms waiting for " + waiting_for());
      break;
    }
    const uint64_t wake = std::min(ngtcp2_conn_get_expiry(conn_), deadline);
    pollfd p{fd_, POLLIN, 0};
    int ms = wake > now ? static_cast<int>((wake - now + 999'999) / 1'000'000) : 0;
    if (!o_.go_file.empty() && request_ < 0) ms = std::min(ms, 10);  // looking for --go-file
    if (poll(&p, 1, ms) < 0 && errno != EINTR) {
      done(1, std::string("poll: ") + std::strerror(errno));
      break;
    }
    if (p.revents != 0 && !read_packets()) break;
    if (result_ >= 0) break;
    now = now_ns();
    if (ngtcp2_conn_get_expiry(conn_) <= now) {
      if (const int rv = ngtcp2_conn_handle_expiry(conn_, now); rv != 0) {
        if (rv == NGTCP2_ERR_IDLE_CLOSE) {
          peer_closed_ = true;  // nothing is sent on an idle close
          done(1, "idle timeout waiting for " + waiting_for());
        } else if (rv == NGTCP2_ERR_HANDSHAKE_TIMEOUT) {
          peer_closed_ = true;
          done(1, "timeout after " + std::to_string(o_.timeout_ms) + " ms waiting for the handshake");
        } else {
          liberr_ = rv;
          done(1, std::string("QUIC: ") + ngtcp2_strerror(rv));
        }
        break;
      }
    }
    maybe_submit();
    write();
    if (!o_.go_file.empty() && request_ >= 0 && !sent_marked_ && result_ < 0) {
      sent_marked_ = true;
      if (FILE* f = std::fopen((o_.go_file + ".sent").c_str(), "w")) std::fclose(f);
    }
  }
  std::fflush(stdout);
  if (result_ == 0 && o_.linger_ms > 0 && conn_ && fd_ >= 0) linger();
  if (conn_ && fd_ >= 0) close_connection();
  return result_;
}

}  // namespace tlsfront::h3client
