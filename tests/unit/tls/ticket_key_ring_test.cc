// Ticket keys: ring selection by time, local rotation, nginx key files, and
// real TLS 1.2/1.3 ticket resumption over an in-memory BIO pair (no sockets).
#include "tls/ticket_key_ring.h"

#include <gtest/gtest.h>
#include <openssl/err.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "tls/ticket_key_source_file.h"
#include "tls/ticket_key_source_local.h"
#include "support/fake_clock.h"
#include "shared/temp_dir.h"
#include "support/test_pki.h"
#include "support/tls_pair.h"
#include "tls/tls_context.h"

namespace tlsfront::tls {
namespace {

using namespace std::chrono_literals;

using testing::kPki;
const TimePoint kT0 = TimePoint(std::chrono::seconds(1'800'000'000));

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

TicketKey make_key(uint8_t tag, TimePoint activates, TimePoint expires) {
  TicketKey k;
  k.name.fill(tag);
  k.hmac_secret.fill(static_cast<uint8_t>(tag + 1));
  k.aes_key.fill(static_cast<uint8_t>(tag + 2));
  k.activates_at = activates;
  k.expires_at = expires;
  return k;
}

std::span<const uint8_t> name_of(const TicketKey& k) { return std::span<const uint8_t>(k.name); }

// --- ring selection --------------------------------------------------------

TEST(TicketKeyRing, EncryptsWithNewestActiveKeyAndDecryptsUntilExpiry) {
  TicketKey a = make_key(0xa0, kT0, kT0 + 10h);
  TicketKey b = make_key(0xb0, kT0 + 1h, kT0 + 11h);
  TicketKey c = make_key(0xc0, kT0 + 2h, kT0 + 12h);  // distributed ahead of use
  TicketKeyRing ring({a, c, b});

  EXPECT_EQ(ring.encryption_key(kT0 - 1s), nullptr);
  ASSERT_NE(ring.encryption_key(kT0 + 30min), nullptr);
  EXPECT_EQ(ring.encryption_key(kT0 + 30min)->name, a.name);
  EXPECT_EQ(ring.encryption_key(kT0 + 1h)->name, b.name);
  EXPECT_EQ(ring.encryption_key(kT0 + 5h)->name, c.name);

  // Not yet active keys already decrypt (another node may have switched first).
  const TicketKey* found_c = ring.find(name_of(c), kT0 + 30min);
  ASSERT_NE(found_c, nullptr);
  EXPECT_FALSE(ring.is_encryption_key(found_c, kT0 + 30min));
  EXPECT_TRUE(ring.is_encryption_key(found_c, kT0 + 2h));
  const TicketKey* found_a = ring.find(name_of(a), kT0 + 9h);
  ASSERT_NE(found_a, nullptr);
  EXPECT_FALSE(ring.is_encryption_key(found_a, kT0 + 9h));  // renew
  EXPECT_EQ(ring.find(name_of(a), kT0 + 10h), nullptr);     // expired
  // The newest key expiring leaves the older active one encrypting.
  EXPECT_EQ(ring.encryption_key(kT0 + 12h), nullptr);
  EXPECT_EQ(ring.encryption_key(kT0 + 11h + 30min)->name, c.name);

  TicketKey unknown = make_key(0xee, kT0, kT0 + 1h);
  EXPECT_EQ(ring.find(name_of(unknown), kT0), nullptr);
  EXPECT_EQ(ring.find(std::span<const uint8_t>(a.name.data(), 15), kT0), nullptr);
}

TEST(TicketKeyRing, EqualActivationPrefersTheFirstGiven) {
  TicketKeyRing ring({make_key(1, TimePoint::min(), TimePoint::max()), make_key(2, TimePoint::min(), TimePoint::max())});
  ASSERT_NE(ring.encryption_key(kT0), nullptr);
  EXPECT_EQ(ring.encryption_key(kT0)->name[0], 1);
  EXPECT_TRUE(TicketKeyRing().empty());
  EXPECT_EQ(TicketKeyRing().encryption_key(kT0), nullptr);
}

TEST(TicketKey, KeyIdIsHexOfTheFirstFourNameBytes) {
  TicketKey k;
  k.name = {0x1a, 0x2b, 0x3c, 0x4d, 0xff, 0xff};
  EXPECT_EQ(k.key_id(), "1a2b3c4d");
}

// --- local rotation --------------------------------------------------------

TEST(TicketKeyLocal, RotationKeepsOldKeysThroughTheTicketLifetime) {
  LocalTicketKeySource src(1h, 24h);
  EXPECT_EQ(src.key_lifetime(), 26h);
  auto first = src.rotate(nullptr, kT0);
  ASSERT_TRUE(first.ok()) << first.error().message();
  ASSERT_EQ(first->size(), 1u);
  const TicketKey first_key = *first->encryption_key(kT0);
  EXPECT_EQ(first_key.cipher, TicketKey::Cipher::Aes256Cbc);
  EXPECT_EQ(src.next_rotation(*first), kT0 + 1h);

  TicketKeyRing ring = std::move(first).value();
  for (int h = 1; h <= 30; ++h) {
    const TimePoint now = kT0 + std::chrono::hours(h);
    auto next = src.rotate(&ring, now);
    ASSERT_TRUE(next.ok());
    ring = std::move(next).value();
    EXPECT_EQ(ring.encryption_key(now)->activates_at, now);
    EXPECT_EQ(src.next_rotation(ring), now + 1h);
    EXPECT_NE(ring.encryption_key(now)->name, first_key.name);
    // A ticket issued just before the first rotation (T0 + 1h) lives 24h.
    const bool first_kept = ring.find(name_of(first_key), now) != nullptr;
    EXPECT_EQ(first_kept, now < kT0 + 26h) << "hour " << h;
    EXPECT_LE(ring.size(), 27u);
  }
  // Fresh keys are random: no two names alike.
  for (size_t i = 0; i < ring.size(); ++i) {
    for (size_t j = i + 1; j < ring.size(); ++j) EXPECT_NE(ring.keys()[i].name, ring.keys()[j].name);
  }
}

TEST(TicketKeyLocal, RejectsNonPositiveIntervals) {
  LocalTicketKeySource src(0ms, 24h);
  auto r = src.rotate(nullptr, kT0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::InvalidArgument);
}

TEST(TicketKeyLocal, ReadsIntervalsFromConfig) {
  config::Tls tls;
  tls.ticket_keys.rotate_every = 2h;
  tls.session_cache.timeout = 10h;
  LocalTicketKeySource src(tls);
  EXPECT_EQ(src.rotate_every(), 2h);
  EXPECT_EQ(src.key_lifetime(), 14h);
}

// --- nginx key files -------------------------------------------------------

config::TicketKeys files_config(std::vector<std::string> files) {
  config::TicketKeys k;
  k.source = config::TicketKeySource::Files;
  k.files = std::move(files);
  k.files_origin = "t.toml:12:1";
  return k;
}

TEST(TicketKeyFile, Loads80ByteFilesWithNginxLayout) {
  const std::string path = kPki + "/ticket-key-80.key";
  const auto raw = read_bytes(path);
  ASSERT_EQ(raw.size(), 80u);
  auto loaded = load_ticket_key_files(files_config({path}));
  ASSERT_TRUE(loaded.ok()) << loaded.error().message();
  EXPECT_TRUE(loaded->warnings.empty());
  ASSERT_EQ(loaded->ring.size(), 1u);
  const TicketKey& k = loaded->ring.keys()[0];
  EXPECT_EQ(k.cipher, TicketKey::Cipher::Aes256Cbc);
  EXPECT_EQ(k.secret_bytes(), 32u);
  EXPECT_TRUE(std::equal(k.name.begin(), k.name.end(), raw.begin()));
  EXPECT_TRUE(std::equal(k.hmac_secret.begin(), k.hmac_secret.end(), raw.begin() + 16));
  EXPECT_TRUE(std::equal(k.aes_key.begin(), k.aes_key.end(), raw.begin() + 48));
  EXPECT_EQ(k.expires_at, TimePoint::max());
  EXPECT_EQ(loaded->ring.encryption_key(kT0), &k);
}

TEST(TicketKeyFile, Loads48ByteFilesWithNginxLayout) {
  const std::string path = kPki + "/ticket-key-48.key";
  const auto raw = read_bytes(path);
  ASSERT_EQ(raw.size(), 48u);
  auto loaded = load_ticket_key_files(files_config({path}));
  ASSERT_TRUE(loaded.ok()) << loaded.error().message();
  const TicketKey& k = loaded->ring.keys()[0];
  EXPECT_EQ(k.cipher, TicketKey::Cipher::Aes128Cbc);
  EXPECT_EQ(k.secret_bytes(), 16u);
  EXPECT_TRUE(std::equal(k.name.begin(), k.name.end(), raw.begin()));
  // nginx: 48-byte files are name, AES key, HMAC secret (in that order).
  EXPECT_TRUE(std::equal(k.aes_key.begin(), k.aes_key.begin() + 16, raw.begin() + 16));
  EXPECT_TRUE(std::equal(k.hmac_secret.begin(), k.hmac_secret.begin() + 16, raw.begin() + 32));
}

TEST(TicketKeyFile, FirstFileEncryptsAllDecrypt) {
  auto loaded = load_ticket_key_files(files_config({kPki + "/ticket-key-48.key", kPki + "/ticket-key-80.key"}));
  ASSERT_TRUE(loaded.ok()) << loaded.error().message();
  ASSERT_EQ(loaded->ring.size(), 2u);
  const TicketKey* enc = loaded->ring.encryption_key(kT0);
  ASSERT_NE(enc, nullptr);
  EXPECT_EQ(enc->cipher, TicketKey::Cipher::Aes128Cbc);
  const auto raw80 = read_bytes(kPki + "/ticket-key-80.key");
  const TicketKey* other = loaded->ring.find(std::span<const uint8_t>(raw80.data(), 16), kT0 + 24h * 3650);
  ASSERT_NE(other, nullptr);
  EXPECT_FALSE(loaded->ring.is_encryption_key(other, kT0));
}

TEST(TicketKeyFile, WrongSizeNamesFileIndexAndOrigin) {
  const std::string bad = kPki + "/ticket-key-bad.key";
  auto loaded = load_ticket_key_files(files_config({kPki + "/ticket-key-80.key", bad}));
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().code, Errc::Config);
  EXPECT_EQ(loaded.error().message(),
            "t.toml:12:1: tls.ticket_keys.files[1]: \"" + bad +
                "\" is 47 bytes; a ticket key file holds 48 or 80 bytes (scripts/gen-ticket-key.sh writes one)");
}

TEST(TicketKeyFile, UnreadableFileReportsStrerror) {
  auto loaded = load_ticket_key_files(files_config({kPki + "/no-such.key"}));
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().code, Errc::Config);
  EXPECT_NE(loaded.error().message().find("t.toml:12:1: tls.ticket_keys.files[0]"), std::string::npos);
  EXPECT_NE(loaded.error().message().find("No such file or directory"), std::string::npos)
      << loaded.error().message();

  auto empty = load_ticket_key_files(files_config({}));
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().code, Errc::Config);

