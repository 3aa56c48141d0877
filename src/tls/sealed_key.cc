#include "tls/sealed_key.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "tls/openssl_error.h"
#include "tls/ticket_key_source_redis.h"
#include "util/unique_fd.h"

namespace tlsfront::tls {
namespace {

constexpr size_t kNonceBytes = 12;
constexpr size_t kTagBytes = 16;

struct CipherCtxFree {
  void operator()(EVP_CIPHER_CTX* c) const { EVP_CIPHER_CTX_free(c); }
};
using CipherCtxPtr = std::unique_ptr<EVP_CIPHER_CTX, CipherCtxFree>;

const unsigned char* u8(std::string_view s) { return reinterpret_cast<const unsigned char*>(s.data()); }

std::string hex(const unsigned char* p, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out += kDigits[p[i] >> 4];
    out += kDigits[p[i] & 15];
  }
  return out;
}

}  // namespace

std::string seal_key_id(std::string_view key) {
  std::string input = std::string("tlsfront seal key id") + '\0' + std::string(key);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(input.data(), input.size(), md, &len, EVP_sha256(), nullptr);
  OPENSSL_cleanse(input.data(), input.size());
  return hex(md, 8);
}

Result<SealKeyRing> SealKeyRing::load(const std::vector<std::string>& files, std::vector<std::string>& warnings) {
  std::vector<std::string> keys;
  for (const auto& f : files) {
    // Same rules as a ticket wrap key: a regular file of exactly 32 bytes.
    auto loaded = load_wrap_key_file(f);
    if (!loaded) {
      for (auto& k : keys) OPENSSL_cleanse(k.data(), k.size());
      return make_error(Errc::Config, "tls.store.seal_key_files: " + loaded.error().message());
    }
    if (!loaded->warning.empty()) warnings.push_back(loaded->warning);
    keys.push_back(loaded->secret.str());
  }
  auto ring = from_keys(std::move(keys));
  if (!ring) return make_error(Errc::Config, "tls.store.seal_key_files: " + ring.error().message());
  return ring;
}

Result<SealKeyRing> SealKeyRing::from_keys(std::vector<std::string> keys) {
  SealKeyRing ring;
  for (auto& k : keys) {
    if (k.size() != kSealKeyBytes) {
      for (auto& other : keys) OPENSSL_cleanse(other.data(), other.size());
      return make_error(Errc::InvalidArgument, "a sealing key is 32 bytes");
    }
    std::string id = seal_key_id(k);
    ring.keys_.push_back(Key{std::move(id), Secret(std::move(k))});
  }
  return ring;
}

bool SealKeyRing::has(std::string_view id) const {
  for (const auto& k : keys_) {
    if (k.id == id) return true;
  }
  return false;
}

std::vector<std::string> SealKeyRing::ids() const {
  std::vector<std::string> out;
  for (const auto& k : keys_) out.push_back(k.id);
  return out;
}

Result<std::string> SealKeyRing::seal(std::string_view plaintext, std::string_view aad) const {
  if (keys_.empty()) return make_error(Errc::Tls, "no sealing key");
  std::string out(kNonceBytes + plaintext.size() + kTagBytes, '\0');
  auto* o = reinterpret_cast<unsigned char*>(out.data());
  if (RAND_bytes(o, kNonceBytes) != 1) return openssl_error(Errc::Tls, "RAND_bytes");
  CipherCtxPtr ctx(EVP_CIPHER_CTX_new());
  int len = 0;
  if (!ctx || EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, keys_.front().bytes.bytes().data(), o) != 1 ||
      EVP_EncryptUpdate(ctx.get(), nullptr, &len, u8(aad), static_cast<int>(aad.size())) != 1 ||
      EVP_EncryptUpdate(ctx.get(), o + kNonceBytes, &len, u8(plaintext), static_cast<int>(plaintext.size())) != 1 ||
      EVP_EncryptFinal_ex(ctx.get(), o + kNonceBytes + len, &len) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, kTagBytes, o + kNonceBytes + plaintext.size()) != 1) {
    return openssl_error(Errc::Tls, "AES-256-GCM seal");
  }
  return out;
}

Result<Secret> SealKeyRing::unseal(std::string_view key_id, std::string_view sealed, std::string_view aad) const {
  const Key* key = nullptr;
  for (const auto& k : keys_) {
    if (k.id == key_id) key = &k;
  }
  if (key == nullptr) {
    return make_error(Errc::Tls, "sealed with key id \"" + std::string(key_id).substr(0, 32) +
                                     "\", which is none of this node's seal_key_files");
  }
  if (sealed.size() < kNonceBytes + kTagBytes) return make_error(Errc::Tls, "sealed key too short");
  const size_t ct_len = sealed.size() - kNonceBytes - kTagBytes;
  std::string plain(ct_len, '\0');
  CipherCtxPtr ctx(EVP_CIPHER_CTX_new());
  int len = 0;
  std::string tag(sealed.substr(kNonceBytes + ct_len));
  const bool ok =
      ctx && EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, key->bytes.bytes().data(), u8(sealed)) == 1 &&
      EVP_DecryptUpdate(ctx.get(), nullptr, &len, u8(aad), static_cast<int>(aad.size())) == 1 &&
      EVP_DecryptUpdate(ctx.get(), reinterpret_cast<unsigned char*>(plain.data()), &len, u8(sealed) + kNonceBytes,
                        static_cast<int>(ct_len)) == 1 &&
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, kTagBytes, tag.data()) == 1 &&
      EVP_DecryptFinal_ex(ctx.get(), reinterpret_cast<unsigned char*>(plain.data()) + len, &len) == 1;
  if (!ok) {
    OPENSSL_cleanse(plain.data(), plain.size());
    drain_openssl_errors();
    return make_error(Errc::Tls, "the sealed key does not open with key " + key->id +
                                     " (wrong key, or the entry was altered)");
  }
  return Secret(std::move(plain));
}

Result<std::string> write_new_seal_key(const std::string& path) {
  std::string key(kSealKeyBytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(key.data()), static_cast<int>(key.size())) != 1) {
    return openssl_error(Errc::Tls, "RAND_bytes");
  }
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd.valid()) {
    OPENSSL_cleanse(key.data(), key.size());
    return make_error(Errc::Io, path + ": " + std::strerror(errno));
  }
  const bool written = ::write(fd.get(), key.data(), key.size()) == static_cast<ssize_t>(key.size());
  const std::string id = seal_key_id(key);
  OPENSSL_cleanse(key.data(), key.size());
  if (!written || ::fsync(fd.get()) != 0) return make_error(Errc::Io, path + ": write: " + std::strerror(errno));
  return id;
}

}  // namespace tlsfront::tls
