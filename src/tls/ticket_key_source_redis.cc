#include "tls/ticket_key_source_redis.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "tls/openssl_error.h"
#include "tls/ticket_key_source_local.h"
#include "util/unique_fd.h"

namespace tlsfront::tls {
namespace {

using std::chrono::milliseconds;

constexpr std::string_view kPlainPrefix = "v1:";
constexpr std::string_view kWrappedPrefix = "v1g:";
constexpr size_t kNonceBytes = 12;
constexpr size_t kTagBytes = 16;
constexpr size_t kWrappedBytes = kNonceBytes + RedisTicketKeyCodec::kPlainBytes + kTagBytes;
constexpr size_t kMaxPasswordBytes = 4096;

// util/openssl_ptr.h has no EVP_CIPHER_CTX alias yet; local to this file.
struct EvpCipherCtxFree {
  void operator()(EVP_CIPHER_CTX* p) const noexcept { EVP_CIPHER_CTX_free(p); }
};
using EvpCipherCtxPtr = std::unique_ptr<EVP_CIPHER_CTX, EvpCipherCtxFree>;

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t epoch_ms(TimePoint t) {
  return std::chrono::duration_cast<milliseconds>(t.time_since_epoch()).count();
}

// A fixed-size buffer of secret bytes, cleansed on every return path.
template <size_t N>
struct CleansedBytes {
  std::array<uint8_t, N> bytes{};
  ~CleansedBytes() { OPENSSL_cleanse(bytes.data(), bytes.size()); }
};

std::string base64_encode(std::span<const uint8_t> in) {
  std::string out(4 * ((in.size() + 2) / 3), '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), in.data(), static_cast<int>(in.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

// Decodes standard padded base64 of exactly `out.size()` bytes into `out`.
bool base64_decode_exact(std::string_view in, std::span<uint8_t> out) {
  if (in.size() != 4 * ((out.size() + 2) / 3)) return false;
  size_t pad = 0;
  if (!in.empty() && in.back() == '=') ++pad;
  if (in.size() > 1 && in[in.size() - 2] == '=') ++pad;
  std::vector<uint8_t> buf(in.size() / 4 * 3);
  int n = EVP_DecodeBlock(buf.data(), reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  bool ok = n >= 0 && static_cast<size_t>(n) >= pad && static_cast<size_t>(n) - pad == out.size();
  if (ok) std::copy_n(buf.begin(), out.size(), out.begin());
  OPENSSL_cleanse(buf.data(), buf.size());
  return ok;
}

Error file_error(const std::string& path, const std::string& what) {
  return make_error(Errc::Config, path + ": " + what);
}

// Reads the whole regular file `path` (at most `max_bytes`) into a Secret.
Result<LoadedSecret> read_secret_file(const std::string& path, size_t max_bytes, const char* what) {
  // O_NONBLOCK: opening a FIFO must not hang the control loop; it then fails
  // the S_ISREG check below. Regular files ignore the flag.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd.valid()) return file_error(path, std::string("cannot be opened: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return file_error(path, std::string("fstat: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return file_error(path, "not a regular file");
  if (st.st_size < 0 || static_cast<uint64_t>(st.st_size) > max_bytes) {
    return file_error(path, "too large (" + std::to_string(st.st_size) + " bytes)");
  }
  LoadedSecret out;
  if (st.st_mode & 077) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    out.warning = path + ": mode " + mode + ": " + what +
                  " is a secret, make it readable by its owner only (chmod 600)";
  }
  std::string bytes(static_cast<size_t>(st.st_size) + 1, '\0');
  size_t got = 0;
  while (got < bytes.size()) {
    ssize_t n = ::read(fd.get(), bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      OPENSSL_cleanse(bytes.data(), bytes.size());
      return file_error(path, std::string("read: ") + std::strerror(errno));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (got != static_cast<size_t>(st.st_size)) {
    OPENSSL_cleanse(bytes.data(), bytes.size());
    return file_error(path, "changed size while being read");
  }
  bytes.resize(got);
  out.secret = Secret(std::move(bytes));
  return out;
}

}  // namespace

// ---- RedisSlotSchedule --------------------------------------------------------

RedisSlotSchedule::RedisSlotSchedule(milliseconds rotate_every, milliseconds ticket_lifetime)
    : rotate_every_(rotate_every), ticket_lifetime_(ticket_lifetime) {}

int64_t RedisSlotSchedule::slot_of(TimePoint now) const { return floor_div(epoch_ms(now), rotate_every_.count()); }

TimePoint RedisSlotSchedule::slot_start(int64_t slot) const {
  return TimePoint(std::chrono::duration_cast<TimePoint::duration>(milliseconds(slot * rotate_every_.count())));
}

TimePoint RedisSlotSchedule::key_expiry(int64_t slot) const {
  return slot_start(slot) + 2 * rotate_every_ + ticket_lifetime_;
}

milliseconds RedisSlotSchedule::redis_ttl(int64_t slot, TimePoint now) const {
  auto ttl = std::chrono::duration_cast<milliseconds>(key_expiry(slot) + rotate_every_ - now);
  return std::max(ttl, milliseconds(1000));
}

int64_t RedisSlotSchedule::first_live_slot(TimePoint now) const {
  int64_t live = slot_of(now - 2 * rotate_every_ - ticket_lifetime_) + 1;
  return std::max(live, slot_of(now) + 2 - kMaxWindowSlots);
}

milliseconds RedisSlotSchedule::poll_interval() const {
  return std::clamp(rotate_every_ / 10, milliseconds(1000), milliseconds(60'000));
}

std::string redis_slot_key(std::string_view prefix, int64_t slot) {
  return std::string(prefix) + ":stek:" + std::to_string(slot);
}

// ---- secrets --------------------------------------------------------------------

Result<LoadedSecret> load_redis_password_file(const std::string& path) {
  auto loaded = read_secret_file(path, kMaxPasswordBytes, "a Redis password");
  if (!loaded) return loaded;
  std::string bytes = loaded->secret.str();
  size_t len = bytes.size();
  if (len > 0 && bytes[len - 1] == '\n') --len;
  if (len > 0 && bytes[len - 1] == '\r') --len;
  if (len == 0) {
    OPENSSL_cleanse(bytes.data(), bytes.size());
    return file_error(path, "is empty (expected the Redis password)");
  }
  OPENSSL_cleanse(bytes.data() + len, bytes.size() - len);
  bytes.resize(len);
  loaded->secret = Secret(std::move(bytes));
  return loaded;
}

Result<LoadedSecret> load_wrap_key_file(const std::string& path) {
  auto loaded = read_secret_file(path, 1024, "a wrap key");
  if (!loaded) return loaded;
  if (loaded->secret.str().size() != RedisTicketKeyCodec::kWrapKeyBytes) {
    return file_error(path, "is " + std::to_string(loaded->secret.str().size()) +
                                " bytes, expected 32 random bytes (head -c 32 /dev/urandom > file)");
  }
  return loaded;
}

// ---- RedisTicketKeyCodec --------------------------------------------------------

Result<RedisTicketKeyCodec> RedisTicketKeyCodec::create(std::span<const uint8_t> wrap_key) {
  RedisTicketKeyCodec codec;
  if (wrap_key.empty()) return codec;
  if (wrap_key.size() != kWrapKeyBytes) {
    return make_error(Errc::InvalidArgument,
                      "a wrap key is 32 bytes, got " + std::to_string(wrap_key.size()));
  }
  std::copy(wrap_key.begin(), wrap_key.end(), codec.wrap_key_.begin());
  codec.wraps_ = true;
  return codec;
}

RedisTicketKeyCodec::~RedisTicketKeyCodec() { OPENSSL_cleanse(wrap_key_.data(), wrap_key_.size()); }

Result<std::string> RedisTicketKeyCodec::encode(const TicketKey& key, std::string_view redis_key) const {
  if (key.cipher != TicketKey::Cipher::Aes256Cbc) {
    return make_error(Errc::InvalidArgument, "only AES-256 ticket keys are stored in Redis");
  }
  CleansedBytes<kPlainBytes> plain;
  std::copy(key.name.begin(), key.name.end(), plain.bytes.begin());
  std::copy(key.hmac_secret.begin(), key.hmac_secret.end(), plain.bytes.begin() + 16);
  std::copy(key.aes_key.begin(), key.aes_key.end(), plain.bytes.begin() + 48);
  if (!wraps_) return std::string(kPlainPrefix) + base64_encode(plain.bytes);

  std::array<uint8_t, kWrappedBytes> out{};
  uint8_t* nonce = out.data();
  uint8_t* ct = out.data() + kNonceBytes;
  uint8_t* tag = ct + kPlainBytes;
  if (RAND_bytes(nonce, static_cast<int>(kNonceBytes)) != 1) return openssl_error(Errc::Tls, "wrap nonce");
  EvpCipherCtxPtr ctx(EVP_CIPHER_CTX_new());
  int len = 0, fin = 0;
  if (!ctx || EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, wrap_key_.data(), nonce) != 1 ||
      EVP_EncryptUpdate(ctx.get(), nullptr, &len, reinterpret_cast<const unsigned char*>(redis_key.data()),
                        static_cast<int>(redis_key.size())) != 1 ||
      EVP_EncryptUpdate(ctx.get(), ct, &len, plain.bytes.data(), static_cast<int>(kPlainBytes)) != 1 ||
      EVP_EncryptFinal_ex(ctx.get(), ct + len, &fin) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, static_cast<int>(kTagBytes), tag) != 1) {
    return openssl_error(Errc::Tls, "wrapping a ticket key");
  }
  return std::string(kWrappedPrefix) + base64_encode(out);
}

Result<TicketKey> RedisTicketKeyCodec::decode(std::string_view value, std::string_view redis_key) const {
  CleansedBytes<kPlainBytes> plain;
  if (value.starts_with(kWrappedPrefix)) {
    if (!wraps_) {
      return make_error(Errc::Config, "the value is wrapped (v1g) but no wrap_key_file is configured");
    }
    std::array<uint8_t, kWrappedBytes> in{};
    if (!base64_decode_exact(value.substr(kWrappedPrefix.size()), in)) {
      return make_error(Errc::Protocol, "malformed wrapped value (bad base64 or length)");
    }
    const uint8_t* nonce = in.data();
    const uint8_t* ct = in.data() + kNonceBytes;
    uint8_t* tag = in.data() + kNonceBytes + kPlainBytes;
    EvpCipherCtxPtr ctx(EVP_CIPHER_CTX_new());
    int len = 0, fin = 0;
    if (!ctx || EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, wrap_key_.data(), nonce) != 1 ||
        EVP_DecryptUpdate(ctx.get(), nullptr, &len, reinterpret_cast<const unsigned char*>(redis_key.data()),
                          static_cast<int>(redis_key.size())) != 1 ||
        EVP_DecryptUpdate(ctx.get(), plain.bytes.data(), &len, ct, static_cast<int>(kPlainBytes)) != 1 ||
        EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, static_cast<int>(kTagBytes), tag) != 1 ||
        EVP_DecryptFinal_ex(ctx.get(), plain.bytes.data() + len, &fin) != 1) {
      drain_openssl_errors();
      return make_error(Errc::Tls, "the wrapped value does not authenticate (wrong wrap key, or tampered)");
    }
  } else if (value.starts_with(kPlainPrefix)) {
    if (wraps_) {
      return make_error(Errc::Config, "refusing a plain (v1) value: a wrap_key_file is configured");
    }
    if (!base64_decode_exact(value.substr(kPlainPrefix.size()), plain.bytes)) {
      return make_error(Errc::Protocol, "malformed value (bad base64 or length)");
    }
  } else {
    return make_error(Errc::Protocol, "unknown value format (expected \"v1:\" or \"v1g:\")");
  }
  TicketKey key;
  key.cipher = TicketKey::Cipher::Aes256Cbc;
  std::copy_n(plain.bytes.begin(), 16, key.name.begin());
  std::copy_n(plain.bytes.begin() + 16, 32, key.hmac_secret.begin());
  std::copy_n(plain.bytes.begin() + 48, 32, key.aes_key.begin());
  return key;
}

// ---- RedisTicketKeyState --------------------------------------------------------

bool RedisTicketKeyState::merge(int64_t slot, TicketKey key) {
  key.activates_at = schedule_.slot_start(slot);
  key.expires_at = schedule_.key_expiry(slot);
  auto it = slots_.find(slot);
  if (it != slots_.end()) {
    if (it->second.name == key.name) return false;
    // The cluster's value for this slot changed (Redis lost it and a node
    // made a new one): keep decrypting tickets made with the old one.
    held_.push_back(it->second);
    it->second = std::move(key);
    return true;
  }
  // A key we hold already under another slot or as a held key is a
  // duplicate only by a 2^-128 accident; store it anyway.
  slots_.emplace(slot, std::move(key));
  return true;
}

Result<bool> RedisTicketKeyState::ensure_encryption_key(TimePoint now) {
  if (ring().encryption_key(now) != nullptr) return false;
  const int64_t slot = schedule_.slot_of(now);
  auto key = LocalTicketKeySource::generate_key(schedule_.slot_start(slot), schedule_.key_expiry(slot));
  if (!key) return key.take_error();
  held_.push_back(std::move(key).value());
  return true;
}

bool RedisTicketKeyState::prune(TimePoint now) {
  size_t before = size();
  std::erase_if(slots_, [&](const auto& entry) { return entry.second.expires_at <= now; });
  std::erase_if(held_, [&](const TicketKey& k) { return k.expires_at <= now; });
  return size() != before;
}

TicketKeyRing RedisTicketKeyState::ring() const {
  std::vector<TicketKey> keys;
  keys.reserve(size());
  for (auto it = slots_.rbegin(); it != slots_.rend(); ++it) keys.push_back(it->second);
  keys.insert(keys.end(), held_.begin(), held_.end());
  return TicketKeyRing(std::move(keys));
}

}  // namespace tlsfront::tls
