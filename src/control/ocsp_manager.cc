#include "control/ocsp_manager.h"

#include <algorithm>

#include <fmt/format.h>

#include "metrics/prometheus.h"

namespace tlsfront::control {
namespace {

std::string der_of(X509* x) {
  const int len = i2d_X509(x, nullptr);
  if (len <= 0) return {};
  std::string out(static_cast<size_t>(len), '\0');
  auto* p = reinterpret_cast<unsigned char*>(out.data());
  i2d_X509(x, &p);
  return out;
}

std::string settings_of(const config::Ocsp& o) {
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}", o.stapling, o.responder, o.response_file,
                     static_cast<int>(o.staple_policy), o.refresh_at_percent, o.refresh_jitter_percent,
                     o.fetch_timeout.count(), o.max_response_bytes);
}

// nginx's "ssl_stapling ignored, no OCSP responder URL in the certificate":
// `stapling = true` written out, yet nothing to fetch from (no AIA OCSP URL,
// no responder) and no response_file. Left at its default, stapling is
// silent (docs/configuration.md: many CAs no longer run OCSP); a must-staple leaf is
// warned about by OcspStapler::create. "" when there is nothing to say.
std::string stapling_ignored(const tls::ServerCertificate& cert) {
  const config::Ocsp& o = cert.config->ocsp;
  if (!o.stapling || o.stapling_origin.empty() || !o.responder.empty() || !o.response_file.empty()) return {};
  if (!tls::ocsp_responder_url(cert.chain.leaf()).empty() || tls::has_must_staple(cert.chain.leaf())) return {};
  std::string setting = o.response_file_setting;  // "tls.ocsp.response_file", "certificate[2].ocsp.response_file"
  setting.replace(setting.rfind('.') + 1, std::string::npos, "stapling");
  return fmt::format(
      "{}: {}: stapling is ignored: the leaf of \"{}\" has no OCSP responder URL (no AIA OCSP entry) and neither "
      "responder nor response_file is set, so no staple is ever sent (set one, or stapling = false)",
      o.stapling_origin, setting, cert.config->cert);
}

}  // namespace

OcspManager::~OcspManager() { stop(); }

Status OcspManager::prepare(const tls::CertIndex& index, const std::string& cache_dir, tls::OcspRegistry& registry) {
  for (const tls::ServerCertificate* c : index.certificates()) {
    const tls::ServerCertificate& cert = *c;
    if (std::string w = stapling_ignored(cert); !w.empty()) registry.warn(std::move(w));
    std::string key = der_of(cert.chain.leaf()) + '\0' + settings_of(cert.config->ocsp) + '\0' + cache_dir;
    auto it = std::find_if(entries_.begin(), entries_.end(),
                           [&](const Entry& e) { return !e.retired && e.key == key; });
    if (it == entries_.end()) {
      auto stapler = tls::OcspStapler::create(cert.chain.leaf(), cert.chain.intermediates(), cert.chain.anchor(),
                                              cert.config->ocsp, cache_dir, clock_);
      if (!stapler) return stapler.take_error();
      if (!*stapler) continue;  // not stapled
      if (auto st = (*stapler)->load_initial(); !st) return st.take_error();
      entries_.push_back(Entry{std::move(stapler).value(), std::move(key)});
      it = entries_.end() - 1;
    }
    registry.add(it->stapler.get());
  }
  if (!registry.empty()) {
    for (SSL_CTX* ctx : index.contexts()) tls::attach_ocsp(ctx, &registry);
  }
  return {};
}

Status OcspManager::activate(uv_loop_t* loop, const tls::OcspRegistry& live) {
  for (Entry& e : entries_) {
    const bool used = std::find(live.staplers().begin(), live.staplers().end(), e.stapler.get()) !=
                      live.staplers().end();
    if (!used) {
      if (e.started && !e.retired) e.stapler->stop();
      e.retired = true;  // a later generation with this certificate gets a fresh stapler
      continue;
    }
    if (e.started) continue;
    if (!fetcher_) {
      auto fetcher = tls::OcspFetcher::create(loop);
      if (!fetcher) return fetcher.take_error();
      fetcher_ = std::move(fetcher).value();
      loop_ = loop;
    }
    e.stapler->start(loop, fetcher_.get());
    e.started = true;
  }
  return {};
}

void OcspManager::reload() {
  for (Entry& e : entries_) {
    if (e.started && !e.retired) e.stapler->reload();
  }
}

void OcspManager::stop() {
  for (Entry& e : entries_) {
    if (e.started && !e.retired) e.stapler->stop();
    e.retired = true;
  }
  if (fetcher_) fetcher_->stop();
}

std::string OcspManager::metrics() const {
  // Labels: the subject alone repeats for an ECDSA + RSA pair (and for two
  // certificates of one subject), which would make duplicate series.
  std::vector<std::pair<std::string, tls::OcspStatus>> rows;
  for (const Entry& e : entries_) {
    if (!e.started || e.retired) continue;
    const tls::OcspStapler& s = *e.stapler;
    rows.emplace_back(fmt::format("certificate=\"{}\",key_type=\"{}\",sha256=\"{}\"",
                                  metrics::escape_label_value(s.name()), s.key_type(), s.fingerprint()),
                      s.status());
  }
  if (rows.empty()) return {};
  std::string out;
  auto block = [&](std::string_view name, std::string_view type, std::string_view help, auto value) {
    fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
    for (const auto& [labels, st] : rows) {
      fmt::format_to(std::back_inserter(out), "{}{{{}}} {}\n", name, labels, value(st));
    }
  };
  block("tlsfront_ocsp_staple_present", "gauge", "1 when a verified, unexpired OCSP staple is served.",
        [](const tls::OcspStatus& s) { return s.stapling ? 1 : 0; });
  block("tlsfront_ocsp_staple_age_seconds", "gauge", "Now minus the staple's thisUpdate (-1 without one).",
        [](const tls::OcspStatus& s) { return s.staple_age_s; });
  block("tlsfront_ocsp_next_update_seconds", "gauge", "The staple's nextUpdate minus now (-1 without one).",
        [](const tls::OcspStatus& s) { return s.next_update_in_s; });
  block("tlsfront_ocsp_fetches_total", "counter", "Verified good OCSP responses fetched or loaded.",
        [](const tls::OcspStatus& s) { return s.counters.fetch_ok; });
  block("tlsfront_ocsp_fetch_failures_total", "counter", "OCSP fetches that gave no usable response.",
        [](const tls::OcspStatus& s) { return s.counters.fetch_failed; });
  block("tlsfront_ocsp_revoked_total", "counter", "OCSP responses saying the certificate is revoked.",
        [](const tls::OcspStatus& s) { return s.counters.revoked; });
  block("tlsfront_ocsp_stapled_handshakes_total", "counter",
        "Handshakes (TCP and QUIC) that asked for a staple and got one.",
        [](const tls::OcspStatus& s) { return s.counters.stapled; });
  block("tlsfront_ocsp_unstapled_handshakes_total", "counter",
        "Handshakes that asked for a staple and got none (lenient) or were refused (strict, must_staple).",
        [](const tls::OcspStatus& s) { return s.counters.unstapled + s.counters.refused; });
  return out;
}

}  // namespace tlsfront::control
