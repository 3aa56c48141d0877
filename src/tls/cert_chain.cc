#include "tls/cert_chain.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>

#include <fmt/core.h>

#include "tls/openssl_error.h"

namespace tlsfront::tls {
namespace {

constexpr int kMaxPathLength = 10;  // leaf + intermediates; far above any real chain

std::string in_quotes(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  out.append(s);
  out.push_back('"');
  return out;
}

std::string dn(const X509_NAME* name) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || X509_NAME_print_ex(bio.get(), name, 0, XN_FLAG_RFC2253) < 0) return "?";
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}
std::string subject_of(const X509* x) { return dn(X509_get_subject_name(x)); }
std::string issuer_of(const X509* x) { return dn(X509_get_issuer_name(x)); }

std::optional<std::time_t> to_time(const ASN1_TIME* t) {
  std::tm tm{};
  if (!t || ASN1_TIME_to_tm(t, &tm) != 1) return std::nullopt;
  return timegm(&tm);
}

std::string rfc3339(std::optional<std::time_t> t) {
  if (!t) return "?";
  std::tm tm{};
  gmtime_r(&*t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string key_type(const X509* x) {
  const EVP_PKEY* pk = X509_get0_pubkey(x);
  if (!pk) return "unknown key";
  switch (EVP_PKEY_get_base_id(pk)) {
    case EVP_PKEY_RSA:
      return fmt::format("RSA {}", EVP_PKEY_get_bits(pk));
    case EVP_PKEY_EC: {
      char group[64] = {0};
      size_t len = 0;
      if (!EVP_PKEY_get_group_name(pk, group, sizeof(group), &len)) return "ECDSA";
      const int nid = OBJ_sn2nid(group);
      const char* nist = nid == NID_undef ? nullptr : EC_curve_nid2nist(nid);
      return std::string("ECDSA ") + (nist ? nist : group);
    }
    case EVP_PKEY_ED25519:
      return "Ed25519";
    case EVP_PKEY_ED448:
      return "Ed448";
    default:
      return OBJ_nid2sn(EVP_PKEY_get_base_id(pk));
  }
}

size_t der_size(X509* x) {
  const int n = i2d_X509(x, nullptr);
  return n > 0 ? static_cast<size_t>(n) : 0;
}

bool self_signed(X509* x) { return X509_self_signed(x, /*verify_signature=*/1) == 1; }

// `issuer` issued `subject`: names, AKID/SKID and keyUsage agree
// (X509_check_issued), and the signature verifies.
bool issued_by(X509* issuer, X509* subject) {
  const bool ok = X509_check_issued(issuer, subject) == X509_V_OK &&
                  X509_verify(subject, X509_get0_pubkey(issuer)) == 1;
  ERR_clear_error();
  return ok;
}

// Every certificate in the PEM file `path` (or, when `pem` is given, in that
// text, `path` naming it), in file order.
Result<std::vector<X509Ptr>> read_pem_certificates(const std::string& path, const std::string& origin,
                                                   std::string_view setting,
                                                   std::optional<std::string_view> pem = std::nullopt) {
  ERR_clear_error();
  BioPtr bio(pem ? BIO_new_mem_buf(pem->data(), static_cast<int>(pem->size())) : BIO_new_file(path.c_str(), "r"));
  if (!bio) {
    drain_openssl_errors();
    return config_error(origin, setting, "cannot open " + in_quotes(path) + ": " + std::strerror(errno));
  }
  std::vector<X509Ptr> out;
  while (true) {
    X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (!cert) break;
    out.push_back(std::move(cert));
  }
  const unsigned long last = ERR_peek_last_error();
  if (ERR_GET_LIB(last) == ERR_LIB_PEM && ERR_GET_REASON(last) == PEM_R_NO_START_LINE) {
    ERR_clear_error();  // the normal end of the file
  } else if (last != 0) {
    return config_error(origin, setting, in_quotes(path) + " holds a malformed PEM certificate (" +
                                          drain_openssl_errors() + ")");
  }
  if (out.empty()) return config_error(origin, setting, in_quotes(path) + " holds no PEM certificate");
  return out;
}

// PEM_read_bio_X509 skips other blocks; a private key pasted into the
// certificate bundle is found by its PEM label.
bool holds_private_key(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.find("PRIVATE KEY-----") != std::string::npos;
}

struct Candidate {
  X509Ptr cert;
  std::string file;  // issuers_dir entries: the file it came from
};

// The certificates of every *.pem / *.crt regular file in `dir`.
Result<std::vector<Candidate>> read_issuers_dir(const std::string& dir, const std::string& origin) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return config_error(origin, "tls.issuers_dir", "cannot read directory " + in_quotes(dir) + ": " + ec.message());
  std::vector<std::string> files;
  for (const fs::directory_iterator end; it != end; it.increment(ec)) {
    const auto ext = it->path().extension();
    if ((ext == ".pem" || ext == ".crt") && it->is_regular_file(ec)) files.push_back(it->path().string());
  }
  if (ec) return config_error(origin, "tls.issuers_dir", "cannot read directory " + in_quotes(dir) + ": " + ec.message());
  std::sort(files.begin(), files.end());  // deterministic choice between duplicates
  std::vector<Candidate> out;
  for (const auto& f : files) {
    auto certs = read_pem_certificates(f, origin, "tls.issuers_dir");
    if (!certs) return certs.take_error();
    for (auto& c : *certs) out.push_back(Candidate{std::move(c), f});
  }
  return out;
}

// `tls.trusted_ca`, or the system default paths when it is "".
Result<X509StorePtr> load_store(const config::Tls& tls) {
  X509StorePtr store(X509_STORE_new());
  if (!store) return openssl_error(Errc::Tls, "X509_STORE_new");
  if (tls.trusted_ca.empty()) {
    if (X509_STORE_set_default_paths(store.get()) != 1) return openssl_error(Errc::Tls, "X509_STORE_set_default_paths");
    return store;
  }
  auto certs = read_pem_certificates(tls.trusted_ca, tls.trusted_ca_origin, "tls.trusted_ca");
  if (!certs) return certs.take_error();
  for (auto& c : *certs) {
    if (X509_STORE_add_cert(store.get(), c.get()) != 1) return openssl_error(Errc::Tls, "X509_STORE_add_cert");
  }
  return store;
}

// A self-signed certificate in `store` that issued `cert`, or null.
X509Ptr store_anchor(X509_STORE* store, X509* cert) {
  X509StoreCtxPtr ctx(X509_STORE_CTX_new());
  if (!ctx || X509_STORE_CTX_init(ctx.get(), store, cert, nullptr) != 1) {
    ERR_clear_error();
    return nullptr;
  }
  X509* raw = nullptr;
  const int rc = X509_STORE_CTX_get1_issuer(&raw, ctx.get(), cert);
  X509Ptr issuer(raw);
  ERR_clear_error();
  if (rc != 1 || !issuer || !self_signed(issuer.get()) || !issued_by(issuer.get(), cert)) return nullptr;
  return issuer;
}

ChainCertInfo describe(X509* x, std::string note) {
  return ChainCertInfo{subject_of(x), issuer_of(x), key_type(x), rfc3339(to_time(X509_get0_notAfter(x))),
                       der_size(x), std::move(note)};
}

// The leaf: the bundle certificate whose public key is `key`'s, preferring
// one valid at `now`, then the latest notAfter. nullopt: none matches.
std::optional<size_t> pick_leaf(const std::vector<X509Ptr>& bundle, EVP_PKEY* key, std::time_t now) {
  if (!key) return 0;
  std::optional<size_t> best;
  auto rank = [now](X509* x) {
    auto nb = to_time(X509_get0_notBefore(x)), na = to_time(X509_get0_notAfter(x));
    const bool valid = nb && na && *nb <= now && now <= *na;
    return std::pair<bool, std::time_t>(valid, na.value_or(0));
  };
  for (size_t i = 0; i < bundle.size(); ++i) {
    if (EVP_PKEY_eq(X509_get0_pubkey(bundle[i].get()), key) != 1) continue;
    if (!best || rank(bundle[i].get()) > rank(bundle[*best].get())) best = i;
  }
  ERR_clear_error();
  return best;
}

Status check_leaf_validity(const config::Certificate& cert, X509* leaf, std::time_t now, ChainReport& report) {
  const auto not_before = to_time(X509_get0_notBefore(leaf));
  const auto not_after = to_time(X509_get0_notAfter(leaf));
  const std::string who = "leaf " + in_quotes(subject_of(leaf)) + " in " + in_quotes(cert.cert);
  if (!not_before || !not_after) return config_error(cert.cert_origin, cert.cert_setting, who + " has a malformed validity period");
  if (now < *not_before) {
    return config_error(cert.cert_origin, cert.cert_setting,
                        who + " is not valid yet: notBefore " + rfc3339(not_before) + " (now " + rfc3339(now) + ")");
  }
  if (now > *not_after) {
    return config_error(cert.cert_origin, cert.cert_setting,
                        who + " has expired: notAfter " + rfc3339(not_after) + " (now " + rfc3339(now) + ")");
  }
  const auto left = std::chrono::seconds(*not_after - now);
  if (left < kLeafExpiryWarning) {
    report.warnings.push_back(fmt::format("{} expires in {} days: notAfter {}", who,
                                          std::chrono::duration_cast<std::chrono::hours>(left).count() / 24,
                                          rfc3339(not_after)));
  }
  return {};
}

// X509_verify_cert of leaf + `intermediates` against `store` at `now`.
Status verify(const config::Certificate& cert, X509_STORE* store, X509* leaf, STACK_OF(X509) * intermediates,
              std::time_t now, const std::string& store_name, bool bundle_root_untrusted) {
  X509StoreCtxPtr ctx(X509_STORE_CTX_new());
  if (!ctx || X509_STORE_CTX_init(ctx.get(), store, leaf, intermediates) != 1) {
    return openssl_error(Errc::Tls, "X509_STORE_CTX_init");
  }
  X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(ctx.get()), now);
  X509_STORE_CTX_set_purpose(ctx.get(), X509_PURPOSE_SSL_SERVER);
  if (X509_verify_cert(ctx.get()) == 1) return {};
  const int err = X509_STORE_CTX_get_error(ctx.get());
  const int depth = X509_STORE_CTX_get_error_depth(ctx.get());
  X509* at = X509_STORE_CTX_get_current_cert(ctx.get());
  drain_openssl_errors();
  std::string msg = "the chain built from " + in_quotes(cert.cert) + " does not verify against " + store_name +
                    ": " + X509_verify_cert_error_string(err) + " at depth " + std::to_string(depth);
  if (at) msg += " (" + in_quotes(subject_of(at)) + ")";
  if (bundle_root_untrusted) msg += "; the file's own root is not a trust anchor: for a private CA set tls.trusted_ca to it";
  return config_error(cert.cert_origin, cert.cert_setting, std::move(msg));
}

}  // namespace

