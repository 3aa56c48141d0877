// tlsfront_wan_client: one HTTPS request on a new connection, timed, for
// scripts/bench-wan.sh. OpenSSL 3.0, HTTP/1.1, blocking on poll() only.
//
//   tlsfront_wan_client --connect IPV4:PORT --host NAME --ca FILE [--path PATH]
//       [--sess-in FILE] [--sess-out FILE] [--early-data] [--tfo] [--status]
//       [--timeout-ms N]
//
// Sends `GET PATH HTTP/1.1` (Host: NAME, Connection: close), reads the whole
// response (Content-Length) and prints one JSON object on stdout:
//   connect_ms   connect() start -> TCP connected. With --tfo (Linux
//                TCP_FASTOPEN_CONNECT, RFC 7413) connect() returns at once and
//                the SYN leaves with the first write, so this is ~0 then
//   tls_ms       start -> handshake complete on the client's side (it has the
//                server's Finished and sends its own)
//   ttfb_ms      start -> first byte of the HTTP response
//   total_ms     start -> last byte of the response body
//   protocol, resumed (SSL_session_reused), session_offered, status (HTTP),
//   early_data   "accepted" | "rejected" | "not_sent" (SSL_get_early_data_status;
//                with --early-data the GET is written with SSL_write_early_data,
//                RFC 8446 §4.2.10, and written again after the handshake when
//                rejected, as a browser does)
//   early_allowed  the session offered allows early data (max_early_data > 0)
//   tfo_syn_data_acked  the server acknowledged data in our SYN (TCP_INFO
//                TCPI_OPT_SYN_DATA)
//   server_flight_bytes  TLS record bytes (headers included) read before the
//                client sent its Finished: ServerHello .. server Finished in
//                TLS 1.3, ServerHello .. ServerHelloDone in a full TLS 1.2
//                handshake; with mss (TCP_MAXSEG) the script checks it
//                against the initial congestion window
//   ocsp_bytes   length of the stapled OCSP response (0: none; --status asks)
//   tcp_retrans  segments the client retransmitted (TCP_INFO)
// All the times are monotonic milliseconds from just before socket().
//
// The TLS records go through two memory BIOs and the client writes them
// itself, so the ClientHello and the early data leave in one write() — with a
// TFO cookie, in the SYN. --sess-out writes the newest session (the last
// NewSessionTicket in TLS 1.3) as PEM; a resumption that brought no new
// ticket keeps the file; it is removed when the connection left none to resume.
//
// Exit 0 and "ok":true after a complete response; 1 and "ok":false with an
// "error" otherwise (timeout, refused, TLS or HTTP error); 2 on bad arguments.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

struct Options {
  std::string connect, host, ca, path = "/", sess_in, sess_out;
  bool early = false, tfo = false, status = false;
  int timeout_ms = 15000;
};

struct Failure {
  std::string what;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "tlsfront_wan_client: %s\nusage: tlsfront_wan_client --connect IPV4:PORT --host NAME --ca FILE "
               "[--path PATH] [--sess-in FILE] [--sess-out FILE] [--early-data] [--tfo] [--status] "
               "[--timeout-ms N]\n",
               why.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--early-data") {
      o.early = true;
      continue;
    }
    if (a == "--tfo") {
      o.tfo = true;
      continue;
    }
    if (a == "--status") {
      o.status = true;
      continue;
    }
    if (i + 1 >= argc) usage(a + " needs a value");
    const std::string v = argv[++i];
    if (a == "--connect")
      o.connect = v;
    else if (a == "--host")
      o.host = v;
    else if (a == "--ca")
      o.ca = v;
    else if (a == "--path")
      o.path = v;
    else if (a == "--sess-in")
      o.sess_in = v;
    else if (a == "--sess-out")
      o.sess_out = v;
    else if (a == "--timeout-ms") {
      o.timeout_ms = std::atoi(v.c_str());
      if (o.timeout_ms <= 0 || o.timeout_ms > 600'000) usage("--timeout-ms: 1 .. 600000");
    } else
      usage("unknown option " + a);
  }
  if (o.connect.empty() || o.host.empty() || o.ca.empty()) usage("--connect, --host and --ca are required");
  if (o.path.empty() || o.path[0] != '/') usage("--path must start with /");
  return o;
}

double now_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

std::string ssl_error(const char* what) {
  std::string s = what;
  char buf[256];
  while (unsigned long e = ERR_get_error()) {
    ERR_error_string_n(e, buf, sizeof buf);
    s += std::string(": ") + buf;
  }
  return s;
}

