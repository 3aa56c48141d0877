#include "data_path_test.h"

#include <unistd.h>

namespace tlsfront::harness {

void DataPathTest::SetUp() {
  LoopTest::SetUp();
  upstream_ = std::make_unique<ScriptedUpstream>(&loop_);
  cfg_ = data_path_config({upstream_->port()});
  transport_ = std::make_unique<FakeTransport>(&loop_);
}

void DataPathTest::release_objects() {
  if (transport_) transport_->attach(nullptr);
  session_.reset();
  ctx_->run_deferred();  // exchanges the session deferred still point into the groups
  env_.reset();
  transport_.reset();
  upstream_.reset();
}

DataPathEnv& DataPathTest::env() {
  if (!env_) {
    std::string path;
    if (access_log_) {
      const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
      path = ::testing::TempDir() + "data_path_" + info->test_suite_name() + "_" + info->name() + "_" +
             std::to_string(::getpid()) + ".log";
    }
    env_ = std::make_unique<DataPathEnv>(&loop_, cfg_, path);
  }
  return *env_;
}

http::Http1Session& DataPathTest::h1() {
  if (!session_) {
    session_ = std::make_unique<http::Http1Session>(env().env(), transport_.get(), test_connection_info());
    transport_->attach(session_.get());
  }
  return dynamic_cast<http::Http1Session&>(*session_);
}

http::Http2Session& DataPathTest::h2() {
  if (!session_) {
    http::ConnectionInfo info = test_connection_info();
    info.alpn = "h2";
    session_ = std::make_unique<http::Http2Session>(env().env(), transport_.get(), std::move(info), nullptr);
    transport_->attach(session_.get());
  }
  return dynamic_cast<http::Http2Session&>(*session_);
}

bool DataPathTest::until_upstream_requests(size_t n) {
  return run_until([&] { return upstream_->requests().size() >= n; });
}

std::vector<ParsedResponse> DataPathTest::responses(const std::set<size_t>& head_responses) {
  return parse_responses(transport_->output(), head_responses);
}

bool DataPathTest::until_responses(size_t n, const std::set<size_t>& head_responses) {
  return run_until([&] {
    auto rs = responses(head_responses);
    return rs.size() >= n && rs[n - 1].complete;
  });
}

bool DataPathTest::until_closed() {
  return run_until([&] { return transport_->closed(); });
}

}  // namespace tlsfront::harness
