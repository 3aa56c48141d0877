// CertStore: a node's side of [tls.store], the cluster certificate store in
// Redis (layout, scripts and entry checks: tls/store_entry.h). It keeps the
// entries this node serves — its region's and the "global" ones, a region's
// entry winning over a global one of the same name — in step with the store
// and hands each new set to the Server, which builds a new Generation from
// it (certificates parsed, verified and built into SSL_CTXs here and on the
// control loop, never on a worker loop) and swaps it in.
//
// Sync, on a thread of its own ("a control thread"; blocking hiredis calls,
// each bounded by redis_timeout): every poll_interval it reads both regions'
// version counters (one GET each); when one differs from the last seen, or
// every reconcile_interval anyway, or after trouble, it reads both indexes
// (HGETALL) and fetches (HGETALL, pipelined) every entry newer than the one
// it holds. Nothing is lost while a node is disconnected, slow or stopped:
// the indexes are the state, the counters only a cheap "something changed".
//
// What is never done: a store that cannot be reached, or an entry that does
// not open or check (wrong sealing key, tampered, incomplete chain, key
// mismatch, expired, name not covered) never removes or replaces what is
// served: the last good entry stays, and the refusal is logged once per
// (entry, updated_at), the store's trouble once per change of state. A name
// missing from the index (Redis lost its data) is kept; only a tombstone
// (`tlsfront cert rm`) removes one.
//
// Disk cache (cache_dir): each good entry, still sealed, as
// "<region>,<name>" (tls::StoreEntry::to_file, mode 0600, written to a
// temporary file and renamed). A node starting while Redis is unreachable
// serves these and says so.
//
// Bounds (Redis is untrusted): at most 10,000 names per region index (more
// fails the round: the last good entries keep serving), entries as
// tls/store_entry.h limits them, cache files of at most 1 MiB.
//
// Metrics: see metrics(). Thread affinity: create/load_initial before
// start(); snapshot(), metrics(), note_swap() from any thread; the callback
// given to start() runs on the control loop.
#pragma once

#include <uv.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "config/config.h"
#include "redis/client.h"
#include "tls/sealed_key.h"
#include "tls/store_entry.h"
#include "util/result.h"
#include "util/uv_handle.h"

namespace tlsfront::control {

class CertStore {
 public:
  // Reads the sealing keys and the Redis password file of `tls.store`
  // (warnings logged). Keeps a copy of `tls` for the entries' checks (trust
  // store, issuers_dir, client certificate settings). Errors: Errc::Config
  // naming the file. `keep_cache`: false (`--test`) reads the disk cache
  // but never writes or removes a file.
  [[nodiscard]] static Result<std::unique_ptr<CertStore>> create(const config::Tls& tls, bool keep_cache = true);
  ~CertStore();  // stop()
  CertStore(const CertStore&) = delete;
  CertStore& operator=(const CertStore&) = delete;

  // Start-up: the sealed disk copies, then one round with Redis. Redis
  // trouble is logged (with what is served instead), never returned.
  void load_initial();
  // The entries to serve now (shared, immutable).
  tls::StoreSnapshot snapshot() const;

  // Starts the sync thread; `changed` runs on `loop` (borrowed, must run
  // until stop()) after each round that changed the snapshot.
  void start(uv_loop_t* loop, std::function<void()> changed);
  // Joins the thread and closes the async handle (the loop must run
  // afterwards). Idempotent.
  void stop();

  // The Server built (or failed to build) a generation from a snapshot.
  void note_swap(bool ok);

  // Prometheus exposition (metrics/prometheus.h ProcessMetrics::extra):
  // tlsfront_cert_store_up, _sync_age_seconds, _sync_errors_total,
  // _entries, _refused_entries, _updates_total{result}, _swaps_total{result}.
  std::string metrics() const;

 private:
  using Key = std::pair<std::string, std::string>;  // region, name
  struct Held {
    tls::StoreEntry entry;                              // as fetched (sealed)
    std::shared_ptr<const tls::StoreCertificate> cert;  // opened and checked
  };

  CertStore(const config::Tls& tls, tls::SealKeyRing keys, redis::Options options, bool keep_cache);

  // One round; true when the held set changed. Sync thread (or load_initial).
  bool round(bool full);
  [[nodiscard]] Status read_versions(bool& changed);
  [[nodiscard]] Status reconcile(bool& changed);
  // An entry fetched (or read from the cache): opened, checked and held, or
  // refused. True when it is now held.
  bool take(tls::StoreEntry entry, bool from_cache);
  void load_cache();
  void write_cache(const tls::StoreEntry& entry) const;
  void remove_cache(const Key& key) const;
  void publish();  // snapshot_ from held_
  void set_up(bool up, const std::string& problem);

  const config::Tls tls_;
  const config::CertStore& cfg_ = tls_.store;
  const tls::SealKeyRing keys_;
  const redis::Client client_;  // call_blocking only
  const bool keep_cache_;

  // Sync thread state.
  std::map<Key, Held> held_;
  std::map<Key, uint64_t> removed_;   // tombstones applied: updated_at
  std::map<Key, uint64_t> refused_;   // refused entries: updated_at (logged once)
  std::set<Key> missing_;             // held yet not in the index (logged once)
  std::map<std::string, std::string> versions_;  // region -> last seen counter ("" = none)
  std::chrono::steady_clock::time_point next_reconcile_{};
  bool up_known_ = false, up_ = false;
  std::string problem_;

  mutable std::mutex mu_;  // guards what follows
  tls::StoreSnapshot snapshot_;
  std::chrono::steady_clock::time_point last_sync_{};
  bool synced_ = false;
  bool up_gauge_ = false;  // up_, for metrics()
  uint64_t sync_errors_ = 0, applied_ = 0, refused_total_ = 0, removed_total_ = 0;
  uint64_t swaps_ok_ = 0, swaps_failed_ = 0;
  size_t refused_now_ = 0;

  std::thread thread_;
  std::condition_variable wake_;
  bool stopping_ = false;  // under mu_
  UvHandle<uv_async_t> async_;
  std::function<void()> changed_;
};

}  // namespace tlsfront::control
