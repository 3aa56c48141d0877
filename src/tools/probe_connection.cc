#include "tools/probe_connection.h"

#include <fcntl.h>
#include <llhttp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "tls/openssl_error.h"
#include "util/unique_fd.h"

namespace tlsfront::tools {
namespace {

using Deadline = ProbeClock::time_point;
using std::chrono::duration_cast;

Micros since(ProbeClock::time_point t0) { return duration_cast<Micros>(ProbeClock::now() - t0); }

// Milliseconds left until `d`, rounded up; 0 once it passed.
int remaining_ms(Deadline d) {
  const auto left = d - ProbeClock::now();
  if (left <= ProbeClock::duration::zero()) return 0;
  return static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(left).count());
}

// poll() for `events` on `fd` until `d`: 1 ready, 0 timed out, -1 error (errno).
int wait_fd(int fd, short events, Deadline d) {
  for (;;) {
    const int ms = remaining_ms(d);
    if (ms == 0) return 0;
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, ms);
    if (r < 0 && errno == EINTR) continue;
    return r < 0 ? -1 : (r == 0 ? 0 : 1);
  }
}

struct Address {
  sockaddr_storage addr{};
  socklen_t len = 0;
};

std::string address_string(const Address& a) {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (a.addr.ss_family == AF_INET) {
    const auto* s = reinterpret_cast<const sockaddr_in*>(&a.addr);
    inet_ntop(AF_INET, &s->sin_addr, host, sizeof host);
    port = ntohs(s->sin_port);
    return fmt::format("{}:{}", host, port);
  }
  const auto* s = reinterpret_cast<const sockaddr_in6*>(&a.addr);
  inet_ntop(AF_INET6, &s->sin6_addr, host, sizeof host);
  port = ntohs(s->sin6_port);
  return fmt::format("[{}]:{}", host, port);
}

void fail(ExchangeResult& r, ProbeStage stage, std::string error, bool timed_out = false) {
  r.failed_at = stage;
  r.error = std::move(error);
  r.timed_out = timed_out;
}

// getaddrinfo (or, for a numeric address, inet_pton-like parsing with
// AI_NUMERICHOST) with a deadline: getaddrinfo_a runs the lookup in a glibc
// thread; a lookup still running at the deadline is cancelled, or, when it
// cannot be, abandoned (its request is leaked on purpose: glibc may still
// write to it).
bool resolve(const std::string& host, int port, bool numeric, Deadline d, std::vector<Address>& out, ExchangeResult& r) {
  auto* hints = new addrinfo{};
  hints->ai_family = AF_UNSPEC;
  hints->ai_socktype = SOCK_STREAM;
  hints->ai_flags = numeric ? AI_NUMERICHOST | AI_NUMERICSERV : AI_NUMERICSERV;
  auto* req = new gaicb{};
  req->ar_name = ::strdup(host.c_str());
  req->ar_service = ::strdup(std::to_string(port).c_str());
  req->ar_request = hints;
  auto release = [&] {
    if (req->ar_result) freeaddrinfo(req->ar_result);
    std::free(const_cast<char*>(req->ar_name));
    std::free(const_cast<char*>(req->ar_service));
    delete hints;
    delete req;
  };
  gaicb* list[1] = {req};
  int rc = getaddrinfo_a(GAI_NOWAIT, list, 1, nullptr);
  if (rc != 0) {
    fail(r, ProbeStage::Dns, std::string("cannot start the lookup: ") + gai_strerror(rc));
    release();
    return false;
  }
  while ((rc = gai_error(req)) == EAI_INPROGRESS) {
    const int ms = remaining_ms(d);
    if (ms == 0) {
      gai_cancel(req);
      fail(r, ProbeStage::Dns, "no answer for \"" + host + "\" in time", true);
      if (gai_error(req) != EAI_INPROGRESS) release();  // else abandoned, see above
      return false;
    }
    timespec ts{ms / 1000, (ms % 1000) * 1'000'000L};
    gai_suspend(list, 1, &ts);
  }
  if (rc != 0) {
    fail(r, ProbeStage::Dns,
         "\"" + host + "\": " + (rc == EAI_SYSTEM ? std::string(std::strerror(errno)) : std::string(gai_strerror(rc))));
    release();
    return false;
  }
  for (addrinfo* ai = req->ar_result; ai; ai = ai->ai_next) {
    if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6) continue;
    Address a;
    std::memcpy(&a.addr, ai->ai_addr, ai->ai_addrlen);
    a.len = ai->ai_addrlen;
    out.push_back(a);
  }
  release();
  if (out.empty()) fail(r, ProbeStage::Dns, "\"" + host + "\" has no IPv4 or IPv6 address");
  return !out.empty();
}