// The connection: a non-blocking socket and the TLS state over memory BIOs.
class Client {
 public:
  Client(const Options& o, SSL_CTX* ctx) : o_(o), deadline_(now_ms() + o.timeout_ms), ssl_(SSL_new(ctx)) {
    rbio_ = BIO_new(BIO_s_mem());
    wbio_ = BIO_new(BIO_s_mem());
    BIO_set_mem_eof_return(rbio_, -1);  // empty = "want read", not EOF
    SSL_set_bio(ssl_, rbio_, wbio_);
    SSL_set_app_data(ssl_, this);
    SSL_set_msg_callback(ssl_, &Client::on_message);
  }
  ~Client() {
    SSL_free(ssl_);
    SSL_SESSION_free(newest_);
    if (fd_ >= 0) ::close(fd_);
  }

  void run();
  std::string json() const;

  // The newest session the server gave (TLS 1.3: one per NewSessionTicket).
  static int on_new_session(SSL* ssl, SSL_SESSION* session) {
    auto* self = static_cast<Client*>(SSL_get_app_data(ssl));
    SSL_SESSION_free(self->newest_);
    self->newest_ = session;
    return 1;  // we keep the reference
  }

 private:
  static void on_message(int write_p, int, int content_type, const void* buf, size_t len, SSL* ssl, void*) {
    auto* self = static_cast<Client*>(SSL_get_app_data(ssl));
    const auto* p = static_cast<const unsigned char*>(buf);
    if (self->sent_finished_) return;
    if (write_p == 0 && content_type == SSL3_RT_HEADER && len == SSL3_RT_HEADER_LENGTH) {
      self->flight_bytes_ += SSL3_RT_HEADER_LENGTH + ((static_cast<size_t>(p[3]) << 8) | p[4]);
    } else if (write_p == 1 && content_type == SSL3_RT_HANDSHAKE && len > 0 && p[0] == SSL3_MT_FINISHED) {
      self->sent_finished_ = true;
    }
  }

  void open_socket();
  void wait(short events);
  void flush();
  bool receive();  // false at EOF
  void drive(int ret, const char* what);
  void load_session();
  void save_session();

  const Options& o_;
  double start_ = now_ms(), deadline_;
  SSL* ssl_;
  BIO* rbio_ = nullptr;
  BIO* wbio_ = nullptr;
  int fd_ = -1;
  SSL_SESSION* newest_ = nullptr;
  bool sent_finished_ = false, session_offered_ = false, early_allowed_ = false, eof_ = false;
  size_t flight_bytes_ = 0, body_bytes_ = 0;
  double connect_ms_ = -1, tls_ms_ = -1, ttfb_ms_ = -1, total_ms_ = -1;
  int http_status_ = 0, early_status_ = SSL_EARLY_DATA_NOT_SENT;
  tcp_info info_{};
  int mss_ = 0;
};

void Client::open_socket() {
  const size_t colon = o_.connect.rfind(':');
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  if (colon == std::string::npos || ::inet_pton(AF_INET, o_.connect.substr(0, colon).c_str(), &sa.sin_addr) != 1) {
    throw Failure{"--connect: not IPV4:PORT: " + o_.connect};
  }
  sa.sin_port = htons(static_cast<uint16_t>(std::atoi(o_.connect.c_str() + colon + 1)));
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw Failure{std::string("socket: ") + std::strerror(errno)};
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (o_.tfo && ::setsockopt(fd_, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, &one, sizeof one) != 0) {
    throw Failure{std::string("TCP_FASTOPEN_CONNECT: ") + std::strerror(errno)};
  }
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    if (errno != EINPROGRESS) throw Failure{std::string("connect: ") + std::strerror(errno)};
    wait(POLLOUT);
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) throw Failure{std::string("connect: ") + std::strerror(err)};
  }
  connect_ms_ = now_ms() - start_;
}

void Client::wait(short events) {
  for (;;) {
    const double left = deadline_ - now_ms();
    if (left <= 0) throw Failure{"timeout"};
    pollfd p{fd_, events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left) + 1);
    if (n > 0) return;
    if (n < 0 && errno != EINTR) throw Failure{std::string("poll: ") + std::strerror(errno)};
  }
}

