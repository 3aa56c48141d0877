// The pure half of source = "redis": slot arithmetic, value encoding and
// wrapping, secret files, and the ring a node builds from fetched slots.
#include "tls/ticket_key_source_redis.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tls/ticket_key_source_local.h"

namespace tlsfront::tls {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

const TimePoint kEpoch{};

TicketKey random_key() {
  auto k = LocalTicketKeySource::generate_key(TimePoint::min(), TimePoint::max());
  EXPECT_TRUE(k.ok());
  return *k;
}

std::string as_string(std::span<const uint8_t> b) { return std::string(b.begin(), b.end()); }

class TempFile {
 public:
  explicit TempFile(const std::string& contents, mode_t mode = 0600) {
    char tmpl[] = "/tmp/tlsfront-redis-test-XXXXXX";
    int fd = mkstemp(tmpl);
    EXPECT_GE(fd, 0);
    path_ = tmpl;
    EXPECT_EQ(write(fd, contents.data(), contents.size()), static_cast<ssize_t>(contents.size()));
    close(fd);
    chmod(path_.c_str(), mode);
  }
  ~TempFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// --- slots -------------------------------------------------------------------

TEST(RedisSlotSchedule, SlotsFollowTheWallClock) {
  RedisSlotSchedule s(1h, 24h);
  EXPECT_EQ(s.slot_of(kEpoch), 0);
  EXPECT_EQ(s.slot_of(kEpoch + 1h - 1ms), 0);
  EXPECT_EQ(s.slot_of(kEpoch + 1h), 1);
  EXPECT_EQ(s.slot_of(kEpoch - 1ms), -1);  // floor, not truncation
  const TimePoint t = kEpoch + 493'000h + 17min;
  EXPECT_EQ(s.slot_of(t), 493'000);
  EXPECT_EQ(s.slot_start(493'000), kEpoch + 493'000h);
  EXPECT_EQ(s.key_expiry(493'000), kEpoch + 493'000h + 2h + 24h);
  // Written 17 minutes into the slot before: lives until expiry + R of slack.
  EXPECT_EQ(s.redis_ttl(493'001, t), 493'001h + 3h + 24h - 493'000h - 17min);
  EXPECT_EQ(s.redis_ttl(1, t), 1000ms);  // long gone: never a zero or negative PX
}

TEST(RedisSlotSchedule, WindowCoversEveryLiveKeyAndIsBounded) {
  RedisSlotSchedule s(1h, 24h);
  const TimePoint t = kEpoch + 1000h + 30min;  // slot 1000
  const int64_t first = s.first_live_slot(t);
  EXPECT_GT(s.key_expiry(first), t);
  EXPECT_LE(s.key_expiry(first - 1), t);
  EXPECT_EQ(first, 1000 - 25);  // 2R + L = 26h: 26 live slots up to the current one
  // A 2 s rotation with 1 d tickets would want 43k slots: capped.
  RedisSlotSchedule fast(2s, 24h);
  const TimePoint u = kEpoch + 2'000'000s;
  EXPECT_EQ(fast.slot_of(u) + 1 - fast.first_live_slot(u) + 1, RedisSlotSchedule::kMaxWindowSlots);
}

TEST(RedisSlotSchedule, PollIntervalIsATenthClamped) {
  EXPECT_EQ(RedisSlotSchedule(1h, 24h).poll_interval(), 60s);
  EXPECT_EQ(RedisSlotSchedule(5min, 24h).poll_interval(), 30s);
  EXPECT_EQ(RedisSlotSchedule(2s, 24h).poll_interval(), 1s);
}

TEST(RedisSlotSchedule, KeyNames) {
  EXPECT_EQ(redis_slot_key("tlsfront", 493000), "tlsfront:stek:493000");
  EXPECT_EQ(redis_slot_key("eu:edge", -1), "eu:edge:stek:-1");
}

// --- values ---------------------------------------------------------------------

TEST(RedisTicketKeyCodec, PlainRoundTrip) {
  auto codec = RedisTicketKeyCodec::create({});
  ASSERT_TRUE(codec.ok());
  EXPECT_FALSE(codec->wraps());
  TicketKey key = random_key();
  auto value = codec->encode(key, "p:stek:7");
  ASSERT_TRUE(value.ok());
  EXPECT_TRUE(value->starts_with("v1:"));
  EXPECT_EQ(value->size(), 3u + 108u);  // base64 of 80 bytes
  auto back = codec->decode(*value, "p:stek:7");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->name, key.name);
  EXPECT_EQ(back->hmac_secret, key.hmac_secret);
  EXPECT_EQ(back->aes_key, key.aes_key);
  EXPECT_EQ(back->cipher, TicketKey::Cipher::Aes256Cbc);
}

TEST(RedisTicketKeyCodec, WrappedRoundTripHidesTheKey) {
  std::array<uint8_t, 32> wrap{};
  wrap.fill(0x42);
  auto codec = RedisTicketKeyCodec::create(wrap);
  ASSERT_TRUE(codec.ok());
  TicketKey key = random_key();
  auto value = codec->encode(key, "p:stek:7");
  ASSERT_TRUE(value.ok());
  EXPECT_TRUE(value->starts_with("v1g:"));
  auto again = codec->encode(key, "p:stek:7");
  ASSERT_TRUE(again.ok());
  EXPECT_NE(*value, *again);  // fresh nonce each time
  // The plain encoding (and so its base64) never appears in the wrapped value.
  auto plain_codec = RedisTicketKeyCodec::create({});
  auto plain = plain_codec->encode(key, "p:stek:7");
  EXPECT_EQ(value->find(plain->substr(3, 20)), std::string::npos);
  auto back = codec->decode(*value, "p:stek:7");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->name, key.name);
  EXPECT_EQ(back->aes_key, key.aes_key);
  EXPECT_EQ(back->hmac_secret, key.hmac_secret);
}

TEST(RedisTicketKeyCodec, WrongWrapKeyMovedValueAndTamperingAreRejected) {
  std::array<uint8_t, 32> wrap{}, other{};
  wrap.fill(1);
  other.fill(2);
  auto codec = RedisTicketKeyCodec::create(wrap);
  auto wrong = RedisTicketKeyCodec::create(other);
  auto value = codec->encode(random_key(), "p:stek:7");
  ASSERT_TRUE(value.ok());
  auto r = wrong->decode(*value, "p:stek:7");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::Tls);
  // The Redis key name is authenticated: a value moved to another slot fails.
  r = codec->decode(*value, "p:stek:8");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::Tls);
  std::string tampered = *value;
  tampered[10] = tampered[10] == 'A' ? 'B' : 'A';
  r = codec->decode(tampered, "p:stek:7");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::Tls);
}

TEST(RedisTicketKeyCodec, MismatchedModesAndGarbageAreRejected) {
  std::array<uint8_t, 32> wrap{};
  auto wrapping = RedisTicketKeyCodec::create(wrap);
  auto plain = RedisTicketKeyCodec::create({});
  auto p = plain->encode(random_key(), "k");
  auto w = wrapping->encode(random_key(), "k");
  auto r = wrapping->decode(*p, "k");  // could have been planted by anyone with write access
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::Config);
  r = plain->decode(*w, "k");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::Config);
  for (const std::string& bad : std::vector<std::string>{"", "v2:AAAA", "v1:", "v1:not base64!", "v1:" + p->substr(3, 100),
                          *p + "AAAA"}) {
    r = plain->decode(bad, "k");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, Errc::Protocol) << bad;
  }
  EXPECT_FALSE(RedisTicketKeyCodec::create(std::span<const uint8_t>(wrap.data(), 16)).ok());
  TicketKey aes128 = random_key();
  aes128.cipher = TicketKey::Cipher::Aes128Cbc;
  EXPECT_FALSE(plain->encode(aes128, "k").ok());
}

