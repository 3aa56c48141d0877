#include "control/acme_manager.h"

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <random>

#include <fmt/format.h>

#include "control/acme_lock.h"
#include "control/acme/renewal_info.h"
#include "log/log.h"
#include "tls/store_entry.h"
#include "tls/ticket_key_source_redis.h"

namespace tlsfront::control {
namespace {

using SystemTime = std::chrono::system_clock::time_point;
constexpr size_t kMaxBoardFields = 2 * tls::AcmeChallenges::kMaxEntries;

constexpr const char* kCreateAccountScript = R"lua(
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'key_id', ARGV[1], 'sealed', ARGV[2])
return 1
)lua";

std::string hex16_sha256(std::string_view s) {
  unsigned char d[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(s.data()), s.size(), d);
  std::string out;
  for (int i = 0; i < 8; ++i) fmt::format_to(std::back_inserter(out), "{:02x}", d[i]);
  return out;
}

std::string account_aad(const std::string& directory) { return std::string("tlsfront acme account v1\0", 25) + directory; }

// base64url (RFC 4648 §5, padding optional) -> bytes; nullopt when malformed.
std::optional<std::string> base64url_decode(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  for (char& c : text) c = c == '-' ? '+' : c == '_' ? '/' : c;
  while (!text.empty() && text.back() == '=') text.pop_back();
  const size_t pad = (4 - text.size() % 4) % 4;
  if (text.empty() || pad == 3) return std::nullopt;
  text.append(pad, '=');
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return std::nullopt;
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

std::string holder_name() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return std::string(host) + ":" + std::to_string(::getpid());
}

// The configured rule (the fallback): the leaf's notAfter - renew_before, or
// 2/3 of its lifetime.
SystemTime fallback_point(const acme::Leaf& leaf, std::chrono::milliseconds renew_before) {
  if (renew_before.count() > 0) return leaf.not_after - renew_before;
  return leaf.not_before + (leaf.not_after - leaf.not_before) * 2 / 3;
}

