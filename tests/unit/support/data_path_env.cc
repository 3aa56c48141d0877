#include "data_path_env.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>

namespace tlsfront::harness {

config::Config data_path_config(const std::vector<uint16_t>& ports) {
  config::Config cfg;
  config::Upstream up;
  up.name = "backend";
  for (uint16_t port : ports) up.servers.push_back(config::Endpoint{"127.0.0.1", port});
  cfg.upstreams.push_back(std::move(up));
  cfg.routes.push_back(config::Route{"", "/", "backend"});
  return cfg;
}

DataPathEnv::DataPathEnv(uv_loop_t* loop, config::Config cfg, const std::string& access_log_path)
    : config_(std::move(cfg)), router_(config_), access_log_path_(access_log_path) {
  if (!access_log_path_.empty()) {
    std::remove(access_log_path_.c_str());
    auto writer = log::LogWriter::open(access_log_path_);
    if (writer) {
      log_writer_ = std::move(*writer);
      access_log_ = std::make_unique<log::AccessLog>(log_writer_.get(), loop);
      env_.access_log = access_log_.get();
    }
  }
  for (const auto& up : config_.upstreams) groups_.push_back(std::make_shared<upstream::UpstreamGroup>(loop, up));
  env_.loop = loop;
  env_.config = &config_;
  env_.router = &router_;
  env_.upstreams = &groups_;
  env_.shutting_down = &shutting_down_;
}

DataPathEnv::~DataPathEnv() {
  access_log_.reset();
  log_writer_.reset();
  if (!access_log_path_.empty()) std::remove(access_log_path_.c_str());
}

std::string DataPathEnv::access_log_text() {
  if (!access_log_) return {};
  access_log_->flush();
  log_writer_->flush_and_stop();
  std::ifstream in(access_log_path_);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

http::ConnectionInfo test_connection_info() {
  http::ConnectionInfo info;
  info.id = 1;
  info.remote_addr = "127.0.0.1";
  info.remote_port = 40000;
  info.alpn = "http/1.1";
  info.ssl_protocol = "TLSv1.3";
  return info;
}

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