// Connects to one of `addrs` in order; the time of the attempt that worked.
// Each attempt gets an equal share of the time left, so an address that
// drops SYNs leaves time for the next one.
UniqueFd connect_any(const std::vector<Address>& addrs, const ExchangeSpec& spec, Deadline d, ExchangeResult& r) {
  std::string errors;
  for (size_t i = 0; i < addrs.size(); ++i) {
    const Address& a = addrs[i];
    const Deadline attempt = ProbeClock::now() + (d - ProbeClock::now()) / static_cast<long>(addrs.size() - i);
    UniqueFd fd(::socket(a.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid()) {
      fail(r, ProbeStage::Connect, std::string("socket: ") + std::strerror(errno));
      return {};
    }
    const int one = 1;
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    r.tfo_requested = spec.tcp_fastopen && ::setsockopt(fd.get(), IPPROTO_TCP, TCP_FASTOPEN_CONNECT, &one, sizeof one) == 0;
    const auto t0 = ProbeClock::now();
    int err = 0;
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&a.addr), a.len) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        const int w = wait_fd(fd.get(), POLLOUT, attempt);
        if (w == 0) {
          errors += (errors.empty() ? "" : "; ") + address_string(a) + ": timed out";
          if (i + 1 < addrs.size()) continue;
          fail(r, ProbeStage::Connect, "connect: " + errors, true);
          return {};
        }
        socklen_t len = sizeof err;
        if (w < 0) err = errno;
        else if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      }
    }
    if (err == 0) {
      r.times.connect = since(t0);
      r.peer = address_string(a);
      return fd;
    }
    errors += (errors.empty() ? "" : "; ") + address_string(a) + ": " + std::strerror(err);
  }
  fail(r, ProbeStage::Connect, errors);
  return {};
}

// Runs `op` (an SSL call returning > 0 on success) until it succeeds,
// polling for what OpenSSL wants, until `d`. Errors go to `r` at `stage`.
template <typename Op>
bool drive(SSL* ssl, int fd, Deadline d, ExchangeResult& r, ProbeStage stage, const char* what, Op op) {
  for (;;) {
    ERR_clear_error();
    errno = 0;
    const int ret = op();
    if (ret > 0) return true;
    const int e = SSL_get_error(ssl, ret);
    short events = 0;
    if (e == SSL_ERROR_WANT_READ) events = POLLIN;
    else if (e == SSL_ERROR_WANT_WRITE) events = POLLOUT;
    if (events == 0) {
      std::string why = tls::drain_openssl_errors();
      if (why.empty()) why = e == SSL_ERROR_SYSCALL && errno ? std::strerror(errno) : "the server closed the connection";
      fail(r, stage, std::string(what) + ": " + why);
      return false;
    }
    const int w = wait_fd(fd, events, d);
    if (w == 0) {
      fail(r, stage, std::string(what) + ": timed out", true);
      return false;
    }
    if (w < 0) {
      fail(r, stage, std::string(what) + ": poll: " + std::strerror(errno));
      return false;
    }
  }
}

int on_new_session(SSL* ssl, SSL_SESSION* session) {
  auto* r = static_cast<ExchangeResult*>(SSL_get_app_data(ssl));
  if (r == nullptr) return 0;
  r->session.reset(session);  // the callback's reference is now ours
  return 1;
}

// The response as llhttp sees it.
struct ResponseState {
  int status = 0;
  std::string version;
  uint64_t body = 0;
  bool complete = false;
};

