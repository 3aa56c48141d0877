#include "control/cert_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#include <fmt/format.h>

#include "log/log.h"
#include "tls/ticket_key_source_redis.h"
#include "util/unique_fd.h"

namespace tlsfront::control {
namespace {

constexpr size_t kMaxCacheFiles = 10'000;
constexpr size_t kMaxIndexNames = 10'000;
constexpr uintmax_t kMaxCacheFileBytes = 1024 * 1024;

std::string label(const std::string& region, const std::string& name) { return region + "/" + name; }

std::string cache_file(const std::string& dir, const std::string& region, const std::string& name) {
  return dir + "/" + region + "," + name;
}

// "123" (live) / "-123" (removed) of an index; false when malformed.
bool parse_index_value(std::string_view v, bool& removed, uint64_t& ts) {
  removed = v.starts_with('-');
  if (removed) v.remove_prefix(1);
  if (v.empty() || v.size() > 20) return false;
  ts = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return false;
    ts = ts * 10 + static_cast<uint64_t>(c - '0');
  }
  return ts > 0;
}

}  // namespace

Result<std::unique_ptr<CertStore>> CertStore::create(const config::Tls& tls, bool keep_cache) {
  const config::CertStore& s = tls.store;
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
    if (!loaded->warning.empty()) warnings.push_back(loaded->warning);
    o.password = std::move(loaded->secret);
  }
  for (const auto& w : warnings) log::warn("certificate store: {}", w);
  return std::unique_ptr<CertStore>(new CertStore(tls, std::move(keys).value(), std::move(o), keep_cache));
}

CertStore::CertStore(const config::Tls& tls, tls::SealKeyRing keys, redis::Options options, bool keep_cache)
    : tls_(tls), keys_(std::move(keys)), client_(std::move(options)), keep_cache_(keep_cache) {}

CertStore::~CertStore() { stop(); }

void CertStore::load_initial() {
  load_cache();
  const size_t cached = held_.size();
  publish();
  if (round(true)) return;
  if (!up_ && !cfg_.cache_dir.empty()) {
    log::warn("certificate store: starting without redis {}: serving {} entr{} from the sealed disk cache {}",
              client_.where(), cached, cached == 1 ? "y" : "ies", cfg_.cache_dir);
  }
}

tls::StoreSnapshot CertStore::snapshot() const {
  std::lock_guard lock(mu_);
  return snapshot_;
}

void CertStore::start(uv_loop_t* loop, std::function<void()> changed) {
  changed_ = std::move(changed);
  async_.init([loop](uv_async_t* a) { return uv_async_init(loop, a, [](uv_async_t* h) {
                if (h->data) static_cast<CertStore*>(h->data)->changed_();
              }); },
              this);
  thread_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      wake_.wait_for(lock, cfg_.poll_interval, [this] { return stopping_; });
      if (stopping_) break;
      lock.unlock();
      const bool changed = round(false);
      lock.lock();
      if (changed && !stopping_) uv_async_send(async_.get());
    }
  });
}

void CertStore::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  async_.close();
}

void CertStore::note_swap(bool ok) {
  std::lock_guard lock(mu_);
  ++(ok ? swaps_ok_ : swaps_failed_);
}

bool CertStore::round(bool full) {
  bool changed = false;
  const auto now = std::chrono::steady_clock::now();
  full = full || !up_ || now >= next_reconcile_;
  Status st = full ? Status{} : read_versions(full);
  if (st.ok() && full) st = reconcile(changed);
  if (!st.ok()) {
    set_up(false, st.error().message());
    std::lock_guard lock(mu_);
    ++sync_errors_;
  } else {
    set_up(true, {});
    if (full) next_reconcile_ = now + cfg_.reconcile_interval;
    std::lock_guard lock(mu_);
    last_sync_ = std::chrono::steady_clock::now();
    synced_ = true;
  }
  if (changed) publish();
  return changed;
}

