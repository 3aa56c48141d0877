#include "util/ip_address.h"

#include <arpa/inet.h>

#include <cstring>

namespace tlsfront {
namespace {

constexpr uint8_t kMappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

}  // namespace

std::optional<IpAddress> IpAddress::parse(std::string_view text) {
  char z[64];  // inet_pton wants a terminated string; the longest literal is 45 octets
  if (text.empty() || text.size() >= sizeof z) return std::nullopt;
  std::memcpy(z, text.data(), text.size());
  z[text.size()] = '\0';
  uint8_t buf[16];
  if (inet_pton(AF_INET, z, buf) == 1) return from_octets(std::span<const uint8_t>(buf, 4));
  if (inet_pton(AF_INET6, z, buf) == 1) return from_octets(std::span<const uint8_t>(buf, 16));
  return std::nullopt;
}

std::optional<IpAddress> IpAddress::from_octets(std::span<const uint8_t> octets) {
  IpAddress a;
  if (octets.size() == 4) {
    std::memcpy(a.octets.data(), octets.data(), 4);
    return a;
  }
  if (octets.size() != 16) return std::nullopt;
  if (std::memcmp(octets.data(), kMappedPrefix, sizeof kMappedPrefix) == 0) {
    std::memcpy(a.octets.data(), octets.data() + 12, 4);
    return a;
  }
  a.family = Family::V6;
  std::memcpy(a.octets.data(), octets.data(), 16);
  return a;
}

std::string_view IpAddress::format(std::array<char, 46>& buf) const {
  if (inet_ntop(family == Family::V4 ? AF_INET : AF_INET6, octets.data(), buf.data(), buf.size()) == nullptr) {
    return {};
  }
  return std::string_view(buf.data());
}

std::string IpAddress::to_string() const {
  std::array<char, 46> buf;
  return std::string(format(buf));
}

std::optional<Cidr> Cidr::parse(std::string_view text, std::string* why) {
  const size_t slash = text.find('/');
  const auto address = IpAddress::parse(text.substr(0, slash));
  if (!address) {
    if (why) *why = "not an IP address or CIDR block (\"10.0.0.0/8\", \"2001:db8::/32\", \"192.0.2.7\")";
    return std::nullopt;
  }
  Cidr c;
  c.network = *address;
  const unsigned max = address->family == IpAddress::Family::V4 ? 32 : 128;
  c.prefix = static_cast<uint8_t>(max);
  if (slash != std::string_view::npos) {
    // An IPv4-mapped block ("::ffff:10.0.0.0/104") is written in IPv6 bits.
    const bool mapped = max == 32 && text.substr(0, slash).find(':') != std::string_view::npos;
    const unsigned written_max = mapped ? 128 : max;
    const std::string_view digits = text.substr(slash + 1);
    unsigned n = 0;
    bool ok = !digits.empty() && digits.size() <= 3 && (digits.size() == 1 || digits[0] != '0');
    for (char ch : digits) {
      if (ch < '0' || ch > '9') ok = false;
      n = n * 10 + static_cast<unsigned>(ch - '0');
    }
    if (!ok || n > written_max) {
      if (why) *why = "prefix length must be 0.." + std::to_string(written_max);
      return std::nullopt;
    }
    if (mapped) {
      if (n < 96) {
        if (why) *why = "an IPv4-mapped block needs a prefix length of 96..128";
        return std::nullopt;
      }
      n -= 96;
    }
    c.prefix = static_cast<uint8_t>(n);
  }
  Cidr masked = c;
  for (unsigned bit = c.prefix; bit < max; ++bit) masked.network.octets[bit / 8] &= static_cast<uint8_t>(~(0x80u >> (bit % 8)));
  if (!(masked.network == c.network)) {
    if (why) *why = "host bits set (the network is " + masked.to_string() + ")";
    return std::nullopt;
  }
  return c;
}

bool Cidr::contains(const IpAddress& a) const {
  if (a.family != network.family) return false;
  const unsigned whole = prefix / 8;
  if (std::memcmp(a.octets.data(), network.octets.data(), whole) != 0) return false;
  const unsigned rest = prefix % 8;
  if (rest == 0) return true;
  const auto mask = static_cast<uint8_t>(0xff00u >> rest);
  return (a.octets[whole] & mask) == network.octets[whole];
}

std::string Cidr::to_string() const { return network.to_string() + "/" + std::to_string(prefix); }

bool contains_any(std::span<const Cidr> blocks, const IpAddress& a) {
  for (const Cidr& c : blocks) {
    if (c.contains(a)) return true;
  }
  return false;
}

}  // namespace tlsfront
