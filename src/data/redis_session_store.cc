#include "data/redis_session_store.h"

#include <hiredis/adapters/libuv.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <vector>

#include "log/log.h"

namespace tlsfront::data {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kFirstBackoff{200};
constexpr milliseconds kMaxBackoff{5'000};

// Commands carry their lookup id and kind in hiredis' privdata (no allocation).
void* pack(uint64_t id, uintptr_t kind) { return reinterpret_cast<void*>(static_cast<uintptr_t>(id << 2 | kind)); }

std::string reply_text(const redisReply* r) { return r->str ? std::string(r->str, r->len) : std::string(); }

}  // namespace

Result<std::unique_ptr<RedisSessionStore>> RedisSessionStore::create(const config::SessionCache& cfg, uv_loop_t* loop,
                                                                     int worker) {
  tls::Secret password;
  if (!cfg.redis_password_file.empty()) {
    auto loaded = tls::load_redis_password_file(cfg.redis_password_file);
    if (!loaded) return loaded.take_error();
    password = std::move(loaded->secret);
  }
  return std::unique_ptr<RedisSessionStore>(new RedisSessionStore(cfg, loop, worker, std::move(password)));
}

RedisSessionStore::RedisSessionStore(const config::SessionCache& cfg, uv_loop_t* loop, int worker,
                                     tls::Secret password)
    : cfg_(cfg), loop_(loop), worker_(worker), password_(std::move(password)) {
  timer_.init([loop](uv_timer_t* h) { return uv_timer_init(loop, h); }, this);
  uv_unref(timer_.handle());
}

RedisSessionStore::~RedisSessionStore() { close(); }

void RedisSessionStore::close() {
  if (closed_) return;
  closed_ = true;
  timer_.close();
  drop_connection();
  pending_.clear();
  log::debug("worker {}: session cache redis: {} lookups, {} hits, {} failed, {} store errors", worker_, lookups_,
             hits_, failures_, store_errors_);
}

std::string RedisSessionStore::redis_key(std::string_view prefix, std::string_view cache_key) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(prefix.size() + 6 + 2 * cache_key.size());
  out.append(prefix);
  out.append(":sess:");
  for (unsigned char c : cache_key) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

bool RedisSessionStore::ensure_connected() {
  if (closed_) return false;
  if (ac_ != nullptr && usable_) return true;
  if (std::chrono::steady_clock::now() < retry_at_ || in_callback_ > 0) return false;
  drop_connection();
  redisAsyncContext* ac = redisAsyncConnect(cfg_.redis.host.c_str(), cfg_.redis.port);
  if (ac == nullptr) return false;
  if (ac->err) {
    std::string problem = std::string("cannot connect: ") + ac->errstr;
    redisAsyncFree(ac);  // not attached yet: no callback can run
    trouble(problem);
    return false;
  }
  if (redisLibuvAttach(ac, loop_) != REDIS_OK) {
    redisAsyncFree(ac);
    trouble("cannot attach the connection to the loop");
    return false;
  }
  ac->data = this;
  redisAsyncSetConnectCallback(ac, connect_cb);
  redisAsyncSetDisconnectCallback(ac, disconnect_cb);
  ac_ = ac;
  usable_ = true;
  if (!password_.empty()) {
    const bool sent = cfg_.redis_user.empty() ? send_command(0, Kind::Auth, {"AUTH", password_.str()})
                                              : send_command(0, Kind::Auth, {"AUTH", cfg_.redis_user, password_.str()});
    if (!sent) {
      trouble("cannot send AUTH");
      return false;
    }
  }
  return true;
}

void RedisSessionStore::drop_connection() {
  usable_ = false;
  if (ac_ == nullptr) return;
  redisAsyncContext* ac = std::exchange(ac_, nullptr);
  ac->data = nullptr;  // pending callbacks (NULL replies) and disconnect_cb find no owner
  redisAsyncFree(ac);  // never called from inside a hiredis callback
}

bool RedisSessionStore::send_command(uint64_t id, Kind kind, std::initializer_list<std::string_view> args) {
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  for (std::string_view a : args) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
  return redisAsyncCommandArgv(ac_, reply_cb, pack(id, static_cast<uintptr_t>(kind)), static_cast<int>(ptrs.size()),
                               ptrs.data(), lens.data()) == REDIS_OK;
}

bool RedisSessionStore::lookup(const std::string& key, LookupDone done) {
  if (!ensure_connected()) return false;
  const uint64_t id = next_id_++;
  if (!send_command(id, Kind::Get, {"GET", redis_key(cfg_.redis_prefix, key)})) {
    trouble("cannot send a command (connection closing)");
    return false;
  }
  ++lookups_;
  pending_.emplace(id, Pending{std::chrono::steady_clock::now() + cfg_.redis_timeout, std::move(done)});
  arm_timer();
  return true;
}

void RedisSessionStore::store(const std::string& key, std::string_view der, milliseconds ttl) {
  if (ttl.count() <= 0) return;
  if (!ensure_connected()) {
    ++store_errors_;
    return;
  }
  const std::string ttl_text = std::to_string(ttl.count());
  if (!send_command(0, Kind::Set, {"SET", redis_key(cfg_.redis_prefix, key), der, "PX", ttl_text})) {
    ++store_errors_;
    trouble("cannot send a command (connection closing)");
  }
}

void RedisSessionStore::arm_timer() {
  if (!timer_.active() || pending_.empty()) return;
  const auto wait = std::chrono::ceil<milliseconds>(pending_.begin()->second.deadline - std::chrono::steady_clock::now());
  uv_timer_start(
      timer_.get(),
      [](uv_timer_t* t) {
        if (t->data) static_cast<RedisSessionStore*>(t->data)->on_timer();
      },
      static_cast<uint64_t>(std::max<int64_t>(1, wait.count())), 0);
}

// A lookup slower than redis_timeout: Redis is too slow or gone. Every waiting
// lookup becomes a miss and the connection is dropped (not inside a hiredis
// callback: this is a timer callback).
void RedisSessionStore::on_timer() {
  if (pending_.empty()) return;
  if (pending_.begin()->second.deadline > std::chrono::steady_clock::now()) {
    arm_timer();
    return;
  }
  trouble("no answer within " + std::to_string(cfg_.redis_timeout.count()) + " ms");
  drop_connection();
  std::map<uint64_t, Pending> expired = std::move(pending_);
  pending_.clear();
  for (auto& [id, p] : expired) {
    ++failures_;
    p.done(std::nullopt);
  }
}

void RedisSessionStore::complete(uint64_t id, std::optional<std::string> der) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;  // already timed out
  LookupDone done = std::move(it->second.done);
  pending_.erase(it);
  if (der) ++hits_;
  done(std::move(der));
}