// Writes every pending TLS byte. With a deferred TFO connect the first write
// sends the SYN; EINPROGRESS there means "no cookie: SYN sent without data".
void Client::flush() {
  char* data = nullptr;
  long pending = BIO_get_mem_data(wbio_, &data);
  std::string out(data, static_cast<size_t>(pending));
  (void)BIO_reset(wbio_);
  size_t off = 0;
  while (off < out.size()) {
    const ssize_t n = ::send(fd_, out.data() + off, out.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINPROGRESS || errno == EINTR)) {
      wait(POLLOUT);
    } else {
      throw Failure{std::string("send: ") + std::strerror(errno)};
    }
  }
}

bool Client::receive() {
  wait(POLLIN);
  char buf[16384];
  for (;;) {
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n > 0) {
      BIO_write(rbio_, buf, static_cast<int>(n));
      return true;
    }
    if (n == 0) return false;
    if (errno == EAGAIN || errno == EINTR) {
      wait(POLLIN);
      continue;
    }
    throw Failure{std::string("recv: ") + std::strerror(errno)};
  }
}

// After an SSL call that returned `ret`: sends what it wrote; on "want read",
// reads more. Throws on anything else.
void Client::drive(int ret, const char* what) {
  flush();
  if (ret > 0) return;
  if (now_ms() > deadline_) throw Failure{"timeout"};  // also bounds a repeated "want write"
  const int err = SSL_get_error(ssl_, ret);
  if (err == SSL_ERROR_WANT_READ) {
    if (!receive()) throw Failure{std::string(what) + ": connection closed by the server"};
    return;
  }
  if (err == SSL_ERROR_WANT_WRITE) return;
  throw Failure{ssl_error(what)};
}

void Client::load_session() {
  if (o_.sess_in.empty()) return;
  FILE* f = std::fopen(o_.sess_in.c_str(), "r");
  if (f == nullptr) return;  // no session yet: a new client
  SSL_SESSION* s = PEM_read_SSL_SESSION(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  if (s == nullptr) throw Failure{ssl_error("--sess-in: not a PEM SSL session")};
  session_offered_ = SSL_set_session(ssl_, s) == 1;
  early_allowed_ = SSL_SESSION_get_max_early_data(s) > 0;
  SSL_SESSION_free(s);
}

void Client::save_session() {
  if (o_.sess_out.empty()) return;
  // A server may send no new ticket after a resumption (OpenSSL 3.0 does not
  // while its ticket key is current): the offered session stays usable, and
  // its file is kept.
  if (newest_ == nullptr && SSL_session_reused(ssl_)) return;
  SSL_SESSION* s = newest_ ? newest_ : SSL_get_session(ssl_);
  if (s == nullptr || SSL_SESSION_is_resumable(s) != 1) {
    std::remove(o_.sess_out.c_str());
    return;
  }
  const std::string tmp = o_.sess_out + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr || PEM_write_SSL_SESSION(f, s) != 1 || std::fclose(f) != 0 ||
      std::rename(tmp.c_str(), o_.sess_out.c_str()) != 0) {
    throw Failure{"--sess-out: cannot write " + o_.sess_out};
  }
}