// --- secret files -------------------------------------------------------------------

TEST(RedisSecretFiles, PasswordFileTrimsOneNewline) {
  TempFile f("s3cret pass\n");
  auto p = load_redis_password_file(f.path());
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->secret.str(), "s3cret pass");
  EXPECT_TRUE(p->warning.empty());
  TempFile crlf("pw\r\n", 0644);
  p = load_redis_password_file(crlf.path());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->secret.str(), "pw");
  EXPECT_NE(p->warning.find("chmod 600"), std::string::npos);
  TempFile empty("\n");
  p = load_redis_password_file(empty.path());
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code, Errc::Config);
  p = load_redis_password_file("/nonexistent/pw");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("/nonexistent/pw"), std::string::npos);
}

TEST(RedisSecretFiles, WrapKeyIsExactly32Bytes) {
  TempFile good(std::string(32, 'k'));
  auto k = load_wrap_key_file(good.path());
  ASSERT_TRUE(k.ok()) << k.error().message();
  EXPECT_EQ(k->secret.bytes().size(), 32u);
  TempFile nl(std::string(32, 'k') + "\n");
  auto bad = load_wrap_key_file(nl.path());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("33 bytes"), std::string::npos);
}

// --- the ring --------------------------------------------------------------------------

TEST(RedisTicketKeyState, RingFromFetchedSlotsSwitchesByClock) {
  RedisSlotSchedule schedule(1h, 24h);
  RedisTicketKeyState state(schedule);
  const int64_t n = 500'000;
  TicketKey kn = random_key(), knext = random_key(), kprev = random_key();
  EXPECT_TRUE(state.merge(n, kn));
  EXPECT_TRUE(state.merge(n + 1, knext));
  EXPECT_TRUE(state.merge(n - 1, kprev));
  EXPECT_FALSE(state.merge(n, kn));  // same value fetched again: no change
  TicketKeyRing ring = state.ring();
  ASSERT_EQ(ring.size(), 3u);
  const TimePoint mid = schedule.slot_start(n) + 30min;
  ASSERT_NE(ring.encryption_key(mid), nullptr);
  EXPECT_EQ(ring.encryption_key(mid)->name, kn.name);
  // The next slot's key decrypts already (a node whose clock is ahead uses it)...
  EXPECT_NE(ring.find(knext.name, mid), nullptr);
  // ...and encrypts from its slot start, with no message needed.
  EXPECT_EQ(ring.encryption_key(schedule.slot_start(n + 1))->name, knext.name);
  EXPECT_EQ(ring.encryption_key(schedule.slot_start(n + 1) - 1ms)->name, kn.name);
  // Each key decrypts until slot start + 2R + L.
  EXPECT_NE(ring.find(kn.name, schedule.slot_start(n) + 26h - 1ms), nullptr);
  EXPECT_EQ(ring.find(kn.name, schedule.slot_start(n) + 26h), nullptr);
}

