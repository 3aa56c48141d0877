#include "tools/probe_facts.h"

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <span>

#include "tls/ocsp_response.h"

namespace tlsfront::tools {
namespace {

std::string name_string(const X509_NAME* name) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || X509_NAME_print_ex(bio.get(), name, 0, XN_FLAG_RFC2253) < 0) return "?";
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

std::optional<WallTime> to_wall(const ASN1_TIME* t) {
  std::tm tm{};
  if (!t || ASN1_TIME_to_tm(t, &tm) != 1) return std::nullopt;
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

bool self_signed(X509* x) {
  const bool ok = X509_check_issued(x, x) == X509_V_OK && X509_verify(x, X509_get0_pubkey(x)) == 1;
  ERR_clear_error();
  return ok;
}

StapleFacts read_staple(SSL* ssl, X509* leaf, STACK_OF(X509) * sent, STACK_OF(X509) * verified, WallTime now) {
  StapleFacts s;
  const unsigned char* der = nullptr;
  const long len = SSL_get_tlsext_status_ocsp_resp(ssl, &der);
  if (len <= 0 || der == nullptr) return s;
  s.present = true;
  s.der_bytes = static_cast<size_t>(len);
  // The leaf's issuer: the verified path's second element (which may be a
  // trust anchor the server never sends), else one the server sent.
  X509* issuer = nullptr;
  if (verified && sk_X509_num(verified) >= 2) issuer = sk_X509_value(verified, 1);
  if (!issuer) issuer = tls::find_issuer(leaf, sent);
  if (!issuer) {
    s.error = "the leaf's issuer is unknown (not sent, not in the trust store): cannot check the response";
    return s;
  }
  auto v = tls::verify_ocsp_response(std::span<const uint8_t>(der, static_cast<size_t>(len)), leaf, issuer, now);
  if (!v) {
    s.error = v.error().message();
    return s;
  }
  s.verified = true;
  s.status = tls::to_string(v->status);
  s.this_update = v->this_update;
  s.next_update = v->next_update;
  s.produced_at = v->produced_at;
  s.age = std::chrono::floor<std::chrono::seconds>(now - s.this_update);
  s.left = std::chrono::floor<std::chrono::seconds>(s.next_update - now);
  return s;
}

}  // namespace

std::string wall_time_string(WallTime t) { return tls::ocsp_time_string(t); }

TlsFacts gather_facts(SSL* ssl, SSL_SESSION* session, const std::string& host, bool host_is_ip, WallTime now) {
  TlsFacts f;
  f.version = SSL_get_version(ssl);
  if (const SSL_CIPHER* c = SSL_get_current_cipher(ssl)) f.cipher = SSL_CIPHER_get_name(c);
  if (const int nid = SSL_get_negotiated_group(ssl); nid != 0 && nid != NID_undef) {
    if (const char* g = SSL_group_to_name(ssl, nid)) f.group = g;
  }
  const unsigned char* alpn = nullptr;
  unsigned alpn_len = 0;
  SSL_get0_alpn_selected(ssl, &alpn, &alpn_len);
  if (alpn) f.alpn.assign(reinterpret_cast<const char*>(alpn), alpn_len);
  f.resumed = SSL_session_reused(ssl) == 1;

  STACK_OF(X509)* sent = SSL_get_peer_cert_chain(ssl);  // client side: the leaf included
  for (int i = 0; sent && i < sk_X509_num(sent); ++i) {
    X509* x = sk_X509_value(sent, i);
    SentCertificate c;
    c.subject = name_string(X509_get_subject_name(x));
    c.issuer = name_string(X509_get_issuer_name(x));
    const int n = i2d_X509(x, nullptr);
    c.der_bytes = n > 0 ? static_cast<size_t>(n) : 0;
    c.self_signed = self_signed(x);
    if (auto t = to_wall(X509_get0_notAfter(x))) c.not_after = *t;
    f.chain_bytes += c.der_bytes;
    f.chain.push_back(std::move(c));
  }
  f.root_sent = !f.chain.empty() && f.chain.size() > 1 && f.chain.back().self_signed;

  f.verify_code = SSL_get_verify_result(ssl);
  if (f.verify_code != X509_V_OK) f.verify_error = X509_verify_cert_error_string(f.verify_code);
  STACK_OF(X509)* verified = f.verify_code == X509_V_OK ? SSL_get0_verified_chain(ssl) : nullptr;
  if (verified) f.verified_path = static_cast<size_t>(sk_X509_num(verified));

  X509Ptr leaf(SSL_get1_peer_certificate(ssl));
  if (leaf) {
    f.leaf_covers_host = host_is_ip ? X509_check_ip_asc(leaf.get(), host.c_str(), 0) == 1
                                    : X509_check_host(leaf.get(), host.data(), host.size(), 0, nullptr) == 1;
    if (auto t = to_wall(X509_get0_notAfter(leaf.get()))) {
      f.leaf_not_after = *t;
      f.leaf_days_left = static_cast<int>(std::chrono::floor<std::chrono::days>(*t - now).count());
    }
    f.staple = read_staple(ssl, leaf.get(), sent, verified, now);
  }
  if (session) f.max_early_data = SSL_SESSION_get_max_early_data(session);
  ERR_clear_error();
  return f;
}

}  // namespace tlsfront::tools
