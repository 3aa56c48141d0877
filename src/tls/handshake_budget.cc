#include "tls/handshake_budget.h"

#include <chrono>

namespace tlsfront::tls {
namespace {

int budget_slot() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

// A TLS 1.3 pre_shared_key, or a TLS 1.2 SessionTicket with a ticket in it.
bool offers_resumption(SSL* ssl) {
  const unsigned char* data = nullptr;
  size_t len = 0;
  if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_psk, &data, &len) == 1) return true;
  return SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_session_ticket, &data, &len) == 1 && len > 0;
}

}  // namespace

HandshakeBudget::HandshakeBudget(std::string key, uint64_t per_second)
    : key_(std::move(key)), params_{1'000'000'000 / per_second, per_second - 1, GcraParams::kNoDelay} {}

bool HandshakeBudget::charge_quic_connection(std::string_view key, uint64_t per_second) {
  const HandshakeBudget budget(std::string(key), per_second);
  return table().check(key, gcra_now_ns(), budget.params_).pass;
}

GcraTable& HandshakeBudget::table() {
  static GcraTable node(kTableBytes);
  return node;
}

bool HandshakeBudget::attach(SSL* ssl) {
  const int slot = budget_slot();
  return slot >= 0 && SSL_set_ex_data(ssl, slot, this) == 1;
}

HandshakeBudget* HandshakeBudget::of(SSL* ssl) {
  const int slot = budget_slot();
  return slot < 0 ? nullptr : static_cast<HandshakeBudget*>(SSL_get_ex_data(ssl, slot));
}

bool HandshakeBudget::on_client_hello(SSL* ssl) {
  if (state_ != State::Undecided) return state_ != State::Refused;
  if (offers_resumption(ssl)) {
    state_ = table().would_reject(key_, gcra_now_ns(), params_) ? State::Refused : State::Offered;
  } else {
    state_ = table().check(key_, gcra_now_ns(), params_).pass ? State::Charged : State::Refused;
  }
  return state_ != State::Refused;
}

void HandshakeBudget::on_handshake_done(SSL* ssl) {
  if (state_ != State::Offered || SSL_session_reused(ssl) == 1) return;
  state_ = State::Charged;
  // Done already: charged whatever the verdict, so the next one is refused.
  table().check(key_, gcra_now_ns(), params_);
}

}  // namespace tlsfront::tls
