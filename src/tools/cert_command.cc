#include "tools/cert_command.h"

#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/loader.h"
#include "redis/client.h"
#include "tls/sealed_key.h"
#include "tls/store_entry.h"
#include "tls/ticket_key_source_redis.h"

namespace tlsfront::tools {
namespace {

constexpr const char* kUsage =
    "Usage: tlsfront cert --config FILE put [--region R | --global] --name NAME --chain FILE --key FILE\n"
    "                                   [--chain FILE --key FILE] [--updated-at NS]\n"
    "       tlsfront cert --config FILE get [--region R | --global] --name NAME\n"
    "       tlsfront cert --config FILE list [--region R | --global | --all]\n"
    "       tlsfront cert --config FILE rm [--region R | --global] --name NAME\n"
    "       tlsfront cert --config FILE reseal [--region R | --global | --all]\n"
    "       tlsfront cert seal-key --out FILE\n"
    "  The certificate store of [tls.store] in FILE (docs/operations.md, \"Certificate store\").\n";

constexpr size_t kMaxInputBytes = 1024 * 1024;

int usage(const std::string& why) {
  std::fprintf(stderr, "tlsfront cert: %s\n%s", why.c_str(), kUsage);
  return 2;
}

int fail(const std::string& why) {
  std::fprintf(stderr, "tlsfront cert: %s\n", why.c_str());
  return 1;
}

std::optional<std::string> read_file(const std::string& path, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open \"" + path + "\"";
    return std::nullopt;
  }
  std::string bytes;
  char buf[8192];
  while (in.read(buf, sizeof(buf)) || in.gcount() > 0) {
    bytes.append(buf, static_cast<size_t>(in.gcount()));
    if (bytes.size() > kMaxInputBytes) {
      error = "\"" + path + "\" is larger than 1 MiB";
      return std::nullopt;
    }
  }
  return bytes;
}

std::string rfc3339(uint64_t ns) {
  const std::time_t t = static_cast<std::time_t>(ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char out[32];
  std::strftime(out, sizeof(out), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return out;
}

struct Args {
  std::string config, command, name, out;
  std::vector<std::string> chains, keys, regions;
  bool all = false;
  uint64_t updated_at = 0;
};

// The store of one configuration: its settings, sealing keys and Redis.
class Store {
 public:
  static Result<std::unique_ptr<Store>> open(const std::string& config_path) {
    auto cfg = config::load_file(config_path);
    if (!cfg) return cfg.take_error();
    if (!cfg->tls.store.enabled) return make_error(Errc::Config, config_path + ": no [tls.store] table");
    std::vector<std::string> warnings;
    auto keys = tls::SealKeyRing::load(cfg->tls.store.seal_key_files, warnings);
    if (!keys) return keys.take_error();
    for (const auto& w : warnings) std::fprintf(stderr, "tlsfront cert: warning: %s\n", w.c_str());
    const config::CertStore& s = cfg->tls.store;
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
      if (!loaded) return loaded.take_error();
      o.password = std::move(loaded->secret);
    }
    return std::unique_ptr<Store>(new Store(std::move(cfg).value(), std::move(keys).value(), std::move(o)));
  }

  const config::Config& config() const { return cfg_; }
  const config::CertStore& settings() const { return cfg_.tls.store; }
  const tls::SealKeyRing& keys() const { return keys_; }

  // EVAL of `script` for the entry `region`/`name` with `args` after the
  // name: 1 applied, 0 ignored (not newer).
  Result<long long> eval(const char* script, const std::string& region, const std::string& name,
                         std::vector<std::string> args) const {
    const std::string& p = settings().redis_prefix;
    std::vector<std::string> cmd = {"EVAL", script, "3", tls::store_entry_key(p, region, name),
                                    tls::store_index_key(p, region), tls::store_version_key(p, region), name};
    for (auto& a : args) cmd.push_back(std::move(a));
    long long applied = 0;
    const std::vector<std::vector<std::string>> cmds = {std::move(cmd)};
    Status st = client_.call_blocking(cmds, [&](size_t, redis::Reply r) -> Status {
      if (r.is_error()) return make_error(Errc::Upstream, "redis: " + std::string(r.str()));
      applied = r.integer();
      return {};
    });
    if (!st) return st.take_error();
    return applied;
  }

  // The index of `region`: name -> "<ts>" | "-<ts>".
  Result<std::map<std::string, std::string>> index(const std::string& region) const {
    std::map<std::string, std::string> out;
    const std::vector<std::vector<std::string>> cmds = {
        {"HGETALL", tls::store_index_key(settings().redis_prefix, region)}};
    Status st = client_.call_blocking(cmds, [&](size_t, redis::Reply r) -> Status {
      if (r.is_error()) return make_error(Errc::Upstream, "redis: " + std::string(r.str()));
      for (size_t i = 0; i + 1 < r.size(); i += 2) out.emplace(r[i].str(), r[i + 1].str());
      return {};
    });
    if (!st) return st.take_error();
    return out;
  }

  // The entry, or Errc::NotFound.
  Result<tls::StoreEntry> entry(const std::string& region, const std::string& name) const {
    std::vector<std::pair<std::string, std::string>> fields;
    const std::vector<std::vector<std::string>> cmds = {
        {"HGETALL", tls::store_entry_key(settings().redis_prefix, region, name)}};
    Status st = client_.call_blocking(cmds, [&](size_t, redis::Reply r) -> Status {
      if (r.is_error()) return make_error(Errc::Upstream, "redis: " + std::string(r.str()));
      for (size_t i = 0; i + 1 < r.size(); i += 2) fields.emplace_back(r[i].str(), r[i + 1].str());
      return {};
    });
    if (!st) return st.take_error();
    if (fields.empty()) return make_error(Errc::NotFound, "no entry " + region + "/" + name);
    return tls::StoreEntry::from_fields(region, name, fields);
  }

 private:
  Store(config::Config cfg, tls::SealKeyRing keys, redis::Options o)
      : cfg_(std::move(cfg)), keys_(std::move(keys)), client_(std::move(o)) {}
  config::Config cfg_;
  tls::SealKeyRing keys_;
  redis::Client client_;
};

uint64_t now_ns() { return tls::unix_nanos(std::chrono::system_clock::now()); }

std::string describe(const tls::StoreCertificate& c) {
  std::string out;
  for (const auto& sc : c.certs) {
    const tls::ChainCertInfo& leaf = sc.chain.report().sent.front();
    out += (out.empty() ? "" : "; ") + leaf.key_type + " expires " + leaf.not_after + " issuer \"" + leaf.issuer +
           "\"";
  }
  return out;
}

int put(const Store& store, const Args& a) {
  const std::string& region = a.regions.front();
  if (a.name.empty() || a.chains.empty() || a.chains.size() != a.keys.size()) {
    return usage("put needs --name and as many --chain as --key (one or two pairs)");
  }
  std::vector<std::string> chains;
  std::vector<Secret> keys;
  for (size_t i = 0; i < a.chains.size(); ++i) {
    std::string error;
    auto chain = read_file(a.chains[i], error);
    if (!chain) return fail(error);
    auto key = read_file(a.keys[i], error);
    if (!key) return fail(error);
    chains.push_back(std::move(*chain));
    keys.emplace_back(std::move(*key));
  }
  std::vector<std::pair<std::string, const Secret*>> pairs;
  for (size_t i = 0; i < chains.size(); ++i) pairs.emplace_back(chains[i], &keys[i]);
  const uint64_t updated_at = a.updated_at ? a.updated_at : now_ns();
  auto entry = tls::seal_entry(region, a.name, updated_at, pairs, store.keys());
  if (!entry) return fail(entry.error().message());
  // The loader's checks, on what a node will open.
  auto opened = tls::open_entry(*entry, store.keys(), store.config().tls, std::chrono::system_clock::now());
  if (!opened) return fail("refused: " + opened.error().message());
  for (const auto& c : (*opened)->certs) {
    for (const auto& w : c.warnings) std::fprintf(stderr, "tlsfront cert: warning: %s\n", w.c_str());
  }
  std::vector<std::string> args = {std::to_string(updated_at)};
  for (auto& f : entry->fields()) args.push_back(std::move(f));
  auto applied = store.eval(tls::kPutScript, region, a.name, std::move(args));
  if (!applied) return fail(applied.error().message());
  if (*applied == 0) {
    return fail("not stored: the store holds " + region + "/" + a.name + " with an updated_at not older than " +
                std::to_string(updated_at));
  }
  std::printf("stored %s/%s: %s; updated_at %llu (%s), sealed with key %s\n", region.c_str(), a.name.c_str(),
              describe(**opened).c_str(), static_cast<unsigned long long>(updated_at), rfc3339(updated_at).c_str(),
              entry->key_id.c_str());
  return 0;
}

int get(const Store& store, const Args& a) {
  if (a.name.empty()) return usage("get needs --name");
  auto entry = store.entry(a.regions.front(), a.name);
  if (!entry) return fail(entry.error().message());
  std::printf("region: %s\nname: %s\nupdated_at: %llu (%s)\nkey_id: %s\nhash: %s\n", entry->region.c_str(),
              entry->name.c_str(), static_cast<unsigned long long>(entry->updated_at),
              rfc3339(entry->updated_at).c_str(), entry->key_id.c_str(), entry->hash.c_str());
  auto opened = tls::open_entry(*entry, store.keys(), store.config().tls, std::chrono::system_clock::now());
  std::printf("status: %s\n", opened ? ("ok: " + describe(**opened)).c_str()
                                     : ("refused by nodes: " + opened.error().message()).c_str());
  for (size_t i = 0; i < entry->pairs.size(); ++i) std::printf("%s", entry->pairs[i].chain_pem.c_str());
  return 0;
}

int list(const Store& store, const Args& a) {
  std::printf("%-10s %-32s %-6s %-20s %-30s %s\n", "REGION", "NAME", "KEY", "EXPIRES", "UPDATED_AT", "ISSUER");
  int status = 0;
  for (const auto& region : a.regions) {
    auto index = store.index(region);
    if (!index) return fail(index.error().message());
    for (const auto& [name, value] : *index) {
      if (value.starts_with('-')) continue;  // removed
      auto entry = store.entry(region, name);
      if (!entry) {
        std::printf("%-10s %-32s %s\n", region.c_str(), name.c_str(), entry.error().message().c_str());
        status = 1;
        continue;
      }
      auto opened = tls::open_entry(*entry, store.keys(), store.config().tls, std::chrono::system_clock::now());
      if (!opened) {
        std::printf("%-10s %-32s REFUSED %s\n", region.c_str(), name.c_str(), opened.error().message().c_str());
        status = 1;
        continue;
      }
      for (const auto& c : (*opened)->certs) {
        const tls::ChainCertInfo& leaf = c.chain.report().sent.front();
        std::printf("%-10s %-32s %-6s %-20s %-30s %s\n", region.c_str(), name.c_str(), c.key_type.c_str(),
                    leaf.not_after.c_str(),
                    (std::to_string(entry->updated_at) + " " + rfc3339(entry->updated_at).substr(0, 10)).c_str(),
                    leaf.issuer.c_str());
      }
    }
  }
  return status;
}

int rm(const Store& store, const Args& a) {
  if (a.name.empty()) return usage("rm needs --name");
  const uint64_t ts = a.updated_at ? a.updated_at : now_ns();
  auto applied = store.eval(tls::kRemoveScript, a.regions.front(), a.name, {std::to_string(ts)});
  if (!applied) return fail(applied.error().message());
  if (*applied == 0) return fail("not removed: the store holds a newer update of " + a.name);
  std::printf("removed %s/%s\n", a.regions.front().c_str(), a.name.c_str());
  return 0;
}

int reseal(const Store& store, const Args& a) {
  int status = 0;
  for (const auto& region : a.regions) {
    auto index = store.index(region);
    if (!index) return fail(index.error().message());
    for (const auto& [name, value] : *index) {
      if (value.starts_with('-')) continue;
      auto entry = store.entry(region, name);
      if (entry && entry->key_id == store.keys().sealing_id()) continue;
      auto resealed = entry ? tls::reseal_entry(*entry, store.keys(), now_ns()) : Result<tls::StoreEntry>(entry.take_error());
      if (!resealed) {
        std::fprintf(stderr, "tlsfront cert: %s/%s: %s\n", region.c_str(), name.c_str(),
                     resealed.error().message().c_str());
        status = 1;
        continue;
      }
      std::vector<std::string> args = {std::to_string(resealed->updated_at)};
      for (auto& f : resealed->fields()) args.push_back(std::move(f));
      auto applied = store.eval(tls::kPutScript, region, name, std::move(args));
      if (!applied || *applied == 0) {
        std::fprintf(stderr, "tlsfront cert: %s/%s: not resealed (%s)\n", region.c_str(), name.c_str(),
                     applied ? "changed meanwhile" : applied.error().message().c_str());
        status = 1;
        continue;
      }
      std::printf("resealed %s/%s with key %s\n", region.c_str(), name.c_str(), store.keys().sealing_id().c_str());
    }
  }
  return status;
}

}  // namespace

int cert_main(int argc, char** argv) {
  Args a;
  bool global = false;
  std::string region;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= argc) return false;
      out = argv[++i];
      return true;
    };
    std::string v;
    if (arg == "--help" || arg == "-h") {
      std::printf("%s", kUsage);
      return 0;
    } else if (arg == "--config" || arg == "-c") {
      if (!value(a.config)) return usage("--config needs a file name");
    } else if (arg == "--region") {
      if (!value(region)) return usage("--region needs a region");
    } else if (arg == "--global") {
      global = true;
    } else if (arg == "--all") {
      a.all = true;
    } else if (arg == "--name") {
      if (!value(a.name)) return usage("--name needs a name");
    } else if (arg == "--chain") {
      if (!value(v)) return usage("--chain needs a file name");
      a.chains.push_back(v);
    } else if (arg == "--key") {
      if (!value(v)) return usage("--key needs a file name");
      a.keys.push_back(v);
    } else if (arg == "--out") {
      if (!value(a.out)) return usage("--out needs a file name");
    } else if (arg == "--updated-at") {
      if (!value(v) || v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 19) {
        return usage("--updated-at needs nanoseconds since the epoch");
      }
      a.updated_at = std::stoull(v);
    } else if (a.command.empty() && !arg.starts_with('-')) {
      a.command = arg;
    } else {
      return usage("unknown argument \"" + std::string(arg) + "\"");
    }
  }
  if (a.command == "seal-key") {
    if (a.out.empty()) return usage("seal-key needs --out FILE");
    auto id = tls::write_new_seal_key(a.out);
    if (!id) return fail(id.error().message());
    std::printf("new sealing key %s in %s (add it first in seal_key_files, then run reseal)\n", id->c_str(),
                a.out.c_str());
    return 0;
  }
  if (a.command.empty()) return usage("a command is needed (put, get, list, rm, reseal, seal-key)");
  if (a.config.empty()) return usage("--config FILE is required");
  if (global + !region.empty() + a.all > 1) return usage("one of --region, --global, --all");
  if (a.all && a.command != "list" && a.command != "reseal") return usage("--all is for list and reseal");
  auto store = Store::open(a.config);
  if (!store) return fail(store.error().message());
  const std::string own = (*store)->settings().region;
  if (global) region = std::string(tls::kGlobalRegion);
  if (!region.empty() && !tls::valid_store_region(region)) return usage("not a region name: \"" + region + "\"");
  a.regions = a.all ? std::vector<std::string>{own, std::string(tls::kGlobalRegion)}
                    : std::vector<std::string>{region.empty() ? own : region};
  if (a.command == "put") return put(**store, a);
  if (a.command == "get") return get(**store, a);
  if (a.command == "list") return list(**store, a);
  if (a.command == "rm") return rm(**store, a);
  if (a.command == "reseal") return reseal(**store, a);
  return usage("unknown command \"" + a.command + "\"");
}

}  // namespace tlsfront::tools
