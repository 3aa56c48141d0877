#include "control/redis_ticket_keys.h"

#include <fmt/format.h>
#include <openssl/crypto.h>

#include <algorithm>

#include "log/log.h"
#include "tls/ticket_key_source_local.h"

namespace tlsfront::control {
namespace {

using std::chrono::milliseconds;

// SET values are secrets: cleanse the plan's copies once hiredis has them.
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
  Secret password;
  if (!keys.redis_password_file.empty()) {
    auto loaded = tls::load_redis_password_file(keys.redis_password_file);
    if (!loaded) return loaded.take_error();
    if (!loaded->warning.empty()) log::warn("ticket keys: {}", loaded->warning);
    password = std::move(loaded->secret);
  }
  Secret wrap_key;
  if (!keys.wrap_key_file.empty()) {
    auto loaded = tls::load_wrap_key_file(keys.wrap_key_file);
    if (!loaded) return loaded.take_error();
    if (!loaded->warning.empty()) log::warn("ticket keys: {}", loaded->warning);
    wrap_key = std::move(loaded->secret);
  }
  auto redis_tls = redis::tls_of(keys, "tls.ticket_keys");
  if (!redis_tls) return redis_tls.take_error();
  auto codec = tls::RedisTicketKeyCodec::create(wrap_key.bytes());
  if (!codec) return make_error(Errc::Config, keys.wrap_key_file + ": " + codec.error().message());
  return std::unique_ptr<RedisTicketKeys>(
      new RedisTicketKeys(tls, clock, std::move(publish), std::move(codec).value(), std::move(password),
                          std::move(redis_tls).value()));
}

RedisTicketKeys::RedisTicketKeys(const config::Tls& tls, const Clock* clock, PublishFn publish,
                                 tls::RedisTicketKeyCodec codec, Secret password,
                                 std::shared_ptr<const redis::TlsContext> redis_tls)
    : keys_(tls.ticket_keys),
      clock_(clock),
      publish_(std::move(publish)),
      codec_(std::move(codec)),
      state_(tls::RedisSlotSchedule(tls.ticket_keys.rotate_every, tls.session_cache.timeout)),
      client_([&] {
        redis::Options o;
        o.address = keys_.redis;
        o.unix_socket = keys_.redis_unix_socket;
        o.user = keys_.redis_user;
        o.password = std::move(password);
        o.tls = std::move(redis_tls);
        o.timeout = keys_.redis_timeout;
        o.connect_timeout = keys_.redis_timeout;  // a round on a new connection gets twice as long
        const milliseconds poll = state_.schedule().poll_interval();
        o.first_backoff = std::min(milliseconds(1000), poll);
        o.max_backoff = poll;
        o.log_name = "ticket keys";
        o.trouble_level = log::Level::Error;
        o.consequence = [this] { return fmt::format("keeping the {} keys held, retrying", state_.size()); };
        return o;
      }()) {}

RedisTicketKeys::~RedisTicketKeys() { stop(); }

// ---- one round: plan and replies (shared by the sync and async paths) ----------

Result<RedisTicketKeys::Plan> RedisTicketKeys::plan_round(tls::TimePoint now) {
  const auto& schedule = state_.schedule();
  const int64_t current = schedule.slot_of(now);
  Plan plan;
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

void RedisTicketKeys::on_set_reply(redis::Reply reply) {
  // "OK" (this node's value won the slot) or nil (another value was there).
  if (reply.is_error() && soft_problem_.empty()) soft_problem_ = "SET refused: " + std::string(reply.str());
}

Status RedisTicketKeys::on_mget_reply(const Plan& plan, redis::Reply reply) {
  if (reply.is_error()) return make_error(Errc::Upstream, "MGET refused: " + std::string(reply.str()));
  if (reply.type() != redis::Reply::Type::Array || reply.size() != plan.mget_slots.size()) {
    return make_error(Errc::Protocol, "MGET: unexpected reply");
  }
  for (size_t i = 0; i < reply.size(); ++i) {
    const redis::Reply element = reply[i];
    if (!element.is_string()) continue;  // nil: no key for this slot (yet)
    const int64_t slot = plan.mget_slots[i];
    auto key = codec_.decode(element.str(), tls::redis_slot_key(keys_.redis_prefix, slot));
    if (!key) {
      if (soft_problem_.empty()) soft_problem_ = "a ticket key in redis cannot be used: " + key.error().message();
      continue;
    }
    if (state_.merge(slot, std::move(key).value())) changed_ = true;
  }
  full_fetch_ = false;
  return {};
}

void RedisTicketKeys::finish_round() {
  const auto now = clock_->now();
  if (state_.prune(now)) changed_ = true;
  const char* why = "fetched from redis";
  auto added = state_.ensure_encryption_key(now);
  if (!added) {
    log::error("ticket keys: {}", added.error().message());
  } else if (*added) {
    log::warn("ticket keys: no cluster key encrypts now; using a local key until redis {} answers", client_.where());
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
  soft_problem_.clear();
  Status st = client_.call_blocking(plan->commands, [&](size_t i, redis::Reply reply) -> Status {
    if (plan->kinds[i] == Kind::Set) {
      on_set_reply(reply);
      return {};
    }
    return on_mget_reply(*plan, reply);
  });
  cleanse_commands(plan->commands);
  client_.answered(st ? soft_problem_ : st.error().message());  // logged once per change
  changed_ = true;  // always publish a first ring
  finish_round();
  return {};
}

// ---- the async client on the control loop ---------------------------------------

void RedisTicketKeys::start(uv_loop_t* loop) {
  client_.start(loop);
  timer_.init([loop](uv_timer_t* h) { return uv_timer_init(loop, h); }, this);
  arm_timer(milliseconds(0));
}

void RedisTicketKeys::stop() {
  round_ = 0;
  timer_.close();
  client_.close();
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

void RedisTicketKeys::poll_now() {
  if (round_ != 0) return;
  if (const milliseconds wait = client_.retry_in(); wait.count() > 0) {
    arm_timer(wait);  // still backing off after trouble
    return;
  }
  auto plan = plan_round(clock_->now());
  if (!plan) {
    client_.fail(plan.error().message());
    fail_round();
    return;
  }
  round_ = next_round_++;
  plan_ = std::move(plan).value();
  soft_problem_.clear();
  for (size_t i = 0; i < plan_.commands.size(); ++i) {
    const Kind kind = plan_.kinds[i];
    const bool sent = client_.command(plan_.commands[i], [this, round = round_, kind](Result<redis::Reply> reply) {
      on_async_reply(std::move(reply), round, kind);
    });
    if (!sent) {  // the client logged why and backs off
      cleanse_commands(plan_.commands);
      fail_round();
      return;
    }
  }
  cleanse_commands(plan_.commands);
}

void RedisTicketKeys::fail_round() {
  round_ = 0;
  full_fetch_ = true;
  finish_round();
  arm_timer(client_.retry_in());
}

void RedisTicketKeys::on_async_reply(Result<redis::Reply> reply, uint64_t round, Kind kind) {
  if (round != round_ || round_ == 0) return;  // a round that already ended
  if (!reply) {  // timeout or connection trouble: the client logged it
    fail_round();
    return;
  }
  if (kind == Kind::Set) {
    on_set_reply(*reply);
    return;
  }
  if (Status st = on_mget_reply(plan_, *reply); !st) {
    round_ = 0;  // the client's fail() fails this round's other commands
    client_.fail(st.error().message());
    fail_round();
    return;
  }
  // The MGET is the round's last command: the round succeeded.
  round_ = 0;
  client_.answered(soft_problem_);
  finish_round();
  // Poll again after the interval, or just after the next slot boundary so
  // the slot after it is created and fetched a whole interval ahead.
  const auto now = clock_->now();
  const auto& schedule = state_.schedule();
  const auto boundary = std::chrono::duration_cast<milliseconds>(
      schedule.slot_start(schedule.slot_of(now) + 1) - now + milliseconds(20));
  arm_timer(std::min(schedule.poll_interval(), boundary));
}

}  // namespace tlsfront::control
