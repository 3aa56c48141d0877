#include "tls/session_lookup.h"

#include "tls/session_cache.h"

namespace tlsfront::tls {
namespace {

// One process-wide SSL ex_data index (borrowed pointer: no free callback).
int lookup_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

}  // namespace

bool SessionLookup::attach(SSL* ssl) {
  const int index = lookup_index();
  return index >= 0 && SSL_set_ex_data(ssl, index, this) == 1;
}

SessionLookup* SessionLookup::of(const SSL* ssl) {
  if (ssl == nullptr) return nullptr;
  return static_cast<SessionLookup*>(SSL_get_ex_data(ssl, lookup_index()));
}

int SessionLookup::on_client_hello(SessionCache& cache, const std::string& key) {
  if (state_ == State::Pending) return SSL_CLIENT_HELLO_RETRY;
  if (state_ == State::Done || key.empty() || cache.contains(key)) return SSL_CLIENT_HELLO_SUCCESS;
  std::weak_ptr<SessionLookup> weak = weak_from_this();
  SessionCache* cache_ptr = &cache;
  const bool started = store_->lookup(key, [weak, cache_ptr, key](std::optional<std::string> der) {
    if (auto self = weak.lock()) self->on_answer(*cache_ptr, key, std::move(der));
  });
  if (!started) {
    state_ = State::Done;
    return SSL_CLIENT_HELLO_SUCCESS;
  }
  state_ = State::Pending;
  return SSL_CLIENT_HELLO_RETRY;
}

void SessionLookup::on_answer(SessionCache& cache, const std::string& key, std::optional<std::string> der) {
  if (state_ != State::Pending) return;
  state_ = State::Done;
  if (der) cache.adopt(key, std::move(*der));
  if (resume_) resume_();
}

namespace {

unsigned u16(std::string_view s, size_t at) {
  return static_cast<unsigned>(static_cast<unsigned char>(s[at])) << 8 | static_cast<unsigned char>(s[at + 1]);
}

// RFC 8446 §4.2.11: OfferedPsks = identities<7..2^16-1> (each identity<1..2^16-1>
// + uint32 obfuscated_ticket_age), then binders. The first identity, if well formed.
std::optional<std::string_view> first_psk_identity(std::string_view ext) {
  if (ext.size() < 2) return std::nullopt;
  const size_t list_len = u16(ext, 0);
  if (list_len < 7 || 2 + list_len > ext.size()) return std::nullopt;
  const size_t id_len = u16(ext, 2);
  if (id_len == 0 || 2 + id_len + 4 > list_len) return std::nullopt;
  return ext.substr(4, id_len);
}

}  // namespace

std::optional<std::string_view> SessionLookup::resumable_session_id(std::string_view session_id,
                                                                    std::string_view supported_versions,
                                                                    bool server_allows_tls13,
                                                                    std::string_view pre_shared_key) {
  bool tls13 = false;
  if (server_allows_tls13 && !supported_versions.empty()) {
    // RFC 8446 §4.2.1: a one-byte length, then two-byte versions.
    const auto len = static_cast<unsigned char>(supported_versions[0]);
    std::string_view versions = supported_versions.substr(1);
    if (len < versions.size()) versions = versions.substr(0, len);
    for (size_t i = 0; i + 1 < versions.size(); i += 2) tls13 = tls13 || u16(versions, i) == TLS1_3_VERSION;
  }
  std::optional<std::string_view> id = session_id;
  if (tls13) id = first_psk_identity(pre_shared_key);
  if (!id || id->empty() || id->size() > SSL_MAX_SSL_SESSION_ID_LENGTH) return std::nullopt;
  return id;
}

}  // namespace tlsfront::tls
