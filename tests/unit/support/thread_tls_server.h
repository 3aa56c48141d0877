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

#include <openssl/ssl.h>
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

#include "support/loopback_listener.h"
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
    thread_ = std::thread([this] { run(); });
  }
  ~ThreadTlsServer() {
    stop_ = true;
    listener_.wake();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (conn_ >= 0) ::shutdown(conn_, SHUT_RDWR);
    }
    thread_.join();
  }
  ThreadTlsServer(const ThreadTlsServer&) = delete;
  ThreadTlsServer& operator=(const ThreadTlsServer&) = delete;

  uint16_t port() const { return listener_.port(); }
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
      const int c = listener_.accept();
      if (c < 0) break;
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
  LoopbackListener listener_;
  std::mutex mu_;
  int conn_ = -1;  // the connection the script has (mu_)
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::atomic<int> finished_{0};
  std::thread thread_;
};

}  // namespace tlsfront::tls::testing
