#include "control/acme/jws.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>

#include <array>
#include <memory>

#include "tls/openssl_error.h"

namespace tlsfront::acme {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

// A P-256 coordinate or signature half: exactly 32 octets, big-endian.
Result<std::string> fixed32(const BIGNUM* n) {
  std::string out(32, '\0');
  if (BN_bn2binpad(n, reinterpret_cast<unsigned char*>(out.data()), 32) != 32) {
    return tls::openssl_error(Errc::Tls, "a P-256 value longer than 32 octets");
  }
  return out;
}

std::string sha256(std::string_view bytes) {
  std::string digest(SHA256_DIGEST_LENGTH, '\0');
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
         reinterpret_cast<unsigned char*>(digest.data()));
  return digest;
}

struct BnFree {
  void operator()(BIGNUM* b) const { BN_free(b); }
};
using BnPtr = std::unique_ptr<BIGNUM, BnFree>;

}  // namespace

std::string base64url(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() * 4 + 2) / 3);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = (uint32_t{p[i]} << 16) | (uint32_t{p[i + 1]} << 8) | p[i + 2];
    for (int s = 18; s >= 0; s -= 6) out.push_back(kAlphabet[(v >> s) & 63]);
  }
  if (const size_t rest = bytes.size() - i; rest > 0) {
    const uint32_t v = (uint32_t{p[i]} << 16) | (rest == 2 ? uint32_t{p[i + 1]} << 8 : 0);
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    if (rest == 2) out.push_back(kAlphabet[(v >> 6) & 63]);
  }
  return out;
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (u < 0x20) {
      static constexpr char hex[] = "0123456789abcdef";
      out += "\\u00";
      out.push_back(hex[u >> 4]);
      out.push_back(hex[u & 15]);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

AccountKey::AccountKey(EvpPkeyPtr key) : key_(std::move(key)) {}

Result<AccountKey> AccountKey::generate() {
  EvpPkeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return tls::openssl_error(Errc::Tls, "generating the ACME account key");
  return from_pem(*AccountKey(std::move(key)).pem());
}

Result<AccountKey> AccountKey::from_pem(std::string_view pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  EvpPkeyPtr key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  char group[32] = {};
  size_t group_len = 0;
  if (!key || !EVP_PKEY_is_a(key.get(), "EC") ||
      !EVP_PKEY_get_utf8_string_param(key.get(), OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group, &group_len) ||
      std::string_view(group, group_len) != "prime256v1") {
    tls::drain_openssl_errors();
    return make_error(Errc::InvalidArgument, "the ACME account key is not a P-256 (prime256v1) private key in PEM");
  }
  BIGNUM* x = nullptr;
  BIGNUM* y = nullptr;
  EVP_PKEY_get_bn_param(key.get(), OSSL_PKEY_PARAM_EC_PUB_X, &x);
  EVP_PKEY_get_bn_param(key.get(), OSSL_PKEY_PARAM_EC_PUB_Y, &y);
  BnPtr xp(x), yp(y);
  if (!x || !y) return tls::openssl_error(Errc::Tls, "reading the ACME account key's public point");
  auto xs = fixed32(x), ys = fixed32(y);
  if (!xs) return xs.take_error();
  if (!ys) return ys.take_error();
  AccountKey k(std::move(key));
  k.jwk_ = R"({"crv":"P-256","kty":"EC","x":")" + base64url(*xs) + R"(","y":")" + base64url(*ys) + "\"}";
  k.thumbprint_ = base64url(sha256(k.jwk_));
  return k;
}

Result<std::string> AccountKey::pem() const {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || !PEM_write_bio_PrivateKey(bio.get(), key_.get(), nullptr, nullptr, 0, nullptr, nullptr)) {
    return tls::openssl_error(Errc::Tls, "writing the ACME account key");
  }
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

Result<std::string> AccountKey::sign(std::string_view signing_input) const {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  size_t der_len = 0;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key_.get()) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &der_len, reinterpret_cast<const unsigned char*>(signing_input.data()),
                     signing_input.size()) != 1) {
    return tls::openssl_error(Errc::Tls, "signing an ACME request");
  }
  std::string der(der_len, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(der.data()), &der_len,
                     reinterpret_cast<const unsigned char*>(signing_input.data()), signing_input.size()) != 1) {
    return tls::openssl_error(Errc::Tls, "signing an ACME request");
  }
  const auto* p = reinterpret_cast<const unsigned char*>(der.data());
  std::unique_ptr<ECDSA_SIG, decltype(&ECDSA_SIG_free)> sig(d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(der_len)),
                                                            ECDSA_SIG_free);
  if (!sig) return tls::openssl_error(Errc::Tls, "decoding an ECDSA signature");
  auto r = fixed32(ECDSA_SIG_get0_r(sig.get()));
  auto s = fixed32(ECDSA_SIG_get0_s(sig.get()));
  if (!r) return r.take_error();
  if (!s) return s.take_error();
  return *r + *s;
}

Result<std::string> jws(const AccountKey& key, std::string_view kid, std::string_view nonce, std::string_view url,
                        std::string_view payload) {
  std::string header = R"({"alg":"ES256",)";
  header += kid.empty() ? "\"jwk\":" + key.jwk() : "\"kid\":" + json_string(kid);
  header += ",\"nonce\":" + json_string(nonce) + ",\"url\":" + json_string(url) + "}";
  const std::string protected_b64 = base64url(header);
  const std::string payload_b64 = base64url(payload);
  auto signature = key.sign(protected_b64 + "." + payload_b64);
  if (!signature) return signature.take_error();
  return R"({"protected":")" + protected_b64 + R"(","payload":")" + payload_b64 + R"(","signature":")" +
         base64url(*signature) + "\"}";
}

}  // namespace tlsfront::acme