  auto dir = load_ticket_key_files(files_config({kPki}));
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.error().message().find("not a regular file"), std::string::npos);
}

// A FIFO put where a key file was must not block the (control-loop) reload
// waiting for a writer: it is "not a regular file" like a directory.
TEST(TicketKeyFile, FifoIsRejectedWithoutBlocking) {
  const TempDir dir("tlsfront-fifo");
  const std::string path = dir.file("k.key");
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  auto loaded = load_ticket_key_files(files_config({path}));
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.error().message().find("not a regular file"), std::string::npos) << loaded.error().message();
}

TEST(TicketKeyFile, WarnsWhenReadableByOthers) {
  const TempDir dir("tlsfront-tk");
  const std::string path = dir.file("k.key");
  std::filesystem::copy_file(kPki + "/ticket-key-80.key", path, std::filesystem::copy_options::overwrite_existing);
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  auto loaded = load_ticket_key_files(files_config({path}));
  ASSERT_TRUE(loaded.ok()) << loaded.error().message();
  ASSERT_EQ(loaded->warnings.size(), 1u);
  EXPECT_NE(loaded->warnings[0].find("0644"), std::string::npos) << loaded->warnings[0];
  EXPECT_NE(loaded->warnings[0].find("tls.ticket_keys.files[0]"), std::string::npos);
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  auto quiet = load_ticket_key_files(files_config({path}));
  ASSERT_TRUE(quiet.ok());
  EXPECT_TRUE(quiet->warnings.empty());
}

