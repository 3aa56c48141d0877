#include "tls/store_entry.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <charconv>

#include "config/units.h"

namespace tlsfront::tls {
namespace {

constexpr size_t kMaxChainBytes = 256 * 1024;
constexpr size_t kMaxSealedKeyBytes = 64 * 1024;
constexpr size_t kMaxPairs = 2;

std::string sha256(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<const char*>(md), len);
}

std::string hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

std::string key_aad(std::string_view name, std::string_view chain_pem) {
  return std::string("tlsfront cert key v1") + '\0' + std::string(name) + '\0' + sha256(chain_pem);
}

std::string content_hash(const std::vector<std::pair<std::string_view, std::string_view>>& pairs) {
  std::string input;
  for (const auto& [chain, key] : pairs) {
    input.append(chain);
    input.push_back('\0');
    input.append(key);
    input.push_back('\0');
  }
  std::string out = hex(sha256(input));
  OPENSSL_cleanse(input.data(), input.size());
  return out;
}

std::optional<uint64_t> parse_u64(std::string_view s) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

Error bad(std::string_view region, std::string_view name, std::string what) {
  return make_error(Errc::Protocol, "store " + std::string(region) + "/" + std::string(name) + ": " + what);
}

}  // namespace

std::string store_entry_key(std::string_view prefix, std::string_view region, std::string_view name) {
  return std::string(prefix) + ":cert:" + std::string(region) + ":" + std::string(name);
}
std::string store_index_key(std::string_view prefix, std::string_view region) {
  return std::string(prefix) + ":certs:" + std::string(region);
}
std::string store_version_key(std::string_view prefix, std::string_view region) {
  return store_index_key(prefix, region) + ":version";
}

// Timestamps compare as decimal strings: same length first (Lua numbers are
// doubles and cannot hold nanoseconds exactly).
const char* const kPutScript = R"lua(
local function newer(a, b) if #a ~= #b then return #a > #b end return a > b end
local cur = redis.call('HGET', KEYS[2], ARGV[1])
if cur then
  cur = string.gsub(cur, '^%-', '')
  if not newer(ARGV[2], cur) then return 0 end
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('INCR', KEYS[3])
return 1
)lua";

const char* const kRemoveScript = R"lua(
local function newer(a, b) if #a ~= #b then return #a > #b end return a > b end
local cur = redis.call('HGET', KEYS[2], ARGV[1])
if cur then
  cur = string.gsub(cur, '^%-', '')
  if not newer(ARGV[2], cur) then return 0 end
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[2], ARGV[1], '-' .. ARGV[2])
redis.call('INCR', KEYS[3])
return 1
)lua";

bool valid_store_name(std::string_view name) {
  if (name.starts_with("*.")) name.remove_prefix(2);
  if (name.empty() || name.size() > 253 || name.front() == '.' || name.back() == '.') return false;
  size_t label = 0;
  for (char c : name) {
    if (c == '.') {
      if (label == 0) return false;
      label = 0;
      continue;
    }
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-') || ++label > 63) return false;
  }
  return true;
}

bool valid_store_region(std::string_view r) { return config::is_region_name(r); }

uint64_t unix_nanos(std::chrono::system_clock::time_point t) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

std::vector<std::string> StoreEntry::fields() const {
  std::vector<std::string> out = {"updated_at", std::to_string(updated_at), "key_id", key_id, "hash", hash,
                                  "pairs", std::to_string(pairs.size())};
  for (size_t i = 0; i < pairs.size(); ++i) {
    out.push_back("chain" + std::to_string(i + 1));
    out.push_back(pairs[i].chain_pem);
    out.push_back("key" + std::to_string(i + 1));
    out.push_back(pairs[i].sealed_key);
  }
  return out;
}

Result<StoreEntry> StoreEntry::from_fields(std::string region, std::string name,
                                           const std::vector<std::pair<std::string, std::string>>& fields) {
  if (!valid_store_region(region)) return bad(region.substr(0, 64), "", "not a region name");
  if (!valid_store_name(name)) return bad(region, name.substr(0, 253), "not a certificate name");
  auto field = [&fields](std::string_view f) -> const std::string* {
    for (const auto& [k, v] : fields) {
      if (k == f) return &v;
    }
    return nullptr;
  };
  StoreEntry e;
  const std::string* updated = field("updated_at");
  const std::string* key_id = field("key_id");
  const std::string* hash = field("hash");
  const std::string* pairs = field("pairs");
  if (!updated || !key_id || !hash || !pairs) return bad(region, name, "incomplete entry (updated_at, key_id, hash, pairs)");
  auto ts = parse_u64(*updated);
  if (!ts || *ts == 0) return bad(region, name, "updated_at is not a positive integer");
  auto n = parse_u64(*pairs);
  if (!n || *n == 0 || *n > kMaxPairs) return bad(region, name, "pairs must be 1 or 2");
  if (key_id->size() != 16 || hash->size() != 64) return bad(region, name, "malformed key_id or hash");
  e.updated_at = *ts;
  e.key_id = *key_id;
  e.hash = *hash;
  for (uint64_t i = 1; i <= *n; ++i) {
    const std::string* chain = field("chain" + std::to_string(i));
    const std::string* key = field("key" + std::to_string(i));
    if (!chain || !key) return bad(region, name, "pair " + std::to_string(i) + " is missing");
    if (chain->size() > kMaxChainBytes || key->size() > kMaxSealedKeyBytes) {
      return bad(region, name, "pair " + std::to_string(i) + " is too large");
    }
    e.pairs.push_back(Pair{*chain, *key});
  }
  e.region = std::move(region);
  e.name = std::move(name);
  return e;
}