int on_headers_complete(llhttp_t* p) {
  auto* s = static_cast<ResponseState*>(p->data);
  s->status = p->status_code;
  s->version = "HTTP/" + std::to_string(p->http_major) + "." + std::to_string(p->http_minor);
  return 0;
}
int on_body(llhttp_t* p, const char*, size_t n) {
  static_cast<ResponseState*>(p->data)->body += n;
  return 0;
}
int on_message_complete(llhttp_t* p) {
  auto* s = static_cast<ResponseState*>(p->data);
  if (s->status >= 200 || s->status == 101) s->complete = true;  // 1xx interim answers go on
  return s->complete ? HPE_PAUSED : 0;
}

// Reads the response until it ends; fills r.http_*, times.first_byte.
bool read_response(SSL* ssl, int fd, Deadline d, ExchangeResult& r) {
  llhttp_settings_t settings;
  llhttp_settings_init(&settings);
  settings.on_headers_complete = on_headers_complete;
  settings.on_body = on_body;
  settings.on_message_complete = on_message_complete;
  llhttp_t parser;
  llhttp_init(&parser, HTTP_RESPONSE, &settings);
  ResponseState state;
  parser.data = &state;
  const auto t0 = ProbeClock::now();
  char buf[16384];
  bool eof = false;
  while (!state.complete && !eof) {
    size_t n = 0;
    ERR_clear_error();
    errno = 0;
    const int ret = SSL_read_ex(ssl, buf, sizeof buf, &n);
    if (ret == 1) {
      if (!r.times.first_byte) r.times.first_byte = since(t0);
      const llhttp_errno_t e = llhttp_execute(&parser, buf, n);
      if (e != HPE_OK && e != HPE_PAUSED) {
        fail(r, ProbeStage::Http, std::string("invalid HTTP response: ") + llhttp_errno_name(e) + " (" +
                                      (parser.reason ? parser.reason : "") + ")");
        return false;
      }
      continue;
    }
    const int e = SSL_get_error(ssl, ret);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
      const int w = wait_fd(fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, d);
      if (w == 0) {
        fail(r, ProbeStage::Http, state.status ? "the response did not end in time" : "no response in time", true);
        return false;
      }
      if (w < 0) {
        fail(r, ProbeStage::Http, std::string("poll: ") + std::strerror(errno));
        return false;
      }
      continue;
    }
    if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && errno == 0)) {
      eof = true;  // close_notify, or a TCP close without one
      if (llhttp_finish(&parser) == HPE_OK && state.status >= 200) state.complete = true;
      break;
    }
    std::string why = tls::drain_openssl_errors();
    fail(r, ProbeStage::Http, "reading the response: " + (why.empty() ? std::string(std::strerror(errno)) : why));
    return false;
  }
  r.http_status = state.status;
  r.http_version = state.version;
  r.body_bytes = state.body;
  if (!state.complete) {
    fail(r, ProbeStage::Http, state.status ? "the connection closed before the response ended"
                                           : "the connection closed before a response");
    return false;
  }
  return true;
}

}  // namespace

const char* to_string(ProbeStage stage) {
  switch (stage) {
    case ProbeStage::Dns: return "dns";
    case ProbeStage::Connect: return "connect";
    case ProbeStage::Tls: return "tls";
    case ProbeStage::Http: return "http";
    case ProbeStage::None: return "none";
  }
  return "none";
}

