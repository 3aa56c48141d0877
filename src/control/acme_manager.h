// AcmeManager: [acme] on one node — certificates ordered from an ACME CA
// (RFC 8555, control/acme/acme_client.h) and renewed, coordinated by the
// fleet through the certificate store's Redis ([tls.store]):
//
// - Work: every check_interval (sooner when a certificate falls due) the
//   node reads its region's store entry of each configured name; a name is
//   due when it has no entry, fewer pairs than key_type asks for, or its
//   leaf (the first pair's) is past its renewal point. With something due it tries the
//   region's lock (control/acme_lock.h: lease + fencing token); the holder
//   reads each due entry again (another node may just have renewed it),
//   orders it, seals the new key (tls::seal_entry) and writes the entry
//   with the fenced put. Every node of the region — this one too — then
//   takes it through the store's own sync (control/cert_store.h) and swaps
//   it in without a restart. Each order INCRs P:acme:orders:R.
// - Renewal point: the EARLIER of (a) the configured rule — notAfter -
//   renew_before, or 2/3 of the way from notBefore to notAfter — and (b) the
//   time this node chose, uniformly at random, inside the window the CA
//   suggests for that leaf (ACME Renewal Information, RFC 9773,
//   control/acme/renewal_info.h). (a) is the fallback and the upper bound:
//   ARI can only bring a renewal forward (a window in the past: due now),
//   never delay it, and a CA without "renewalInfo", an ARI request that
//   fails or an answer that is malformed leaves (a) alone. Each node asks
//   for itself (an unauthenticated GET, state in memory per certificate:
//   a new certificate is asked about at once, then after the CA's
//   Retry-After clamped to 1 min .. 1 day, after an error 1-8 min then
//   6 h); nothing is asked once (a) has passed. The first window that
//   brings a certificate's renewal forward is logged once, with the CA's
//   explanationURL. Orders name the certificate of their key type they
//   replace ("replaces", RFC 9773 §5) when the CA offers ARI; a CA refusing
//   that gets the order again without it.
// - Account: one per directory, created by the first node that needs it,
//   its P-256 key sealed with the store's sealing key in
//   P:acme:account:<16 hex of SHA-256(directory)> (hash key_id, sealed;
//   additional data "tlsfront acme account v1\0<directory>").
// - Challenges (the "board"): P:acme:challenges, a hash "http-01:<token>"
//   and "tls-alpn-01:<name>" -> key authorization (expiring an hour after
//   its last change), with a version counter
//   P:acme:challenges:version INCR'd on every change. Every node polls the
//   counter every kBoardPoll and copies the board into its
//   tls::AcmeChallenges (TLS-ALPN-01 certificates made locally from the key
//   authorization, RFC 8737 §3), which the data plane answers from. The
//   ordering node waits kPropagation after publishing before it asks the CA
//   to validate, so every node has it.
// - Failures (the CA's problem document logged, counted): a name is retried
//   after a backoff doubling from check_interval up to kMaxBackoff, with
//   jitter (a uniformly random 50-100 % of it); nothing loops faster than
//   kBoardPoll; a current certificate is never removed or replaced by
//   anything but a newly issued one.
//
// Metrics: metrics(). Thread affinity: create() and start()/stop() on the
// control thread; the work on a thread of its own (blocking Redis and HTTPS
// calls, each bounded); metrics() from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include "config/config.h"
#include "control/acme/acme_client.h"
#include "control/acme/renewal_info.h"
#include "redis/client.h"
#include "tls/acme_challenges.h"
#include "tls/sealed_key.h"
#include "util/result.h"

namespace tlsfront::control {

class AcmeLock;

class AcmeManager {
 public:
  // One GET per poll (a new connection each, as the store's sync makes).
  static constexpr std::chrono::milliseconds kBoardPoll{500};
  static constexpr std::chrono::milliseconds kPropagation{3 * kBoardPoll};
  static constexpr std::chrono::hours kMaxBackoff{6};
  static constexpr std::chrono::seconds kAriTimeout{10};  // one renewalInfo GET (and the directory's)