// Sets `changed` when a counter differs from the one last seen.
Status CertStore::read_versions(bool& changed) {
  const std::vector<std::vector<std::string>> cmds = {
      {"GET", tls::store_version_key(cfg_.redis_prefix, cfg_.region)},
      {"GET", tls::store_version_key(cfg_.redis_prefix, tls::kGlobalRegion)}};
  const std::string regions[] = {cfg_.region, std::string(tls::kGlobalRegion)};
  return client_.call_blocking(cmds, [&](size_t i, redis::Reply r) -> Status {
    if (r.is_error()) return make_error(Errc::Upstream, "GET: " + std::string(r.str().substr(0, 200)));
    const std::string v(r.str());
    auto it = versions_.find(regions[i]);
    if (it == versions_.end() || it->second != v) changed = true;
    return {};
  });
}

Status CertStore::reconcile(bool& changed) {
  const std::string regions[] = {cfg_.region, std::string(tls::kGlobalRegion)};
  std::vector<std::vector<std::string>> cmds;
  for (const auto& r : regions) {
    cmds.push_back({"GET", tls::store_version_key(cfg_.redis_prefix, r)});
    cmds.push_back({"HGETALL", tls::store_index_key(cfg_.redis_prefix, r)});
  }
  std::map<std::string, std::string> versions;
  std::set<Key> listed;
  std::vector<std::pair<Key, uint64_t>> wanted;  // entry, updated_at in the index
  Status st = client_.call_blocking(cmds, [&](size_t i, redis::Reply r) -> Status {
    const std::string& region = regions[i / 2];
    if (r.is_error()) return make_error(Errc::Upstream, std::string(r.str().substr(0, 200)));
    if (i % 2 == 0) {
      versions[region] = std::string(r.str());
      return {};
    }
    if (r.size() / 2 > kMaxIndexNames) {
      return make_error(Errc::ResourceExhausted, tls::store_index_key(cfg_.redis_prefix, region) + " holds more than " +
                                                     std::to_string(kMaxIndexNames) + " names");
    }
    for (size_t j = 0; j + 1 < r.size(); j += 2) {
      Key key{region, std::string(r[j].str())};
      bool removed = false;
      uint64_t ts = 0;
      if (!tls::valid_store_name(key.second) || !parse_index_value(r[j + 1].str(), removed, ts)) {
        if (refused_.emplace(key, 0).second) {
          log::warn("certificate store: index {} holds a malformed entry; ignored",
                    tls::store_index_key(cfg_.redis_prefix, region));
        }
        continue;
      }
      listed.insert(key);
      auto held = held_.find(key);
      const uint64_t held_at = held == held_.end() ? 0 : held->second.entry.updated_at;
      if (removed) {
        if (held != held_.end() && held_at < ts) {
          log::info("certificate store: {} removed from the store; no longer served", label(key.first, key.second));
          held_.erase(held);
          remove_cache(key);
          changed = true;
          std::lock_guard lock(mu_);
          ++removed_total_;
        }
        removed_[key] = std::max(removed_[key], ts);
        continue;
      }
      if (ts <= held_at || ts <= removed_[key]) continue;
      if (auto it = refused_.find(key); it != refused_.end() && it->second == ts) continue;
      wanted.emplace_back(std::move(key), ts);
    }
    return {};
  });
  if (!st.ok()) return st;
  for (const auto& [key, held] : held_) {
    if (listed.count(key)) {
      missing_.erase(key);
    } else if (missing_.insert(key).second) {
      log::warn("certificate store: {} is not in the store's index (data lost or flushed?); still serving the "
                "last good copy until it is put again",
                label(key.first, key.second));
    }
  }
  if (!wanted.empty()) {
    cmds.clear();
    for (const auto& [key, ts] : wanted) {
      cmds.push_back({"HGETALL", tls::store_entry_key(cfg_.redis_prefix, key.first, key.second)});
    }
    std::vector<tls::StoreEntry> fetched;
    st = client_.call_blocking(cmds, [&](size_t i, redis::Reply r) -> Status {
      if (r.is_error()) return make_error(Errc::Upstream, std::string(r.str().substr(0, 200)));
      if (r.size() == 0) return {};  // removed meanwhile: the next round sees the tombstone
      std::vector<std::pair<std::string, std::string>> fields;
      for (size_t j = 0; j + 1 < r.size(); j += 2) fields.emplace_back(r[j].str(), r[j + 1].str());
      const auto& [key, ts] = wanted[i];
      auto entry = tls::StoreEntry::from_fields(key.first, key.second, fields);
      if (!entry) {
        if (std::exchange(refused_[key], ts) != ts) {
          log::warn("certificate store: {}; ignored, {}", entry.error().message(),
                    held_.count(key) ? "still serving the last good one" : "not served");
          std::lock_guard lock(mu_);
          ++refused_total_;
        }
        return {};
      }
      fetched.push_back(std::move(entry).value());
      return {};
    });
    if (!st.ok()) return st;
    for (auto& e : fetched) changed |= take(std::move(e), false);
  }
  versions_ = std::move(versions);
  size_t refused_now = 0;
  for (const auto& [key, ts] : refused_) {
    auto held = held_.find(key);
    if (ts != 0 && (held == held_.end() || held->second.entry.updated_at < ts)) ++refused_now;
  }
  std::lock_guard lock(mu_);
  refused_now_ = refused_now;
  return {};
}

