// Load: GET requests on `n` keepalive client connections (one thread and
// CurlClient each) until finish(), counting the ones that got a 200 and the
// ones that did not. Bounded: at most 20,000 requests per connection.
#pragma once

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace tlsfront::itest {

struct Load {
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0};
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;

  Load(int port, int n, std::string path = "/load") {
    for (int t = 0; t < n; ++t) {
      threads.emplace_back([this, port, path] {
        CurlClient client(port);
        for (int i = 0; i < 20'000 && !stop.load(); ++i) {
          HttpRequest req;
          req.path = path;
          HttpResponse r = client.perform(req);
          (r.curl_code == 0 && r.status == 200 ? ok : failed).fetch_add(1);
        }
      });
    }
  }
  ~Load() { finish(); }
  Load(const Load&) = delete;
  Load& operator=(const Load&) = delete;
  void finish() {
    stop = true;
    for (auto& t : threads) {
      if (t.joinable()) t.join();
    }
  }
};

}  // namespace tlsfront::itest
