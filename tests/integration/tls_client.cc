// Integration harness: the raw OpenSSL client (TlsClient, tcp_connect,
// wait_for_close; see harness.h), for what libcurl cannot send: exact bytes,
// a PROXY protocol preamble, a chosen source address, sessions kept by hand.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "harness.h"

namespace tlsfront::itest {
namespace {

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(std::min<long long>(left, 1'000'000));
}

std::string openssl_errors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out;
}

}  // namespace

int tcp_connect(int port, const char* ip, const char* source) {
  // An IPv6 literal ("::1") or a dotted quad; `source` of the same family.
  const bool v6 = std::strchr(ip, ':') != nullptr;
  sockaddr_storage local{}, remote{};
  socklen_t len = 0;
  auto fill = [&](const char* text, sockaddr_storage& ss, uint16_t p) {
    if (v6) {
      auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
      a->sin6_family = AF_INET6;
      a->sin6_port = htons(p);
      len = sizeof(sockaddr_in6);
      return ::inet_pton(AF_INET6, text, &a->sin6_addr) == 1;
    }
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(p);
    len = sizeof(sockaddr_in);
    return ::inet_pton(AF_INET, text, &a->sin_addr) == 1;
  };
  int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (source != nullptr && (!fill(source, local, 0) || ::bind(fd, reinterpret_cast<sockaddr*>(&local), len) != 0)) {
    ::close(fd);
    return -1;
  }
  if (!fill(ip, remote, static_cast<uint16_t>(port)) ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&remote), len) != 0) {
    ::close(fd);
    return -1;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

bool wait_for_close(int fd, milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  char buf[4096];
  while (true) {
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, remaining_ms(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0) return true;
    if (n < 0 && errno != EINTR && errno != EAGAIN) return true;
  }
}

TlsClient::TlsClient() = default;

TlsClient::~TlsClient() {
  if (ssl_) {
    // Without a sent close_notify, SSL_free marks the session not resumable,
    // which would spoil sessions taken for resumption tests. Non-blocking,
    // best effort; refused by OpenSSL after a fatal error.
    if (SSL_is_init_finished(ssl_)) SSL_shutdown(ssl_);
    ERR_clear_error();
    SSL_free(ssl_);
  }
  if (ctx_) SSL_CTX_free(ctx_);
  if (fd_ >= 0) ::close(fd_);
}

bool TlsClient::connect(int port, const TlsOptions& o, milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  ERR_clear_error();
  fd_ = tcp_connect(port, o.ip.c_str(), o.source_ip.empty() ? nullptr : o.source_ip.c_str());
  if (fd_ < 0) {
    error_ = std::string("connect: ") + std::strerror(errno);
    return false;
  }
  if (!o.preamble.empty() && ::send(fd_, o.preamble.data(), o.preamble.size(), MSG_NOSIGNAL) !=
                                 static_cast<ssize_t>(o.preamble.size())) {
    error_ = std::string("preamble: ") + std::strerror(errno);
    return false;
  }
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
  ctx_ = SSL_CTX_new(TLS_client_method());
  if (o.min_version) SSL_CTX_set_min_proto_version(ctx_, o.min_version);
  if (o.max_version) SSL_CTX_set_max_proto_version(ctx_, o.max_version);
  if (o.min_version && o.min_version < TLS1_2_VERSION) {
    // Old protocol versions need security level 0 to be offered at all.
    SSL_CTX_set_security_level(ctx_, 0);
    SSL_CTX_set_cipher_list(ctx_, "DEFAULT@SECLEVEL=0");
  }
  if (o.no_ticket) SSL_CTX_set_options(ctx_, SSL_OP_NO_TICKET);
  if (!o.cipher_list.empty()) SSL_CTX_set_cipher_list(ctx_, o.cipher_list.c_str());
  if (!o.cert.empty() && (SSL_CTX_use_certificate_chain_file(ctx_, o.cert.c_str()) != 1 ||
                          SSL_CTX_use_PrivateKey_file(ctx_, o.key.c_str(), SSL_FILETYPE_PEM) != 1)) {
    error_ = "client certificate: " + openssl_errors();
    return false;
  }
  if (o.verify) {
    SSL_CTX_load_verify_locations(ctx_, pki("root.pem").c_str(), nullptr);
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
  }
  if (!o.alpn.empty()) {
    std::string wire;
    for (const auto& p : o.alpn) {
      wire += static_cast<char>(p.size());
      wire += p;
    }
    SSL_CTX_set_alpn_protos(ctx_, reinterpret_cast<const unsigned char*>(wire.data()),
                            static_cast<unsigned>(wire.size()));
  }
  ssl_ = SSL_new(ctx_);
  SSL_set_fd(ssl_, fd_);
  if (!o.sni.empty()) SSL_set_tlsext_host_name(ssl_, o.sni.c_str());
  if (o.verify) SSL_set1_host(ssl_, o.sni.empty() ? "localhost" : o.sni.c_str());
  if (o.session) SSL_set_session(ssl_, o.session);
  while (true) {
    int r = SSL_connect(ssl_);
    if (r == 1) return true;
    int e = SSL_get_error(ssl_, r);
    short ev = e == SSL_ERROR_WANT_READ ? POLLIN : e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
    if (ev == 0) {
      error_ = "handshake failed: " + openssl_errors();
      if (e == SSL_ERROR_SYSCALL) error_ += std::string(" (syscall: ") + std::strerror(errno) + ")";
      closed_ = true;
      return false;
    }
    pollfd p{fd_, ev, 0};
    if (::poll(&p, 1, remaining_ms(deadline)) <= 0) {
      error_ = "handshake timed out";
      return false;
    }
  }
}

bool TlsClient::write(std::string_view bytes) {
  auto deadline = Clock::now() + kDefaultDeadline;
  ERR_clear_error();
  while (!bytes.empty()) {
    int n = SSL_write(ssl_, bytes.data(), static_cast<int>(std::min<size_t>(bytes.size(), 1 << 20)));
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    int e = SSL_get_error(ssl_, n);
    short ev = e == SSL_ERROR_WANT_READ ? POLLIN : e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
    if (ev == 0) {
      error_ = "write failed: " + openssl_errors();
      return false;
    }
    pollfd p{fd_, ev, 0};
    if (::poll(&p, 1, remaining_ms(deadline)) <= 0) {
      error_ = "write timed out";
      return false;
    }
  }
  return true;
}

bool TlsClient::read_some(Clock::time_point deadline) {
  if (closed_) return false;
  ERR_clear_error();
  char buf[16384];
  while (true) {
    int n = SSL_read(ssl_, buf, sizeof buf);
    if (n > 0) {
      buf_.append(buf, static_cast<size_t>(n));
      return true;
    }
    int e = SSL_get_error(ssl_, n);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
      pollfd p{fd_, static_cast<short>(e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT), 0};
      if (::poll(&p, 1, remaining_ms(deadline)) <= 0) return false;  // timeout
      continue;
    }
    // Clean close_notify, EOF without it, or a reset: the connection is over.
    // Not drained: callers may look at the queue themselves.
    if (const char* why = e == SSL_ERROR_SSL ? ERR_reason_error_string(ERR_peek_last_error()) : nullptr) {
      error_ = why;
    }
    closed_ = true;
    return false;
  }
}