TEST(RedisTicketKeyState, ChangedSlotValueKeepsTheOldKeyForDecryption) {
  RedisSlotSchedule schedule(1h, 24h);
  RedisTicketKeyState state(schedule);
  const int64_t n = 500'000;
  TicketKey old_key = random_key(), new_key = random_key();
  state.merge(n, old_key);
  EXPECT_TRUE(state.merge(n, new_key));  // Redis lost slot n; a node made another
  TicketKeyRing ring = state.ring();
  const TimePoint mid = schedule.slot_start(n) + 1min;
  EXPECT_EQ(ring.encryption_key(mid)->name, new_key.name);
  EXPECT_NE(ring.find(old_key.name, mid), nullptr);
}

TEST(RedisTicketKeyState, LocalFallbackOnlyWhenNothingEncryptsAndClusterKeyWins) {
  RedisSlotSchedule schedule(1h, 24h);
  RedisTicketKeyState state(schedule);
  const int64_t n = 500'000;
  const TimePoint now = schedule.slot_start(n) + 10min;
  auto added = state.ensure_encryption_key(now);
  ASSERT_TRUE(added.ok());
  EXPECT_TRUE(*added);
  const TicketKey local = *state.ring().encryption_key(now);
  EXPECT_EQ(local.activates_at, schedule.slot_start(n));
  added = state.ensure_encryption_key(now);
  EXPECT_FALSE(*added);  // one is enough
  // The cluster's key for the same slot takes over encryption at once; the
  // local key still decrypts the tickets made with it.
  TicketKey cluster = random_key();
  state.merge(n, cluster);
  TicketKeyRing ring = state.ring();
  EXPECT_EQ(ring.encryption_key(now)->name, cluster.name);
  EXPECT_NE(ring.find(local.name, now), nullptr);
}

TEST(RedisTicketKeyState, PruneDropsExpiredKeys) {
  RedisSlotSchedule schedule(2s, 10s);
  RedisTicketKeyState state(schedule);
  state.merge(100, random_key());
  state.merge(101, random_key());
  EXPECT_FALSE(state.prune(schedule.slot_start(100) + 14s - 1ms));
  EXPECT_TRUE(state.prune(schedule.slot_start(100) + 14s));
  EXPECT_EQ(state.size(), 1u);
  EXPECT_FALSE(state.has_slot(100));
  EXPECT_TRUE(state.has_slot(101));
}

}  // namespace
}  // namespace tlsfront::tls
