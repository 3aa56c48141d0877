// HealthProbe: one active health check of one upstream server, over the
// group's own protocol (data/upstream: UpstreamPool::open, so HTTP/1.1,
// h2c and h2, with or without TLS, exactly as requests go):
//   http  GET `path` with Host `host` (or the server as written); passes
//         on a complete response whose status is in expect_status
//   grpc  POST /grpc.health.v1.Health/Check with a HealthCheckRequest for
//         `service` (the gRPC health-checking protocol); passes on
//         grpc-status 0 with a HealthCheckResponse whose status is SERVING
// HTTP/1.1 checks go on a fresh connection each time ("Connection:
// close"), so a server that stopped accepting fails; HTTP/2 checks are a
// stream on the pool's multiplexed connection (as Envoy's and gRPC's).
// Fails on any upstream error (refused, TLS, reset, invalid response) and
// when no answer completed within `timeout`.
//   Running -> Done   answered, failed, timed out (`done` called once) or
//                     cancelled (never called)
// Thread affinity: the health checker's loop.
#pragma once

#include <uv.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "config/config.h"
#include "data/upstream/request_head.h"
#include "data/upstream/upstream_channel.h"
#include "data/upstream/upstream_handler.h"
#include "data/upstream/upstream_pool.h"
#include "util/lazy_timer.h"
#include "util/loop_context.h"

namespace tlsfront::control {

class HealthProbe final : public Deletable, private upstream::UpstreamHandler {
 public:
  struct Outcome {
    bool passed = false;
    std::string detail;  // "status 200", "status 503", "timeout", "refused", "not SERVING", ...
  };
  using Done = std::function<void(const Outcome&)>;

  // `cfg`: the group's (its health_check); borrowed, outlives the probe.
  HealthProbe(uv_loop_t* loop, std::shared_ptr<upstream::UpstreamPool> pool, const config::Upstream& cfg, Done done);
  ~HealthProbe() override;
  HealthProbe(const HealthProbe&) = delete;
  HealthProbe& operator=(const HealthProbe&) = delete;

  // Sends the check; `done` is called from a later loop callback.
  void start();
  // No `done` call from here on; the channel closed.
  void cancel();
  bool finished() const { return finished_; }

 private:
  void on_upstream_connected() override {}
  void on_upstream_head(http::ResponseHead&& head, bool informational) override;
  void on_upstream_body(std::string_view data) override;
  void on_upstream_trailers(std::vector<http::Header>&& trailers) override;
  void on_upstream_complete() override;
  void on_upstream_error(upstream::UpstreamFailure failure, Error error) override;
  void on_upstream_writable() override {}
  void on_upstream_tunnel(std::unique_ptr<upstream::UpstreamTunnel> tunnel) override;

  Outcome verdict() const;
  void finish(Outcome outcome);

  uv_loop_t* loop_;
  std::shared_ptr<upstream::UpstreamPool> pool_;
  const config::Upstream& cfg_;
  Done done_;
  // The request, kept while its channel lives: an HTTP/2 channel's fields
  // point into both (H2Session::submit copies none of them).
  http::RequestHead head_;
  std::optional<upstream::UpstreamRequestHead> encoded_;
  std::unique_ptr<upstream::UpstreamChannel> channel_;
  LazyTimer timer_;
  int status_ = 0;
  int grpc_status_ = -1;  // -1: none seen
  std::string body_;      // grpc: the first bytes of the response body
  std::string open_error_;  // the pool could not open a channel
  bool finished_ = false;
};

// The gRPC health-checking protocol's request body for `service`: one
// length-prefixed message holding a grpc.health.v1.HealthCheckRequest.
std::string grpc_health_request(std::string_view service);
// Whether `body` (length-prefixed messages) holds a HealthCheckResponse
// whose status is SERVING (1).
bool grpc_health_serving(std::string_view body);

}  // namespace tlsfront::control
