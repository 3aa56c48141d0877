#include "control/ticket_key_manager.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "log/log.h"
#include "tls/ticket_key_source_file.h"

namespace tlsfront::control {
namespace {

constexpr unsigned kFilePollIntervalMs = 2'000;

// Key ids (never key material). A ring can hold thousands of keys when
// rotate_every is short against the session timeout: then only the count
// and the newest and oldest ids, so each rotation logs one short line.
std::string describe(const tls::TicketKeyRing& ring, tls::TimePoint now) {
  constexpr size_t kListedKeys = 8;
  const tls::TicketKey* current = ring.encryption_key(now);
  std::string out = fmt::format("encrypting with {}, decrypting with", current ? current->key_id() : "(none)");
  const auto& keys = ring.keys();
  if (keys.size() <= kListedKeys) {
    for (const auto& k : keys) fmt::format_to(std::back_inserter(out), " {}", k.key_id());
  } else {
    fmt::format_to(std::back_inserter(out), " {} keys (newest {}, oldest {})", keys.size(), keys.front().key_id(),
                   keys.back().key_id());
  }
  return out;
}

}  // namespace

TicketKeyManager::TicketKeyManager(const config::Tls& tls, tls::TicketKeyStore* store)
    : keys_(tls.ticket_keys), enabled_(tls.session_tickets), local_(tls), store_(store), tls_(tls) {}

TicketKeyManager::~TicketKeyManager() { stop(); }

Status TicketKeyManager::load_initial() {
  if (!enabled_) return {};
  if (keys_.source == config::TicketKeySource::Files) {
    auto loaded = tls::load_ticket_key_files(keys_);
    if (!loaded) return loaded.take_error();
    for (const auto& w : loaded->warnings) log::warn("ticket keys: {}", w);
    publish(std::move(loaded->ring), "loaded");
    return {};
  }
  if (keys_.source == config::TicketKeySource::Redis) {
    auto redis = RedisTicketKeys::create(tls_, &clock_, [this](tls::TicketKeyRing ring, const char* why) {
      publish(std::move(ring), why);
    });
    if (!redis) return redis.take_error();
    redis_ = std::move(redis).value();
    return redis_->load_initial();
  }
  auto ring = local_.rotate(nullptr, store_->now());
  if (!ring) return ring.take_error();
  publish(std::move(ring).value(), "generated");
  return {};
}

void TicketKeyManager::start(uv_loop_t* loop) {
  if (!enabled_) return;
  loop_ = loop;
  if (keys_.source == config::TicketKeySource::Redis) {
    if (redis_) redis_->start(loop);
    return;
  }
  if (keys_.source == config::TicketKeySource::Auto) {
    timer_.init([loop](uv_timer_t* h) { return uv_timer_init(loop, h); }, this);
    arm_rotation();
    return;
  }
  for (const auto& file : keys_.files) {
    auto watch = std::make_unique<UvHandle<uv_fs_poll_t>>();
    watch->init([loop](uv_fs_poll_t* h) { return uv_fs_poll_init(loop, h); }, this);
    uv_fs_poll_start(
        watch->get(),
        [](uv_fs_poll_t* h, int status, const uv_stat_t*, const uv_stat_t*) {
          if (h->data && status == 0) static_cast<TicketKeyManager*>(h->data)->reload();
        },
        file.c_str(), kFilePollIntervalMs);
    watches_.push_back(std::move(watch));
  }
}

void TicketKeyManager::stop() {
  timer_.close();
  watches_.clear();
  if (redis_) redis_->stop();
}

void TicketKeyManager::reload() {
  if (!enabled_ || keys_.source != config::TicketKeySource::Files) return;
  auto loaded = tls::load_ticket_key_files(keys_);
  if (!loaded) {
    log::error("ticket keys: keeping the current keys: {}", loaded.error().message());
    return;
  }
  for (const auto& w : loaded->warnings) log::warn("ticket keys: {}", w);
  publish(std::move(loaded->ring), "reloaded");
}

void TicketKeyManager::arm_rotation() {
  auto ring = store_->ring();
  if (!ring) return;
  const auto now = store_->now();
  const auto due = local_.next_rotation(*ring);
  const auto wait = std::max<std::chrono::milliseconds>(
      std::chrono::milliseconds(0), std::chrono::duration_cast<std::chrono::milliseconds>(due - now));
  uv_timer_start(
      timer_.get(),
      [](uv_timer_t* t) {
        if (t->data) static_cast<TicketKeyManager*>(t->data)->rotate_now();
      },
      static_cast<uint64_t>(wait.count()), 0);
}

void TicketKeyManager::rotate_now() {
  auto current = store_->ring();
  auto ring = local_.rotate(current.get(), store_->now());
  if (!ring) {
    // Keep serving with the keys we hold; try again in a minute.
    log::error("ticket keys: rotation failed, keeping the current keys: {}", ring.error().message());
    uv_timer_start(
        timer_.get(),
        [](uv_timer_t* t) {
          if (t->data) static_cast<TicketKeyManager*>(t->data)->rotate_now();
        },
        60'000, 0);
    return;
  }
  publish(std::move(ring).value(), "rotated");
  arm_rotation();
}

void TicketKeyManager::publish(tls::TicketKeyRing ring, const char* why) {
  log::info("ticket keys {}: {}", why, describe(ring, store_->now()));
  store_->publish(std::make_shared<const tls::TicketKeyRing>(std::move(ring)));
}

}  // namespace tlsfront::control
