// SealKeyRing: the operator's sealing keys of the certificate store
// ([tls.store] seal_key_files), and AES-256-GCM sealing of private keys with
// them (OpenSSL EVP; NIST SP 800-38D: 96-bit random nonce, 128-bit tag).
//
// A key file holds exactly 32 random bytes (`tlsfront cert seal-key --out F`,
// or `head -c 32 /dev/urandom`). There is no default key. A key's id is the
// first 8 bytes of SHA-256("tlsfront seal key id\0" || key), as 16 lowercase
// hex digits: an entry names the id of the key that sealed it, so rotation is
// "add the new file first, keep the old ones until `tlsfront cert reseal` has
// run": the first file seals, every file unseals.
//
// Sealed form: nonce (12 bytes) || ciphertext || tag (16 bytes). The
// additional authenticated data is the caller's (store_entry.h binds the
// certificate name and the chain's digest, so a sealed key moved to another
// entry or next to another chain does not open).
//
// Errors: Errc::Config naming the file (unreadable, not 32 bytes); Errc::Tls
// (unseal: unknown key id, too short, authentication failed — the wrong key
// or tampered bytes; the message never contains key material).
// Thread affinity: immutable after load(); any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"
#include "util/secret.h"

namespace tlsfront::tls {

inline constexpr size_t kSealKeyBytes = 32;

// The id of a 32-byte key (see above).
std::string seal_key_id(std::string_view key);

class SealKeyRing {
 public:
  SealKeyRing() = default;
  SealKeyRing(SealKeyRing&&) = default;
  SealKeyRing& operator=(SealKeyRing&&) = default;

  // Reads every file of `files` (the first seals). Warnings (a file readable
  // by group/others) are appended to `warnings`.
  [[nodiscard]] static Result<SealKeyRing> load(const std::vector<std::string>& files,
                                                std::vector<std::string>& warnings);
  // From raw 32-byte keys (tests). Errc::InvalidArgument for another size.
  [[nodiscard]] static Result<SealKeyRing> from_keys(std::vector<std::string> keys);

  bool empty() const { return keys_.empty(); }
  const std::string& sealing_id() const { return keys_.front().id; }
  bool has(std::string_view id) const;
  // The ids, sealing key first.
  std::vector<std::string> ids() const;

  // Seals `plaintext` under the first key.
  [[nodiscard]] Result<std::string> seal(std::string_view plaintext, std::string_view aad) const;
  // Opens `sealed` with the key `key_id`.
  [[nodiscard]] Result<Secret> unseal(std::string_view key_id, std::string_view sealed, std::string_view aad) const;

 private:
  struct Key {
    std::string id;
    Secret bytes;
  };
  std::vector<Key> keys_;
};

// 32 bytes from the DRBG into a new file `path` (mode 0600, O_EXCL: an
// existing file is never overwritten). Returns the key's id.
[[nodiscard]] Result<std::string> write_new_seal_key(const std::string& path);

}  // namespace tlsfront::tls
