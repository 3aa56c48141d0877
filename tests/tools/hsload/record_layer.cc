#include "hsload/record_layer.h"

#include <cstring>

namespace tlsfront::hsload {

void RecordBuffer::append(ByteView data) {
  if (start_ > 0 && start_ == buf_.size()) {
    buf_.clear();
    start_ = 0;
  } else if (start_ > kMaxCiphertext) {
    buf_.erase(buf_.begin(), buf_.begin() + static_cast<ptrdiff_t>(start_));
    start_ = 0;
  }
  buf_.insert(buf_.end(), data.begin(), data.end());
}

RecordBuffer::Next RecordBuffer::next(Record& out) {
  size_t avail = buf_.size() - start_;
  if (avail < kRecordHeader) return Next::kNeedMore;
  const uint8_t* h = buf_.data() + start_;
  if (h[0] < static_cast<uint8_t>(ContentType::kChangeCipherSpec) ||
      h[0] > static_cast<uint8_t>(ContentType::kApplicationData))
    return Next::kNotTls;
  size_t len = (size_t{h[3]} << 8) | h[4];
  if (len > kMaxCiphertext) return Next::kOverflow;
  if (avail < kRecordHeader + len) return Next::kNeedMore;
  out.type = h[0];
  out.header = ByteView(h, kRecordHeader);
  out.payload = ByteView(h + kRecordHeader, len);
  start_ += kRecordHeader + len;
  return Next::kRecord;
}

Aead::Aead() : ctx_(EVP_CIPHER_CTX_new()) {}
Aead::~Aead() { EVP_CIPHER_CTX_free(ctx_); }

void Aead::set_keys(const TrafficKeys& keys) {
  keys_ = keys;
  seq_ = 0;
  active_ = true;
  // The key schedule of the cipher is set up once per traffic key; each
  // record only sets its nonce.
  EVP_CipherInit_ex2(ctx_, Crypto::get().aes128gcm, keys_.key.data(), nullptr, 1, nullptr);
}

void Aead::nonce(uint8_t out[12]) const {
  std::memcpy(out, keys_.iv.data(), 12);
  for (int i = 0; i < 8; ++i) out[11 - i] ^= static_cast<uint8_t>(seq_ >> (8 * i));
}

bool Aead::open(const Record& r, Bytes& plaintext, uint8_t& inner_type) {
  if (r.payload.size() < kTagLen + 1) return false;
  size_t ct_len = r.payload.size() - kTagLen;
  uint8_t iv[12];
  nonce(iv);
  plaintext.resize(ct_len);
  int n = 0, fin = 0;
  bool ok = EVP_DecryptInit_ex2(ctx_, nullptr, nullptr, iv, nullptr) == 1 &&
            EVP_DecryptUpdate(ctx_, nullptr, &n, r.header.data(), static_cast<int>(r.header.size())) == 1 &&
            EVP_DecryptUpdate(ctx_, plaintext.data(), &n, r.payload.data(), static_cast<int>(ct_len)) == 1 &&
            EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_AEAD_SET_TAG, static_cast<int>(kTagLen),
                                const_cast<uint8_t*>(r.payload.data() + ct_len)) == 1 &&
            EVP_DecryptFinal_ex(ctx_, plaintext.data() + n, &fin) == 1;
  if (!ok) return false;
  ++seq_;
  // Strip the zero padding; the last non-zero octet is the content type.
  size_t end = static_cast<size_t>(n + fin);
  while (end > 0 && plaintext[end - 1] == 0) --end;
  if (end == 0) return false;
  inner_type = plaintext[end - 1];
  plaintext.resize(end - 1);
  return true;
}

void Aead::seal(ContentType inner_type, ByteView content, Bytes& out) {
  size_t len = content.size() + 1 + kTagLen;
  size_t at = out.size();
  Writer w(out);
  w.u8(static_cast<unsigned>(ContentType::kApplicationData));
  w.u16(0x0303);
  w.u16(static_cast<unsigned>(len));
  out.resize(at + kRecordHeader + len);
  uint8_t* header = out.data() + at;
  uint8_t* body = header + kRecordHeader;
  std::memcpy(body, content.data(), content.size());
  body[content.size()] = static_cast<uint8_t>(inner_type);
  uint8_t iv[12];
  nonce(iv);
  int n = 0, fin = 0;
  EVP_EncryptInit_ex2(ctx_, nullptr, nullptr, iv, nullptr);
  EVP_EncryptUpdate(ctx_, nullptr, &n, header, static_cast<int>(kRecordHeader));
  EVP_EncryptUpdate(ctx_, body, &n, body, static_cast<int>(content.size() + 1));
  EVP_EncryptFinal_ex(ctx_, body + n, &fin);
  EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_AEAD_GET_TAG, static_cast<int>(kTagLen), body + content.size() + 1);
  ++seq_;
}

}  // namespace tlsfront::hsload
