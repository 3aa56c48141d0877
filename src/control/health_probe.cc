#include "control/health_probe.h"

#include <charconv>

#include "data/upstream/request_head.h"
#include "message/header_edit.h"
#include "message/header_rewrite.h"

namespace tlsfront::control {
namespace {

constexpr size_t kMaxGrpcBody = 256;  // a HealthCheckResponse is 2 octets

// A check is tlsfront's own request: no client to name.
const http::HeaderEdit& no_forwarding() {
  static const http::HeaderEdit edit{{"x-forwarded-for", "x-real-ip", "x-forwarded-proto"}, {}};
  return edit;
}

http::RequestHead check_head(const config::Upstream& cfg, const upstream::UpstreamPool& pool, size_t body_size) {
  const config::HealthCheck& hc = cfg.health_check;
  http::RequestHead head;
  const std::string host = hc.host.empty() ? pool.server().to_string() : hc.host;
  head.headers.push_back({"Host", host, http::HeaderToken::Host});
  head.headers.push_back({"User-Agent", "tlsfront-health-check"});
  if (hc.kind == config::HealthCheck::Kind::Grpc) {
    head.method = "POST";
    head.target = "/grpc.health.v1.Health/Check";
    head.headers.push_back({"content-type", "application/grpc"});
    head.headers.push_back({"te", "trailers", http::classify_header("te")});
    head.content_length = body_size;
  } else {
    head.method = "GET";
    head.target = hc.path;
  }
  head.host = host;
  return head;
}

}  // namespace

std::string grpc_health_request(std::string_view service) {
  std::string message;
  if (!service.empty()) {
    message.push_back(0x0a);  // field 1 (service), length-delimited
    for (size_t n = service.size();; n >>= 7) {
      message.push_back(static_cast<char>((n & 0x7f) | (n > 0x7f ? 0x80 : 0)));
      if (n <= 0x7f) break;
    }
    message.append(service);
  }
  std::string out(5, '\0');  // uncompressed, then the length, big-endian
  const auto n = static_cast<uint32_t>(message.size());
  out[1] = static_cast<char>(n >> 24);
  out[2] = static_cast<char>(n >> 16);
  out[3] = static_cast<char>(n >> 8);
  out[4] = static_cast<char>(n);
  return out + message;
}

bool grpc_health_serving(std::string_view body) {
  if (body.size() < 5 || body[0] != 0) return false;
  const uint32_t n = (uint32_t{static_cast<uint8_t>(body[1])} << 24) | (uint32_t{static_cast<uint8_t>(body[2])} << 16) |
                     (uint32_t{static_cast<uint8_t>(body[3])} << 8) | uint32_t{static_cast<uint8_t>(body[4])};
  if (body.size() - 5 < n) return false;
  std::string_view m = body.substr(5, n);
  // HealthCheckResponse { ServingStatus status = 1; }: the field as a
  // varint (tag 0x08); SERVING is 1. Other fields are not defined.
  for (size_t i = 0; i + 1 < m.size(); ++i) {
    if (m[i] != 0x08) return false;
    return m[i + 1] == 0x01;
  }
  return false;
}

HealthProbe::HealthProbe(uv_loop_t* loop, std::shared_ptr<upstream::UpstreamPool> pool, const config::Upstream& cfg,
                         Done done)
    : loop_(loop), pool_(std::move(pool)), cfg_(cfg), done_(std::move(done)) {
  timer_.init(
      loop_,
      [](void* arg) {
        auto* self = static_cast<HealthProbe*>(arg);
        self->finish({false, self->open_error_.empty() ? "timeout" : self->open_error_});
      },
      this);
}

HealthProbe::~HealthProbe() { cancel(); }

void HealthProbe::start() {
  const bool grpc = cfg_.health_check.kind == config::HealthCheck::Kind::Grpc;
  const std::string body = grpc ? grpc_health_request(cfg_.health_check.service) : std::string();
  head_ = check_head(cfg_, *pool_, body.size());
  http::UpstreamRequestOptions opts;
  opts.scheme = cfg_.tls.enabled ? "https" : "http";
  opts.default_host = head_.host;
  opts.upstream_tls = cfg_.tls.enabled;
  opts.close = !config::is_http2(cfg_.protocol);
  opts.edit = &no_forwarding();
  encoded_.emplace(cfg_.protocol, head_, opts);
  timer_.arm(cfg_.health_check.timeout);
  auto lease = pool_->open(this, *encoded_, /*allow_reuse=*/false, /*check_open=*/false);
  if (!lease) {
    // Reported from the loop, as every other outcome.
    open_error_ = lease.error().message();
    timer_.arm(std::chrono::milliseconds(0));
    return;
  }
  channel_ = std::move(lease->channel);
  if (!body.empty()) channel_->send_body(body);
  channel_->end({});
}

void HealthProbe::cancel() {
  finished_ = true;
  timer_.close();
  if (channel_) {
    channel_->detach();
    upstream::UpstreamChannel::retire(channel_);
  }
}

void HealthProbe::on_upstream_head(http::ResponseHead&& head, bool informational) {
  if (informational) return;
  status_ = head.status;
  for (const http::Header& h : head.headers) {  // a trailers-only gRPC answer
    if (http::iequals(h.name, "grpc-status")) std::from_chars(h.value.data(), h.value.data() + h.value.size(), grpc_status_);
  }
}

void HealthProbe::on_upstream_body(std::string_view data) {
  if (cfg_.health_check.kind != config::HealthCheck::Kind::Grpc) return;
  body_.append(data.substr(0, kMaxGrpcBody - std::min(kMaxGrpcBody, body_.size())));
}

void HealthProbe::on_upstream_trailers(std::vector<http::Header>&& trailers) {
  for (const http::Header& h : trailers) {
    if (http::iequals(h.name, "grpc-status")) std::from_chars(h.value.data(), h.value.data() + h.value.size(), grpc_status_);
  }
}

HealthProbe::Outcome HealthProbe::verdict() const {
  const config::HealthCheck& hc = cfg_.health_check;
  if (hc.kind == config::HealthCheck::Kind::Grpc) {
    if (status_ != 200) return {false, "status " + std::to_string(status_)};
    if (grpc_status_ != 0) return {false, "grpc-status " + std::to_string(grpc_status_)};
    if (!grpc_health_serving(body_)) return {false, "not SERVING"};
    return {true, "SERVING"};
  }
  return {status_ >= hc.expect_min && status_ <= hc.expect_max, "status " + std::to_string(status_)};
}

void HealthProbe::on_upstream_complete() {
  Outcome outcome = verdict();
  if (channel_) upstream::UpstreamChannel::finish(channel_, true);
  finish(std::move(outcome));
}

void HealthProbe::on_upstream_error(upstream::UpstreamFailure failure, Error error) {
  finish({false, std::string(upstream::to_string(failure))});
}

void HealthProbe::on_upstream_tunnel(std::unique_ptr<upstream::UpstreamTunnel> tunnel) {
  finish({false, "status 101"});
}

void HealthProbe::finish(Outcome outcome) {
  if (finished_) return;
  Done done = std::move(done_);
  cancel();
  if (done) done(outcome);
}

}  // namespace tlsfront::control