std::string TlsClient::read_all(milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (read_some(deadline)) {
  }
  std::string out = std::move(buf_);
  buf_.clear();
  return out;
}

std::optional<ParsedResponse> TlsClient::read_response(bool head_request, milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (true) {
    ParsedResponse r;
    if (size_t used = parse_response(buf_, closed_, head_request, r); used > 0) {
      buf_.erase(0, used);
      r.wire_bytes = used;
      return r;
    }
    if (closed_) return std::nullopt;
    if (!read_some(deadline) && !closed_) return std::nullopt;
  }
}

std::string TlsClient::read_available(milliseconds timeout) {
  if (buf_.empty()) read_some(Clock::now() + timeout);
  // Whatever else is already decrypted or waiting in the socket.
  while (!closed_ && SSL_pending(ssl_) > 0 && read_some(Clock::now())) {
  }
  std::string out = std::move(buf_);
  buf_.clear();
  return out;
}

bool TlsClient::session_reused() const { return ssl_ && SSL_session_reused(ssl_) == 1; }

std::string TlsClient::alpn_selected() const {
  const unsigned char* p = nullptr;
  unsigned len = 0;
  if (ssl_) SSL_get0_alpn_selected(ssl_, &p, &len);
  return p ? std::string(reinterpret_cast<const char*>(p), len) : std::string();
}

std::string TlsClient::protocol() const { return ssl_ ? SSL_get_version(ssl_) : ""; }

SSL_SESSION* TlsClient::take_session() const { return ssl_ ? SSL_get1_session(ssl_) : nullptr; }

}  // namespace tlsfront::itest
