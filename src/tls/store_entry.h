// The certificate store's entries (for operators: docs/operations.md,
// "Certificate store"): their Redis layout, the atomic
// write scripts, the sealed on-disk copy, and turning an entry into checked
// ServerCertificates.
//
// Redis layout (prefix P, region R — a node's own or "global" — name N):
//   P:cert:R:N         hash  updated_at, key_id, hash, pairs ("1" | "2"),
//                            chain1, key1 [, chain2, key2]
//   P:certs:R          hash  N -> "<updated_at>" (live) | "-<updated_at>" (removed)
//   P:certs:R:version  int   INCR'd by every accepted put and rm
// updated_at is nanoseconds since the Unix epoch (decimal). Both writes are
// one Lua script each (kPutScript, kRemoveScript): a reader never sees a
// chain of one update with the key of another, and an update whose
// updated_at is older than or equal to the held one is ignored (returns 0).
// A removal leaves a tombstone in the index, so a node tells "removed" from
// "lost with the store" (a name missing from the index is kept).
//
// An entry holds one or two pairs (chain PEM: leaf first or any order, as a
// certificate file; key: the PEM private key sealed by SealKeyRing with
// additional data "tlsfront cert key v1\0<name>\0<SHA-256 of the chain PEM>"),
// of different key types (an ECDSA + RSA pair swaps as one). `hash` is the
// hex SHA-256 over each pair's chain PEM, NUL, key PEM, NUL: checked after
// unsealing.
//
// Limits (untrusted input: Redis and cache files): a chain at most 256 KiB,
// a sealed key at most 64 KiB, names as DNS names (lowercase, <= 253, "*."
// only as the whole first label), regions as [tls.store] region or "global".
// Thread affinity: none (pure functions and values).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config.h"
#include "tls/sealed_key.h"
#include "tls/server_certificate.h"
#include "util/result.h"
#include "util/secret.h"

namespace tlsfront::tls {

inline constexpr std::string_view kGlobalRegion = "global";

std::string store_entry_key(std::string_view prefix, std::string_view region, std::string_view name);
std::string store_index_key(std::string_view prefix, std::string_view region);
std::string store_version_key(std::string_view prefix, std::string_view region);

// EVAL kPutScript 3 <entry> <index> <version> <name> <updated_at> <field> <value>...
// -> 1 stored, 0 ignored (not newer).
extern const char* const kPutScript;
// EVAL kRemoveScript 3 <entry> <index> <version> <name> <updated_at> -> 1 | 0.
extern const char* const kRemoveScript;

bool valid_store_name(std::string_view name);
bool valid_store_region(std::string_view region);

// Nanoseconds since the Unix epoch of `t`.
uint64_t unix_nanos(std::chrono::system_clock::time_point t);

struct StoreEntry {
  struct Pair {
    std::string chain_pem;
    std::string sealed_key;
  };
  std::string region;
  std::string name;
  uint64_t updated_at = 0;
  std::string key_id;
  std::string hash;
  std::vector<Pair> pairs;

  // Field, value, field, value... as in the Redis hash.
  std::vector<std::string> fields() const;
  // From a Redis hash's fields (HGETALL). Errc::Protocol naming what is wrong.
  [[nodiscard]] static Result<StoreEntry> from_fields(std::string region, std::string name,
                                                      const std::vector<std::pair<std::string, std::string>>& fields);
  // The sealed on-disk copy: "<field> <length>\n<bytes>\n" per field,
  // region and name included. Holds no plaintext key.
  std::string to_file() const;
  [[nodiscard]] static Result<StoreEntry> from_file(std::string_view bytes);
};

// Seals `pairs` (chain PEM, key PEM) into an entry for `name` in `region`.
[[nodiscard]] Result<StoreEntry> seal_entry(std::string region, std::string name, uint64_t updated_at,
                                            const std::vector<std::pair<std::string, const Secret*>>& pairs,
                                            const SealKeyRing& keys);

// `entry` unsealed (with whichever of `keys` sealed it) and sealed again
// under the sealing key, at `updated_at`. Errors: as SealKeyRing::unseal.
[[nodiscard]] Result<StoreEntry> reseal_entry(const StoreEntry& entry, const SealKeyRing& keys, uint64_t updated_at);

// An entry opened and checked: its certificates, ready for a TlsContext.
// Always held by shared_ptr (certs[i].config points into it).
struct StoreCertificate {
  std::string region;
  std::string name;
  uint64_t updated_at = 0;
  std::string hash;
  std::string key_id;
  config::Certificate config;  // synthetic: names = {name}; cert = "store <region>/<name>"
  std::vector<ServerCertificate> certs;
};

// The entries a node serves, resolved (a region's entry over a global one of
// the same name), in name order.
using StoreSnapshot = std::vector<std::shared_ptr<const StoreCertificate>>;

// Unseals and checks `entry` as the loader checks a file certificate
// (chain complete and in order, key matches, valid at `now`, `name` covered
// by the leaf's SAN) with `tls`'s trust store and client certificate
// settings; two pairs must differ in key type. Errors: Errc::Config /
// Errc::Tls naming the entry ("store cn-shanghai/api.example.com: ...").
[[nodiscard]] Result<std::shared_ptr<const StoreCertificate>> open_entry(const StoreEntry& entry,
                                                                         const SealKeyRing& keys,
                                                                         const config::Tls& tls,
                                                                         std::chrono::system_clock::time_point now);

}  // namespace tlsfront::tls
