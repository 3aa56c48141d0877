#include "hsload/tls13_client.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <cstring>

namespace tlsfront::hsload {
namespace {

constexpr uint8_t kCloseNotify = 0;
constexpr unsigned kEcdsaSecp256r1Sha256 = 0x0403;
constexpr unsigned kRsaPssRsaeSha256 = 0x0804;

ByteView body_of(ByteView message) { return message.subspan(kHandshakeHeader); }

const char* alert_name(uint8_t d) {
  switch (d) {
    case 10:
      return "unexpected_message";
    case 20:
      return "bad_record_mac";
    case 22:
      return "record_overflow";
    case 40:
      return "handshake_failure";
    case 42:
      return "bad_certificate";
    case 47:
      return "illegal_parameter";
    case 50:
      return "decode_error";
    case 51:
      return "decrypt_error";
    case 70:
      return "protocol_version";
    case 80:
      return "internal_error";
    case 90:
      return "user_canceled";
    case 109:
      return "missing_extension";
    case 110:
      return "unsupported_extension";
    case 112:
      return "unrecognized_name";
    case 120:
      return "no_application_protocol";
    default:
      return nullptr;
  }
}

}  // namespace

const char* error_name(Error e) {
  switch (e) {
    case Error::kNone:
      return "none";
    case Error::kConnectFailed:
      return "connect_failed";
    case Error::kConnectionReset:
      return "connection_reset";
    case Error::kIo:
      return "io_error";
    case Error::kTimeout:
      return "timeout";
    case Error::kEofInHandshake:
      return "eof_in_handshake";
    case Error::kNotTls:
      return "not_a_tls_record";
    case Error::kRecordOverflow:
      return "record_overflow";
    case Error::kBadRecordMac:
      return "bad_record_mac";
    case Error::kUnexpectedMessage:
      return "unexpected_message";
    case Error::kHelloRetryRequest:
      return "hello_retry_request";
    case Error::kBadServerHello:
      return "bad_server_hello";
    case Error::kDecodeError:
      return "decode_error";
    case Error::kHandshakeTooLarge:
      return "handshake_message_too_large";
    case Error::kBadFinished:
      return "bad_server_finished";
    case Error::kPskIdentity:
      return "bad_psk_identity";
    case Error::kCertificateRequest:
      return "certificate_request";
    case Error::kKeyUpdate:
      return "key_update";
    case Error::kCrypto:
      return "crypto_error";
    case Error::kAlert:
      return "alert";
    case Error::kHttpMalformed:
      return "http_malformed";
    case Error::kHttpTooLarge:
      return "http_head_too_large";
    case Error::kHttpStatus:
      return "http_status";
  }
  return "unknown";
}

std::string Tls13Client::error_reason() const {
  if (error_ == Error::kAlert) {
    const char* n = alert_name(alert_);
    return std::string("alert_") + (n != nullptr ? n : std::to_string(alert_));
  }
  if (error_ == Error::kHttpStatus) return "http_status_" + std::to_string(http_.status_code());
  return error_name(error_);
}

void Tls13Client::fail(Error e) {
  if (terminal()) return;
  state_ = State::kFailed;
  error_ = e;
}

void Tls13Client::start(const Ticket* ticket, Bytes& out) {
  std::array<uint8_t, 32> random{};
  if (RAND_bytes(random.data(), static_cast<int>(random.size())) != 1) return fail(Error::kCrypto);
  // One plaintext handshake record (legacy_record_version 0x0301, §5.1).
  Writer w(out);
  w.u8(static_cast<unsigned>(ContentType::kHandshake));
  w.u16(0x0301);
  size_t length = w.open(2);
  size_t at = out.size();
  if (ticket == nullptr) {
    build_client_hello(config_.sni, random, nullptr, out);
  } else {
    auto age = std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - ticket->received);
    PskOffer offer{ticket->identity, static_cast<uint32_t>(age.count()) + ticket->age_add};
    build_client_hello(config_.sni, random, &offer, out);
    // The binder (§4.2.11.2): HMAC over the ClientHello up to the binders list.
    psk_early_secret_ = hkdf_extract(Secret{}, ticket->psk);
    Secret binder_key = derive_secret(psk_early_secret_, "res binder", Crypto::get().empty_hash);
    ByteView truncated(out.data() + at, out.size() - at - kBinderSuffix);
    Secret binder = finished_mac(binder_key, sha256(truncated));
    std::memcpy(out.data() + out.size() - kHashLen, binder.data(), kHashLen);
    psk_offered_ = true;
  }
  w.close(length, 2);
  transcript_.add(ByteView(out.data() + at, out.size() - at));
  state_ = State::kWaitServerHello;
}

Tls13Client::State Tls13Client::on_data(ByteView in, Bytes& out) {
  records_.append(in);
  while (!terminal()) {
    Record r;
    RecordBuffer::Next n = records_.next(r);
    if (n == RecordBuffer::Next::kNeedMore) break;
    if (n == RecordBuffer::Next::kOverflow || n == RecordBuffer::Next::kNotTls) {
      fail(n == RecordBuffer::Next::kOverflow ? Error::kRecordOverflow : Error::kNotTls);
      break;
    }
    on_record(r, out);
  }
  return state_;
}