bool CertStore::take(tls::StoreEntry entry, bool from_cache) {
  const Key key{entry.region, entry.name};
  auto held = held_.find(key);
  if (held != held_.end() && held->second.entry.updated_at >= entry.updated_at) return false;
  auto cert = tls::open_entry(entry, keys_, tls_, std::chrono::system_clock::now());
  if (!cert) {
    refused_[key] = entry.updated_at;
    log::warn("certificate store: {} (updated_at {}) refused{}: {}; {}", label(key.first, key.second),
              entry.updated_at, from_cache ? " from the disk cache" : "", cert.error().message(),
              held != held_.end() ? "still serving the last good one" : "not served");
    std::lock_guard lock(mu_);
    ++refused_total_;
    return false;
  }
  for (const auto& c : (*cert)->certs) {
    for (const auto& w : c.warnings) log::warn("certificate store: {}: {}", label(key.first, key.second), w);
  }
  log::info("certificate store: {} (updated_at {}, {} {}){}", label(key.first, key.second), entry.updated_at,
            (*cert)->certs.size() == 2 ? "ECDSA + RSA" : (*cert)->certs.front().key_type,
            entry.hash.substr(0, 16), from_cache ? " from the sealed disk cache" : " taken");
  if (!from_cache) write_cache(entry);
  held_[key] = Held{std::move(entry), std::move(cert).value()};
  refused_.erase(key);
  missing_.erase(key);
  if (!from_cache) {
    std::lock_guard lock(mu_);
    ++applied_;
  }
  return true;
}

void CertStore::load_cache() {
  if (cfg_.cache_dir.empty()) return;
  namespace fs = std::filesystem;
  std::error_code ec;
  size_t seen = 0;
  for (fs::directory_iterator it(cfg_.cache_dir, ec), end; !ec && it != end && seen < kMaxCacheFiles;
       it.increment(ec), ++seen) {
    const std::string path = it->path().string();
    if (!it->is_regular_file(ec) || path.ends_with(".tmp")) continue;
    if (it->file_size(ec) > kMaxCacheFileBytes) {
      log::warn("certificate store: cache file {} is too large; ignored", path);
      continue;
    }
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto entry = tls::StoreEntry::from_file(bytes);
    if (!entry || (entry->region != cfg_.region && entry->region != tls::kGlobalRegion) ||
        it->path().filename() != entry->region + "," + entry->name) {
      log::warn("certificate store: cache file {} is not this node's entry ({}); ignored", path,
                entry ? "another region or name" : entry.error().message());
      continue;
    }
    take(std::move(entry).value(), true);
  }
  if (ec && ec != std::errc::no_such_file_or_directory) {
    log::warn("certificate store: cache_dir {}: {}", cfg_.cache_dir, ec.message());
  }
}