std::vector<std::string> ChainReport::lines() const {
  std::vector<std::string> out;
  out.push_back(fmt::format("certificate {}: sending {} certificate{}, {} bytes (DER) in the handshake",
                            in_quotes(certificate), sent.size(), sent.size() == 1 ? "" : "s", total_der_bytes));
  for (size_t i = 0; i < sent.size(); ++i) {
    const auto& c = sent[i];
    out.push_back(fmt::format("  sent #{}{}: subject {}, issuer {}, {}, notAfter {}, {} bytes{}{}", i,
                              i == 0 ? " (leaf)" : "", in_quotes(c.subject), in_quotes(c.issuer), c.key_type, c.not_after,
                              c.der_bytes, c.note.empty() ? "" : ", ", c.note));
  }
  if (!anchor.empty()) out.push_back("  path ends at trust anchor " + anchor + " (not sent), verified");
  for (const auto& d : dropped) {
    out.push_back(fmt::format("  dropped file certificate #{} {}: {}", d.position, in_quotes(d.subject), d.reason));
  }
  return out;
}

Result<CertChain> CertChain::build(const config::Certificate& cert, const config::Tls& tls, EVP_PKEY* key, std::chrono::system_clock::time_point now_tp) {
  return build(cert, tls, key, now_tp, std::nullopt);
}