Tls13Client::State Tls13Client::on_eof() {
  on_close();
  return state_;
}

void Tls13Client::on_close() {
  if (terminal()) return;
  if (state_ != State::kWaitResponse) return fail(Error::kEofInHandshake);
  on_response(http_.end());
}

void Tls13Client::on_response(HttpResponse::Status s) {
  switch (s) {
    case HttpResponse::Status::kNeedMore:
      return;
    case HttpResponse::Status::kMalformed:
      return fail(Error::kHttpMalformed);
    case HttpResponse::Status::kTooLarge:
      return fail(Error::kHttpTooLarge);
    case HttpResponse::Status::kComplete:
      if (http_.status_code() != 200) return fail(Error::kHttpStatus);
      state_ = State::kDone;
      return;
  }
}

void Tls13Client::on_record(const Record& r, Bytes& out) {
  switch (static_cast<ContentType>(r.type)) {
    case ContentType::kChangeCipherSpec:
      // Middlebox compatibility (§D.4): one octet 0x01, before the server's Finished.
      if (state_ < State::kWaitServerHello || state_ > State::kWaitFinished || r.payload.size() != 1 ||
          r.payload[0] != 1)
        return fail(Error::kUnexpectedMessage);
      return;
    case ContentType::kAlert:
      if (read_.active()) return fail(Error::kUnexpectedMessage);  // alerts are protected from here on
      return on_alert(r.payload);
    case ContentType::kHandshake:
      if (read_.active() || r.payload.empty()) return fail(Error::kUnexpectedMessage);
      return on_handshake_bytes(r.payload, out);
    case ContentType::kApplicationData: {
      if (!read_.active()) return fail(Error::kUnexpectedMessage);
      uint8_t inner = 0;
      if (!read_.open(r, plaintext_, inner)) return fail(Error::kBadRecordMac);
      if (plaintext_.size() > kMaxPlaintext) return fail(Error::kRecordOverflow);
      switch (static_cast<ContentType>(inner)) {
        case ContentType::kHandshake:
          if (plaintext_.empty()) return fail(Error::kUnexpectedMessage);
          return on_handshake_bytes(plaintext_, out);
        case ContentType::kAlert:
          return on_alert(plaintext_);
        case ContentType::kApplicationData:
          if (state_ != State::kWaitResponse || !handshake_.empty()) return fail(Error::kUnexpectedMessage);
          return on_response(http_.feed(plaintext_));
        default:
          return fail(Error::kUnexpectedMessage);
      }
    }
  }
  fail(Error::kUnexpectedMessage);
}

void Tls13Client::on_alert(ByteView alert) {
  if (alert.size() != 2) return fail(Error::kDecodeError);
  if (alert[1] == kCloseNotify) return on_close();
  alert_ = alert[1];
  fail(Error::kAlert);
}

void Tls13Client::on_handshake_bytes(ByteView plaintext, Bytes& out) {
  handshake_.append(plaintext);
  while (!terminal()) {
    uint8_t type = 0;
    ByteView message;
    HandshakeReader::Next n = handshake_.next(type, message);
    if (n == HandshakeReader::Next::kNeedMore) return;
    if (n == HandshakeReader::Next::kTooLarge) return fail(Error::kHandshakeTooLarge);
    on_message(type, message, out);
  }
}

void Tls13Client::on_message(uint8_t type, ByteView message, Bytes& out) {
  auto expect = [&](HandshakeType t) {
    if (type == static_cast<uint8_t>(t)) return true;
    fail(type == static_cast<uint8_t>(HandshakeType::kCertificateRequest) ? Error::kCertificateRequest
                                                                          : Error::kUnexpectedMessage);
    return false;
  };
  switch (state_) {
    case State::kWaitServerHello:
      if (expect(HandshakeType::kServerHello)) on_server_hello(message);
      return;
    case State::kWaitEncryptedExtensions:
      if (!expect(HandshakeType::kEncryptedExtensions)) return;
      if (!parse_encrypted_extensions(body_of(message))) return fail(Error::kDecodeError);
      transcript_.add(message);
      state_ = resumed_ ? State::kWaitFinished : State::kWaitCertificate;
      return;
    case State::kWaitCertificate: {
      if (!expect(HandshakeType::kCertificate)) return;
      // Shape only: an empty request context and a non-empty certificate_list (§4.4.2).
      Reader r(body_of(message));
      bool context_empty = r.vec(1).empty();
      bool list = !r.vec(3).empty();
      if (!r.done() || !context_empty || !list) return fail(Error::kDecodeError);
      transcript_.add(message);
      state_ = State::kWaitCertificateVerify;
      return;
    }
    case State::kWaitCertificateVerify: {
      if (!expect(HandshakeType::kCertificateVerify)) return;
      // Shape only: an offered algorithm and a signature (§4.4.3); not verified.
      Reader r(body_of(message));
      unsigned alg = r.u16();
      bool signature = !r.vec(2).empty();
      if (!r.done() || !signature || (alg != kEcdsaSecp256r1Sha256 && alg != kRsaPssRsaeSha256))
        return fail(Error::kDecodeError);
      transcript_.add(message);
      state_ = State::kWaitFinished;
      return;
    }
    case State::kWaitFinished:
      if (expect(HandshakeType::kFinished)) on_finished(message, out);
      return;
    case State::kWaitResponse:
      if (type == static_cast<uint8_t>(HandshakeType::kNewSessionTicket))
        return on_new_session_ticket(body_of(message));
      return fail(type == static_cast<uint8_t>(HandshakeType::kKeyUpdate) ? Error::kKeyUpdate
                                                                          : Error::kUnexpectedMessage);
    default:
      return fail(Error::kUnexpectedMessage);
  }
}