void CertStore::write_cache(const tls::StoreEntry& entry) const {
  if (cfg_.cache_dir.empty() || !keep_cache_) return;
  ::mkdir(cfg_.cache_dir.c_str(), 0700);
  const std::string path = cache_file(cfg_.cache_dir, entry.region, entry.name);
  const std::string tmp = path + ".tmp";
  const std::string bytes = entry.to_file();
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  const bool ok = fd.valid() && ::write(fd.get(), bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()) &&
                  ::fsync(fd.get()) == 0 && ::rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) {
    log::warn("certificate store: cannot write the cache file {}: {}", path, std::strerror(errno));
    ::unlink(tmp.c_str());
  }
}

void CertStore::remove_cache(const Key& key) const {
  if (!cfg_.cache_dir.empty() && keep_cache_) ::unlink(cache_file(cfg_.cache_dir, key.first, key.second).c_str());
}

void CertStore::publish() {
  // A region's entry wins over a global one of the same name.
  std::map<std::string, std::shared_ptr<const tls::StoreCertificate>> by_name;
  for (const auto& [key, held] : held_) {
    auto& slot = by_name[key.second];
    if (!slot || key.first != tls::kGlobalRegion) slot = held.cert;
  }
  tls::StoreSnapshot snap;
  for (auto& [name, cert] : by_name) snap.push_back(std::move(cert));
  std::lock_guard lock(mu_);
  snapshot_ = std::move(snap);
}

void CertStore::set_up(bool up, const std::string& problem) {
  if (up_known_ && up == up_ && problem == problem_) return;
  if (up) {
    if (up_known_) log::info("certificate store: redis {} is in use again", client_.where());
  } else {
    log::warn("certificate store: redis {}: {}; serving the last good {} entr{}, retrying every {} ms",
              client_.where(), problem, held_.size(), held_.size() == 1 ? "y" : "ies", cfg_.poll_interval.count());
  }
  up_known_ = true;
  up_ = up;
  problem_ = problem;
  std::lock_guard lock(mu_);
  up_gauge_ = up;
}

std::string CertStore::metrics() const {
  std::lock_guard lock(mu_);
  std::string out;
  auto gauge = [&out](const char* name, const char* help, auto value) {
    fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} gauge\n{} {}\n", name, help, name, name, value);
  };
  gauge("tlsfront_cert_store_up", "1 when the last sync round with the certificate store succeeded.",
        up_gauge_ ? 1 : 0);
  gauge("tlsfront_cert_store_sync_age_seconds",
        "Seconds since the last successful sync round (-1: none since start).",
        synced_ ? std::chrono::duration<double>(std::chrono::steady_clock::now() - last_sync_).count() : -1.0);
  gauge("tlsfront_cert_store_entries", "Certificate store entries served (after region resolution).",
        snapshot_.size());
  gauge("tlsfront_cert_store_refused_entries",
        "Store entries newer than the one served that were refused (the last good one is served).", refused_now_);
  fmt::format_to(std::back_inserter(out),
                 "# HELP tlsfront_cert_store_sync_errors_total Sync rounds that failed (Redis unreachable, "
                 "timeout, error reply).\n# TYPE tlsfront_cert_store_sync_errors_total counter\n"
                 "tlsfront_cert_store_sync_errors_total {}\n"
                 "# HELP tlsfront_cert_store_updates_total Store entries taken, refused or removed.\n"
                 "# TYPE tlsfront_cert_store_updates_total counter\n"
                 "tlsfront_cert_store_updates_total{{result=\"applied\"}} {}\n"
                 "tlsfront_cert_store_updates_total{{result=\"refused\"}} {}\n"
                 "tlsfront_cert_store_updates_total{{result=\"removed\"}} {}\n"
                 "# HELP tlsfront_cert_store_swaps_total Generations built from a changed set of store entries.\n"
                 "# TYPE tlsfront_cert_store_swaps_total counter\n"
                 "tlsfront_cert_store_swaps_total{{result=\"ok\"}} {}\n"
                 "tlsfront_cert_store_swaps_total{{result=\"failed\"}} {}\n",
                 sync_errors_, applied_, refused_total_, removed_total_, swaps_ok_, swaps_failed_);
  return out;
}

}  // namespace tlsfront::control
