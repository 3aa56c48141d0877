// The fixture of the h2c upstream tests (h2c_upstream_test.cc,
// h2c_upstream_failures_test.cc): a real HTTP/2 server (python3-h2,
// tests/integration/peers/h2c_peer.py) behind tlsfront with
// protocol = "h2c", and what the peer records (requests, connections,
// PINGs, resets, GOAWAYs: one line each in files beside its port file).
// Thread affinity: the test thread only.
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

#include "harness.h"

namespace tlsfront::itest {

inline const std::string kH2cPeer = std::string(TLSFRONT_SOURCE_DIR) + "/tests/integration/peers/h2c_peer.py";

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

class H2cUpstream : public ProxyTest {
 protected:
  // Starts the h2c peer (`peer_args` after its port file) and tlsfront in
  // front of it with protocol = "h2c".
  bool start(std::vector<std::string> peer_args = {}, ProxyOptions o = {}) {
    port_file_ = dir_.file("h2c.port");
    std::vector<std::string> argv = {kPython, kH2cPeer, port_file_};
    argv.insert(argv.end(), peer_args.begin(), peer_args.end());
    if (!peer_.start(argv, dir_.file("h2c.out"), dir_.file("h2c.err"))) return false;
    if (!wait_until([&] { return read_file(port_file_).ends_with("\n"); })) {
      ADD_FAILURE() << "h2c_peer did not start: " << peer_.err();
      return false;
    }
    o.upstream_servers = {"127.0.0.1:" + std::to_string(std::atoi(read_file(port_file_).c_str()))};
    o.upstream_extra += "protocol = \"h2c\"\n";
    return start_proxy(o);
  }
  std::vector<std::string> requests() const { return lines_of(read_file(port_file_ + ".requests")); }
  size_t connections() const { return lines_of(read_file(port_file_ + ".conns")).size(); }
  size_t pings() const { return lines_of(read_file(port_file_ + ".pings")).size(); }
  std::vector<std::string> resets() const { return lines_of(read_file(port_file_ + ".resets")); }
  // The one upstream server's value of `metric` (0 when absent).
  double metric(const std::string& name) {
    const std::string key =
        name + "{upstream=\"backend\",server=\"127.0.0.1:" + std::to_string(std::atoi(read_file(port_file_).c_str())) +
        "\"}";
    auto m = scrape_metrics(proxy_.admin_port());
    auto it = m.find(key);
    return it == m.end() ? 0 : it->second;
  }
  void TearDown() override {
    peer_.stop();
    ProxyTest::TearDown();
  }

  Process peer_;
  std::string port_file_;
};

}  // namespace tlsfront::itest
