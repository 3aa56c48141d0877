// What a client session needs around it in a unit test: a config::Config
// with one upstream "backend" routed from "/" (data_path_config), and
// DataPathEnv, which builds the Router and the UpstreamGroups from it and
// hands out the SessionEnv (no metrics; an access log into a temporary file
// when asked). No GoogleTest here: the fuzz targets (tests/fuzz) use it too;
// the fixture around it is DataPathTest (data_path_test.h).
// Thread affinity: the test's thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "data/http/exchange_sink.h"
#include "data/http/router.h"
#include "data/http/session_env.h"
#include "data/upstream/upstream_pool.h"
#include "log/access_log.h"
#include "log/log_writer.h"

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

}  // namespace tlsfront::harness
