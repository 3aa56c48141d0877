// OCSP stapling of one certificate (RFC 6066 §8 status_request; RFC 6960).
//
// An OcspStapler belongs to one leaf (and its issuer: an intermediate of the
// built chain, or its trust anchor when a root issued the leaf directly).
// It is owned by the Server and driven on the control loop: it fetches the
// response from the responder (the [tls.ocsp] responder override, else the
// leaf's AIA URL) with an OcspFetcher, verifies it (ocsp_response.h), and
// publishes it as an immutable OcspStaple that workers read lock-free
// (atomic shared_ptr, like TicketKeyStore). Or, with response_file, it
// staples the operator's file (re-read on SIGHUP) and fetches nothing.
//
// Life of a staple (times are the response's thisUpdate/nextUpdate):
//   - refresh at thisUpdate + refresh_at_percent of the window, ± jitter,
//     but no sooner than refresh_at_percent of the time left (responses
//     produced ahead of time) and never sooner than 1 s from now;
//   - a failed fetch (network, HTTP, size, timeout, invalid response) keeps
//     the current staple and retries after 2 s, doubling up to 10 min;
//   - at nextUpdate a staple that was not replaced is dropped (and workers
//     never hand out one whose nextUpdate has passed, even if the loop is late);
//   - a "revoked" answer is logged at error level, the current staple is
//     dropped and the cache file removed; "unknown" counts as a failure;
//   - every good response is written to ocsp_cache_dir (<sha256 of the leaf
//     DER>.der, atomically) and loaded (re-verified) at start-up.
// A leaf with no responder URL and no response_file is simply not stapled
// (create() returns null); that is never an error.
//
// Policies (config::StaplePolicy): lenient serves a client that asks for a
// staple without one; strict and must_staple (automatic for leaves with the
// RFC 7633 TLS Feature status_request) refuse such a handshake (fatal
// internal_error alert) while no valid staple exists. Only handshakes that
// carry status_request reach the status callback: a client that does not ask
// for a staple is served either way (it could not check one). Resumed sessions
// send no certificate and are neither stapled nor refused.
//
// Trust warning: responses and cache files are hostile input until verified;
// only verified bytes are published.
#pragma once

#include <uv.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "config/config.h"
#include "tls/ocsp_fetcher.h"
#include "tls/ocsp_response.h"
#include "util/clock.h"
#include "util/openssl_ptr.h"
#include "util/result.h"
#include "util/uv_handle.h"

namespace tlsfront::tls {

// Counters of one stapler; plain numbers, for logs now and /metrics later.
struct OcspCounters {
  uint64_t fetch_ok = 0;        // verified good responses fetched (or loaded from response_file)
  uint64_t fetch_failed = 0;    // fetches that gave no usable response
  uint64_t revoked = 0;         // responses saying "revoked"
  uint64_t stapled = 0;         // handshakes that got a staple
  uint64_t unstapled = 0;       // handshakes that asked for one and got none (lenient)
  uint64_t refused = 0;         // handshakes refused for lack of a staple (strict, must_staple)
};

// A point-in-time view for logs and metrics; times in whole seconds.
struct OcspStatus {
  OcspCounters counters;
  bool stapling = false;           // a valid staple is published
  int64_t staple_age_s = -1;       // now - thisUpdate of the staple (-1 without one)
  int64_t next_update_in_s = -1;   // nextUpdate - now (-1 without a staple)
};

class OcspStapler {
 public:
  // For `leaf` (borrowed, up-ref'ed) whose issuer is found in `chain`
  // (borrowed; the intermediates sent with it) or is `anchor` (borrowed, may
  // be null; the trust anchor the chain ends at, CertChain::anchor(): a leaf
  // issued directly by a root is sent without its issuer, yet the response
  // names and is signed by, or on behalf of, that root). Returns null (not an
  // error) when the certificate is not stapled: ocsp.stapling = false, no
  // responder (AIA nor override) and no response_file, or neither `chain` nor
  // `anchor` issued the leaf (logged at warn when a staple was expected).
  // `cache_dir` "" = no cache.
  // `clock` is borrowed and must outlive the stapler. Errors: Errc::Tls
  // (the request cannot be built).
  // Thread affinity: control thread.
  [[nodiscard]] static Result<std::unique_ptr<OcspStapler>> create(X509* leaf, STACK_OF(X509) * chain,
                                                                    X509* anchor, const config::Ocsp& ocsp,
                                                                    const std::string& cache_dir, const Clock* clock);
  ~OcspStapler();
  OcspStapler(const OcspStapler&) = delete;
  OcspStapler& operator=(const OcspStapler&) = delete;

  // Before start(): publishes the response_file's response, else the cached
  // one, when it verifies now (logged either way). Creates `cache_dir` (0700)
  // if needed. Errors: Errc::Config when response_file cannot be read (a
  // response that does not verify is only logged: it may have expired).
  [[nodiscard]] Status load_initial();
  // `tlsfront --test`: whether the response_file (if any) would be stapled
  // now. load_initial() only logs a response that does not verify (the server
  // serves without it); a test says why. Errors: Errc::Config "<origin>:
  // <setting>: "<path>" would not be stapled: <reason>" (unreadable,
  // malformed, another certificate's, signed by another key, revoked,
  // unknown). An expired response is a mistake of time, not of
  // configuration: the same text goes to `warnings` instead (a failing test
  // would also stop a systemd start, ExecStartPre). Any thread; reads the file.
  [[nodiscard]] Status check_response_file(std::vector<std::string>& warnings) const;
  // Arms the refresh/expiry timers on `loop`; fetches with `fetcher` (both
  // borrowed, must outlive stop()). Control loop only.
  void start(uv_loop_t* loop, OcspFetcher* fetcher);
  // Cancels the fetch in flight and closes the timers. Control loop only.
  void stop();
  // SIGHUP: re-reads response_file (keeps the current staple when the file
  // is unreadable or does not verify). No-op when fetching. Control loop only.
  void reload();

