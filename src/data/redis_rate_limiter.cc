#include "data/redis_rate_limiter.h"

#include <fmt/format.h>
#include <openssl/sha.h>

#include "log/log.h"
#include "tls/ticket_key_source_redis.h"

namespace tlsfront::data {

const char* const RedisRateLimiter::kGcraScript = R"(if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local T = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local delay = tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local ahead = tat - now
if ahead > burst * T then return {0, ahead - burst * T} end
local wait = 0
if delay >= 0 and ahead > delay * T then wait = ahead - delay * T end
local new = tat + T
redis.call('SET', KEYS[1], string.format('%d', new), 'PX', math.floor((new - now) / 1000) + 1)
return {1, wait})";

RedisRateLimiter::RedisRateLimiter(uv_loop_t* loop, int worker, metrics::WorkerCounters* counters)
    : loop_(loop), worker_(worker), counters_(counters) {
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(kGcraScript), std::char_traits<char>::length(kGcraScript), digest);
  for (unsigned char c : digest) sha_ += fmt::format("{:02x}", c);
}

RedisRateLimiter::~RedisRateLimiter() { close(); }

void RedisRateLimiter::close() {
  if (closed_) return;
  closed_ = true;
  for (auto& [where, client] : clients_) client->close();
}

redis::Client* RedisRateLimiter::client_for(const config::LimitReqZone& zone) {
  const config::RedisTls& t = zone.redis_tls;
  const std::string id = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", zone.redis.to_string(), zone.redis_user,
                                     zone.redis_password_file, zone.redis_timeout.count(), t.enabled, t.server_name,
                                     t.verify, t.trusted_ca, t.certificate, t.key, t.protocols.size());
  if (auto it = clients_.find(id); it != clients_.end()) return it->second.get();
  redis::Options o;
  o.address = zone.redis;
  o.user = zone.redis_user;
  if (!zone.redis_password_file.empty()) {
    auto loaded = tls::load_redis_password_file(zone.redis_password_file);
    if (!loaded) {
      log::error("worker {}: limit_req {}: {}; its checks let every request through", worker_, zone.name,
                 loaded.error().message());
      return nullptr;
    }
    o.password = std::move(loaded->secret);
  }
  auto redis_tls = redis::tls_of(zone, "limit_req[" + zone.name + "]");
  if (!redis_tls) {
    log::error("worker {}: limit_req {}: {}; its checks let every request through", worker_, zone.name,
               redis_tls.error().message());
    return nullptr;
  }
  o.tls = std::move(redis_tls).value();
  o.timeout = zone.redis_timeout;
  o.connect_timeout = zone.redis_timeout;
  o.log_name = fmt::format("worker {}: limit_req", worker_);
  o.consequence = [] { return std::string("store = \"redis\" zones let requests through until it answers"); };
  auto client = std::make_unique<redis::Client>(std::move(o));
  client->start(loop_);
  return clients_.emplace(id, std::move(client)).first->second.get();
}

bool RedisRateLimiter::check(const config::LimitReqZone& zone, std::string_view key, Done done) {
  if (closed_) return false;
  redis::Client* client = client_for(zone);
  if (client == nullptr) {
    if (counters_) counters_->limit_redis_errors.add();
    return false;
  }
  std::string redis_key = zone.redis_prefix + ":lreq:" + zone.name + ":";
  redis_key.append(key);
  if (client->retry_in().count() > 0) {  // in the backoff: refused at once, no round trip
    if (counters_) counters_->limit_redis_errors.add();
    return false;
  }
  std::vector<std::string> args{std::move(redis_key), std::to_string(std::max<uint64_t>(1, zone.emission_ns / 1000)),
                                std::to_string(zone.burst),
                                zone.delay == config::LimitReqZone::kNoDelay ? "-1" : std::to_string(zone.delay)};
  if (send(client, std::move(args), false, std::move(done))) return true;
  if (counters_) counters_->limit_redis_errors.add();  // no connection could be opened now
  return false;
}

bool RedisRateLimiter::send(redis::Client* client, std::vector<std::string> args, bool eval, Done done) {
  std::vector<std::string> argv{eval ? "EVAL" : "EVALSHA", eval ? kGcraScript : sha_, "1"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto on_reply = [this, client, args = std::move(args), eval, done](Result<redis::Reply> reply) mutable {
    if (!reply) {
      if (counters_) counters_->limit_redis_errors.add();
      done(std::nullopt);
      return;
    }
    const redis::Reply& r = *reply;
    if (r.is_error()) {
      if (!eval && r.str().starts_with("NOSCRIPT")) {
        auto retry = done;
        if (!send(client, std::move(args), true, std::move(done))) failed(client, "limit_req: cannot send EVAL", retry);
        return;
      }
      failed(client, "limit_req script error: " + std::string(r.str().substr(0, 200)), done);
      return;
    }
    if (r.type() != redis::Reply::Type::Array || r.size() != 2 || r[0].type() != redis::Reply::Type::Integer ||
        r[1].type() != redis::Reply::Type::Integer) {
      failed(client, "limit_req script: unexpected reply", done);
      return;
    }
    client->answered();
    GcraVerdict v;
    v.pass = r[0].integer() == 1;
    const uint64_t ns = static_cast<uint64_t>(std::max<long long>(0, r[1].integer())) * 1000;
    (v.pass ? v.wait_ns : v.retry_after_ns) = ns;
    done(v);
  };
  return client->command(std::span<const std::string>(argv), std::move(on_reply));
}

void RedisRateLimiter::failed(redis::Client* client, const std::string& problem, Done& done) {
  if (counters_) counters_->limit_redis_errors.add();
  client->fail(problem);
  done(std::nullopt);
}

}  // namespace tlsfront::data