void Tls13Client::on_server_hello(ByteView message) {
  ServerHello sh;
  if (!parse_server_hello(body_of(message), sh)) return fail(Error::kBadServerHello);
  if (sh.hello_retry_request) return fail(Error::kHelloRetryRequest);
  if (sh.psk_selected && (!psk_offered_ || sh.selected_identity != 0)) return fail(Error::kPskIdentity);
  // A key change must fall on a record boundary (§5.1).
  if (!handshake_.empty()) return fail(Error::kUnexpectedMessage);
  resumed_ = sh.psk_selected;
  transcript_.add(message);

  std::optional<Secret> shared = x25519_shared(sh.key_share);
  if (!shared) return fail(Error::kCrypto);
  const Crypto& c = Crypto::get();
  const Secret& early = resumed_ ? psk_early_secret_ : c.zero_early_secret;
  Secret handshake_secret = hkdf_extract(derive_secret(early, "derived", c.empty_hash), *shared);
  Secret hello_hash = transcript_.snapshot();
  client_hs_ = derive_secret(handshake_secret, "c hs traffic", hello_hash);
  server_hs_ = derive_secret(handshake_secret, "s hs traffic", hello_hash);
  master_ = hkdf_extract(derive_secret(handshake_secret, "derived", c.empty_hash), Secret{});
  OPENSSL_cleanse(shared->data(), shared->size());
  read_.set_keys(traffic_keys(server_hs_));
  state_ = State::kWaitEncryptedExtensions;
}

void Tls13Client::on_finished(ByteView message, Bytes& out) {
  Secret expected = finished_mac(server_hs_, transcript_.snapshot());
  ByteView verify_data = body_of(message);
  if (verify_data.size() != kHashLen || CRYPTO_memcmp(verify_data.data(), expected.data(), kHashLen) != 0)
    return fail(Error::kBadFinished);
  if (!handshake_.empty()) return fail(Error::kUnexpectedMessage);  // key change (§5.1)
  transcript_.add(message);
  Secret server_finished_hash = transcript_.snapshot();

  // The client's Finished under the handshake key, then the request under
  // the application key, in one flight.
  Bytes finished;
  Writer w(finished);
  w.u8(static_cast<unsigned>(HandshakeType::kFinished));
  w.u24(kHashLen);
  w.bytes(finished_mac(client_hs_, server_finished_hash));
  write_.set_keys(traffic_keys(client_hs_));
  write_.seal(ContentType::kHandshake, finished, out);
  if (config_.keep_ticket) transcript_.add(finished);  // for the resumption master secret

  write_.set_keys(traffic_keys(derive_secret(master_, "c ap traffic", server_finished_hash)));
  read_.set_keys(traffic_keys(derive_secret(master_, "s ap traffic", server_finished_hash)));
  for (size_t at = 0; at < config_.request.size(); at += kMaxPlaintext) {
    size_t n = std::min(kMaxPlaintext, config_.request.size() - at);
    write_.seal(ContentType::kApplicationData, ByteView(config_.request).subspan(at, n), out);
  }
  state_ = State::kWaitResponse;
}

void Tls13Client::on_new_session_ticket(ByteView body) {
  NewSessionTicket nst;
  if (!parse_new_session_ticket(body, nst)) return fail(Error::kDecodeError);
  if (!config_.keep_ticket || ticket_ || nst.lifetime_s == 0) return;
  Ticket t;
  t.identity.assign(nst.ticket.begin(), nst.ticket.end());
  Secret resumption_master = derive_secret(master_, "res master", transcript_.snapshot());
  t.psk = hkdf_expand_label(resumption_master, "resumption", nst.nonce, kHashLen);
  t.age_add = nst.age_add;
  t.lifetime_s = nst.lifetime_s;
  t.received = SteadyClock::now();
  ticket_ = std::move(t);
}

void Tls13Client::close_notify(Bytes& out) {
  const uint8_t alert[2] = {1, kCloseNotify};  // warning, close_notify
  if (write_.active()) write_.seal(ContentType::kAlert, alert, out);
}

}  // namespace tlsfront::hsload
