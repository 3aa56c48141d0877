// The TLS 1.3 record layer of tlsfront_hsload (RFC 8446 §5): framing of
// received records and AES-128-GCM protection (§5.2, §5.3).
//
// Shapes: a record is a 5-octet header (ContentType, legacy_record_version,
// uint16 length) and `length` octets. Received records are limited to
// kMaxCiphertext octets of payload (2^14 + 256, §5.2: more is
// record_overflow); records this tool seals are far smaller. The per-record
// nonce is the write IV XOR the 64-bit sequence number, left-padded (§5.3);
// TLSInnerPlaintext is content || ContentType || zero padding (§5.2).
//
// Errors: RecordBuffer::next() says kOverflow for a record over the limit
// and kNotTls for a ContentType outside 20..23 (what a plain-text server
// answers: "HTTP/1.1 400" is not a record);
// Aead::open() returns false for a bad tag or an inner plaintext that is all
// zeros (both fatal: bad_record_mac / unexpected_message). Thread affinity:
// the owning connection's thread.
#pragma once

#include <openssl/evp.h>

#include <cstdint>

#include "hsload/bytes.h"
#include "hsload/key_schedule.h"

namespace tlsfront::hsload {

enum class ContentType : uint8_t {
  kChangeCipherSpec = 20,
  kAlert = 21,
  kHandshake = 22,
  kApplicationData = 23,
};

inline constexpr size_t kRecordHeader = 5;
inline constexpr size_t kMaxPlaintext = 1 << 14;
inline constexpr size_t kMaxCiphertext = kMaxPlaintext + 256;
inline constexpr size_t kTagLen = 16;

struct Record {
  uint8_t type = 0;
  ByteView header;   // the 5 octets (the AEAD's additional data)
  ByteView payload;  // `length` octets
};

// Bytes from the socket in, whole records out. A returned record's views
// stay valid until the next append() or next().
class RecordBuffer {
 public:
  enum class Next { kRecord, kNeedMore, kOverflow, kNotTls };
  void append(ByteView data);
  Next next(Record& out);

 private:
  Bytes buf_;
  size_t start_ = 0;  // first unconsumed octet
};

// One direction's AEAD state: key, IV and sequence number.
class Aead {
 public:
  Aead();
  ~Aead();
  Aead(const Aead&) = delete;
  Aead& operator=(const Aead&) = delete;
  // Installs new traffic keys; the sequence number restarts at 0.
  void set_keys(const TrafficKeys& keys);
  bool active() const { return active_; }
  // Decrypts an application_data record into `plaintext` (padding removed)
  // and its inner content type.
  bool open(const Record& r, Bytes& plaintext, uint8_t& inner_type);
  // Appends a protected record carrying `content` of `inner_type`
  // (content.size() <= kMaxPlaintext) to `out`.
  void seal(ContentType inner_type, ByteView content, Bytes& out);

 private:
  void nonce(uint8_t out[12]) const;
  EVP_CIPHER_CTX* ctx_;
  TrafficKeys keys_;
  uint64_t seq_ = 0;
  bool active_ = false;
};

}  // namespace tlsfront::hsload