  // The staple to send now, or null (none, or its nextUpdate has passed).
  // Any thread; one atomic load.
  std::shared_ptr<const OcspStaple> staple() const;
  // lenient, strict or must_staple (must_staple also when the leaf demands it).
  config::StaplePolicy policy() const { return policy_; }
  // "CN=localhost" (the leaf subject, RFC 2253).
  const std::string& name() const { return name_; }
  // The leaf key's algorithm: "ecdsa", "rsa", "rsa-pss", "ed25519", "ed448".
  const std::string& key_type() const { return key_type_; }
  // The first 8 hex digits of the SHA-256 of the leaf DER (lowercase; what
  // `openssl x509 -noout -fingerprint -sha256` starts with). With name and
  // key type it tells apart an ECDSA/RSA pair and renewals of one subject.
  const std::string& fingerprint() const { return fingerprint_; }
  X509* leaf() const { return leaf_.get(); }
  // The URL fetched ("" with response_file).
  const std::string& responder() const { return responder_; }
  OcspStatus status() const;
  // One line for the start-up log and --test: source, policy, cache, staple.
  // Every log line of a stapler starts `ocsp "<subject>" (<key type>
  // <fingerprint>): `.
  std::string describe() const;

  // When the next fetch is due (control loop; epoch when none is scheduled).
  OcspTime next_fetch_for_test() const { return next_fetch_at_; }

  // Called by the status callback (workers).
  void count_stapled() { stapled_.fetch_add(1, std::memory_order_relaxed); }
  void count_unstapled() { unstapled_.fetch_add(1, std::memory_order_relaxed); }
  void count_refused() { refused_.fetch_add(1, std::memory_order_relaxed); }

 private:
  OcspStapler(X509Ptr leaf, X509Ptr issuer, const config::Ocsp& ocsp, std::string cache_dir, const Clock* clock);
  void fetch_now();
  void on_fetched(Result<std::vector<uint8_t>> body);
  void on_failure(const std::string& why);
  void on_revoked(const OcspStaple& r);
  void publish(std::shared_ptr<const OcspStaple> staple, const char* how);
  void drop(const char* why);
  void schedule_refresh(OcspTime at);
  void arm_fetch(std::chrono::milliseconds delay);
  void arm_expiry();
  void on_expiry();
  Result<std::shared_ptr<const OcspStaple>> read_and_verify(const std::string& path) const;
  void write_cache(const OcspStaple& s);
  std::string cache_path() const;
  std::string fallback_note() const;

  X509Ptr leaf_;
  X509Ptr issuer_;
  config::Ocsp ocsp_;
  config::StaplePolicy policy_;
  std::string cache_dir_;
  const Clock* clock_;
  std::string name_, key_type_, fingerprint_;
  std::string prefix_;  // log lines: ocsp "CN=localhost" (ecdsa 3f9a1c2b)
  std::string responder_;
  std::vector<uint8_t> request_der_;
  std::string leaf_id_;  // hex SHA-256 of the leaf DER
  std::atomic<std::shared_ptr<const OcspStaple>> current_;
  std::atomic<uint64_t> fetch_ok_{0}, fetch_failed_{0}, revoked_{0}, stapled_{0}, unstapled_{0}, refused_{0};

  // Control loop state.
  uv_loop_t* loop_ = nullptr;
  OcspFetcher* fetcher_ = nullptr;
  uint64_t fetch_id_ = 0;
  int failures_ = 0;
  OcspTime next_fetch_at_{};
  UvHandle<uv_timer_t> refresh_timer_, expiry_timer_;
  std::mt19937_64 rng_;
};

// Leaf certificate -> stapler, for the status callback. Filled on the control
// thread before attach_ocsp() and immutable afterwards (then any thread).
class OcspRegistry {
 public:
  // `stapler` is borrowed and must outlive every SSL_CTX attached to this registry.
  void add(OcspStapler* stapler) { staplers_.push_back(stapler); }
  // The stapler of `leaf` (borrowed): same X509 object, else equal DER
  // (X509_cmp). Null when none.
  OcspStapler* find(X509* leaf) const;
  bool empty() const { return staplers_.empty(); }
  const std::vector<OcspStapler*>& staplers() const { return staplers_; }
  // What the generation's certificates ask for and will not get (e.g.
  // stapling = true on a leaf with no OCSP responder URL): logged at start
  // and reload, printed by --test.
  void warn(std::string warning) { warnings_.push_back(std::move(warning)); }
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  std::vector<OcspStapler*> staplers_;
  std::vector<std::string> warnings_;
};

// Installs the status callback (SSL_CTX_set_tlsext_status_cb) on `ctx`
// (borrowed): for a client's status_request it finds the stapler of the
// certificate the SSL actually presents (SSL_get_certificate: with several
// certificates per SSL_CTX, the one OpenSSL selected) and staples a copy of
// its current response (SSL_set_tlsext_status_ocsp_resp), or applies the
// policy when there is none. `registry` is borrowed and must outlive `ctx`.
// Call before the first handshake on `ctx`. Thread affinity: any thread,
// while no handshake uses `ctx`.
void attach_ocsp(SSL_CTX* ctx, const OcspRegistry* registry);

}  // namespace tlsfront::tls
