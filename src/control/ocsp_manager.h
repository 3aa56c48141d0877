// OcspManager: the Server's OCSP staplers across configuration generations.
// A generation's certificates get their staplers here: one per (leaf,
// [ocsp] settings, ocsp_cache_dir), created when a generation first needs it
// and kept while generations use it, so a reload that keeps a certificate
// keeps its staple and refresh schedule. Staplers the current generation no
// longer uses are stopped (never freed before the process ends: a handshake
// of an older generation may still reach them through its registry).
// Thread affinity: control thread only.
#pragma once

#include <uv.h>

#include <memory>
#include <string>
#include <vector>

#include "tls/cert_index.h"
#include "tls/ocsp_fetcher.h"
#include "tls/ocsp_stapler.h"
#include "util/clock.h"
#include "util/result.h"

namespace tlsfront::control {

class OcspManager {
 public:
  explicit OcspManager(const Clock* clock) : clock_(clock) {}
  ~OcspManager();
  OcspManager(const OcspManager&) = delete;
  OcspManager& operator=(const OcspManager&) = delete;

  // For each certificate of `index`: its stapler (a new one is created and
  // its response_file or cached response loaded, see OcspStapler), added to
  // `registry`, which is then attached to every SSL_CTX of `index`.
  // Certificates that are not stapled (no responder URL, stapling = false)
  // are skipped; one whose `stapling = true` is written out yet has no
  // responder URL (AIA or responder) and no response_file also gets a
  // warning in `registry` (OcspRegistry::warnings, nginx's "ssl_stapling
  // ignored"). Errors: OcspStapler::create / load_initial's.
  [[nodiscard]] Status prepare(const tls::CertIndex& index, const std::string& cache_dir,
                               tls::OcspRegistry& registry);
  // After a generation with `live` went live: starts the staplers not
  // started yet on `loop` (creating the fetcher on first need) and stops those
  // `live` does not hold. Errors: OcspFetcher::create's.
  [[nodiscard]] Status activate(uv_loop_t* loop, const tls::OcspRegistry& live);
  // SIGHUP: each running stapler re-reads its response_file.
  void reload();
  // Before the control loop is drained: stops every stapler and the fetcher.
  void stop();

  // Prometheus exposition of the running staplers (metrics/prometheus.h
  // ProcessMetrics::extra), one series per stapler and metric, labelled
  // certificate (leaf subject), key_type and sha256 (OcspStapler::fingerprint).
  std::string metrics() const;

 private:
  struct Entry {
    std::unique_ptr<tls::OcspStapler> stapler;
    std::string key;  // leaf DER + settings + cache dir
    bool started = false;
    bool retired = false;
  };
  const Clock* clock_;
  uv_loop_t* loop_ = nullptr;
  std::unique_ptr<tls::OcspFetcher> fetcher_;
  std::vector<Entry> entries_;
};

}  // namespace tlsfront::control