ExchangeResult run_exchange(const ExchangeSpec& spec) {
  ExchangeResult r;
  const auto start = ProbeClock::now();
  const Deadline d = start + spec.timeout;

  std::vector<Address> addrs;
  const bool numeric = !spec.address.empty();
  const auto t_dns = ProbeClock::now();
  if (!resolve(numeric ? spec.address : spec.host, spec.port, numeric, d, addrs, r)) return r;
  if (!numeric) r.times.dns = since(t_dns);

  UniqueFd fd = connect_any(addrs, spec, d, r);
  if (!fd.valid()) return r;

  SslPtr ssl(SSL_new(spec.ctx));
  if (!ssl || SSL_set_fd(ssl.get(), fd.get()) != 1) {
    fail(r, ProbeStage::Tls, "SSL_new: " + tls::drain_openssl_errors());
    return r;
  }
  SSL_set_app_data(ssl.get(), &r);
  if (spec.sni) SSL_set_tlsext_host_name(ssl.get(), spec.host.c_str());
  if (spec.session) SSL_set_session(ssl.get(), spec.session);

  const std::string request = "GET " + spec.path + " HTTP/1.1\r\nHost: " + spec.authority +
                              "\r\nUser-Agent: tlsfront-probe/" TLSFRONT_VERSION "\r\nAccept: */*\r\nConnection: close\r\n\r\n";
  bool request_written = false;
  const bool try_early = spec.early_data && spec.session && SSL_SESSION_get_max_early_data(spec.session) >= request.size();
  if (try_early) {
    const auto t_req = ProbeClock::now();
    size_t written = 0;
    if (!drive(ssl.get(), fd.get(), d, r, ProbeStage::Tls, "TLS handshake failed (early data)",
               [&] { return SSL_write_early_data(ssl.get(), request.data(), request.size(), &written); })) {
      SSL_set_app_data(ssl.get(), nullptr);
      return r;
    }
    r.times.request = since(t_req);
    r.early_data_sent = true;
  }
  const auto t_tls = ProbeClock::now();
  if (!drive(ssl.get(), fd.get(), d, r, ProbeStage::Tls, "TLS handshake failed", [&] { return SSL_connect(ssl.get()); })) {
    SSL_set_app_data(ssl.get(), nullptr);
    return r;
  }
  r.times.tls = since(t_tls);
  if (r.early_data_sent) {
    r.early_data_accepted = SSL_get_early_data_status(ssl.get()) == SSL_EARLY_DATA_ACCEPTED;
    request_written = r.early_data_accepted;  // rejected early data must be sent again (RFC 8446 §4.2.10)
  }
  tcp_info info{};
  socklen_t info_len = sizeof info;
  if (r.tfo_requested && ::getsockopt(fd.get(), IPPROTO_TCP, TCP_INFO, &info, &info_len) == 0) {
    r.tfo_used = (info.tcpi_options & TCPI_OPT_SYN_DATA) != 0;
  }

  bool ok = true;
  if (!request_written) {
    const auto t_req = ProbeClock::now();
    ok = drive(ssl.get(), fd.get(), d, r, ProbeStage::Http, "sending the request",
               [&] { return SSL_write(ssl.get(), request.data(), static_cast<int>(request.size())); });
    if (ok) r.times.request = since(t_req);
  }
  if (ok && read_response(ssl.get(), fd.get(), d, r)) r.times.total = since(start);
  SSL_set_app_data(ssl.get(), nullptr);
  SSL_shutdown(ssl.get());  // close_notify, not waiting for the server's
  ERR_clear_error();
  r.ssl = std::move(ssl);  // the handshake completed: its facts are readable, the socket closes below
  return r;
}

Result<SslCtxPtr> make_client_context(const ClientContextOptions& o) {
  SslCtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) return tls::openssl_error(Errc::Tls, "SSL_CTX_new");
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  if (o.max_version) SSL_CTX_set_max_proto_version(ctx.get(), o.max_version);
  if (o.no_ticket) SSL_CTX_set_options(ctx.get(), SSL_OP_NO_TICKET);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr);
  if (!o.ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(ctx.get(), o.ca_file.c_str(), nullptr) != 1) {
      return tls::openssl_error(Errc::Io, "--ca \"" + o.ca_file + "\"");
    }
  } else if (SSL_CTX_set_default_verify_paths(ctx.get()) != 1) {
    return tls::openssl_error(Errc::Io, "the system trust store");
  }
  static const unsigned char kAlpn[] = "\x08http/1.1";
  SSL_CTX_set_alpn_protos(ctx.get(), kAlpn, sizeof kAlpn - 1);
  SSL_CTX_set_tlsext_status_type(ctx.get(), TLSEXT_STATUSTYPE_ocsp);
  SSL_CTX_set_session_cache_mode(ctx.get(), SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(ctx.get(), on_new_session);
  return ctx;
}

}  // namespace tlsfront::tools