std::string StoreEntry::to_file() const {
  std::vector<std::string> all = {"region", region, "name", name};
  for (auto& f : fields()) all.push_back(std::move(f));
  std::string out;
  for (size_t i = 0; i + 1 < all.size(); i += 2) {
    out += all[i] + " " + std::to_string(all[i + 1].size()) + "\n";
    out += all[i + 1];
    out += "\n";
  }
  return out;
}

Result<StoreEntry> StoreEntry::from_file(std::string_view bytes) {
  std::vector<std::pair<std::string, std::string>> fields;
  while (!bytes.empty()) {
    const size_t nl = bytes.find('\n');
    const size_t sp = bytes.find(' ');
    if (nl == std::string_view::npos || sp == std::string_view::npos || sp > nl || fields.size() > 16) {
      return make_error(Errc::Protocol, "malformed cache file");
    }
    auto len = parse_u64(bytes.substr(sp + 1, nl - sp - 1));
    if (!len || *len + 1 > bytes.size() - nl - 1 || bytes[nl + 1 + *len] != '\n') {
      return make_error(Errc::Protocol, "malformed cache file");
    }
    fields.emplace_back(std::string(bytes.substr(0, sp)), std::string(bytes.substr(nl + 1, *len)));
    bytes.remove_prefix(nl + 1 + *len + 1);
  }
  std::string region, name;
  for (const auto& [k, v] : fields) {
    if (k == "region") region = v;
    if (k == "name") name = v;
  }
  return from_fields(std::move(region), std::move(name), fields);
}

Result<StoreEntry> seal_entry(std::string region, std::string name, uint64_t updated_at,
                              const std::vector<std::pair<std::string, const Secret*>>& pairs,
                              const SealKeyRing& keys) {
  if (!valid_store_region(region)) return make_error(Errc::InvalidArgument, "not a region name: \"" + region + "\"");
  if (!valid_store_name(name)) {
    return make_error(Errc::InvalidArgument,
                      "not a certificate name: \"" + name + "\" (lowercase DNS name, \"*.\" only as the first label)");
  }
  if (pairs.empty() || pairs.size() > kMaxPairs) return make_error(Errc::InvalidArgument, "one or two chain/key pairs");
  StoreEntry e{.region = std::move(region), .name = std::move(name), .updated_at = updated_at,
               .key_id = keys.sealing_id(), .hash = {}, .pairs = {}};
  std::vector<std::pair<std::string_view, std::string_view>> plain;
  for (const auto& [chain, key] : pairs) {
    if (chain.size() > kMaxChainBytes) return make_error(Errc::InvalidArgument, "a chain is at most 256 KiB");
    auto sealed = keys.seal(key->str(), key_aad(e.name, chain));
    if (!sealed) return sealed.take_error();
    e.pairs.push_back(StoreEntry::Pair{chain, std::move(sealed).value()});
    plain.emplace_back(chain, key->str());
  }
  e.hash = content_hash(plain);
  return e;
}

Result<StoreEntry> reseal_entry(const StoreEntry& entry, const SealKeyRing& keys, uint64_t updated_at) {
  std::vector<Secret> opened;
  for (const auto& p : entry.pairs) {
    auto key = keys.unseal(entry.key_id, p.sealed_key, key_aad(entry.name, p.chain_pem));
    if (!key) return key.take_error();
    opened.push_back(std::move(key).value());
  }
  std::vector<std::pair<std::string, const Secret*>> pairs;
  for (size_t i = 0; i < opened.size(); ++i) pairs.emplace_back(entry.pairs[i].chain_pem, &opened[i]);
  return seal_entry(entry.region, entry.name, updated_at, pairs, keys);
}

Result<std::shared_ptr<const StoreCertificate>> open_entry(const StoreEntry& entry, const SealKeyRing& keys,
                                                           const config::Tls& tls,
                                                           std::chrono::system_clock::time_point now) {
  auto out = std::make_shared<StoreCertificate>();
  out->region = entry.region;
  out->name = entry.name;
  out->updated_at = entry.updated_at;
  out->hash = entry.hash;
  out->key_id = entry.key_id;
  const std::string label = "store " + entry.region + "/" + entry.name;
  config::Certificate& c = out->config;
  c.cert = "store:" + entry.region + "/" + entry.name;
  c.key = c.cert + " (sealed key)";
  c.names = {entry.name};
  c.client_auth = tls.client_auth;
  c.cert_setting = c.key_setting = c.names_setting = label;
  std::vector<Secret> opened;
  for (const auto& p : entry.pairs) {
    auto key = keys.unseal(entry.key_id, p.sealed_key, key_aad(entry.name, p.chain_pem));
    if (!key) return make_error(key.error().code, label + ": " + key.error().message());
    opened.push_back(std::move(key).value());
  }
  std::vector<std::pair<std::string_view, std::string_view>> plain;
  for (size_t i = 0; i < opened.size(); ++i) plain.emplace_back(entry.pairs[i].chain_pem, opened[i].str());
  if (content_hash(plain) != entry.hash) return make_error(Errc::Tls, label + ": content hash mismatch");
  for (size_t i = 0; i < opened.size(); ++i) {
    auto cert = ServerCertificate::from_pem(c, tls, entry.pairs[i].chain_pem, opened[i], now);
    if (!cert) return cert.take_error();
    for (const auto& other : out->certs) {
      if (other.key_type == cert->key_type) {
        return make_error(Errc::Config, label + ": two " + cert->key_type + " certificates (a pair is ECDSA + RSA)");
      }
    }
    out->certs.push_back(std::move(cert).value());
  }
  return std::shared_ptr<const StoreCertificate>(std::move(out));
}

}  // namespace tlsfront::tls
