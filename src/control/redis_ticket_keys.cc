#include "control/redis_ticket_keys.h"

#include <hiredis/adapters/libuv.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <openssl/crypto.h>

#include <algorithm>

#include "log/log.h"
#include "tls/ticket_key_source_local.h"

namespace tlsfront::control {
namespace {

using std::chrono::milliseconds;

struct RedisContextFree {
  void operator()(redisContext* c) const noexcept { redisFree(c); }
};
using RedisContextPtr = std::unique_ptr<redisContext, RedisContextFree>;

struct RedisReplyFree {
  void operator()(redisReply* r) const noexcept { freeReplyObject(r); }
};
using RedisReplyPtr = std::unique_ptr<redisReply, RedisReplyFree>;

// Commands carry their round and kind in hiredis' privdata (no allocation).
void* pack(uint64_t round, uintptr_t kind) { return reinterpret_cast<void*>(static_cast<uintptr_t>(round << 2 | kind)); }

timeval to_timeval(milliseconds d) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(d.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((d.count() % 1000) * 1000);
  return tv;
}

std::string reply_text(const redisReply* r) { return r->str ? std::string(r->str, r->len) : std::string(); }

// The argv of one command as hiredis wants it (borrowing `args`).
struct Argv {
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  explicit Argv(const std::vector<std::string>& args) {
    for (const auto& a : args) {
      ptrs.push_back(a.data());
      lens.push_back(a.size());
    }
  }
  int argc() const { return static_cast<int>(ptrs.size()); }
};

// SET values (and the AUTH password) are secrets: cleanse the plan's copies
// once hiredis has them.
void cleanse_commands(std::vector<std::vector<std::string>>& commands) {
  for (auto& cmd : commands) {
    for (auto& arg : cmd) OPENSSL_cleanse(arg.data(), arg.size());
  }
  commands.clear();
}

}  // namespace

Result<std::unique_ptr<RedisTicketKeys>> RedisTicketKeys::create(const config::Tls& tls, const Clock* clock,
                                                                 PublishFn publish) {
  const config::TicketKeys& keys = tls.ticket_keys;
  tls::Secret password;
  if (!keys.redis_password_file.empty()) {
    auto loaded = tls::load_redis_password_file(keys.redis_password_file);
    if (!loaded) return loaded.take_error();
    if (!loaded->warning.empty()) log::warn("ticket keys: {}", loaded->warning);
    password = std::move(loaded->secret);
  }
  tls::Secret wrap_key;
  if (!keys.wrap_key_file.empty()) {
    auto loaded = tls::load_wrap_key_file(keys.wrap_key_file);
    if (!loaded) return loaded.take_error();
    if (!loaded->warning.empty()) log::warn("ticket keys: {}", loaded->warning);
    wrap_key = std::move(loaded->secret);
  }
  auto codec = tls::RedisTicketKeyCodec::create(wrap_key.bytes());
  if (!codec) return make_error(Errc::Config, keys.wrap_key_file + ": " + codec.error().message());
  return std::unique_ptr<RedisTicketKeys>(
      new RedisTicketKeys(tls, clock, std::move(publish), std::move(codec).value(), std::move(password)));
}

RedisTicketKeys::RedisTicketKeys(const config::Tls& tls, const Clock* clock, PublishFn publish,
                                 tls::RedisTicketKeyCodec codec, tls::Secret password)
    : keys_(tls.ticket_keys),
      clock_(clock),
      publish_(std::move(publish)),
      codec_(std::move(codec)),
      password_(std::move(password)),
      state_(tls::RedisSlotSchedule(tls.ticket_keys.rotate_every, tls.session_cache.timeout)) {}

RedisTicketKeys::~RedisTicketKeys() { stop(); }

std::string RedisTicketKeys::where() const {
  return keys_.redis_unix_socket.empty() ? keys_.redis.to_string() : "unix:" + keys_.redis_unix_socket;
}

// ---- one round: plan and replies (shared by the sync and async paths) ----------

Result<RedisTicketKeys::Plan> RedisTicketKeys::plan_round(tls::TimePoint now) {
  const auto& schedule = state_.schedule();
  const int64_t current = schedule.slot_of(now);
  Plan plan;
  if (!password_.empty()) {
    if (keys_.redis_user.empty()) {
      plan.commands.push_back({"AUTH", password_.str()});
    } else {
      plan.commands.push_back({"AUTH", keys_.redis_user, password_.str()});
    }
    plan.kinds.push_back(Kind::Auth);
  }
  // SET NX the current and the next slot: a fresh key for a slot this node
  // does not hold, the held key otherwise (a no-op unless Redis lost the slot,
  // which then gets back the value every node that fetched it already holds).
  for (int64_t slot : {current, current + 1}) {
    const tls::TicketKey* held = state_.slot_key(slot);
    Result<tls::TicketKey> key = held ? Result<tls::TicketKey>(*held)
                                      : tls::LocalTicketKeySource::generate_key(schedule.slot_start(slot),
                                                                                schedule.key_expiry(slot));
    if (!key) return key.take_error();
    const std::string name = tls::redis_slot_key(keys_.redis_prefix, slot);
    auto value = codec_.encode(*key, name);
    if (!value) return value.take_error();
    plan.commands.push_back(
        {"SET", name, std::move(value).value(), "NX", "PX", std::to_string(schedule.redis_ttl(slot, now).count())});
    plan.kinds.push_back(Kind::Set);
    plan.set_slots.push_back(slot);
  }
  // The whole live window at start-up and after trouble; otherwise the slot
  // before (a boundary passed between polls), the current and the next one.
  const int64_t first = full_fetch_ ? schedule.first_live_slot(now) : current - 1;
  std::vector<std::string> mget{"MGET"};
  for (int64_t slot = first; slot <= current + 1; ++slot) {
    if (slot < current && state_.has_slot(slot)) continue;  // a slot's value only changes if Redis loses it
    plan.mget_slots.push_back(slot);
    mget.push_back(tls::redis_slot_key(keys_.redis_prefix, slot));
  }
  plan.commands.push_back(std::move(mget));
  plan.kinds.push_back(Kind::Mget);
  return plan;
}

Status RedisTicketKeys::on_auth_reply(const redisReply* reply) {
  if (reply->type == REDIS_REPLY_ERROR) return make_error(Errc::Upstream, "AUTH refused: " + reply_text(reply));
  return {};
}

void RedisTicketKeys::on_set_reply(const redisReply* reply) {
  // "OK" (this node's value won the slot) or nil (another value was there).
  if (reply->type == REDIS_REPLY_ERROR && soft_problem_.empty()) soft_problem_ = "SET refused: " + reply_text(reply);
}

Status RedisTicketKeys::on_mget_reply(const Plan& plan, const redisReply* reply) {
  if (reply->type == REDIS_REPLY_ERROR) return make_error(Errc::Upstream, "MGET refused: " + reply_text(reply));
  if (reply->type != REDIS_REPLY_ARRAY || reply->elements != plan.mget_slots.size()) {
    return make_error(Errc::Protocol, "MGET: unexpected reply");
  }
  for (size_t i = 0; i < reply->elements; ++i) {
    const redisReply* element = reply->element[i];
    if (element->type != REDIS_REPLY_STRING) continue;  // nil: no key for this slot (yet)
    const int64_t slot = plan.mget_slots[i];
    auto key = codec_.decode(std::string_view(element->str, element->len),
                             tls::redis_slot_key(keys_.redis_prefix, slot));
    if (!key) {
      if (soft_problem_.empty()) soft_problem_ = "a ticket key in redis cannot be used: " + key.error().message();
      continue;
    }
    if (state_.merge(slot, std::move(key).value())) changed_ = true;
  }
  full_fetch_ = false;
  return {};
}

void RedisTicketKeys::finish_round(const std::string& problem) {
  if (problem != problem_) {
    if (problem.empty()) {
      log::info("ticket keys: redis {} is in use again", where());
    } else {
      log::error("ticket keys: redis {}: {}; keeping the {} keys held, retrying", where(), problem, state_.size());
    }
    problem_ = problem;
  }
  const auto now = clock_->now();
  if (state_.prune(now)) changed_ = true;
  const char* why = "fetched from redis";
  auto added = state_.ensure_encryption_key(now);
  if (!added) {
    log::error("ticket keys: {}", added.error().message());
  } else if (*added) {
    log::warn("ticket keys: no cluster key encrypts now; using a local key until redis {} answers", where());
    why = "generated locally (redis unavailable)";
    changed_ = true;
  }
  if (changed_) {
    changed_ = false;
    publish_(state_.ring(), why);
  }
}

// ---- start-up: blocking --------------------------------------------------------

Status RedisTicketKeys::load_initial() {
  auto plan = plan_round(clock_->now());
  if (!plan) return plan.take_error();
  const timeval tv = to_timeval(keys_.redis_timeout);
  RedisContextPtr ctx(keys_.redis_unix_socket.empty()
                          ? redisConnectWithTimeout(keys_.redis.host.c_str(), keys_.redis.port, tv)
                          : redisConnectUnixWithTimeout(keys_.redis_unix_socket.c_str(), tv));
  std::string problem;
  soft_problem_.clear();
  if (!ctx || ctx->err) {
    problem = std::string("cannot connect: ") + (ctx ? ctx->errstr : "out of memory");
  } else if (redisSetTimeout(ctx.get(), tv) != REDIS_OK) {
    problem = std::string("cannot set the timeout: ") + ctx->errstr;
  } else {
    for (const auto& cmd : plan->commands) {
      Argv argv(cmd);
      redisAppendCommandArgv(ctx.get(), argv.argc(), argv.ptrs.data(), argv.lens.data());
    }
    cleanse_commands(plan->commands);
    for (Kind kind : plan->kinds) {
      void* raw = nullptr;
      if (redisGetReply(ctx.get(), &raw) != REDIS_OK) {
        problem = std::string("no reply: ") + ctx->errstr;
        break;
      }
      RedisReplyPtr reply(static_cast<redisReply*>(raw));
      Status st;
      if (kind == Kind::Auth) st = on_auth_reply(reply.get());
      if (kind == Kind::Set) on_set_reply(reply.get());
      if (kind == Kind::Mget) st = on_mget_reply(*plan, reply.get());
      if (!st) {
        problem = st.error().message();
        break;
      }
    }
  }
  cleanse_commands(plan->commands);
  if (problem.empty()) problem = soft_problem_;
  changed_ = true;  // always publish a first ring
  finish_round(problem);
  return {};
}

// ---- the async client on the control loop ---------------------------------------

void RedisTicketKeys::start(uv_loop_t* loop) {
  loop_ = loop;
  timer_.init([loop](uv_timer_t* h) { return uv_timer_init(loop, h); }, this);
  deadline_.init([loop](uv_timer_t* h) { return uv_timer_init(loop, h); }, this);
  arm_timer(milliseconds(0));
}

void RedisTicketKeys::stop() {
  round_ = 0;
  timer_.close();
  deadline_.close();
  drop_connection();
}

void RedisTicketKeys::arm_timer(milliseconds wait) {
  if (!timer_.active()) return;
  uv_timer_start(
      timer_.get(),
      [](uv_timer_t* t) {
        if (t->data) static_cast<RedisTicketKeys*>(t->data)->poll_now();
      },
      static_cast<uint64_t>(std::max<int64_t>(0, wait.count())), 0);
}

void RedisTicketKeys::connect_async() {
  redisAsyncContext* ac = keys_.redis_unix_socket.empty()
                              ? redisAsyncConnect(keys_.redis.host.c_str(), keys_.redis.port)
                              : redisAsyncConnectUnix(keys_.redis_unix_socket.c_str());
  if (ac == nullptr) return;
  if (ac->err) {
    fail_round(std::string("cannot connect: ") + ac->errstr);
    redisAsyncFree(ac);  // not attached yet: no callback can run
    return;
  }
  if (redisLibuvAttach(ac, loop_) != REDIS_OK) {
    fail_round("cannot attach the connection to the loop");
    redisAsyncFree(ac);
    return;
  }
  ac->data = this;
  redisAsyncSetConnectCallback(ac, connect_cb);
  redisAsyncSetDisconnectCallback(ac, disconnect_cb);
  ac_ = ac;
}

void RedisTicketKeys::drop_connection() {
  if (ac_ == nullptr) return;
  redisAsyncContext* ac = std::exchange(ac_, nullptr);
  ac->data = nullptr;  // pending callbacks (NULL replies) and disconnect_cb find no owner
  redisAsyncFree(ac);  // never called from inside a hiredis callback
}

void RedisTicketKeys::poll_now() {
  if (round_ != 0) return;
  if (reconnect_) {
    drop_connection();
    reconnect_ = false;
  }
  auto plan = plan_round(clock_->now());
  if (!plan) {
    fail_round(plan.error().message());
    return;
  }
  round_ = next_round_++;
  plan_ = std::move(plan).value();
  soft_problem_.clear();
  const bool connecting = ac_ == nullptr;
  if (connecting) {
    connect_async();
    if (ac_ == nullptr) {
      cleanse_commands(plan_.commands);
      if (round_ != 0) fail_round("cannot connect: out of memory");
      return;
    }
  }
  for (size_t i = 0; i < plan_.commands.size(); ++i) {
    Argv argv(plan_.commands[i]);
    if (redisAsyncCommandArgv(ac_, reply_cb, pack(round_, static_cast<uintptr_t>(plan_.kinds[i])), argv.argc(),
                              argv.ptrs.data(), argv.lens.data()) != REDIS_OK) {
      cleanse_commands(plan_.commands);
      fail_round("cannot send a command (connection closing)");
      return;
    }
  }
  cleanse_commands(plan_.commands);
  uv_timer_start(
      deadline_.get(),
      [](uv_timer_t* t) {
        if (t->data) static_cast<RedisTicketKeys*>(t->data)->fail_round("timed out");
      },
      static_cast<uint64_t>(keys_.redis_timeout.count() * (connecting ? 2 : 1)), 0);
}

void RedisTicketKeys::fail_round(const std::string& problem) {
  round_ = 0;
  if (deadline_.active()) uv_timer_stop(deadline_.get());
  reconnect_ = true;
  full_fetch_ = true;
  finish_round(problem);
  const milliseconds poll = state_.schedule().poll_interval();
  backoff_ = backoff_.count() == 0 ? std::min(milliseconds(1000), poll) : std::min(2 * backoff_, poll);
  arm_timer(backoff_);
}

void RedisTicketKeys::on_async_reply(redisReply* reply, uint64_t round, Kind kind, const std::string& error) {
  if (round != round_ || round_ == 0) return;  // a round that already ended
  if (reply == nullptr) {
    fail_round("connection lost" + (error.empty() ? std::string() : ": " + error));
    return;
  }
  if (kind == Kind::Set) {
    on_set_reply(reply);
    return;
  }
  Status st = kind == Kind::Auth ? on_auth_reply(reply) : on_mget_reply(plan_, reply);
  if (!st) {
    fail_round(st.error().message());
    return;
  }
  if (kind != Kind::Mget) return;
  // The MGET is the round's last command: the round succeeded.
  round_ = 0;
  uv_timer_stop(deadline_.get());
  backoff_ = milliseconds(0);
  finish_round(soft_problem_);
  // Poll again after the interval, or just after the next slot boundary so
  // the slot after it is created and fetched a whole interval ahead.
  const auto now = clock_->now();
  const auto& schedule = state_.schedule();
  const auto boundary = std::chrono::duration_cast<milliseconds>(
      schedule.slot_start(schedule.slot_of(now) + 1) - now + milliseconds(20));
  arm_timer(std::min(schedule.poll_interval(), boundary));
}

void RedisTicketKeys::on_connected(int status, const std::string& error) {
  if (status == REDIS_OK) return;
  ac_ = nullptr;  // hiredis frees the context when this callback returns
  if (round_ != 0) fail_round("cannot connect: " + error);
}

void RedisTicketKeys::on_disconnected() {
  ac_ = nullptr;  // hiredis frees the context when this callback returns
  if (round_ != 0) fail_round("connection lost");
}

void RedisTicketKeys::reply_cb(redisAsyncContext* ac, void* reply, void* privdata) noexcept {
  auto* self = static_cast<RedisTicketKeys*>(ac->data);
  if (self == nullptr) return;
  const auto packed = reinterpret_cast<uintptr_t>(privdata);
  self->on_async_reply(static_cast<redisReply*>(reply), packed >> 2, static_cast<Kind>(packed & 3),
                       ac->err ? std::string(ac->errstr) : std::string());
}

void RedisTicketKeys::connect_cb(const redisAsyncContext* ac, int status) noexcept {
  auto* self = static_cast<RedisTicketKeys*>(ac->data);
  if (self == nullptr) return;
  if (status != REDIS_OK) const_cast<redisAsyncContext*>(ac)->data = nullptr;  // about to be freed
  self->on_connected(status, ac->errstr ? ac->errstr : "");
}

void RedisTicketKeys::disconnect_cb(const redisAsyncContext* ac, int status) noexcept {
  auto* self = static_cast<RedisTicketKeys*>(ac->data);
  if (self == nullptr) return;
  const_cast<redisAsyncContext*>(ac)->data = nullptr;
  self->on_disconnected();
}

}  // namespace tlsfront::control
