#include "control/acme/acme_client.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <thread>

#include "tls/openssl_error.h"

namespace tlsfront::acme {
namespace {

namespace dom = simdjson::dom;

// The string member `key` of `obj`, or "".
std::string_view member(dom::element obj, const char* key) {
  std::string_view v;
  if (obj[key].get(v) != simdjson::SUCCESS) return {};
  return v;
}

Result<dom::element> parse(dom::parser& parser, const HttpResponse& r, const std::string& url) {
  dom::element doc;
  if (parser.parse(r.body).get(doc) != simdjson::SUCCESS || !doc.is_object()) {
    return make_error(Errc::Protocol, url + ": not a JSON object (HTTP " + std::to_string(r.status) + ")");
  }
  return doc;
}

// "urn:ietf:params:acme:error:rejectedIdentifier: <detail>" from a problem
// document (RFC 7807, RFC 8555 §6.7); `what` when the body says nothing.
std::string problem_text(dom::element problem, std::string_view what) {
  std::string text(member(problem, "type"));
  const std::string_view detail = member(problem, "detail");
  if (!detail.empty()) text += (text.empty() ? "" : ": ") + std::string(detail);
  return text.empty() ? std::string(what) : text;
}

Result<EvpPkeyPtr> new_key(KeyType type) {
  EvpPkeyPtr key(type == KeyType::EcdsaP256 ? EVP_EC_gen("P-256") : EVP_RSA_gen(2048));
  if (!key) return tls::openssl_error(Errc::Tls, "generating a certificate key");
  return key;
}

std::string key_pem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

// "DNS:a,DNS:b" for X509V3_EXT_conf_nid.
std::string san_list(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "DNS:" : ",DNS:") + n;
  return out;
}

// A PKCS#10 request for `names` signed by `key`, DER (RFC 8555 §7.4: the
// SANs carry the names; the CN the first).
Result<std::string> csr_der(const std::vector<std::string>& names, EVP_PKEY* key) {
  std::unique_ptr<X509_REQ, decltype(&X509_REQ_free)> req(X509_REQ_new(), X509_REQ_free);
  X509_NAME* subject = X509_REQ_get_subject_name(req.get());
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(names[0].c_str()),
                             -1, -1, 0);
  STACK_OF(X509_EXTENSION)* exts = sk_X509_EXTENSION_new_null();
  std::string sans = san_list(names);
  X509_EXTENSION* san = X509V3_EXT_conf_nid(nullptr, nullptr, NID_subject_alt_name, sans.c_str());
  if (san == nullptr) {
    sk_X509_EXTENSION_free(exts);
    return tls::openssl_error(Errc::InvalidArgument, "a name that is not a DNS name: " + sans);
  }
  sk_X509_EXTENSION_push(exts, san);
  const bool ok = X509_REQ_set_version(req.get(), 0) == 1 && X509_REQ_set_pubkey(req.get(), key) == 1 &&
                  X509_REQ_add_extensions(req.get(), exts) == 1 && X509_REQ_sign(req.get(), key, EVP_sha256()) > 0;
  sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
  if (!ok) return tls::openssl_error(Errc::Tls, "making the certificate request");
  const int len = i2d_X509_REQ(req.get(), nullptr);
  std::string der(static_cast<size_t>(len), '\0');
  auto* p = reinterpret_cast<unsigned char*>(der.data());
  i2d_X509_REQ(req.get(), &p);
  return der;
}

std::chrono::milliseconds wait_for(const HttpResponse& r, const AcmeClient::Options& o) {
  int seconds = 0;
  const std::string& v = r.retry_after;
  if (!v.empty() && std::from_chars(v.data(), v.data() + v.size(), seconds).ec == std::errc() && seconds > 0) {
    return std::min<std::chrono::milliseconds>(std::chrono::seconds(seconds), o.max_retry_after);
  }
  return o.poll_interval;
}

}  // namespace

AcmeClient::AcmeClient(Options options, AccountKey account)
    : options_(std::move(options)), key_(std::move(account)), http_(options_.ca_file, options_.timeout) {}

