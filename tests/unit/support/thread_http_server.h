// ThreadHttpServer: a blocking HTTP/1.x server on 127.0.0.1:0, one thread,
// one connection at a time, for unit tests whose code under test talks to a
// server (OCSP fetches). It reads each connection's request head (giving up
// after 2 s of silence) and asks `answer`: bytes to send, after which the
// connection is closed, or nullopt to hold it open until the server stops.
// Thread affinity: construct and destroy on the test thread; `answer` runs
// on the server's thread.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/loopback_listener.h"

namespace tlsfront {

class ThreadHttpServer {
 public:
  using Answer = std::function<std::optional<std::string>(const std::string& head)>;

  explicit ThreadHttpServer(Answer answer) : answer_(std::move(answer)) {
    thread_ = std::thread([this] { run(); });
  }
  ~ThreadHttpServer() {
    listener_.wake();
    thread_.join();
  }
  ThreadHttpServer(const ThreadHttpServer&) = delete;
  ThreadHttpServer& operator=(const ThreadHttpServer&) = delete;

  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(listener_.port()) + path;
  }
  int accepted() const { return accepted_.load(); }  // connections so far
  int answered() const { return answered_.load(); }  // answers sent so far

  // The request-target of a request head ("GET /ok HTTP/1.1..." -> "/ok").
  static std::string target(const std::string& head) {
    const std::string rest = head.substr(head.find(' ') + 1);
    return rest.substr(0, rest.find(' '));
  }

 private:
  void run() {
    std::vector<int> held;  // closed at the end
    while (true) {
      const int c = listener_.accept();
      if (c < 0) break;
      ++accepted_;
      std::string in;
      char buf[4096];
      while (in.find("\r\n\r\n") == std::string::npos) {
        pollfd q{c, POLLIN, 0};
        if (::poll(&q, 1, 2000) <= 0) break;
        const ssize_t n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        in.append(buf, static_cast<size_t>(n));
      }
      const std::optional<std::string> out = answer_(in);
      if (!out) {
        held.push_back(c);
        continue;
      }
      (void)!::send(c, out->data(), out->size(), MSG_NOSIGNAL);
      ++answered_;
      ::shutdown(c, SHUT_WR);
      ::close(c);
    }
    for (int c : held) ::close(c);
  }

  Answer answer_;
  LoopbackListener listener_;
  std::atomic<int> accepted_{0}, answered_{0};
  std::thread thread_;
};

}  // namespace tlsfront
