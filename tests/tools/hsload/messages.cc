#include "hsload/messages.h"

#include <cstring>

namespace tlsfront::hsload {
namespace {

// Extension types (RFC 8446 §4.2; ALPN: RFC 7301; server_name: RFC 6066).
constexpr unsigned kServerName = 0;
constexpr unsigned kSupportedGroups = 10;
constexpr unsigned kSignatureAlgorithms = 13;
constexpr unsigned kAlpn = 16;
constexpr unsigned kPreSharedKey = 41;
constexpr unsigned kSupportedVersions = 43;
constexpr unsigned kPskKeyExchangeModes = 45;
constexpr unsigned kKeyShare = 51;

constexpr unsigned kTls13 = 0x0304;
constexpr unsigned kLegacyVersion = 0x0303;
constexpr unsigned kAes128GcmSha256 = 0x1301;
constexpr unsigned kX25519 = 0x001d;
constexpr unsigned kEcdsaSecp256r1Sha256 = 0x0403;
constexpr unsigned kRsaPssRsaeSha256 = 0x0804;
constexpr unsigned kPskDheKe = 1;
constexpr std::string_view kHttp11 = "http/1.1";

// SHA-256("HelloRetryRequest") (§4.1.3).
constexpr uint8_t kHrrRandom[32] = {0xCF, 0x21, 0xAD, 0x74, 0xE5, 0x9A, 0x61, 0x11, 0xBE, 0x1D, 0x8C,
                                    0x02, 0x1E, 0x65, 0xB8, 0x91, 0xC2, 0xA2, 0x11, 0x16, 0x7A, 0xBB,
                                    0x8C, 0x5E, 0x07, 0x9E, 0x09, 0xE2, 0xC8, 0xA8, 0x33, 0x9C};

}  // namespace

void build_client_hello(std::string_view sni, const std::array<uint8_t, 32>& random, const PskOffer* psk, Bytes& out) {
  Writer w(out);
  w.u8(static_cast<unsigned>(HandshakeType::kClientHello));
  size_t body = w.open(3);
  w.u16(kLegacyVersion);
  w.bytes(random);
  w.u8(0);  // legacy_session_id: empty
  w.u16(2);
  w.u16(kAes128GcmSha256);
  w.u8(1);
  w.u8(0);  // legacy_compression_methods: null
  size_t exts = w.open(2);

  if (!sni.empty()) {
    w.u16(kServerName);
    size_t e = w.open(2);
    size_t list = w.open(2);
    w.u8(0);  // host_name
    size_t name = w.open(2);
    w.bytes(as_bytes(sni));
    w.close(name, 2);
    w.close(list, 2);
    w.close(e, 2);
  }
  w.u16(kSupportedGroups);
  w.u16(4);
  w.u16(2);
  w.u16(kX25519);
  w.u16(kSignatureAlgorithms);
  w.u16(6);
  w.u16(4);
  w.u16(kEcdsaSecp256r1Sha256);
  w.u16(kRsaPssRsaeSha256);
  w.u16(kSupportedVersions);
  w.u16(3);
  w.u8(2);
  w.u16(kTls13);
  w.u16(kKeyShare);
  w.u16(2 + 2 + 2 + 32);
  w.u16(2 + 2 + 32);
  w.u16(kX25519);
  w.u16(32);
  w.bytes(Crypto::get().client_public);
  w.u16(kAlpn);
  w.u16(static_cast<unsigned>(2 + 1 + kHttp11.size()));
  w.u16(static_cast<unsigned>(1 + kHttp11.size()));
  w.u8(static_cast<unsigned>(kHttp11.size()));
  w.bytes(as_bytes(kHttp11));
  w.u16(kPskKeyExchangeModes);
  w.u16(2);
  w.u8(1);
  w.u8(kPskDheKe);
  if (psk != nullptr) {  // must be the last extension (§4.2.11)
    w.u16(kPreSharedKey);
    size_t e = w.open(2);
    size_t ids = w.open(2);
    size_t id = w.open(2);
    w.bytes(psk->identity);
    w.close(id, 2);
    w.u32(psk->obfuscated_ticket_age);
    w.close(ids, 2);
    w.u16(1 + kHashLen);
    w.u8(kHashLen);
    out.insert(out.end(), kHashLen, 0);  // the binder, filled in by the caller
    w.close(e, 2);
  }
  w.close(exts, 2);
  w.close(body, 3);
}

bool parse_server_hello(ByteView body, ServerHello& out) {
  Reader r(body);
  if (r.u16() != kLegacyVersion) return false;
  ByteView random = r.bytes(32);
  if (!r.ok()) return false;
  out.hello_retry_request = std::memcmp(random.data(), kHrrRandom, 32) == 0;
  if (!r.vec(1).empty()) return false;  // legacy_session_id_echo: ours was empty
  if (r.u16() != kAes128GcmSha256 || r.u8() != 0) return false;
  Reader exts(r.vec(2));
  if (!r.done()) return false;
  bool version = false;
  uint32_t seen = 0;  // bit per extension kind: a repeated one is illegal (§4.2)
  while (exts.ok() && !exts.empty()) {
    unsigned type = exts.u16();
    Reader e(exts.vec(2));
    uint32_t bit;
    if (type == kSupportedVersions) {
      bit = 1;
      version = e.u16() == kTls13;
    } else if (type == kKeyShare) {
      bit = 2;
      if (out.hello_retry_request) return true;  // the caller fails an HRR anyway
      if (e.u16() != kX25519) return false;
      out.key_share = e.vec(2);
      if (out.key_share.size() != 32) return false;
    } else if (type == kPreSharedKey) {
      bit = 4;
      out.psk_selected = true;
      out.selected_identity = e.u16();
    } else {
      return false;  // not offered, or not allowed in a ServerHello (§4.2)
    }
    if (!e.done() || (seen & bit) != 0) return false;
    seen |= bit;
  }
  return exts.done() && version && (out.hello_retry_request || !out.key_share.empty());
}

bool parse_encrypted_extensions(ByteView body) {
  Reader r(body);
  Reader exts(r.vec(2));
  if (!r.done()) return false;
  while (exts.ok() && !exts.empty()) {
    unsigned type = exts.u16();
    ByteView data = exts.vec(2);
    if (type == kAlpn) {
      Reader a(data);
      Reader list(a.vec(2));
      ByteView proto = list.vec(1);
      if (!a.done() || !list.done() ||
          std::string_view(reinterpret_cast<const char*>(proto.data()), proto.size()) != kHttp11)
        return false;
    }
  }
  return exts.done();
}

bool parse_new_session_ticket(ByteView body, NewSessionTicket& out) {
  Reader r(body);
  out.lifetime_s = r.u32();
  out.age_add = r.u32();
  out.nonce = r.vec(1);
  out.ticket = r.vec(2);
  r.vec(2);  // extensions (early_data): not used
  return r.done() && !out.ticket.empty();
}

void HandshakeReader::append(ByteView data) {
  if (start_ == buf_.size()) {
    buf_.clear();
    start_ = 0;
  } else if (start_ > 0) {
    buf_.erase(buf_.begin(), buf_.begin() + static_cast<ptrdiff_t>(start_));
    start_ = 0;
  }
  buf_.insert(buf_.end(), data.begin(), data.end());
}

HandshakeReader::Next HandshakeReader::next(uint8_t& type, ByteView& message) {
  size_t avail = buf_.size() - start_;
  if (avail < kHandshakeHeader) return Next::kNeedMore;
  const uint8_t* h = buf_.data() + start_;
  size_t len = (size_t{h[1]} << 16) | (size_t{h[2]} << 8) | h[3];
  if (len > max_) return Next::kTooLarge;
  if (avail < kHandshakeHeader + len) return Next::kNeedMore;
  type = h[0];
  message = ByteView(h, kHandshakeHeader + len);
  start_ += kHandshakeHeader + len;
  return Next::kMessage;
}

}  // namespace tlsfront::hsload
