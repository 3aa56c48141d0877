// What a client session needs around it in a unit test: a config::Config
// with one upstream "backend" routed from "/" (data_path_config), and
// DataPathEnv, which builds the Router and the UpstreamGroups from it and
// hands out the SessionEnv (no metrics; an access log into a temporary file
// when asked).
// DataPathTest: a LoopTest with a ScriptedUpstream, a FakeTransport and the
// session under test (Http1Session or Http2Session), made on first use from
// cfg_ (change it before).
// Thread affinity: the test's thread.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "data/http/http1_session.h"
#include "data/http/http2_session.h"
#include "data/http/router.h"
#include "data/http/session_env.h"
#include "data/upstream/upstream_pool.h"
#include "log/access_log.h"
#include "log/log_writer.h"
#include "data_path_client.h"
#include "loop_test.h"
#include "data_path_transport.h"
#include "data_path_upstream.h"

namespace tlsfront::harness {

// One [[upstream]] "backend" with a server on 127.0.0.1 per port, a
// [[route]] "/" to it, and short client timeouts kept out of the way (the
// tests fire the session timer themselves).
config::Config data_path_config(const std::vector<uint16_t>& ports);

class DataPathEnv {
 public:
  // `access_log_path`: "" for none.
  DataPathEnv(uv_loop_t* loop, config::Config cfg, const std::string& access_log_path = "");
  ~DataPathEnv();
  DataPathEnv(const DataPathEnv&) = delete;
  DataPathEnv& operator=(const DataPathEnv&) = delete;

  const http::SessionEnv& env() const { return env_; }
  const config::Config& config() const { return config_; }
  upstream::UpstreamGroup& group(size_t i) { return *groups_.at(i); }
  // The worker is draining (SessionEnv::shutting_down).
  void set_shutting_down(bool v) { shutting_down_ = v; }
  // Everything logged so far (the log is then closed: call once, at the end).
  std::string access_log_text();

 private:
  config::Config config_;
  http::Router router_;
  std::vector<std::shared_ptr<upstream::UpstreamGroup>> groups_;
  bool shutting_down_ = false;
  std::string access_log_path_;
  std::unique_ptr<log::LogWriter> log_writer_;
  std::unique_ptr<log::AccessLog> access_log_;
  http::SessionEnv env_;
};

// The ConnectionInfo of a test client.
http::ConnectionInfo test_connection_info();

class DataPathTest : public LoopTest {
 protected:
  void SetUp() override;
  void release_objects() override;

  DataPathEnv& env();
  http::Http1Session& h1();
  http::Http2Session& h2();
  // Client bytes into the session (through the transport's flow control);
  // makes an Http1Session when there is no session yet.
  void feed(std::string_view bytes) {
    if (!session_) h1();
    transport().feed(bytes);
  }
  FakeTransport& transport() { return *transport_; }
  ScriptedUpstream& upstream() { return *upstream_; }
  // Runs the loop until the upstream has seen `n` requests.
  bool until_upstream_requests(size_t n);
  // Runs the loop until the transport is closed.
  bool until_closed();
  // The HTTP/1.1 responses the session sent (parse_responses; 1xx included),
  // and running the loop until there are `n` and the n-th is complete.
  // `head_responses`: the indexes that answer HEAD requests.
  std::vector<ParsedResponse> responses(const std::set<size_t>& head_responses = {});
  bool until_responses(size_t n, const std::set<size_t>& head_responses = {});
  // The access log's lines so far (once, at the end of a test that set
  // access_log_ before the session was made).
  std::string access_log_text() { return env().access_log_text(); }

  config::Config cfg_;
  bool access_log_ = false;

 private:
  std::unique_ptr<ScriptedUpstream> upstream_;
  std::unique_ptr<DataPathEnv> env_;
  std::unique_ptr<FakeTransport> transport_;
  std::unique_ptr<http::ClientSession> session_;
};

}  // namespace tlsfront::harness