Status AcmeClient::load_directory() {
  if (!dir_.new_order.empty()) return {};
  auto r = http_.get(options_.directory_url);
  if (!r) return r.take_error();
  dom::parser parser;
  auto doc = parse(parser, *r, options_.directory_url);
  if (!doc) return doc.take_error();
  dir_ = {std::string(member(*doc, "newNonce")), std::string(member(*doc, "newAccount")),
          std::string(member(*doc, "newOrder")), std::string(member(*doc, "renewalInfo"))};
  if (r->status != 200 || dir_.new_nonce.empty() || dir_.new_account.empty() || dir_.new_order.empty()) {
    dir_ = {};
    return make_error(Errc::Protocol, options_.directory_url + ": not an ACME directory (HTTP " +
                                          std::to_string(r->status) + ")");
  }
  return {};
}

Result<HttpResponse> AcmeClient::post(const std::string& url, const std::string& payload, bool with_jwk) {
  for (int attempt = 0;; ++attempt) {
    if (options_.cancelled != nullptr && options_.cancelled->load()) return make_error(Errc::Closed, "cancelled");
    if (nonce_.empty()) {
      auto n = http_.head(dir_.new_nonce);
      if (!n) return n.take_error();
      if (n->replay_nonce.empty()) return make_error(Errc::Protocol, dir_.new_nonce + ": no Replay-Nonce");
      nonce_ = std::move(n->replay_nonce);
    }
    auto body = jws(key_, with_jwk ? "" : kid_, nonce_, url, payload);
    if (!body) return body.take_error();
    nonce_.clear();
    auto r = http_.post_jose(url, *body);
    if (!r) return r.take_error();
    nonce_ = r->replay_nonce;  // every answer carries the next one (§6.5)
    if (r->status < 400) return r;
    dom::parser parser;
    dom::element problem;
    const bool json = parser.parse(r->body).get(problem) == simdjson::SUCCESS && problem.is_object();
    const std::string_view type = json ? member(problem, "type") : std::string_view();
    if (type == "urn:ietf:params:acme:error:badNonce" && attempt < kNonceRetries) continue;
    return make_error(Errc::Upstream, url + ": HTTP " + std::to_string(r->status) + ": " +
                                          (json ? problem_text(problem, "no detail") : std::string("no problem document")));
  }
}

Result<std::string> AcmeClient::account() {
  if (!kid_.empty()) return kid_;
  if (Status s = load_directory(); !s) return s.take_error();
  std::string payload = R"({"termsOfServiceAgreed":true)";
  if (!options_.contact.empty()) {
    payload += ",\"contact\":[";
    for (size_t i = 0; i < options_.contact.size(); ++i) payload += (i ? "," : "") + json_string(options_.contact[i]);
    payload += "]";
  }
  if (!options_.eab_kid.empty()) {
    // A JWS over the account's JWK, MACed with the CA's key (§7.3.4).
    const std::string protected_b64 = base64url(R"({"alg":"HS256","kid":)" + json_string(options_.eab_kid) +
                                                R"(,"url":)" + json_string(dir_.new_account) + "}");
    const std::string payload_b64 = base64url(key_.jwk());
    const std::string input = protected_b64 + "." + payload_b64;
    unsigned char mac[EVP_MAX_MD_SIZE];
    size_t mac_len = 0;
    if (EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, options_.eab_hmac_key.data(),
                  options_.eab_hmac_key.size(), reinterpret_cast<const unsigned char*>(input.data()), input.size(),
                  mac, sizeof mac, &mac_len) == nullptr) {
      return tls::openssl_error(Errc::Tls, "the External Account Binding MAC");
    }
    payload += R"(,"externalAccountBinding":{"protected":")" + protected_b64 + R"(","payload":")" + payload_b64 +
               R"(","signature":")" + base64url(std::string_view(reinterpret_cast<const char*>(mac), mac_len)) +
               "\"}";
  }
  payload += "}";
  auto r = post(dir_.new_account, payload, /*with_jwk=*/true);
  if (!r) return r.take_error();
  if (r->location.empty()) return make_error(Errc::Protocol, dir_.new_account + ": no account URL (Location)");
  kid_ = r->location;
  return kid_;
}

Result<std::string> AcmeClient::poll(const std::string& url, std::initializer_list<std::string_view> pending) {
  for (int i = 0; i < options_.max_polls; ++i) {
    auto r = post(url, "");
    if (!r) return r.take_error();
    dom::parser parser;
    auto doc = parse(parser, *r, url);
    if (!doc) return doc.take_error();
    const std::string_view status = member(*doc, "status");
    if (std::find(pending.begin(), pending.end(), status) == pending.end()) return r->body;
    std::this_thread::sleep_for(wait_for(*r, options_));
  }
  return make_error(Errc::Timeout, url + ": still pending after " + std::to_string(options_.max_polls) + " polls");
}