std::string utc(SystemTime t) {
  const std::time_t tt = std::chrono::system_clock::to_time_t(t);
  struct tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

// The challenge board in Redis (see the header), and this node's copy.
class AcmeManager::Board : public acme::ChallengeResponder {
 public:
  explicit Board(AcmeManager& m) : m_(m) {}

  Status publish(acme::ChallengeType type, const std::string& name, const std::string& token,
                 const std::string& key_authorization) override {
    Status st = change({"HSET", m_.key("challenges"), field(type, name, token), key_authorization});
    if (!st) return st;
    log::info("acme: {}: {} challenge published for every node", name, acme::challenge_name(type));
    m_.refresh_board(true);
    // Every node polls the board every kBoardPoll: by now each has it.
    std::this_thread::sleep_for(kPropagation);
    return {};
  }
  void withdraw(acme::ChallengeType type, const std::string& name, const std::string& token) override {
    if (Status st = change({"HDEL", m_.key("challenges"), field(type, name, token)}); !st) {
      log::warn("acme: cannot withdraw the {} challenge of {}: {}", acme::challenge_name(type), name,
                st.error().message());
    }
    m_.refresh_board(true);
  }

 private:
  static std::string field(acme::ChallengeType type, const std::string& name, const std::string& token) {
    return std::string(acme::challenge_name(type)) + ":" + (type == acme::ChallengeType::Http01 ? token : name);
  }
  Status change(std::vector<std::string> cmd) {
    // The board expires an hour after its last change: what a node that
    // died while ordering left there does not stay for ever.
    const std::vector<std::vector<std::string>> cmds = {
        std::move(cmd), {"PEXPIRE", m_.key("challenges"), "3600000"}, {"INCR", m_.key("challenges:version")}};
    return m_.client_.call_blocking(cmds, [](size_t, redis::Reply r) -> Status {
      if (r.is_error()) return make_error(Errc::Upstream, std::string(r.str().substr(0, 200)));
      return {};
    });
  }
  AcmeManager& m_;
};

Result<std::unique_ptr<AcmeManager>> AcmeManager::create(const config::Config& cfg,
                                                         std::shared_ptr<tls::AcmeChallenges> board) {
  const config::CertStore& s = cfg.tls.store;
  std::vector<std::string> warnings;
  auto keys = tls::SealKeyRing::load(s.seal_key_files, warnings);
  if (!keys) return keys.take_error();
  redis::Options o;
  o.address = s.redis;
  o.unix_socket = s.redis_unix_socket;
  o.user = s.redis_user;
  o.timeout = s.redis_timeout;
  auto redis_tls = redis::tls_of(s, "tls.store");
  if (!redis_tls) return redis_tls.take_error();
  o.tls = std::move(redis_tls).value();
  if (!s.redis_password_file.empty()) {
    auto loaded = tls::load_redis_password_file(s.redis_password_file);
    if (!loaded) return make_error(Errc::Config, "tls.store.redis_password_file: " + loaded.error().message());
    o.password = std::move(loaded->secret);
  }
  std::string eab_key;
  if (!cfg.acme.eab_hmac_key_file.empty()) {
    std::ifstream in(cfg.acme.eab_hmac_key_file, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto decoded = text.size() <= 4096 ? base64url_decode(text) : std::nullopt;
    if (!in.good() && !in.eof()) decoded.reset();
    if (!decoded || decoded->empty()) {
      return make_error(Errc::Config, "acme.eab_hmac_key_file: " + cfg.acme.eab_hmac_key_file +
                                          ": expected the CA's base64url MAC key");
    }
    eab_key = std::move(*decoded);
  }
  return std::unique_ptr<AcmeManager>(
      new AcmeManager(cfg, std::move(keys).value(), std::move(o), std::move(eab_key), std::move(board)));
}

AcmeManager::AcmeManager(const config::Config& cfg, tls::SealKeyRing keys, redis::Options options,
                         std::string eab_key, std::shared_ptr<tls::AcmeChallenges> board)
    : cfg_(cfg.acme),
      store_(cfg.tls.store),
      keys_(std::move(keys)),
      client_(std::move(options)),
      eab_key_(std::move(eab_key)),
      holder_(holder_name()),
      board_(std::move(board)) {}

AcmeManager::~AcmeManager() { stop(); }

std::string AcmeManager::key(std::string_view what) const { return store_.redis_prefix + ":acme:" + std::string(what); }

void AcmeManager::start() {
  thread_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      lock.unlock();
      refresh_board();
      const bool due = std::chrono::steady_clock::now() >= next_check();
      if (due) check();
      lock.lock();
      wake_.wait_for(lock, kBoardPoll, [this] { return stopping_; });
    }
  });
}

void AcmeManager::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cancel_ = true;
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::chrono::steady_clock::time_point AcmeManager::next_check() const {
  std::lock_guard lock(mu_);
  return next_check_;
}

void AcmeManager::refresh_board(bool force) {
  std::string version;
  std::map<std::string, std::string> http01;
  std::map<std::string, std::string> alpn_auth;
  std::vector<std::vector<std::string>> cmds = {{"GET", key("challenges:version")}};
  Status st = client_.call_blocking(cmds, [&](size_t, redis::Reply r) -> Status {
    if (r.is_error()) return make_error(Errc::Upstream, std::string(r.str().substr(0, 200)));
    version = std::string(r.str());
    return {};
  });
  if (!st) return;  // the next poll tries again; the check logs Redis trouble
  if (!force && version == board_version_) return;
  cmds = {{"HGETALL", key("challenges")}};
  st = client_.call_blocking(cmds, [&](size_t, redis::Reply r) -> Status {
    if (r.is_error()) return make_error(Errc::Upstream, std::string(r.str().substr(0, 200)));
    if (r.size() / 2 > kMaxBoardFields) return make_error(Errc::ResourceExhausted, "too many challenges");
    for (size_t i = 0; i + 1 < r.size(); i += 2) {
      const std::string_view f = r[i].str();
      if (f.starts_with("http-01:")) http01.emplace(f.substr(8), r[i + 1].str());
      if (f.starts_with("tls-alpn-01:")) alpn_auth.emplace(f.substr(12), r[i + 1].str());
    }
    return {};
  });
  if (!st) {
    log::warn("acme: the challenge board {}: {}", key("challenges"), st.error().message());
    return;
  }
  std::map<std::string, tls::AcmeChallenges::AlpnAnswer> alpn;
  for (auto& [name, key_authorization] : alpn_auth) {
    tls::AcmeChallenges::AlpnAnswer a{key_authorization, {}, {}};
    if (board_->alpn_key_authorization(name) != key_authorization) {
      auto made = acme::tls_alpn01_certificate(name, key_authorization);
      if (!made) {
        log::warn("acme: {}", made.error().message());
        continue;
      }
      a.cert_pem = std::move(made->first);
      a.key_pem = std::move(made->second);
    }
    alpn.emplace(name, std::move(a));
  }
  if (Status s = board_->replace(std::move(http01), alpn); !s) log::warn("acme: {}", s.error().message());
  board_version_ = version;
}

