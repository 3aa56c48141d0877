// ThreadTlsServer: a blocking TLS server (OpenSSL, the test PKI's
// "localhost" chain, valid for 127.0.0.1) on 127.0.0.1:0, one thread, one
// connection at a time, for unit tests of TLS to upstream servers that need
// a server misbehaving at the TLS layer: a slow handshake, a close without
// close_notify, a flood of post-handshake messages. Each accepted
// connection goes to `script`(ssl, fd) on the server's thread, before any
// handshake (the script calls SSL_accept when it wants); the connection is
// closed when the script returns. Socket reads and writes time out after
// 5 s, and the destructor shuts the current connection down, so a script
// never outlives its test by long.
// Thread affinity: construct and destroy on the test thread; `script` runs
// on the server's thread (it may only touch atomics of the test's).
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "support/test_pki.h"
#include "util/openssl_ptr.h"

namespace tlsfront::tls::testing {

class ThreadTlsServer {
 public:
  using Script = std::function<void(SSL* ssl, int fd)>;

  // `max_version`: the highest protocol version offered (TLS1_3_VERSION, ...).
  explicit ThreadTlsServer(Script script, int max_version = TLS1_3_VERSION) : script_(std::move(script)) {
    ctx_.reset(SSL_CTX_new(TLS_server_method()));
    EXPECT_TRUE(ctx_ && SSL_CTX_use_certificate_chain_file(ctx_.get(), (kPki + "/localhost.chain.pem").c_str()) == 1 &&
                SSL_CTX_use_PrivateKey_file(ctx_.get(), (kPki + "/localhost.key").c_str(), SSL_FILETYPE_PEM) == 1);
    SSL_CTX_set_max_proto_version(ctx_.get(), max_version);
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    ::listen(fd_, 16);
    socklen_t len = sizeof sa;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    port_ = ntohs(sa.sin_port);
    EXPECT_EQ(::pipe2(wake_, O_CLOEXEC), 0);
    thread_ = std::thread([this] { run(); });
  }
  ~ThreadTlsServer() {
    stop_ = true;
    (void)!::write(wake_[1], "x", 1);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (conn_ >= 0) ::shutdown(conn_, SHUT_RDWR);
    }
    thread_.join();
    ::close(fd_);
    ::close(wake_[0]);
    ::close(wake_[1]);
  }
  ThreadTlsServer(const ThreadTlsServer&) = delete;
  ThreadTlsServer& operator=(const ThreadTlsServer&) = delete;

  uint16_t port() const { return port_; }
  int accepted() const { return accepted_.load(); }  // connections so far
  int finished() const { return finished_.load(); }  // scripts returned so far
  bool stopping() const { return stop_.load(); }     // for a script's loops

  // Reads one HTTP/1.1 request (head, then a Content-Length body); returns
  // the body's length, or -1 when the connection ended first.
  static long read_request(SSL* ssl) {
    std::string in;
    char buf[16384];
    size_t head_end;
    while ((head_end = in.find("\r\n\r\n")) == std::string::npos) {
      const int n = SSL_read(ssl, buf, sizeof buf);
      if (n <= 0) return -1;
      in.append(buf, static_cast<size_t>(n));
    }
    size_t length = 0;
    if (size_t at = in.find("Content-Length: "); at != std::string::npos && at < head_end) {
      length = std::strtoul(in.c_str() + at + 16, nullptr, 10);
    }
    size_t have = in.size() - head_end - 4;
    while (have < length) {
      const int n = SSL_read(ssl, buf, sizeof buf);
      if (n <= 0) return -1;
      have += static_cast<size_t>(n);
    }
    return static_cast<long>(have);
  }
  static bool write_all(SSL* ssl, const std::string& bytes) {
    return SSL_write(ssl, bytes.data(), static_cast<int>(bytes.size())) == static_cast<int>(bytes.size());
  }

 private:
  void run() {
    while (!stop_) {
      pollfd p[2] = {{fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
      if (::poll(p, 2, -1) < 0) continue;
      if (p[1].revents) break;
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      ++accepted_;
      timeval tv{5, 0};
      ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      ::setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
      {
        std::lock_guard<std::mutex> lock(mu_);
        conn_ = c;
        if (stop_) ::shutdown(c, SHUT_RDWR);
      }
      SslPtr ssl(SSL_new(ctx_.get()));
      SSL_set_fd(ssl.get(), c);
      script_(ssl.get(), c);
      ssl.reset();
      {
        std::lock_guard<std::mutex> lock(mu_);
        conn_ = -1;
      }
      ::close(c);
      ++finished_;
    }
  }

  Script script_;
  SslCtxPtr ctx_;
  int fd_ = -1;
  int wake_[2] = {-1, -1};
  uint16_t port_ = 0;
  std::mutex mu_;
  int conn_ = -1;  // the connection the script has (mu_)
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::atomic<int> finished_{0};
  std::thread thread_;
};

}  // namespace tlsfront::tls::testing
