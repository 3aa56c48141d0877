// DataPathTest: a LoopTest with a ScriptedUpstream, a FakeTransport and the
// session under test (Http1Session or Http2Session), made on first use from
// cfg_ (change it before), around a DataPathEnv (data_path_env.h).
// Thread affinity: the test's thread.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "data/http/http1_session.h"
#include "data/http/http2_session.h"
#include "data_path_client.h"
#include "data_path_env.h"
#include "data_path_transport.h"
#include "data_path_upstream.h"
#include "loop_test.h"

namespace tlsfront::harness {

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