void RedisSessionStore::trouble(const std::string& problem) {
  usable_ = false;
  backoff_ = backoff_.count() == 0 ? kFirstBackoff : std::min(2 * backoff_, kMaxBackoff);
  retry_at_ = std::chrono::steady_clock::now() + backoff_;
  if (problem != problem_) {
    log::warn("worker {}: session cache: redis {}: {}; sessions are not shared until it answers", worker_, where(),
              problem);
    problem_ = problem;
  }
}

void RedisSessionStore::healthy() {
  backoff_ = milliseconds(0);
  if (!problem_.empty()) {
    log::info("worker {}: session cache: redis {} is in use again", worker_, where());
    problem_.clear();
  }
}

void RedisSessionStore::on_reply(redisReply* reply, uint64_t id, Kind kind, const std::string& error) {
  if (reply == nullptr) {
    if (usable_) trouble("connection lost" + (error.empty() ? std::string() : ": " + error));
    if (kind == Kind::Get) {
      ++failures_;
      complete(id, std::nullopt);
    }
    return;
  }
  if (reply->type == REDIS_REPLY_ERROR) {
    const std::string text = reply_text(reply);
    if (kind == Kind::Set) ++store_errors_;
    trouble((kind == Kind::Auth ? "AUTH" : kind == Kind::Set ? "SET" : "GET") + std::string(" refused: ") + text);
    if (kind == Kind::Get) {
      ++failures_;
      complete(id, std::nullopt);
    }
    return;
  }
  if (kind != Kind::Get) return;
  healthy();
  if (reply->type == REDIS_REPLY_STRING) {
    complete(id, std::string(reply->str, reply->len));
  } else {
    complete(id, std::nullopt);  // nil: not there (or expired)
  }
}

void RedisSessionStore::reply_cb(redisAsyncContext* ac, void* reply, void* privdata) noexcept {
  auto* self = static_cast<RedisSessionStore*>(ac->data);
  if (self == nullptr) return;
  const auto packed = reinterpret_cast<uintptr_t>(privdata);
  ++self->in_callback_;
  self->on_reply(static_cast<redisReply*>(reply), packed >> 2, static_cast<Kind>(packed & 3),
                 ac->err ? std::string(ac->errstr) : std::string());
  --self->in_callback_;
}

void RedisSessionStore::connect_cb(const redisAsyncContext* ac, int status) noexcept {
  auto* self = static_cast<RedisSessionStore*>(ac->data);
  if (self == nullptr || status == REDIS_OK) return;
  // hiredis frees the context when this callback returns, answering the
  // queued commands with NULL replies first (reply_cb: misses at once).
  self->ac_ = nullptr;
  self->trouble(std::string("cannot connect: ") + (ac->errstr ? ac->errstr : ""));
}

void RedisSessionStore::disconnect_cb(const redisAsyncContext* ac, int /*status*/) noexcept {
  auto* self = static_cast<RedisSessionStore*>(ac->data);
  if (self == nullptr) return;
  const_cast<redisAsyncContext*>(ac)->data = nullptr;
  self->ac_ = nullptr;
  if (self->usable_) self->trouble("connection lost");
}

}  // namespace tlsfront::data