Result<CertChain> CertChain::build_from_pem(const config::Certificate& cert, const config::Tls& tls,
                                            std::string_view pem, EVP_PKEY* key,
                                            std::chrono::system_clock::time_point now) {
  return build(cert, tls, key, now, pem);
}

Result<CertChain> CertChain::build(const config::Certificate& cert, const config::Tls& tls, EVP_PKEY* key,
                                   std::chrono::system_clock::time_point now_tp,
                                   std::optional<std::string_view> pem) {
  const std::time_t now = std::chrono::system_clock::to_time_t(now_tp);
  auto bundle_r = read_pem_certificates(cert.cert, cert.cert_origin, cert.cert_setting, pem);
  if (!bundle_r) return bundle_r.take_error();
  std::vector<X509Ptr> bundle = std::move(bundle_r).value();

  CertChain chain;
  ChainReport& report = chain.report_;
  report.certificate = cert.cert;
  if (!pem && holds_private_key(cert.cert)) {
    report.warnings.push_back(in_quotes(cert.cert) +
                              " also holds a private key: certificate files are public (often mode 0644); keep "
                              "the key only in " + cert.key_setting + ", a mode 0600 file");
  }

  const auto leaf_idx = pick_leaf(bundle, key, now);
  if (!leaf_idx) {
    return config_error(cert.key_origin, cert.key_setting,
                        in_quotes(cert.key) + " does not match certificate " + in_quotes(cert.cert));
  }
  X509* leaf = bundle[*leaf_idx].get();
  if (auto st = check_leaf_validity(cert, leaf, now, report); !st) return st.take_error();

  auto store_r = load_store(tls);
  if (!store_r) return store_r.take_error();
  X509_STORE* store = store_r->get();
  const std::string store_name =
      tls.trusted_ca.empty() ? std::string("the system CA store") : "trusted_ca " + in_quotes(tls.trusted_ca);
  std::vector<Candidate> issuers;
  if (!tls.issuers_dir.empty()) {
    auto r = read_issuers_dir(tls.issuers_dir, tls.issuers_dir_origin);
    if (!r) return r.take_error();
    issuers = std::move(r).value();
  }

  // Duplicates (byte-identical certificates) are dropped up front.
  std::vector<std::string> drop(bundle.size());
  for (size_t i = 0; i < bundle.size(); ++i) {
    for (size_t j = 0; j < i && drop[i].empty(); ++j) {
      if (X509_cmp(bundle[i].get(), bundle[j].get()) == 0) drop[i] = "duplicate of file certificate #" + std::to_string(j + 1);
    }
  }
  std::vector<bool> used(bundle.size(), false);
  used[*leaf_idx] = true;
  std::vector<bool> is_root(bundle.size());
  for (size_t i = 0; i < bundle.size(); ++i) is_root[i] = self_signed(bundle[i].get());

  std::vector<X509*> path{leaf};
  std::vector<std::string> notes{""};
  bool anchored = false, bundle_root_untrusted = false;
  std::optional<size_t> anchor_root;  // index of the file's root that anchors the path
  while (static_cast<int>(path.size()) <= kMaxPathLength) {
    X509* cur = path.back();
    if (self_signed(cur)) {  // only a self-signed leaf gets here: verify() decides
      anchored = true;
      report.anchor = in_quotes(subject_of(cur)) + " (the leaf itself is self-signed)";
      break;
    }
    if (!anchored) {
      for (size_t i = 0; i < bundle.size() && !anchored; ++i) {
        if (!is_root[i] || !drop[i].empty() || !issued_by(bundle[i].get(), cur)) continue;
        anchored = true;
        anchor_root = i;
        X509_up_ref(bundle[i].get());
        chain.anchor_.reset(bundle[i].get());
        const bool trusted = store_anchor(store, cur) != nullptr;
        bundle_root_untrusted = !trusted;
        report.anchor = in_quotes(subject_of(bundle[i].get())) + " (self-signed root in the certificate file; " +
                        (trusted ? "also in " : "NOT in ") + store_name + ")";
      }
      if (!anchored) {
        if (X509Ptr a = store_anchor(store, cur)) {
          anchored = true;
          report.anchor = in_quotes(subject_of(a.get())) + " (" + store_name + ")";
          chain.anchor_ = std::move(a);
        }
      }
    }
    std::optional<size_t> next;
    for (size_t i = 0; i < bundle.size() && !next; ++i) {
      if (!used[i] && !is_root[i] && drop[i].empty() && issued_by(bundle[i].get(), cur)) next = i;
    }
    if (next && anchored) {
      // Past the anchor only a cross-certificate to another root is worth
      // sending; one whose key is already on the path just loops back.
      for (X509* p : path) {
        if (EVP_PKEY_eq(X509_get0_pubkey(p), X509_get0_pubkey(bundle[*next].get())) == 1) next.reset();
        if (!next) break;
      }
      if (!next) break;
    }
    if (next) {
      used[*next] = true;
      path.push_back(bundle[*next].get());
      notes.push_back(anchored ? "past the trust anchor (cross-certificate kept as configured)" : "");
      continue;
    }
    if (anchored) break;
    X509* from_dir = nullptr;
    for (auto& c : issuers) {
      if (self_signed(c.cert.get()) || !issued_by(c.cert.get(), cur)) continue;
      bool in_path = false;
      for (X509* p : path) in_path = in_path || X509_cmp(p, c.cert.get()) == 0;
      if (in_path) continue;
      from_dir = c.cert.get();
      notes.push_back("from issuers_dir " + in_quotes(c.file) + " (missing from the certificate file)");
      break;
    }
    if (!from_dir) break;
    path.push_back(from_dir);
  }

  if (!anchored && static_cast<int>(path.size()) > kMaxPathLength) {
    return config_error(cert.cert_origin, cert.cert_setting,
                        "chain in " + in_quotes(cert.cert) + " is longer than " +
                            std::to_string(kMaxPathLength) + " certificates without reaching a trust anchor");
  }
  if (!anchored) {
    X509* last = path.back();
    std::string msg = "incomplete chain in " + in_quotes(cert.cert) + ": the issuer " + in_quotes(issuer_of(last)) +
                      " of " + in_quotes(subject_of(last)) + " is not in the file, not a trust anchor in " + store_name;
    msg += tls.issuers_dir.empty() ? std::string(", and no issuers_dir is set")
                                   : ", and not in issuers_dir " + in_quotes(tls.issuers_dir);
    msg += "; add that certificate to the file (or to issuers_dir)";
    // A private root is the likely cause only while the system store is in use.
    if (tls.trusted_ca.empty()) msg += ", or, if it is a private root, set tls.trusted_ca to it";
    return config_error(cert.cert_origin, cert.cert_setting, std::move(msg));
  }

  chain.leaf_.reset(X509_dup(leaf));
  chain.intermediates_.reset(sk_X509_new_null());
  if (!chain.leaf_ || !chain.intermediates_) return openssl_error(Errc::Tls, "allocating the chain");
  for (size_t i = 1; i < path.size(); ++i) {
    X509Ptr copy(X509_dup(path[i]));
    if (!copy || !sk_X509_push(chain.intermediates_.get(), copy.get())) return openssl_error(Errc::Tls, "sk_X509_push");
    copy.release();  // owned by the stack now
  }
  if (auto st = verify(cert, store, chain.leaf_.get(), chain.intermediates_.get(), now, store_name, bundle_root_untrusted);
      !st) {
    return st.take_error();
  }

  for (size_t i = 0; i < path.size(); ++i) {
    report.sent.push_back(describe(path[i], notes[i]));
    report.total_der_bytes += report.sent.back().der_bytes;
  }
  for (size_t i = 0; i < bundle.size(); ++i) {
    if (used[i]) continue;
    std::string reason = drop[i];
    X509* x = bundle[i].get();
    if (!reason.empty()) {
    } else if (anchor_root && i == *anchor_root) {
      reason = "self-signed root, the path's trust anchor: clients must already hold it, so it is never sent";
    } else if (is_root[i]) {
      reason = "self-signed root not on the leaf's path";
    } else if (key && EVP_PKEY_eq(X509_get0_pubkey(x), key) == 1) {
      reason = "another certificate for the same key (the leaf is file certificate #" + std::to_string(*leaf_idx + 1) + ")";
    } else {
      reason = "not on the leaf's path (issued by " + in_quotes(issuer_of(x)) + ")";
    }
    report.dropped.push_back(DroppedCert{subject_of(x), static_cast<int>(i + 1), std::move(reason)});
  }
  ERR_clear_error();
  return chain;
}

}  // namespace tlsfront::tls