void Client::run() {
  if (!SSL_set_tlsext_host_name(ssl_, o_.host.c_str()) || !SSL_set1_host(ssl_, o_.host.c_str())) {
    throw Failure{ssl_error("host name")};
  }
  if (o_.status) SSL_set_tlsext_status_type(ssl_, TLSEXT_STATUSTYPE_ocsp);
  load_session();
  const std::string request = "GET " + o_.path + " HTTP/1.1\r\nHost: " + o_.host +
                              "\r\nUser-Agent: tlsfront_wan_client\r\nConnection: close\r\n\r\n";
  open_socket();
  SSL_set_connect_state(ssl_);
  bool sent = false;
  if (o_.early && session_offered_ && early_allowed_) {
    size_t written = 0;
    // Into the memory BIO: it never needs the network, so one call does it.
    if (SSL_write_early_data(ssl_, request.data(), request.size(), &written) != 1) {
      throw Failure{ssl_error("early data")};
    }
    sent = true;
  }
  for (int ret = 0; ret != 1;) drive(ret = SSL_do_handshake(ssl_), "handshake");
  tls_ms_ = now_ms() - start_;
  early_status_ = SSL_get_early_data_status(ssl_);
  if (!sent || early_status_ != SSL_EARLY_DATA_ACCEPTED) {
    for (int ret = 0; ret <= 0;)
      drive(ret = SSL_write(ssl_, request.data(), static_cast<int>(request.size())), "write");
  }
  std::string response;
  size_t head_end = std::string::npos, content_length = 0;
  char buf[16384];
  while (head_end == std::string::npos || response.size() - head_end < content_length) {
    const int n = SSL_read(ssl_, buf, sizeof buf);
    if (n > 0) {
      if (ttfb_ms_ < 0) ttfb_ms_ = now_ms() - start_;
      response.append(buf, static_cast<size_t>(n));
      if (head_end == std::string::npos && (head_end = response.find("\r\n\r\n")) != std::string::npos) {
        head_end += 4;
        if (std::sscanf(response.c_str(), "HTTP/1.%*d %d", &http_status_) != 1) throw Failure{"bad status line"};
        const size_t cl = response.find("\r\nContent-Length: ");  // our servers spell it so
        if (cl == std::string::npos || cl > head_end) throw Failure{"no Content-Length"};
        content_length = std::strtoul(response.c_str() + cl + 18, nullptr, 10);
      }
      continue;
    }
    if (SSL_get_error(ssl_, n) == SSL_ERROR_ZERO_RETURN) throw Failure{"response cut short"};
    drive(n, "read");
  }
  total_ms_ = now_ms() - start_;
  body_bytes_ = response.size() - head_end;
  socklen_t len = sizeof info_;
  ::getsockopt(fd_, IPPROTO_TCP, TCP_INFO, &info_, &len);
  len = sizeof mss_;
  ::getsockopt(fd_, IPPROTO_TCP, TCP_MAXSEG, &mss_, &len);
  // The server closes (Connection: close); tickets sent after the response
  // are read on the way, for at most the rest of the timeout.
  try {
    for (;;) {
      const int n = SSL_read(ssl_, buf, sizeof buf);
      if (n > 0) continue;
      const int err = SSL_get_error(ssl_, n);
      if (err != SSL_ERROR_WANT_READ || !receive()) break;
    }
  } catch (const Failure&) {
  }
  save_session();
}

std::string Client::json() const {
  const unsigned char* ocsp = nullptr;
  const long ocsp_len = SSL_get_tlsext_status_ocsp_resp(ssl_, &ocsp);
  const char* early = early_status_ == SSL_EARLY_DATA_ACCEPTED   ? "accepted"
                      : early_status_ == SSL_EARLY_DATA_REJECTED ? "rejected"
                                                                 : "not_sent";
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "{\"ok\":true,\"connect_ms\":%.3f,\"tls_ms\":%.3f,\"ttfb_ms\":%.3f,\"total_ms\":%.3f,"
                "\"protocol\":\"%s\",\"resumed\":%s,\"session_offered\":%s,\"status\":%d,\"body_bytes\":%zu,"
                "\"early_data\":\"%s\",\"early_allowed\":%s,\"tfo_syn_data_acked\":%s,"
                "\"server_flight_bytes\":%zu,\"mss\":%d,\"ocsp_bytes\":%ld,\"tcp_retrans\":%u}",
                connect_ms_, tls_ms_, ttfb_ms_, total_ms_, SSL_get_version(ssl_),
                SSL_session_reused(ssl_) ? "true" : "false", session_offered_ ? "true" : "false", http_status_,
                body_bytes_, early, early_allowed_ ? "true" : "false",
                (info_.tcpi_options & TCPI_OPT_SYN_DATA) != 0 ? "true" : "false", flight_bytes_, mss_,
                ocsp_len > 0 ? ocsp_len : 0L, info_.tcpi_total_retrans);
  return buf;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += (static_cast<unsigned char>(c) < 0x20) ? ' ' : c;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  const unsigned char alpn[] = "\x08http/1.1";
  SSL_CTX_set_alpn_protos(ctx, alpn, sizeof alpn - 1);
  // Sessions reach on_new_session only; none is kept inside the context.
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(ctx, &Client::on_new_session);
  int status = 0;
  if (SSL_CTX_load_verify_locations(ctx, o.ca.c_str(), nullptr) != 1) {
    std::printf("{\"ok\":false,\"error\":\"%s\"}\n", escape(ssl_error("--ca")).c_str());
    status = 1;
  } else {
    Client c(o, ctx);
    try {
      c.run();
      std::printf("%s\n", c.json().c_str());
    } catch (const Failure& f) {
      std::printf("{\"ok\":false,\"error\":\"%s\"}\n", escape(f.what).c_str());
      status = 1;
    }
  }
  SSL_CTX_free(ctx);
  return status;
}