  // Reads the sealing keys, the Redis password and the EAB key of `cfg`
  // (cfg.acme.enabled, cfg.tls.store.enabled). Errors: Errc::Config naming
  // the file. `board`: where this node's challenge answers go (shared with
  // every generation).
  [[nodiscard]] static Result<std::unique_ptr<AcmeManager>> create(const config::Config& cfg,
                                                                   std::shared_ptr<tls::AcmeChallenges> board);
  ~AcmeManager();  // stop()
  AcmeManager(const AcmeManager&) = delete;
  AcmeManager& operator=(const AcmeManager&) = delete;

  void start();
  void stop();  // joins the thread; idempotent

  // One board refresh / one check, on the calling thread (the thread's
  // steps; tests call them directly before start()).
  void refresh_board(bool force = false);
  void check();

  // tlsfront_acme_orders_total{result="issued|failed|fenced"},
  // tlsfront_acme_last_success_timestamp_seconds, tlsfront_acme_due_names,
  // tlsfront_acme_lock_acquisitions_total,
  // tlsfront_acme_renewal_info_total{result="window|failed"}.
  std::string metrics() const;
  // The same text for given values; a node without [acme] renders zeros,
  // so the shipped alert rules find their series everywhere.
  static std::string render_metrics(uint64_t issued, uint64_t failed, uint64_t fenced, int64_t last_success,
                                     uint64_t due, uint64_t acquisitions, uint64_t ari_windows = 0,
                                     uint64_t ari_failures = 0);

  // Where the next check is due (tests).
  std::chrono::steady_clock::time_point next_check() const;

 private:
  class Board;  // the ChallengeResponder publishing in Redis
  struct NameState {
    int failures = 0;
    std::chrono::steady_clock::time_point retry_at{};
  };

  AcmeManager(const config::Config& cfg, tls::SealKeyRing keys, redis::Options options, std::string eab_key,
              std::shared_ptr<tls::AcmeChallenges> board);

  // Those of `names` due now; `next` lowered to the earliest future renewal
  // point (or renewalInfo request).
  [[nodiscard]] Result<std::vector<std::string>> due_names(const std::vector<std::string>& names,
                                                           std::chrono::system_clock::time_point& next);
  // The renewal point of `name`'s current `leaf` (see the header comment),
  // asking the CA's renewalInfo when due; `next` lowered to the next request.
  std::chrono::system_clock::time_point renewal_due(const std::string& name, const acme::Leaf& leaf,
                                                    std::chrono::system_clock::time_point now,
                                                    std::chrono::system_clock::time_point& next);
  void fetch_renewal_info(const std::string& name, acme::AriState& s, std::chrono::system_clock::time_point now);
  // The leaves (with an ARI identifier) of `name`'s store entry now.
  std::vector<acme::Leaf> current_leaves(const std::string& name);
  [[nodiscard]] Result<acme::AccountKey> account_key();
  // Orders `name` (each key type) and writes it; false when not written.
  bool renew(acme::AcmeClient& client, AcmeLock& lock, const std::string& name);
  void failed(const std::string& name, const std::string& why);
  std::string key(std::string_view what) const;  // "<prefix>:acme:<what>"

  const config::Acme cfg_;
  const config::CertStore store_;
  const tls::SealKeyRing keys_;
  const redis::Client client_;  // call_blocking only
  const std::string eab_key_;   // decoded MAC key ("" = no EAB)
  const std::string holder_;
  std::shared_ptr<tls::AcmeChallenges> board_;
  std::string board_version_;  // last seen ("" = none)

  std::map<std::string, NameState> names_;  // ACME thread
  // ARI (ACME thread): per name, the state of its current certificate.
  std::map<std::string, acme::AriState> ari_;
  std::unique_ptr<acme::RenewalInfoClient> ari_client_;  // made on first use
  std::mt19937_64 rng_{std::random_device{}()};
  bool ari_absent_logged_ = false;

  mutable std::mutex mu_;  // guards what follows
  std::chrono::steady_clock::time_point next_check_{};
  uint64_t issued_ = 0, failed_ = 0, fenced_ = 0, acquisitions_ = 0, ari_windows_ = 0, ari_failures_ = 0;
  int64_t last_success_ = 0;  // Unix seconds
  size_t due_ = 0;
  bool stopping_ = false;
  std::atomic<bool> cancel_{false};  // stop(): an order in progress gives up at its next request
  std::condition_variable wake_;
  std::thread thread_;
};

}  // namespace tlsfront::control