Result<std::vector<std::string>> AcmeManager::due_names(const std::vector<std::string>& names, SystemTime& next) {
  std::vector<std::vector<std::string>> cmds;
  for (const auto& name : names) {
    cmds.push_back({"HMGET", tls::store_entry_key(store_.redis_prefix, store_.region, name), "pairs", "chain1"});
  }
  const std::string wanted_pairs = cfg_.key_type == config::AcmeKeyType::Both ? "2" : "1";
  std::vector<std::pair<std::string, std::string>> read(names.size());  // pairs, chain1
  Status st = client_.call_blocking(cmds, [&](size_t i, redis::Reply r) -> Status {
    if (r.is_error() || r.size() != 2) return make_error(Errc::Upstream, std::string(r.str().substr(0, 200)));
    read[i] = {std::string(r[0].str()), std::string(r[1].str())};
    return {};
  });
  if (!st) return st.take_error();
  const SystemTime now = std::chrono::system_clock::now();
  std::vector<std::string> due;
  for (size_t i = 0; i < names.size(); ++i) {
    auto leaf = read[i].second.empty() ? Result<acme::Leaf>(make_error(Errc::NotFound, "no entry"))
                                       : acme::read_leaf(read[i].second);
    if (!leaf || read[i].first != wanted_pairs) {
      due.push_back(names[i]);  // no entry, a leaf that cannot be read, pairs missing: due now
      continue;
    }
    const SystemTime point = renewal_due(names[i], *leaf, now, next);
    if (point <= now) {
      due.push_back(names[i]);
    } else {
      next = std::min(next, point);
    }
  }
  return due;
}

SystemTime AcmeManager::renewal_due(const std::string& name, const acme::Leaf& leaf, SystemTime now, SystemTime& next) {
  const SystemTime fallback = fallback_point(leaf, cfg_.renew_before);
  // Due by the configured rule, expired, or no identifier: nothing to ask.
  if (fallback <= now || leaf.cert_id.empty()) return fallback;
  auto it = ari_.find(name);
  if (it == ari_.end() || it->second.id() != leaf.cert_id) {
    it = ari_.insert_or_assign(name, acme::AriState(leaf.cert_id)).first;  // a new certificate: ask at once
  }
  acme::AriState& s = it->second;
  if (s.fetch_due(now)) fetch_renewal_info(name, s, now);
  next = std::min(next, s.next_fetch());
  const auto chosen = s.chosen();
  if (!chosen || *chosen >= fallback) return fallback;
  if (!s.explained) {
    s.explained = true;
    const acme::RenewalWindow& w = *s.window();
    log::info("acme: {}: the CA's renewal window {} .. {} comes before the configured renewal point {}: renewing at {}"
              "{}{}",
              name, utc(w.start), utc(w.end), utc(fallback), utc(std::max(*chosen, now)),
              w.explanation_url.empty() ? "" : "; the CA explains: ", w.explanation_url);
  }
  return *chosen;
}