Status AcmeClient::authorize(const std::string& authz_url, ChallengeResponder& responder) {
  auto r = post(authz_url, "");
  if (!r) return r.take_error();
  dom::parser parser;
  auto doc = parse(parser, *r, authz_url);
  if (!doc) return doc.take_error();
  if (member(*doc, "status") == "valid") return {};
  const std::string name(member((*doc)["identifier"], "value"));
  dom::array challenges;
  if (name.empty() || (*doc)["challenges"].get(challenges) != simdjson::SUCCESS) {
    return make_error(Errc::Protocol, authz_url + ": an authorization without identifier or challenges");
  }
  for (ChallengeType type : options_.challenges) {
    for (dom::element c : challenges) {
      if (member(c, "type") != challenge_name(type)) continue;
      const std::string token(member(c, "token")), url(member(c, "url"));
      if (token.empty() || url.empty()) return make_error(Errc::Protocol, authz_url + ": a challenge without token or url");
      const std::string key_authorization = token + "." + key_.thumbprint();
      if (Status s = responder.publish(type, name, token, key_authorization); !s) return s;
      Status result = [&]() -> Status {
        if (auto answered = post(url, "{}"); !answered) return answered.take_error();
        auto done = poll(authz_url, {"pending"});
        if (!done) return done.take_error();
        dom::parser p2;
        dom::element final_doc;
        if (p2.parse(*done).get(final_doc) != simdjson::SUCCESS) return make_error(Errc::Protocol, authz_url + ": not JSON");
        if (member(final_doc, "status") == "valid") return {};
        std::string why = "no detail";
        dom::array cs;
        if (final_doc["challenges"].get(cs) == simdjson::SUCCESS) {
          for (dom::element fc : cs) {
            dom::element err;
            if (fc["error"].get(err) == simdjson::SUCCESS) why = problem_text(err, why);
          }
        }
        return make_error(Errc::Upstream, name + ": " + challenge_name(type) + " failed: " + why);
      }();
      responder.withdraw(type, name, token);
      return result;
    }
  }
  return make_error(Errc::Upstream, name + ": the CA offers none of the configured challenge types");
}

Result<bool> AcmeClient::offers_renewal_info() {
  if (Status s = load_directory(); !s) return s.take_error();
  return !dir_.renewal_info.empty();
}

Result<IssuedCertificate> AcmeClient::issue(const std::vector<std::string>& names, KeyType key_type,
                                            ChallengeResponder& responder, const std::string& replaces) {
  if (names.empty()) return make_error(Errc::InvalidArgument, "an order without names");
  if (auto kid = account(); !kid) return kid.take_error();
  std::string identifiers;
  for (const auto& n : names) identifiers += (identifiers.empty() ? "" : ",") + std::string(R"({"type":"dns","value":)") + json_string(n) + "}";
  const std::string plain = R"({"identifiers":[)" + identifiers + "]";
  std::string replaces_refused;
  auto order = !replaces.empty() && !dir_.renewal_info.empty()
                   ? post(dir_.new_order, plain + R"(,"replaces":)" + json_string(replaces) + "}")
                   : Result<HttpResponse>(make_error(Errc::NotFound, ""));
  if (!order && order.error().code != Errc::NotFound) {
    // RFC 9773 §5: e.g. 409 alreadyReplaced. The renewal goes on without it.
    if (order.error().code != Errc::Upstream) return order.take_error();
    replaces_refused = order.error().message();
  }
  if (!order) order = post(dir_.new_order, plain + "}");
  if (!order) return order.take_error();
  const std::string order_url = order->location;
  dom::parser parser;
  auto doc = parse(parser, *order, dir_.new_order);
  if (!doc) return doc.take_error();
  const std::string finalize(member(*doc, "finalize"));
  dom::array authzs;
  if (order_url.empty() || finalize.empty() || (*doc)["authorizations"].get(authzs) != simdjson::SUCCESS) {
    return make_error(Errc::Protocol, dir_.new_order + ": an order without Location, finalize or authorizations");
  }
  std::vector<std::string> authz_urls;
  for (dom::element a : authzs) {
    std::string_view u;
    if (a.get(u) == simdjson::SUCCESS) authz_urls.emplace_back(u);
  }
  for (const auto& u : authz_urls) {
    if (Status s = authorize(u, responder); !s) return s.take_error();
  }
  auto key = new_key(key_type);
  if (!key) return key.take_error();
  auto csr = csr_der(names, key->get());
  if (!csr) return csr.take_error();
  if (auto f = post(finalize, R"({"csr":")" + base64url(*csr) + "\"}"); !f) return f.take_error();
  auto done = poll(order_url, {"pending", "ready", "processing"});
  if (!done) return done.take_error();
  dom::parser p2;
  dom::element final_order;
  if (p2.parse(*done).get(final_order) != simdjson::SUCCESS) return make_error(Errc::Protocol, order_url + ": not JSON");
  const std::string certificate(member(final_order, "certificate"));
  if (member(final_order, "status") != "valid" || certificate.empty()) {
    dom::element err;
    const std::string why = final_order["error"].get(err) == simdjson::SUCCESS ? problem_text(err, "no detail")
                                                                               : "status " + std::string(member(final_order, "status"));
    return make_error(Errc::Upstream, order_url + ": the order failed: " + why);
  }
  auto chain = post(certificate, "");
  if (!chain) return chain.take_error();
  if (chain->body.find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
    return make_error(Errc::Protocol, certificate + ": not a PEM certificate chain");
  }
  return IssuedCertificate{std::move(chain->body), key_pem(key->get()), order_url, std::move(replaces_refused)};
}

