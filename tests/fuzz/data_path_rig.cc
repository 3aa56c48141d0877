#include "data_path_rig.h"

#include <nghttp2/nghttp2.h>

#include <cstdlib>
#include <string>

#include "data/http/http1_session.h"
#include "data/http/http2_session.h"
#include "log/log.h"

namespace tlsfront::fuzz {

DataPathRig& DataPathRig::get() {
  // Never destroyed: libFuzzer exits from inside a callback, and the loop's
  // sockets die with the process.
  static DataPathRig* rig = new DataPathRig();
  return *rig;
}

DataPathRig::DataPathRig() {
  log::set_level(log::Level::Error);  // peers misbehave on every input: info lines would only slow the run
  if (uv_loop_init(&loop_) != 0) std::abort();
  ctx_ = std::make_unique<LoopContext>(&loop_);
}

DataPathRig::~DataPathRig() {
  teardown();
  ctx_->close();
  uv_run(&loop_, UV_RUN_DEFAULT);
  ctx_.reset();
  uv_loop_close(&loop_);
}

void DataPathRig::build() {
  upstream_ = std::make_unique<harness::ScriptedUpstream>(&loop_);
  env_ = std::make_unique<harness::DataPathEnv>(&loop_, harness::data_path_config({upstream_->port()}));
}

void DataPathRig::teardown() {
  ctx_->run_deferred();
  env_.reset();  // the pools close their connections
  upstream_.reset();
  // Close callbacks and deferred deletes, bounded: closing handles completes
  // within a few iterations.
  for (int i = 0; i < 16; ++i) {
    uv_run(&loop_, UV_RUN_NOWAIT);
    ctx_->run_deferred();
  }
}

void DataPathRig::drive(harness::FakeTransport& transport) {
  // What "something moved" looks at: our output, and what the upstream saw.
  auto progress = [&] {
    const auto& reqs = upstream_->requests();
    size_t body = reqs.empty() ? 0 : reqs.back().body.size() + (reqs.back().complete ? 1 : 0);
    return std::to_string(transport.output().size()) + "/" + std::to_string(transport.events().size()) + "/" +
           std::to_string(reqs.size()) + "/" + std::to_string(body) + "/" +
           std::to_string(upstream_->accepted());
  };
  int fires = 0;
  int quiet = 0;
  std::string last = progress();
  for (int i = 0; i < kMaxIterations && !transport.closed(); ++i) {
    uv_run(&loop_, UV_RUN_NOWAIT);
    std::string now = progress();
    quiet = now == last ? quiet + 1 : 0;
    last = std::move(now);
    if (quiet < kQuietIterations) continue;
    // Nothing moves: the session waits for the client (or a timer).
    if (fires == kMaxTimerFires || !transport.fire_timer()) break;
    ++fires;
    quiet = 0;
  }
}

void DataPathRig::run(Protocol protocol, std::string_view client_bytes,
                      const std::function<void(harness::ScriptedUpstream&)>& before) {
  build();
  if (before) before(*upstream_);
  auto transport = std::make_unique<harness::FakeTransport>(&loop_);
  std::unique_ptr<http::ClientSession> session;
  http::ConnectionInfo info = harness::test_connection_info();
  std::string bytes;
  if (protocol == Protocol::Http1) {
    session = std::make_unique<http::Http1Session>(env_->env(), transport.get(), std::move(info));
    bytes.assign(client_bytes);
  } else {
    info.alpn = "h2";
    session = std::make_unique<http::Http2Session>(env_->env(), transport.get(), std::move(info), nullptr);
    bytes.assign(NGHTTP2_CLIENT_MAGIC, NGHTTP2_CLIENT_MAGIC_LEN);
    bytes.append(client_bytes);
  }
  transport->attach(session.get());
  transport->feed(bytes);
  drive(*transport);
  // The client goes away (EOF) if the session is still open; then it is freed.
  transport->client_closes();
  uv_run(&loop_, UV_RUN_NOWAIT);
  transport->attach(nullptr);
  session.reset();
  ctx_->run_deferred();
  uv_run(&loop_, UV_RUN_NOWAIT);
  transport.reset();
  teardown();
}

}  // namespace tlsfront::fuzz