void AcmeManager::fetch_renewal_info(const std::string& name, acme::AriState& s, SystemTime now) {
  if (!ari_client_) ari_client_ = std::make_unique<acme::RenewalInfoClient>(cfg_.directory, cfg_.ca_bundle, kAriTimeout);
  auto answer = ari_client_->fetch(s.id(), now);
  if (answer) {
    s.answered(answer->window, answer->retry, now, rng_);
    ari_absent_logged_ = false;
    std::lock_guard lock(mu_);
    ++ari_windows_;
    return;
  }
  s.failed(ari_client_->temporary(), now);
  if (answer.error().code == Errc::NotFound) {
    if (!ari_absent_logged_) {
      ari_absent_logged_ = true;
      log::info("acme: {} offers no renewal information (RFC 9773 renewalInfo): renewals follow the configured rule",
                cfg_.directory);
    }
    return;
  }
  log::warn("acme: {}: renewal information (RFC 9773): {}; the configured rule applies; asking again at {}", name,
            answer.error().message(), utc(s.next_fetch()));
  std::lock_guard lock(mu_);
  ++ari_failures_;
}

Result<acme::AccountKey> AcmeManager::account_key() {
  const std::string k = key("account:" + hex16_sha256(cfg_.directory));
  const std::string aad = account_aad(cfg_.directory);
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::string key_id, sealed;
    const std::vector<std::vector<std::string>> get = {{"HMGET", k, "key_id", "sealed"}};
    Status st = client_.call_blocking(get, [&](size_t, redis::Reply r) -> Status {
      if (r.is_error() || r.size() != 2) return make_error(Errc::Upstream, std::string(r.str().substr(0, 200)));
      key_id = std::string(r[0].str());
      sealed = std::string(r[1].str());
      return {};
    });
    if (!st) return st.take_error();
    if (!sealed.empty()) {
      auto pem = keys_.unseal(key_id, sealed, aad);
      if (!pem) return make_error(Errc::Tls, "the ACME account key " + k + ": " + pem.error().message());
      return acme::AccountKey::from_pem(pem->str());
    }
    auto fresh = acme::AccountKey::generate();
    if (!fresh) return fresh.take_error();
    auto pem = fresh->pem();
    if (!pem) return pem.take_error();
    auto sealed_new = keys_.seal(*pem, aad);
    if (!sealed_new) return sealed_new.take_error();
    const std::vector<std::vector<std::string>> put = {
        {"EVAL", kCreateAccountScript, "1", k, keys_.sealing_id(), *sealed_new}};
    st = client_.call_blocking(put, [](size_t, redis::Reply r) -> Status {
      if (r.is_error()) return make_error(Errc::Upstream, std::string(r.str().substr(0, 200)));
      return {};
    });
    if (!st) return st.take_error();
    // Read back: another node may have created it first.
  }
  return make_error(Errc::Upstream, k + ": the account key could not be stored");
}

void AcmeManager::failed(const std::string& name, const std::string& why) {
  NameState& s = names_[name];
  const auto base = std::max<std::chrono::milliseconds>(cfg_.check_interval, std::chrono::seconds(1));
  auto delay = std::chrono::duration_cast<std::chrono::milliseconds>(kMaxBackoff);
  if (s.failures < 20) delay = std::min(delay, base * (int64_t{1} << s.failures));
  ++s.failures;
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  const auto jittered = std::chrono::milliseconds(
      std::uniform_int_distribution<int64_t>(delay.count() / 2, delay.count())(rng));
  s.retry_at = std::chrono::steady_clock::now() + jittered;
  log::warn("acme: {}: {}; the current certificate (if any) keeps serving; retrying in {} ms", name, why,
            jittered.count());
  std::lock_guard lock(mu_);
  ++failed_;
}

std::vector<acme::Leaf> AcmeManager::current_leaves(const std::string& name) {
  std::vector<acme::Leaf> out;
  const std::vector<std::vector<std::string>> cmds = {
      {"HMGET", tls::store_entry_key(store_.redis_prefix, store_.region, name), "chain1", "chain2"}};
  (void)client_.call_blocking(cmds, [&](size_t, redis::Reply r) -> Status {
    for (size_t i = 0; !r.is_error() && i < r.size(); ++i) {
      if (r[i].str().empty()) continue;
      if (auto leaf = acme::read_leaf(r[i].str()); leaf && !leaf->cert_id.empty()) out.push_back(std::move(leaf).value());
    }
    return {};
  });
  return out;
}

