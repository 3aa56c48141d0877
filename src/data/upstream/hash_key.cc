#include "data/upstream/hash_key.h"

namespace tlsfront::upstream {
namespace {

std::optional<std::string_view> cookie_value(const http::RequestHead& head, std::string_view name) {
  for (const http::Header& h : head.headers) {
    if (!http::iequals(h.name, "cookie")) continue;
    std::string_view rest = h.value;
    while (!rest.empty()) {
      const size_t end = rest.find(';');
      std::string_view pair = http::trim_ows(rest.substr(0, end));
      rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
      const size_t eq = pair.find('=');
      if (eq != std::string_view::npos && pair.substr(0, eq) == name) return pair.substr(eq + 1);
    }
  }
  return std::nullopt;
}

}  // namespace

uint64_t ring_hash(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h;
}

std::optional<uint64_t> request_hash(const config::HashKey& key, const http::RequestHead& head,
                                     std::string_view client_addr) {
  switch (key.kind) {
    case config::HashKey::Kind::None: return std::nullopt;
    case config::HashKey::Kind::RemoteAddr: return ring_hash(client_addr);
    case config::HashKey::Kind::Header:
      for (const http::Header& h : head.headers) {
        if (http::iequals(h.name, key.name)) return ring_hash(h.value);
      }
      return std::nullopt;
    case config::HashKey::Kind::Cookie:
      if (auto value = cookie_value(head, key.name)) return ring_hash(*value);
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace tlsfront::upstream
