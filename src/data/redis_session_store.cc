#include "data/redis_session_store.h"

#include <fmt/format.h>

#include "log/log.h"
#include "tls/ticket_key_source_redis.h"

namespace tlsfront::data {
namespace {

using std::chrono::milliseconds;

redis::Options client_options(const config::SessionCache& cfg, int worker, Secret password,
                              std::shared_ptr<const redis::TlsContext> redis_tls, metrics::WorkerCounters* counters) {
  redis::Options o;
  o.address = cfg.redis;
  o.tls = std::move(redis_tls);
  o.user = cfg.redis_user;
  o.password = std::move(password);
  o.timeout = cfg.redis_timeout;
  o.first_backoff = milliseconds(200);
  o.max_backoff = milliseconds(5'000);
  o.log_name = fmt::format("worker {}: session cache", worker);
  o.trouble_level = log::Level::Warn;
  o.consequence = [] { return std::string("sessions are not shared until it answers"); };
  if (counters) o.on_connected = [counters](bool up) { counters->session_store_connected.set(up ? 1 : 0); };
  return o;
}

}  // namespace

Result<std::unique_ptr<RedisSessionStore>> RedisSessionStore::create(const config::SessionCache& cfg, uv_loop_t* loop,
                                                                     int worker, metrics::WorkerCounters* counters) {
  Secret password;
  if (!cfg.redis_password_file.empty()) {
    auto loaded = tls::load_redis_password_file(cfg.redis_password_file);
    if (!loaded) return loaded.take_error();
    password = std::move(loaded->secret);
  }
  auto redis_tls = redis::tls_of(cfg, "tls.session_cache");
  if (!redis_tls) return redis_tls.take_error();
  return std::unique_ptr<RedisSessionStore>(
      new RedisSessionStore(cfg, loop, worker, std::move(password), std::move(redis_tls).value(), counters));
}

RedisSessionStore::RedisSessionStore(const config::SessionCache& cfg, uv_loop_t* loop, int worker, Secret password,
                                     std::shared_ptr<const redis::TlsContext> redis_tls,
                                     metrics::WorkerCounters* counters)
    : cfg_(cfg),
      worker_(worker),
      client_(client_options(cfg, worker, std::move(password), std::move(redis_tls), counters)) {
  if (counters) counters->session_store.set(1);
  client_.start(loop);
}

RedisSessionStore::~RedisSessionStore() { close(); }

void RedisSessionStore::close() {
  if (closed_) return;
  closed_ = true;
  client_.close();
  log::debug("worker {}: session cache redis: {} lookups, {} hits, {} failed, {} store errors", worker_, lookups_,
             hits_, failures_, store_errors_);
}

std::string RedisSessionStore::redis_key(std::string_view prefix, std::string_view cache_key, std::string_view kind) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(prefix.size() + kind.size() + 2 + 2 * cache_key.size());
  out.append(prefix);
  out.push_back(':');
  out.append(kind);
  out.push_back(':');
  for (unsigned char c : cache_key) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

bool RedisSessionStore::lookup(const std::string& key, LookupDone done) {
  if (closed_) return false;
  const bool sent = client_.command({"GET", redis_key(cfg_.redis_prefix, key)},
                                    [this, done = std::move(done)](Result<redis::Reply> reply) mutable {
                                      on_get_reply(std::move(reply), done);
                                    });
  if (sent) ++lookups_;
  return sent;
}

// A string is the session (adopt() checks it), nil is a miss; an error reply
// or no reply (timeout, connection trouble) is a miss too.
void RedisSessionStore::on_get_reply(Result<redis::Reply> reply, LookupDone& done) {
  if (!reply) {
    ++failures_;
    done(std::nullopt);
    return;
  }
  if (reply->is_error()) {
    ++failures_;
    client_.fail("GET refused: " + std::string(reply->str()));
    done(std::nullopt);
    return;
  }
  client_.answered();
  if (reply->is_string()) {
    ++hits_;
    done(std::string(reply->str()));
  } else {
    done(std::nullopt);  // nil: not there (or expired)
  }
}

void RedisSessionStore::store(const std::string& key, std::string_view der, milliseconds ttl) {
  if (ttl.count() <= 0 || closed_) return;
  const std::string ttl_text = std::to_string(ttl.count());
  const bool sent = client_.command({"SET", redis_key(cfg_.redis_prefix, key), der, "PX", ttl_text},
                                    [this](Result<redis::Reply> reply) {
                                      // Fire-and-forget: only a refusal is worth noting.
                                      if (!reply || !reply->is_error()) return;
                                      ++store_errors_;
                                      client_.fail("SET refused: " + std::string(reply->str()));
                                    });
  if (!sent) ++store_errors_;
}

bool RedisSessionStore::claim(const std::string& key, milliseconds ttl, ClaimDone done) {
  if (closed_ || ttl.count() <= 0) return false;
  const std::string ttl_text = std::to_string(ttl.count());
  return client_.command({"SET", redis_key(cfg_.redis_prefix, key, "early"), "1", "NX", "PX", ttl_text},
                         [this, done = std::move(done)](Result<redis::Reply> reply) {
                           if (!reply) {
                             done(Claim::Unavailable);
                           } else if (reply->is_error()) {
                             client_.fail("SET NX refused: " + std::string(reply->str()));
                             done(Claim::Unavailable);
                           } else {
                             client_.answered();
                             done(reply->is_nil() ? Claim::Seen : Claim::First);
                           }
                         });
}

}  // namespace tlsfront::data
