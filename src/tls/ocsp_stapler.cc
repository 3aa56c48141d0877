#include "tls/ocsp_stapler.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

#include <fmt/core.h>

#include "log/log.h"
#include "tls/certificate_labels.h"
#include "tls/openssl_error.h"
#include "tls/server_certificate.h"
#include "util/unique_fd.h"

namespace tlsfront::tls {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr milliseconds kFirstRetry{2'000};
constexpr milliseconds kMaxRetry{600'000};
constexpr milliseconds kMinRefresh{1'000};




const char* policy_name(config::StaplePolicy p) {
  switch (p) {
    case config::StaplePolicy::Lenient: return "lenient";
    case config::StaplePolicy::Strict: return "strict";
    case config::StaplePolicy::MustStaple: return "must_staple";
  }
  return "?";
}

int64_t secs(std::chrono::system_clock::duration d) { return std::chrono::duration_cast<seconds>(d).count(); }

// Reads at most `max` bytes of the regular file `path`. O_NONBLOCK: a FIFO
// must not hang the control loop (it fails the S_ISREG check instead).
Result<std::vector<uint8_t>> read_small_file(const std::string& path, size_t max) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd.valid()) return make_error(Errc::Io, "\"" + path + "\": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return make_error(Errc::Io, "\"" + path + "\": fstat: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return make_error(Errc::Io, "\"" + path + "\" is not a regular file");
  if (static_cast<uint64_t>(st.st_size) > max) {
    return make_error(Errc::ResourceExhausted, fmt::format("\"{}\" is {} bytes, over max_response_bytes ({})", path,
                                                           static_cast<uint64_t>(st.st_size), max));
  }
  std::vector<uint8_t> out(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < out.size()) {
    ssize_t n = ::read(fd.get(), out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return make_error(Errc::Io, "\"" + path + "\": read: " + std::strerror(errno));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

int status_cb(SSL* ssl, void* arg) noexcept {
  const auto* registry = static_cast<const OcspRegistry*>(arg);
  X509* leaf = SSL_get_certificate(ssl);
  OcspStapler* stapler = registry && leaf ? registry->find(leaf) : nullptr;
  if (!stapler || SSL_session_reused(ssl)) return SSL_TLSEXT_ERR_NOACK;
  std::shared_ptr<const OcspStaple> staple = stapler->staple();
  if (!staple) {
    if (stapler->policy() != config::StaplePolicy::Lenient) {
      stapler->count_refused();
      return SSL_TLSEXT_ERR_ALERT_FATAL;
    }
    stapler->count_unstapled();
    return SSL_TLSEXT_ERR_NOACK;
  }
  // OpenSSL takes ownership of the copy (freed with OPENSSL_free).
  auto* copy = static_cast<unsigned char*>(OPENSSL_memdup(staple->der.data(), staple->der.size()));
  if (!copy || SSL_set_tlsext_status_ocsp_resp(ssl, copy, static_cast<long>(staple->der.size())) != 1) {
    OPENSSL_free(copy);
    stapler->count_unstapled();
    return SSL_TLSEXT_ERR_NOACK;
  }
  stapler->count_stapled();
  return SSL_TLSEXT_ERR_OK;
}

}  // namespace

Result<std::unique_ptr<OcspStapler>> OcspStapler::create(X509* leaf, STACK_OF(X509) * chain, X509* anchor,
                                                         const config::Ocsp& ocsp, const std::string& cache_dir,
                                                         const Clock* clock) {
  const bool must_staple = has_must_staple(leaf);
  const CertificateLabels labels = CertificateLabels::of(leaf);
  const std::string& name = labels.subject;
  const std::string& key_type = labels.key_type;
  const std::string& fingerprint = labels.sha256;
  const std::string prefix = fmt::format("ocsp \"{}\" ({} {})", name, key_type, fingerprint);
  if (!ocsp.stapling) {
    if (must_staple) log::warn("{}: stapling is off but the leaf is must-staple: clients will refuse it", prefix);
    return std::unique_ptr<OcspStapler>();
  }
  const std::string url = !ocsp.responder.empty() ? ocsp.responder : ocsp_responder_url(leaf);
  if (url.empty() && ocsp.response_file.empty()) {
    if (must_staple) {
      log::warn("{}: the leaf is must-staple but has no OCSP responder URL: clients will refuse it "
                "(set [tls.ocsp] responder or response_file)",
                prefix);
    } else {
      log::debug("{}: no OCSP responder URL in the leaf: not stapled", prefix);
    }
    return std::unique_ptr<OcspStapler>();
  }
  X509* issuer = find_issuer(leaf, chain);
  if (!issuer && anchor && is_issuer(anchor, leaf)) issuer = anchor;
  if (!issuer) {
    log::warn("{}: the issuer is neither among the intermediates sent nor the trust anchor: not stapled", prefix);
    return std::unique_ptr<OcspStapler>();
  }
  X509_up_ref(leaf);
  X509Ptr leaf_ref(leaf);
  X509_up_ref(issuer);
  X509Ptr issuer_ref(issuer);
  std::unique_ptr<OcspStapler> s(new OcspStapler(std::move(leaf_ref), std::move(issuer_ref), ocsp, cache_dir, clock));
  s->name_ = name;
  s->key_type_ = key_type;
  s->fingerprint_ = fingerprint;
  s->prefix_ = prefix;
  if (ocsp.response_file.empty()) {
    s->responder_ = url;
    auto req = make_ocsp_request(leaf, issuer);
    if (!req) return req.take_error();
    s->request_der_ = std::move(req).value();
  }
  if (must_staple) s->policy_ = config::StaplePolicy::MustStaple;
  return s;
}

OcspStapler::OcspStapler(X509Ptr leaf, X509Ptr issuer, const config::Ocsp& ocsp, std::string cache_dir,
                         const Clock* clock)
    : leaf_(std::move(leaf)),
      issuer_(std::move(issuer)),
      ocsp_(ocsp),
      policy_(ocsp.staple_policy),
      cache_dir_(std::move(cache_dir)),
      clock_(clock),
      leaf_id_(sha256_hex(leaf_.get())),
      rng_(std::random_device{}()) {}

OcspStapler::~OcspStapler() { stop(); }

std::shared_ptr<const OcspStaple> OcspStapler::staple() const {
  auto s = current_.load();
  if (s && s->next_update <= clock_->now()) return nullptr;
  return s;
}

OcspStatus OcspStapler::status() const {
  OcspStatus st;
  st.counters = OcspCounters{fetch_ok_.load(), fetch_failed_.load(), revoked_.load(),
                             stapled_.load(), unstapled_.load(), refused_.load()};
  if (auto s = staple()) {
    const auto now = clock_->now();
    st.stapling = true;
    st.staple_age_s = secs(now - s->this_update);
    st.next_update_in_s = secs(s->next_update - now);
  }
  return st;
}

std::string OcspStapler::describe() const {
  std::string source = ocsp_.response_file.empty() ? "responder " + responder_
                                                   : "response_file \"" + ocsp_.response_file + "\"";
  std::string out = fmt::format("{}: stapling from {}, staple_policy {}", prefix_, source, policy_name(policy_));
  if (policy_ == config::StaplePolicy::MustStaple && ocsp_.staple_policy != policy_) out += " (the leaf is must-staple)";
  if (ocsp_.response_file.empty()) out += cache_dir_.empty() ? ", no cache dir" : ", cache \"" + cache_path() + "\"";
  if (auto s = staple()) {
    out += fmt::format("; stapling a response valid until {}", ocsp_time_string(s->next_update));
  } else {
    out += "; no valid response yet";
  }
  return out;
}

std::string OcspStapler::cache_path() const { return cache_dir_ + "/" + leaf_id_ + ".der"; }

Result<std::shared_ptr<const OcspStaple>> OcspStapler::read_and_verify(const std::string& path) const {
  auto bytes = read_small_file(path, ocsp_.max_response_bytes);
  if (!bytes) return bytes.take_error();
  auto v = verify_ocsp_response(*bytes, leaf_.get(), issuer_.get(), clock_->now());
  if (!v) return v.take_error();
  if (v->status == OcspCertStatus::Revoked) {
    return make_error(Errc::Protocol, fmt::format("the certificate is REVOKED (revoked at {}, reason {})",
                                                  ocsp_time_string(v->revoked_at), v->revocation_reason));
  }
  if (v->status != OcspCertStatus::Good) {
    return make_error(Errc::Protocol, std::string("certificate status is ") + to_string(v->status));
  }
  return std::make_shared<const OcspStaple>(std::move(v).value());
}

Status OcspStapler::check_response_file(std::vector<std::string>& warnings) const {
  if (ocsp_.response_file.empty()) return {};
  auto r = read_and_verify(ocsp_.response_file);
  if (r) return {};
  std::string why = fmt::format("{}: {}: \"{}\" would not be stapled: {}", ocsp_.response_file_origin,
                                ocsp_.response_file_setting, ocsp_.response_file, r.error().message());
  if (r.error().code == Errc::Timeout) {
    warnings.push_back(std::move(why) + " (replace it and send SIGHUP)");
    return {};
  }
  return make_error(Errc::Config, std::move(why));
}

Status OcspStapler::load_initial() {
  if (!ocsp_.response_file.empty()) {
    auto r = read_and_verify(ocsp_.response_file);
    if (!r && (r.error().code == Errc::Io || r.error().code == Errc::ResourceExhausted)) {
      return make_error(Errc::Config,
                        ocsp_.response_file_origin + ": " + ocsp_.response_file_setting + ": " + r.error().message());
    }
    if (!r) {
      log::error("{}: response_file \"{}\" not stapled: {}", prefix_, ocsp_.response_file, r.error().message());
      return {};
    }
    publish(std::move(r).value(), "loaded from response_file");
    return {};
  }
  if (cache_dir_.empty()) return {};
  struct stat st {};  // the directory is made by write_cache (`tlsfront --test` creates nothing)
  if (::stat(cache_path().c_str(), &st) != 0) return {};  // nothing cached yet
  auto r = read_and_verify(cache_path());
  if (!r) {
    log::info("{}: cached response not used: {}", prefix_, r.error().message());
    return {};
  }
  publish(std::move(r).value(), "loaded from the cache");
  return {};
}

void OcspStapler::start(uv_loop_t* loop, OcspFetcher* fetcher) {
  loop_ = loop;
  fetcher_ = fetcher;
  refresh_timer_.init([loop](uv_timer_t* h) { return uv_timer_init(loop, h); }, this);
  expiry_timer_.init([loop](uv_timer_t* h) { return uv_timer_init(loop, h); }, this);
  arm_expiry();
  if (!ocsp_.response_file.empty()) return;
  auto s = current_.load();
  if (!s) {
    fetch_now();
    return;
  }
  schedule_refresh(OcspTime{});  // from the loaded staple's window
}

void OcspStapler::stop() {
  if (fetcher_ && fetch_id_) fetcher_->cancel(fetch_id_);
  fetch_id_ = 0;
  refresh_timer_.close();
  expiry_timer_.close();
}

void OcspStapler::reload() {
  if (ocsp_.response_file.empty()) return;
  auto r = read_and_verify(ocsp_.response_file);
  if (!r) {
    log::error("{}: SIGHUP: response_file \"{}\" not stapled, keeping the current staple: {}", prefix_,
               ocsp_.response_file, r.error().message());
    return;
  }
  publish(std::move(r).value(), "reloaded from response_file");
  arm_expiry();
}

void OcspStapler::fetch_now() {
  if (!fetcher_ || fetch_id_) return;
  auto id = fetcher_->fetch(make_ocsp_http_request(responder_, request_der_), ocsp_.fetch_timeout,
                            ocsp_.max_response_bytes,
                            [this](Result<std::vector<uint8_t>> body) { on_fetched(std::move(body)); });
  if (!id) {
    on_failure(id.error().message());
    return;
  }
  fetch_id_ = *id;
}

void OcspStapler::on_fetched(Result<std::vector<uint8_t>> body) {
  fetch_id_ = 0;
  if (!body) {
    on_failure(body.error().message());
    return;
  }
  auto v = verify_ocsp_response(*body, leaf_.get(), issuer_.get(), clock_->now());
  if (!v) {
    on_failure("invalid response: " + v.error().message());
    return;
  }
  if (v->status == OcspCertStatus::Revoked) {
    on_revoked(*v);
    return;
  }
  if (v->status != OcspCertStatus::Good) {
    on_failure("the responder does not know the certificate (status unknown)");
    return;
  }
  failures_ = 0;
  fetch_ok_.fetch_add(1, std::memory_order_relaxed);
  auto staple = std::make_shared<const OcspStaple>(std::move(v).value());
  write_cache(*staple);
  publish(staple, "fetched");
  arm_expiry();
  schedule_refresh(OcspTime{});
}

std::string OcspStapler::fallback_note() const {
  if (auto s = staple()) return "keeping the current staple (valid until " + ocsp_time_string(s->next_update) + ")";
  return policy_ == config::StaplePolicy::Lenient
             ? "NO STAPLE: serving clients that ask for one without it (staple_policy lenient)"
             : "NO STAPLE: refusing handshakes that ask for one (staple_policy " + std::string(policy_name(policy_)) +
                   ")";
}

void OcspStapler::on_failure(const std::string& why) {
  fetch_failed_.fetch_add(1, std::memory_order_relaxed);
  ++failures_;
  milliseconds delay = kFirstRetry * (1LL << std::min(failures_ - 1, 20));
  delay = std::min(delay, kMaxRetry);
  delay += milliseconds(std::uniform_int_distribution<int64_t>(0, delay.count() / 10)(rng_));
  log::warn("{}: fetch from {} failed: {}; {}; retry in {} s", prefix_, responder_, why, fallback_note(),
            (delay.count() + 999) / 1000);
  arm_fetch(delay);
}

void OcspStapler::on_revoked(const OcspStaple& r) {
  revoked_.fetch_add(1, std::memory_order_relaxed);
  log::error("{}: THE CERTIFICATE IS REVOKED according to {} (revoked at {}, reason {}): not stapling; "
             "replace the certificate",
             prefix_, responder_, ocsp_time_string(r.revoked_at), r.revocation_reason);
  drop("the certificate is revoked");
  if (!cache_dir_.empty()) ::unlink(cache_path().c_str());
  failures_ = 0;
  schedule_refresh(r.this_update + std::chrono::duration_cast<milliseconds>(r.next_update - r.this_update) / 100 *
                                       ocsp_.refresh_at_percent);
}

void OcspStapler::publish(std::shared_ptr<const OcspStaple> staple, const char* how) {
  const auto now = clock_->now();
  log::info("{}: stapling response {} (status good, thisUpdate {}, nextUpdate {}: age {} s, {} s left, {} "
            "bytes)",
            prefix_, how, ocsp_time_string(staple->this_update), ocsp_time_string(staple->next_update),
            secs(now - staple->this_update), secs(staple->next_update - now), staple->der.size());
  current_.store(std::move(staple));
}

void OcspStapler::drop(const char* why) {
  if (!current_.load()) return;
  current_.store(nullptr);
  log::error("{}: no longer stapling: {}; {}", prefix_, why, fallback_note());
}

void OcspStapler::schedule_refresh(OcspTime at) {
  if (!refresh_timer_.active()) return;
  const auto now = clock_->now();
  if (at == OcspTime{}) {
    auto s = current_.load();
    if (!s) {
      at = now;
    } else {
      // In milliseconds: a window of years times a percentage stays in range.
      const int64_t window = std::chrono::duration_cast<milliseconds>(s->next_update - s->this_update).count();
      const int64_t j = window / 100 * ocsp_.refresh_jitter_percent;
      at = s->this_update + milliseconds(window / 100 * ocsp_.refresh_at_percent +
                                         (j > 0 ? std::uniform_int_distribution<int64_t>(-j, j)(rng_) : 0));
      // A response produced ahead of time (thisUpdate long past) would put
      // that point behind us and make us refetch at once, again and again:
      // then take the same share of the time it has left.
      const int64_t left = std::chrono::duration_cast<milliseconds>(s->next_update - now).count();
      at = std::max(at, now + milliseconds(left / 100 * ocsp_.refresh_at_percent));
      if (at >= s->next_update) at = s->next_update - kMinRefresh;
    }
  }
  auto delay = std::chrono::duration_cast<milliseconds>(at - now);
  delay = std::max(delay, kMinRefresh);
  log::info("{}: next fetch in {} s", prefix_, (delay.count() + 999) / 1000);
  arm_fetch(delay);
}

void OcspStapler::arm_fetch(milliseconds delay) {
  if (!refresh_timer_.active()) return;
  next_fetch_at_ = clock_->now() + delay;
  uv_timer_start(
      refresh_timer_.get(),
      [](uv_timer_t* t) {
        if (!t->data) return;
        auto* self = static_cast<OcspStapler*>(t->data);
        self->next_fetch_at_ = OcspTime{};
        self->fetch_now();
      },
      static_cast<uint64_t>(delay.count()), 0);
}

void OcspStapler::arm_expiry() {
  if (!expiry_timer_.active()) return;
  auto s = current_.load();
  if (!s) {
    uv_timer_stop(expiry_timer_.get());
    return;
  }
  auto delay = std::max(std::chrono::duration_cast<milliseconds>(s->next_update - clock_->now()), milliseconds(0));
  uv_timer_start(
      expiry_timer_.get(),
      [](uv_timer_t* t) {
        if (t->data) static_cast<OcspStapler*>(t->data)->on_expiry();
      },
      static_cast<uint64_t>(delay.count()) + 1, 0);
}

void OcspStapler::on_expiry() {
  auto s = current_.load();
  if (!s) return;
  if (s->next_update > clock_->now()) {
    arm_expiry();
    return;
  }
  drop(("the response expired (nextUpdate " + ocsp_time_string(s->next_update) + ")").c_str());
}

void OcspStapler::write_cache(const OcspStaple& s) {
  if (cache_dir_.empty()) return;
  if (::mkdir(cache_dir_.c_str(), 0700) != 0 && errno != EEXIST) {
    log::warn("ocsp: cannot create ocsp_cache_dir \"{}\": {}", cache_dir_, std::strerror(errno));
    return;
  }
  const std::string path = cache_path();
  const std::string tmp = path + ".tmp";
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644));
  bool ok = fd.valid();
  size_t done = 0;
  while (ok && done < s.der.size()) {
    ssize_t n = ::write(fd.get(), s.der.data() + done, s.der.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ok = false;
    else done += static_cast<size_t>(n);
  }
  if (ok && ::fsync(fd.get()) != 0) ok = false;
  fd.reset();
  if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) ok = false;
  if (!ok) {
    log::warn("{}: cannot write the cache file \"{}\": {}", prefix_, path, std::strerror(errno));
    ::unlink(tmp.c_str());
  }
}

OcspStapler* OcspRegistry::find(X509* leaf) const {
  for (OcspStapler* s : staplers_) {
    if (s->leaf() == leaf) return s;
  }
  for (OcspStapler* s : staplers_) {
    if (X509_cmp(s->leaf(), leaf) == 0) return s;
  }
  return nullptr;
}

void attach_ocsp(SSL_CTX* ctx, const OcspRegistry* registry) {
  SSL_CTX_set_tlsext_status_cb(ctx, status_cb);
  SSL_CTX_set_tlsext_status_arg(ctx, const_cast<OcspRegistry*>(registry));
}

}  // namespace tlsfront::tls
