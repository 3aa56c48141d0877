#include "data/http/extended_connect.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <random>

namespace tlsfront::http {
namespace {

constexpr std::string_view kWebSocketGuid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

std::string base64(const unsigned char* data, size_t n) {
  std::string out(4 * ((n + 2) / 3), '\0');
  const int len = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data, static_cast<int>(n));
  out.resize(static_cast<size_t>(std::max(len, 0)));
  return out;
}

bool is_field(const Header& h, std::string_view name) { return iequals(h.name, name); }

}  // namespace

std::string websocket_accept(std::string_view key) {
  std::string input(key);
  input.append(kWebSocketGuid);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(input.data(), input.size(), digest, &len, EVP_sha1(), nullptr) != 1) return {};
  return base64(digest, len);
}

std::string map_extended_connect(RequestHead& req, std::string_view protocol) {
  req.method = "GET";
  req.upgrade.assign(protocol);
  for (char& c : req.upgrade) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  req.extended_connect = true;
  req.chunked = false;
  req.content_length.reset();
  std::erase_if(req.headers, [](const Header& h) {
    return h.token == HeaderToken::ContentLength || is_field(h, "sec-websocket-key");
  });
  if (req.upgrade != "websocket") return {};
  unsigned char raw[16];
  if (RAND_bytes(raw, sizeof raw) != 1) {
    // The key only proves the upstream understood the handshake (RFC 6455
    // §10.3 asks for randomness against caches, not secrecy).
    thread_local std::mt19937_64 fallback{std::random_device{}()};
    for (unsigned char& b : raw) b = static_cast<unsigned char>(fallback());
  }
  std::string key = base64(raw, sizeof raw);
  std::string accept = websocket_accept(key);
  req.headers.push_back(Header{"sec-websocket-key", std::move(key), HeaderToken::Other});
  return accept;
}

bool accept_upgrade_response(ResponseHead& head, std::string_view accept) {
  int fields = 0;
  bool ours = false;
  std::erase_if(head.headers, [&](const Header& h) {
    if (!is_field(h, "sec-websocket-accept")) return false;
    ++fields;
    ours = h.value == accept;
    return true;
  });
  return accept.empty() || (fields == 1 && ours);  // exactly one field, with our key's value
}

}  // namespace tlsfront::http
