#include "tls/early_data_gate.h"

#include <string>

namespace tlsfront::tls {
namespace {

int gate_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

size_t u16(std::string_view s, size_t at) {
  return static_cast<size_t>(static_cast<unsigned char>(s[at])) << 8 | static_cast<unsigned char>(s[at + 1]);
}

}  // namespace

bool EarlyDataGate::attach(SSL* ssl) {
  const int index = gate_index();
  return index >= 0 && SSL_set_ex_data(ssl, index, this) == 1;
}

EarlyDataGate* EarlyDataGate::of(const SSL* ssl) {
  if (ssl == nullptr) return nullptr;
  return static_cast<EarlyDataGate*>(SSL_get_ex_data(ssl, gate_index()));
}

std::optional<std::string_view> EarlyDataGate::first_binder(std::string_view ext) {
  if (ext.size() < 2) return std::nullopt;
  const size_t ids_len = u16(ext, 0);
  if (ids_len < 7 || 2 + ids_len + 2 > ext.size()) return std::nullopt;
  std::string_view binders = ext.substr(2 + ids_len);
  const size_t binders_len = u16(binders, 0);
  if (binders_len < 33 || 2 + binders_len > binders.size()) return std::nullopt;
  const auto len = static_cast<unsigned char>(binders[2]);
  if (len < 32 || 1 + static_cast<size_t>(len) > binders_len) return std::nullopt;
  return binders.substr(3, len);
}

void EarlyDataGate::decide(Verdict v) {
  verdict_ = v;
  state_ = State::Done;
}

int EarlyDataGate::on_client_hello(SSL* ssl) {
  if (state_ == State::Pending) return SSL_CLIENT_HELLO_RETRY;
  if (state_ == State::Done) return SSL_CLIENT_HELLO_SUCCESS;
  const unsigned char* data = nullptr;
  size_t len = 0;
  if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_early_data, &data, &len) != 1) {
    decide(Verdict::NotOffered);
    return SSL_CLIENT_HELLO_SUCCESS;
  }
  if (SSL_get_max_early_data(ssl) == 0) {
    decide(Verdict::Disabled);
    return SSL_CLIENT_HELLO_SUCCESS;
  }
  std::optional<std::string_view> binder;
  if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_psk, &data, &len) == 1) {
    binder = first_binder(std::string_view(reinterpret_cast<const char*>(data), len));
  }
  if (!binder) {
    decide(Verdict::NoPsk);
    return SSL_CLIENT_HELLO_SUCCESS;
  }
  const auto local = recorder_.claim(*binder, ReplayRecorder::Clock::now(), start_window_);
  if (local != ReplayRecorder::Claim::First) {
    decide(Verdict::Replay);
    return SSL_CLIENT_HELLO_SUCCESS;
  }
  if (store_ == nullptr) {
    decide(Verdict::Accept);
    return SSL_CLIENT_HELLO_SUCCESS;
  }
  std::weak_ptr<EarlyDataGate> weak = weak_from_this();
  const bool asked = store_->claim(std::string(*binder), ReplayRecorder::kWindow, [weak](RemoteSessionStore::Claim c) {
    auto self = weak.lock();
    if (!self || self->state_ != State::Pending) return;
    self->decide(c == RemoteSessionStore::Claim::First  ? Verdict::Accept
                 : c == RemoteSessionStore::Claim::Seen ? Verdict::Replay
                                                        : Verdict::StoreUnavailable);
    if (self->resume_) self->resume_();
  });
  if (!asked) {
    decide(Verdict::StoreUnavailable);
    return SSL_CLIENT_HELLO_SUCCESS;
  }
  state_ = State::Pending;
  return SSL_CLIENT_HELLO_RETRY;
}

int EarlyDataGate::allow_early_data(SSL* ssl, void* /*arg*/) {
  const EarlyDataGate* gate = of(ssl);
  return gate != nullptr && gate->verdict_ == Verdict::Accept ? 1 : 0;
}

}  // namespace tlsfront::tls