bool AcmeManager::renew(acme::AcmeClient& client, AcmeLock& lock, const std::string& name) {
  const std::vector<std::vector<std::string>> count = {{"INCR", key("orders:" + store_.region)}};
  (void)client_.call_blocking(count, [](size_t, redis::Reply) -> Status { return {}; });
  std::vector<acme::KeyType> types;
  if (cfg_.key_type != config::AcmeKeyType::Rsa) types.push_back(acme::KeyType::EcdsaP256);
  if (cfg_.key_type != config::AcmeKeyType::Ecdsa) types.push_back(acme::KeyType::Rsa2048);
  std::vector<acme::IssuedCertificate> issued;
  Board board(*this);
  const std::vector<acme::Leaf> current = current_leaves(name);
  for (acme::KeyType type : types) {
    log::info("acme: ordering {} ({}) from {}", name, type == acme::KeyType::EcdsaP256 ? "ECDSA" : "RSA",
              cfg_.directory);
    // RFC 9773 §5: the order names the certificate of its key type it replaces.
    std::string replaces;
    for (const auto& leaf : current) {
      if (leaf.ecdsa == (type == acme::KeyType::EcdsaP256) && replaces.empty()) replaces = leaf.cert_id;
    }
    auto cert = client.issue({name}, type, board, replaces);
    if (!cert) {
      if (cancel_) return false;  // shutting down: not a failure
      failed(name, cert.error().message());
      return false;
    }
    if (!cert->replaces_refused.empty()) {
      log::warn("acme: {}: the CA refused the order's \"replaces\" ({}); ordered again without it", name,
                cert->replaces_refused);
    }
    issued.push_back(std::move(cert).value());
  }
  std::vector<Secret> secrets;
  std::vector<std::pair<std::string, const Secret*>> pairs;
  for (auto& c : issued) secrets.emplace_back(std::move(c.key_pem));
  for (size_t i = 0; i < issued.size(); ++i) pairs.emplace_back(issued[i].chain_pem, &secrets[i]);
  auto entry = tls::seal_entry(store_.region, name, tls::unix_nanos(std::chrono::system_clock::now()), pairs, keys_);
  if (!entry) {
    failed(name, entry.error().message());
    return false;
  }
  auto put = lock.put(*entry);
  if (!put) {
    failed(name, "writing the certificate: " + put.error().message());
    return false;
  }
  if (*put == -1) {
    log::warn("acme: {}: the region's lock (fencing token {}) was lost while ordering; the certificate is discarded",
              name, lock.token());
    std::lock_guard l(mu_);
    ++fenced_;
    return false;
  }
  log::info("acme: {} issued ({}), stored in {}/{} (updated_at {}, fencing token {})", name, issued.front().order_url,
            store_.region, name, entry->updated_at, lock.token());
  names_.erase(name);
  std::lock_guard l(mu_);
  ++issued_;
  last_success_ = std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  return true;
}