Result<std::pair<std::string, std::string>> tls_alpn01_certificate(const std::string& name,
                                                                   const std::string& key_authorization) {
  auto key = new_key(KeyType::EcdsaP256);
  if (!key) return key.take_error();
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(key_authorization.data()), key_authorization.size(), digest);
  // extnValue = DER of OCTET STRING (SHA-256 digest), RFC 8737 §3.
  std::unique_ptr<ASN1_OCTET_STRING, decltype(&ASN1_OCTET_STRING_free)> inner(ASN1_OCTET_STRING_new(),
                                                                                ASN1_OCTET_STRING_free);
  ASN1_OCTET_STRING_set(inner.get(), digest, sizeof digest);
  unsigned char* der = nullptr;
  const int der_len = i2d_ASN1_OCTET_STRING(inner.get(), &der);
  std::unique_ptr<ASN1_OCTET_STRING, decltype(&ASN1_OCTET_STRING_free)> value(ASN1_OCTET_STRING_new(),
                                                                                ASN1_OCTET_STRING_free);
  ASN1_OCTET_STRING_set(value.get(), der, der_len);
  OPENSSL_free(der);
  std::unique_ptr<ASN1_OBJECT, decltype(&ASN1_OBJECT_free)> oid(OBJ_txt2obj("1.3.6.1.5.5.7.1.31", 1), ASN1_OBJECT_free);
  X509Ptr cert(X509_new());
  X509_EXTENSION* acme_id = X509_EXTENSION_create_by_OBJ(nullptr, oid.get(), 1, value.get());
  const std::string san_text = "DNS:" + name;
  X509_EXTENSION* san = X509V3_EXT_conf_nid(nullptr, nullptr, NID_subject_alt_name, san_text.c_str());
  X509_NAME* subject = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(name.c_str()), -1,
                             -1, 0);
  const bool ok = acme_id != nullptr && san != nullptr && X509_set_version(cert.get(), 2) == 1 &&
                  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 1) == 1 &&
                  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600) != nullptr &&
                  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 7 * 24 * 3600) != nullptr &&
                  X509_set_issuer_name(cert.get(), subject) == 1 && X509_set_pubkey(cert.get(), key->get()) == 1 &&
                  X509_add_ext(cert.get(), san, -1) == 1 && X509_add_ext(cert.get(), acme_id, -1) == 1 &&
                  X509_sign(cert.get(), key->get(), EVP_sha256()) > 0;
  if (acme_id) X509_EXTENSION_free(acme_id);
  if (san) X509_EXTENSION_free(san);
  if (!ok) return tls::openssl_error(Errc::Tls, "making the tls-alpn-01 certificate for " + name);
  BioPtr bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(bio.get(), cert.get());
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::pair{std::string(data, static_cast<size_t>(n)), key_pem(key->get())};
}

}  // namespace tlsfront::acme
