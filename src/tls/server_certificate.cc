#include "tls/server_certificate.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "tls/openssl_error.h"

namespace tlsfront::tls {
namespace {

// Encrypted keys are not supported: fail instead of prompting on a terminal.
int no_passphrase_cb(char*, int, int, void*) noexcept { return 0; }

std::string lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

Result<EvpPkeyPtr> load_key(const config::Certificate& cert) {
  ERR_clear_error();
  if (FILE* f = std::fopen(cert.key.c_str(), "rb")) {
    std::fclose(f);
  } else {
    return config_error(cert.key_origin, cert.key_setting,
                        "cannot open \"" + cert.key + "\": " + std::strerror(errno));
  }
  BioPtr bio(BIO_new_file(cert.key.c_str(), "r"));
  EvpPkeyPtr key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase_cb, nullptr) : nullptr);
  if (!key) {
    return config_error(cert.key_origin, cert.key_setting,
                        "\"" + cert.key + "\" is not an unencrypted PEM private key (" + drain_openssl_errors() + ")");
  }
  return key;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

}  // namespace

std::string key_type_of(const EVP_PKEY* key) {
  switch (key ? EVP_PKEY_get_base_id(key) : EVP_PKEY_NONE) {
    case EVP_PKEY_RSA: return "RSA";
    case EVP_PKEY_RSA_PSS: return "RSA-PSS";
    case EVP_PKEY_EC: return "ECDSA";
    case EVP_PKEY_ED25519: return "Ed25519";
    case EVP_PKEY_ED448: return "Ed448";
    default: return key && EVP_PKEY_get0_type_name(key) ? EVP_PKEY_get0_type_name(key) : "unknown";
  }
}

bool name_matches(std::string_view pattern, std::string_view host) {
  if (!pattern.starts_with("*.")) return pattern == host;
  const size_t dot = host.find('.');
  // One whole label, never empty, never the pattern's own suffix alone.
  return dot != std::string_view::npos && dot > 0 && host.substr(dot + 1) == pattern.substr(2);
}

std::vector<std::string> san_dns_names(X509* leaf) {
  std::vector<std::string> out;
  auto* sans = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(leaf, NID_subject_alt_name, nullptr, nullptr));
  if (sans == nullptr) return out;
  for (int i = 0; i < sk_GENERAL_NAME_num(sans); ++i) {
    const GENERAL_NAME* gn = sk_GENERAL_NAME_value(sans, i);
    if (gn->type != GEN_DNS) continue;
    const ASN1_IA5STRING* s = gn->d.dNSName;
    std::string name(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)), static_cast<size_t>(ASN1_STRING_length(s)));
    if (name.empty() || name.find('\0') != std::string::npos) continue;
    out.push_back(lowercase(name));
  }
  GENERAL_NAMES_free(sans);
  return out;
}

Result<ServerCertificate> ServerCertificate::load(const config::Certificate& cert, const config::Tls& tls,
                                                  std::chrono::system_clock::time_point now) {
  auto key = load_key(cert);
  if (!key) return key.take_error();
  auto chain = CertChain::build(cert, tls, key->get(), now);
  if (!chain) return chain.take_error();
  auto out = finish(cert, std::move(key).value(), std::move(chain).value());
  if (!out) return out;
  if (struct stat st{}; ::stat(cert.key.c_str(), &st) == 0 && (st.st_mode & (S_IRGRP | S_IROTH))) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    out->warnings.push_back("key file \"" + cert.key + "\" is readable by group/others (mode " + mode +
                            "); chmod 0600 it");
  }
  return out;
}

Result<ServerCertificate> ServerCertificate::from_pem(const config::Certificate& cert, const config::Tls& tls,
                                                      std::string_view chain_pem, const Secret& key_pem,
                                                      std::chrono::system_clock::time_point now) {
  ERR_clear_error();
  BioPtr bio(BIO_new_mem_buf(key_pem.str().data(), static_cast<int>(key_pem.str().size())));
  EvpPkeyPtr key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase_cb, nullptr) : nullptr);
  if (!key) {
    return config_error(cert.key_origin, cert.key_setting,
                        "not an unencrypted PEM private key (" + drain_openssl_errors() + ")");
  }
  auto chain = CertChain::build_from_pem(cert, tls, chain_pem, key.get(), now);
  if (!chain) return chain.take_error();
  auto out = finish(cert, std::move(key), std::move(chain).value());
  if (out) out->from_store = true;
  return out;
}

Result<ServerCertificate> ServerCertificate::finish(const config::Certificate& cert, EvpPkeyPtr key, CertChain chain) {
  ServerCertificate out{.config = &cert,
                        .key = std::move(key),
                        .chain = std::move(chain),
                        .names = {},
                        .names_from_san = false,
                        .key_type = {},
                        .warnings = {},
                        .from_store = false};
  out.key_type = key_type_of(out.key.get());
  out.warnings = out.chain.report().warnings;

  const std::vector<std::string> san = san_dns_names(out.chain.leaf());
  if (cert.names.empty()) {
    out.names = san;
    out.names_from_san = true;
  } else {
    for (const auto& name : cert.names) {
      bool covered = false;
      for (const auto& pattern : san) {
        // A wildcard name is covered only by the same wildcard in the SAN.
        covered = covered || (name.starts_with("*.") ? pattern == name : name_matches(pattern, name));
      }
      if (!covered) {
        return config_error(cert.names_origin, cert.names_setting,
                            "\"" + name + "\" is not covered by the certificate \"" + cert.cert +
                                "\" (its subjectAltName DNS names: " + joined(san) + ")");
      }
    }
    out.names = cert.names;
  }
  if (san.empty()) {
    out.warnings.push_back("certificate \"" + cert.cert +
                           "\" has no DNS names in its subjectAltName: clients that check names will reject it");
  }
  return out;
}

}  // namespace tlsfront::tls