void AcmeManager::check() {
  const auto steady_now = std::chrono::steady_clock::now();
  SystemTime next = std::chrono::system_clock::now() + cfg_.check_interval;
  auto schedule = [&] {
    const auto wait = std::max<std::chrono::system_clock::duration>(next - std::chrono::system_clock::now(),
                                                                     std::chrono::seconds(1));
    std::lock_guard lock(mu_);
    next_check_ = steady_now + std::min<std::chrono::system_clock::duration>(wait, cfg_.check_interval);
  };
  auto due = due_names(cfg_.names, next);
  if (!due) {
    log::warn("acme: redis {}: {}; nothing ordered, retrying in {} ms", client_.where(), due.error().message(),
              cfg_.check_interval.count());
    schedule();
    return;
  }
  {
    std::lock_guard lock(mu_);
    due_ = due->size();
  }
  std::erase_if(*due, [&](const std::string& n) {
    auto it = names_.find(n);
    return it != names_.end() && it->second.retry_at > steady_now;
  });
  schedule();
  if (due->empty()) return;
  AcmeLock lock(client_, store_.redis_prefix, store_.region, holder_);
  auto taken = lock.acquire(cfg_.lock_lease);
  if (!taken || !*taken) {
    if (!taken) log::warn("acme: the region's lock: {}", taken.error().message());
    return;  // another node orders; its result reaches this one through the store
  }
  {
    std::lock_guard l(mu_);
    ++acquisitions_;
  }
  log::info("acme: {} name{} due; this node holds the lock of region {} (fencing token {})", due->size(),
            due->size() == 1 ? "" : "s", store_.region, lock.token());
  auto account = account_key();
  if (!account) {
    for (const auto& n : *due) failed(n, "the account key: " + account.error().message());
    return;
  }
  acme::AcmeClient::Options o;
  o.directory_url = cfg_.directory;
  o.ca_file = cfg_.ca_bundle;
  o.contact = cfg_.contact;
  o.eab_kid = cfg_.eab_kid;
  o.eab_hmac_key = eab_key_;
  o.cancelled = &cancel_;
  o.challenges.clear();
  for (auto c : cfg_.challenges) {
    o.challenges.push_back(c == config::AcmeChallenge::Http01 ? acme::ChallengeType::Http01
                                                              : acme::ChallengeType::TlsAlpn01);
  }
  acme::AcmeClient client(std::move(o), std::move(account).value());
  for (const auto& name : *due) {
    if (cancel_) break;
    auto still = lock.renew(cfg_.lock_lease);
    if (!still || !*still) {
      log::warn("acme: the lock of region {} was lost; the other names wait for the next check", store_.region);
      break;
    }
    // Read again under the lock: another node may have renewed it just now.
    SystemTime ignored = next;
    auto again = due_names({name}, ignored);
    if (!again || again->empty()) continue;
    renew(client, lock, name);
  }
  lock.release();
}

std::string AcmeManager::metrics() const {
  std::lock_guard lock(mu_);
  return render_metrics(issued_, failed_, fenced_, last_success_, due_, acquisitions_, ari_windows_, ari_failures_);
}

std::string AcmeManager::render_metrics(uint64_t issued, uint64_t failed, uint64_t fenced, int64_t last_success,
                                        uint64_t due, uint64_t acquisitions, uint64_t ari_windows,
                                        uint64_t ari_failures) {
  return fmt::format(
      "# HELP tlsfront_acme_orders_total ACME orders by result (issued and stored; failed; fenced: issued but "
      "discarded because the region's lock was lost).\n# TYPE tlsfront_acme_orders_total counter\n"
      "tlsfront_acme_orders_total{{result=\"issued\"}} {}\ntlsfront_acme_orders_total{{result=\"failed\"}} {}\n"
      "tlsfront_acme_orders_total{{result=\"fenced\"}} {}\n"
      "# HELP tlsfront_acme_last_success_timestamp_seconds When this node last stored an issued certificate "
      "(Unix seconds; 0: never).\n# TYPE tlsfront_acme_last_success_timestamp_seconds gauge\n"
      "tlsfront_acme_last_success_timestamp_seconds {}\n"
      "# HELP tlsfront_acme_due_names Names due for an order at the last check (missing or past their renewal "
      "point).\n# TYPE tlsfront_acme_due_names gauge\ntlsfront_acme_due_names {}\n"
      "# HELP tlsfront_acme_lock_acquisitions_total Times this node took its region's ACME lock.\n"
      "# TYPE tlsfront_acme_lock_acquisitions_total counter\ntlsfront_acme_lock_acquisitions_total {}\n"
      "# HELP tlsfront_acme_renewal_info_total Requests for the CA's renewal information (RFC 9773) by result "
      "(window: a suggested window; failed: an error or a malformed answer, the configured rule applies).\n"
      "# TYPE tlsfront_acme_renewal_info_total counter\n"
      "tlsfront_acme_renewal_info_total{{result=\"window\"}} {}\ntlsfront_acme_renewal_info_total{{result=\"failed\"}} {}\n",
      issued, failed, fenced, last_success, due, acquisitions, ari_windows, ari_failures);
}

}  // namespace tlsfront::control
