#include "message/header_token.h"

#include <array>
#include <cstdint>
#include <cstring>

namespace tlsfront::http {
namespace {

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

// lower() of each of the 8 octets in `w` at once: a borrow-free test of
// 'A' <= octet <= 'Z' on the low 7 bits (octets with the high bit set are
// left alone), then bit 5 set in those octets.
uint64_t lower_word(uint64_t w) {
  constexpr uint64_t kOnes = 0x0101010101010101ull, kHigh = kOnes * 0x80;
  const uint64_t low7 = w & ~kHigh;
  const uint64_t upper = (low7 + kOnes * (0x80 - 'A')) & ~(low7 + kOnes * (0x80 - 'Z' - 1)) & ~w & kHigh;
  return w | upper >> 2;
}

uint64_t load64(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

uint32_t load32(const char* p) {
  uint32_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

// Per octet: may it appear in a field name (RFC 9110 §5.6.2 tchar), in a
// field value (§5.5: VCHAR, obs-text, SP, HTAB)? One load per octet checks
// every field of every head that passes through.
constexpr uint8_t kNameOctet = 1, kValueOctet = 2;
constexpr std::array<uint8_t, 256> kOctetClass = [] {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) {
    if (c >= 0x20 && c != 0x7f) t[c] |= kValueOctet;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) t[c] |= kNameOctet;
  }
  t['\t'] |= kValueOctet;
  for (unsigned char c : std::string_view("!#$%&'*+-.^_`|~")) t[c] |= kNameOctet;
  return t;
}();

bool all_of_class(std::string_view s, uint8_t cls) {
  for (unsigned char c : s) {
    if ((kOctetClass[c] & cls) == 0) return false;
  }
  return true;
}

}  // namespace

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  const size_t n = a.size();
  if (n != b.size()) return false;
  const char* const x = a.data();
  const char* const y = b.data();
  if (n >= 8) {  // whole words, the last one overlapping
    for (size_t i = 0; i + 8 < n; i += 8) {
      if (lower_word(load64(x + i)) != lower_word(load64(y + i))) return false;
    }
    return lower_word(load64(x + n - 8)) == lower_word(load64(y + n - 8));
  }
  if (n >= 4) {  // two overlapping halves in one word
    return lower_word(load32(x) | uint64_t{load32(x + n - 4)} << 32) ==
           lower_word(load32(y) | uint64_t{load32(y + n - 4)} << 32);
  }
  for (size_t i = 0; i < n; ++i) {
    if (lower(x[i]) != lower(y[i])) return false;
  }
  return true;
}

void lowercase_in_place(std::string& s) {
  const size_t n = s.size();
  char* const p = s.data();
  auto store64 = [](char* at, uint64_t w) { std::memcpy(at, &w, sizeof w); };
  if (n >= 8) {  // whole words, the last one overlapping (lowering twice changes nothing)
    for (size_t i = 0; i + 8 < n; i += 8) store64(p + i, lower_word(load64(p + i)));
    store64(p + n - 8, lower_word(load64(p + n - 8)));
    return;
  }
  for (size_t i = 0; i < n; ++i) p[i] = lower(p[i]);
}

HeaderToken classify_header(std::string_view name) {
  // The length picks the one to three candidates (every known name is
  // 2..17 bytes long), their first letter all but one: one comparison per
  // field instead of a scan of the table. (`known` is lowercase, and
  // c | 0x20 is known[0] only for that letter in either case.)
  auto is = [name](std::string_view known) {
    return static_cast<char>(name[0] | 0x20) == known[0] && iequals(name, known);
  };
  switch (name.size()) {
    case 2: return is("te") ? HeaderToken::Te : HeaderToken::Other;
    case 4: return is("host") ? HeaderToken::Host : HeaderToken::Other;
    case 6: return is("expect") ? HeaderToken::Expect : HeaderToken::Other;
    case 7:
      if (is("trailer")) return HeaderToken::Trailer;
      return is("upgrade") ? HeaderToken::Upgrade : HeaderToken::Other;
    case 9: return is("x-real-ip") ? HeaderToken::XRealIp : HeaderToken::Other;
    case 10:
      if (is("connection")) return HeaderToken::Connection;
      if (is("keep-alive")) return HeaderToken::KeepAlive;
      return is("user-agent") ? HeaderToken::UserAgent : HeaderToken::Other;
    case 14: return is("content-length") ? HeaderToken::ContentLength : HeaderToken::Other;
    case 15: return is("x-forwarded-for") ? HeaderToken::XForwardedFor : HeaderToken::Other;
    case 16: return is("proxy-connection") ? HeaderToken::ProxyConnection : HeaderToken::Other;
    case 17:
      if (is("transfer-encoding")) return HeaderToken::TransferEncoding;
      return is("x-forwarded-proto") ? HeaderToken::XForwardedProto : HeaderToken::Other;
    default: return HeaderToken::Other;
  }
}

bool valid_field_name(std::string_view name) { return !name.empty() && all_of_class(name, kNameOctet); }

bool valid_field_value(std::string_view value) { return all_of_class(value, kValueOctet); }

bool is_hop_by_hop(HeaderToken token) {
  switch (token) {
    case HeaderToken::Connection:
    case HeaderToken::KeepAlive:
    case HeaderToken::ProxyConnection:
    case HeaderToken::Te:
    case HeaderToken::Trailer:
    case HeaderToken::TransferEncoding:
    case HeaderToken::Upgrade:
      return true;
    default:
      return false;
  }
}

void split_list(std::string_view value, std::vector<std::string_view>& out) {
  for_each_list_item(value, [&out](std::string_view item) {
    out.push_back(item);
    return false;
  });
}

bool list_contains(std::string_view value, std::string_view token) {
  return for_each_list_item(value, [token](std::string_view item) { return iequals(item, token); });
}

}  // namespace tlsfront::http
