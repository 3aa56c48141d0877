#include "data_path_env.h"

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

}  // namespace tlsfront::harness