// A file key is active "always"; its file's mtime is what its age counts from.
TEST(TicketKeyFile, CarriesTheFilesModificationTime) {
  const TempDir dir("tlsfront-tk");
  const std::string path = dir.file("k.key");
  std::filesystem::copy_file(kPki + "/ticket-key-80.key", path, std::filesystem::copy_options::overwrite_existing);
  const timespec times[2] = {{1'700'000'000, 0}, {1'700'000'000, 250'000'000}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  auto loaded = load_ticket_key_files(files_config({path}));
  ASSERT_TRUE(loaded.ok()) << loaded.error().message();
  const TicketKey& k = loaded->ring.keys()[0];
  EXPECT_EQ(k.activates_at, TimePoint::min());
  EXPECT_EQ(k.file_modified_at, TimePoint(std::chrono::seconds(1'700'000'000) + 250ms));
}

TEST(TicketKeyFile, ParseRejectsOtherSizes) {
  std::vector<uint8_t> bytes(64);
  auto k = parse_nginx_ticket_key(bytes);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.error().code, Errc::InvalidArgument);
}

// --- real TLS over a BIO pair ----------------------------------------------

struct Outcome {
  bool handshake_ok = false;
  bool reused = false;
  bool ticket = false;  // resumed_with_ticket() on the server
  SslSessionPtr session;  // the client's session after the server's tickets arrived
};

// The first 16 bytes of the client's ticket: the key name (RFC 5077 §4).
std::vector<uint8_t> ticket_key_name(const SSL_SESSION* s) {
  const unsigned char* tick = nullptr;
  size_t len = 0;
  SSL_SESSION_get0_ticket(s, &tick, &len);
  if (len < 16) return {};
  return std::vector<uint8_t>(tick, tick + 16);
}

std::vector<uint8_t> as_vector(const TicketKey& k) { return std::vector<uint8_t>(k.name.begin(), k.name.end()); }

class TicketTls : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ctx_ = testing::verifying_client_ctx();
    ASSERT_TRUE(client_ctx_);
  }

  void only(int version) {
    SSL_CTX_set_min_proto_version(client_ctx_.get(), version);
    SSL_CTX_set_max_proto_version(client_ctx_.get(), version);
  }

  // A server context with tickets from `store`.
  std::unique_ptr<TlsContext> server(TicketKeyStore* store, const config::Tls& tls = testing::server_tls()) {
    auto ctx = TlsContext::create(tls);
    EXPECT_TRUE(ctx.ok()) << ctx.error().message();
    if (!ctx.ok()) return nullptr;
    attach(ctx.value()->get(), store, tls);
    return std::move(ctx).value();
  }

  // Full handshake (or resumption of `resume`), then one byte each way so the
  // client processes TLS 1.3 NewSessionTickets.
  Outcome connect(const TlsContext& server_ctx, SSL_SESSION* resume) {
    testing::PairOutcome pair = testing::connect_pair(client_ctx_.get(), server_ctx.get(), "localhost", resume);
    Outcome out;
    out.handshake_ok = pair.handshake_ok;
    if (!pair.handshake_ok) return out;
    out.reused = pair.reused;
    out.ticket = resumed_with_ticket(pair.server.get());
    out.session = std::move(pair.session);
    return out;
  }

  // Full handshake on `issuer`, then resumption from its ticket on `resumer`.
  void expect_ticket_resumption(const TlsContext& issuer, const TlsContext& resumer) {
    Outcome full = connect(issuer, nullptr);
    ASSERT_TRUE(full.handshake_ok);
    EXPECT_FALSE(full.reused);
    EXPECT_FALSE(full.ticket);
    ASSERT_TRUE(full.session);
    ASSERT_TRUE(SSL_SESSION_has_ticket(full.session.get()));
    Outcome again = connect(resumer, full.session.get());
    ASSERT_TRUE(again.handshake_ok);
    EXPECT_TRUE(again.reused);
    EXPECT_TRUE(again.ticket);
  }

  SslCtxPtr client_ctx_;
};

TEST_F(TicketTls, Tls13TicketResumption) {
  only(TLS1_3_VERSION);
  FakeClock clock(kT0);
  TicketKeyStore store(&clock);
  auto ring = LocalTicketKeySource(1h, 24h).rotate(nullptr, kT0);
  ASSERT_TRUE(ring.ok());
  store.publish(std::make_shared<const TicketKeyRing>(std::move(ring).value()));
  auto ctx = server(&store);
  ASSERT_TRUE(ctx);
  expect_ticket_resumption(*ctx, *ctx);
  const TicketCounters c = store.counters();
  // session_ticket_count (1) after the full handshake; OpenSSL sends none after
  // a resumption with the current key (the ticket stays usable), only on renewal.
  EXPECT_EQ(c.issued, 1u);
  EXPECT_EQ(c.decrypted_current, 1u);
  EXPECT_EQ(c.decrypted_renewed, 0u);
  EXPECT_EQ(c.failed, 0u);
}

TEST_F(TicketTls, Tls12TicketResumption) {
  only(TLS1_2_VERSION);
  TicketKeyStore store;  // system clock
  auto ring = LocalTicketKeySource(1h, 24h).rotate(nullptr, std::chrono::system_clock::now());
  ASSERT_TRUE(ring.ok());
  store.publish(std::make_shared<const TicketKeyRing>(std::move(ring).value()));
  auto ctx = server(&store);
  ASSERT_TRUE(ctx);
  expect_ticket_resumption(*ctx, *ctx);
  const TicketCounters c = store.counters();
  EXPECT_EQ(c.issued, 1u);  // TLS 1.2: no new ticket when resumed with the current key
  EXPECT_EQ(c.decrypted_current, 1u);
}

TEST_F(TicketTls, SharedKeyFileResumesAcrossNodes) {
  for (int version : {TLS1_3_VERSION, TLS1_2_VERSION}) {
    SCOPED_TRACE(version);
    only(version);
    // Two nodes: separate stores and contexts, the same key files.
    const auto files = files_config({kPki + "/ticket-key-80.key", kPki + "/ticket-key-48.key"});
    auto a_keys = load_ticket_key_files(files);
    auto b_keys = load_ticket_key_files(files);
    ASSERT_TRUE(a_keys.ok() && b_keys.ok());
    TicketKeyStore a, b;
    a.publish(std::make_shared<const TicketKeyRing>(std::move(a_keys->ring)));
    b.publish(std::make_shared<const TicketKeyRing>(std::move(b_keys->ring)));
    auto ctx_a = server(&a);
    auto ctx_b = server(&b);
    ASSERT_TRUE(ctx_a && ctx_b);
    expect_ticket_resumption(*ctx_a, *ctx_b);
    EXPECT_EQ(b.counters().decrypted_current, 1u);
  }
}

TEST_F(TicketTls, Aes128KeyFromA48ByteFileResumes) {
  only(TLS1_3_VERSION);
  auto keys = load_ticket_key_files(files_config({kPki + "/ticket-key-48.key"}));
  ASSERT_TRUE(keys.ok());
  TicketKeyStore store;
  store.publish(std::make_shared<const TicketKeyRing>(std::move(keys->ring)));
  auto ctx = server(&store);
  ASSERT_TRUE(ctx);
  expect_ticket_resumption(*ctx, *ctx);
}

TEST_F(TicketTls, AfterRotationOldTicketResumesAndIsRenewed) {
  for (int version : {TLS1_3_VERSION, TLS1_2_VERSION}) {
    SCOPED_TRACE(version);
    only(version);
    FakeClock clock(kT0);
    TicketKeyStore store(&clock);
    LocalTicketKeySource src(1h, 24h);
    auto ring0 = src.rotate(nullptr, kT0);
    ASSERT_TRUE(ring0.ok());
    auto r0 = std::make_shared<const TicketKeyRing>(std::move(ring0).value());
    store.publish(r0);
    auto ctx = server(&store);
    ASSERT_TRUE(ctx);
    Outcome full = connect(*ctx, nullptr);
    ASSERT_TRUE(full.handshake_ok && full.session);
    EXPECT_EQ(ticket_key_name(full.session.get()), as_vector(*r0->encryption_key(kT0)));

    clock.set(kT0 + 1h);
    auto ring1 = src.rotate(r0.get(), kT0 + 1h);
    ASSERT_TRUE(ring1.ok());
    auto r1 = std::make_shared<const TicketKeyRing>(std::move(ring1).value());
    store.publish(r1);
    const auto new_name = as_vector(*r1->encryption_key(kT0 + 1h));
    ASSERT_NE(new_name, ticket_key_name(full.session.get()));

    Outcome resumed = connect(*ctx, full.session.get());
    ASSERT_TRUE(resumed.handshake_ok);
    EXPECT_TRUE(resumed.reused);
    EXPECT_TRUE(resumed.ticket);
    EXPECT_EQ(store.counters().decrypted_renewed, 1u);  // the key callback returned 2
    EXPECT_EQ(store.counters().decrypted_current, 0u);
    ASSERT_TRUE(resumed.session);
    EXPECT_EQ(ticket_key_name(resumed.session.get()), new_name);  // the client got a fresh ticket

    Outcome renewed = connect(*ctx, resumed.session.get());
    EXPECT_TRUE(renewed.reused);
    EXPECT_EQ(store.counters().decrypted_current, 1u);
  }
}

TEST_F(TicketTls, UnknownKeyMeansFullHandshakeNotAnError) {
  for (int version : {TLS1_3_VERSION, TLS1_2_VERSION}) {
    SCOPED_TRACE(version);
    only(version);
    TicketKeyStore a, b;
    auto ra = LocalTicketKeySource(1h, 24h).rotate(nullptr, std::chrono::system_clock::now());
    auto rb = LocalTicketKeySource(1h, 24h).rotate(nullptr, std::chrono::system_clock::now());
    ASSERT_TRUE(ra.ok() && rb.ok());
    a.publish(std::make_shared<const TicketKeyRing>(std::move(ra).value()));
    b.publish(std::make_shared<const TicketKeyRing>(std::move(rb).value()));
    auto ctx_a = server(&a);
    auto ctx_b = server(&b);
    ASSERT_TRUE(ctx_a && ctx_b);
    Outcome full = connect(*ctx_a, nullptr);
    ASSERT_TRUE(full.handshake_ok && full.session);
    Outcome other = connect(*ctx_b, full.session.get());
    ASSERT_TRUE(other.handshake_ok);
    EXPECT_FALSE(other.reused);
    EXPECT_FALSE(other.ticket);
    EXPECT_EQ(b.counters().failed, 1u);
    ASSERT_TRUE(other.session);
    EXPECT_TRUE(SSL_SESSION_has_ticket(other.session.get()));  // a fresh ticket from b
  }
}

TEST_F(TicketTls, ForgedTicketWithAKnownNameFailsTheHmac) {
  only(TLS1_2_VERSION);
  const TimePoint now = std::chrono::system_clock::now();
  TicketKey real = make_key(0x11, now - 1h, now + 24h);
  TicketKey forger = real;
  forger.hmac_secret.fill(0x99);
  forger.aes_key.fill(0x98);
  TicketKeyStore good, bad;
  good.publish(std::make_shared<const TicketKeyRing>(std::vector<TicketKey>{real}));
  bad.publish(std::make_shared<const TicketKeyRing>(std::vector<TicketKey>{forger}));
  auto ctx_good = server(&good);
  auto ctx_bad = server(&bad);
  ASSERT_TRUE(ctx_good && ctx_bad);
  Outcome forged = connect(*ctx_bad, nullptr);
  ASSERT_TRUE(forged.handshake_ok && forged.session);
  Outcome r = connect(*ctx_good, forged.session.get());
  ASSERT_TRUE(r.handshake_ok);
  EXPECT_FALSE(r.reused);
  EXPECT_EQ(good.counters().failed, 1u);
  EXPECT_EQ(good.counters().decrypted_current + good.counters().decrypted_renewed, 0u);
}

TEST_F(TicketTls, DisabledTicketsIssueNone) {
  config::Tls tls = testing::server_tls();
  tls.session_tickets = false;
  tls.session_cache.enabled = false;
  for (int version : {TLS1_3_VERSION, TLS1_2_VERSION}) {
    SCOPED_TRACE(version);
    only(version);
    TicketKeyStore store;
    auto ctx = server(&store, tls);
    ASSERT_TRUE(ctx);
    Outcome full = connect(*ctx, nullptr);
    ASSERT_TRUE(full.handshake_ok && full.session);
    EXPECT_FALSE(SSL_SESSION_has_ticket(full.session.get()));
    EXPECT_EQ(store.counters().issued, 0u);
  }
}

TEST_F(TicketTls, CacheResumptionIsNotReportedAsTicket) {
  // Tickets off, session cache on: TLS 1.3 resumes through stateful tickets
  // (session IDs), TLS 1.2 through the session ID; neither is "ticket".
  config::Tls tls = testing::server_tls();
  tls.session_tickets = false;
  for (int version : {TLS1_3_VERSION, TLS1_2_VERSION}) {
    SCOPED_TRACE(version);
    only(version);
    auto ctx = server(nullptr, tls);
    ASSERT_TRUE(ctx);
    Outcome full = connect(*ctx, nullptr);
    ASSERT_TRUE(full.handshake_ok && full.session);
    Outcome again = connect(*ctx, full.session.get());
    ASSERT_TRUE(again.handshake_ok);
    EXPECT_TRUE(again.reused);
    EXPECT_FALSE(again.ticket);
  }
}

TEST_F(TicketTls, StoreWithoutRingHandshakesWithoutTickets) {
  for (int version : {TLS1_3_VERSION, TLS1_2_VERSION}) {
    SCOPED_TRACE(version);
    only(version);
    TicketKeyStore store;  // nothing published
    auto ctx = server(&store);
    ASSERT_TRUE(ctx);
    Outcome full = connect(*ctx, nullptr);
    ASSERT_TRUE(full.handshake_ok);
    ASSERT_TRUE(full.session);
    EXPECT_EQ(ticket_key_name(full.session.get()), std::vector<uint8_t>{});
    EXPECT_EQ(store.counters().issued, 0u);
  }
}

}  // namespace
}  // namespace tlsfront::tls
