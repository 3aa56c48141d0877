#include "message/proxy_protocol.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <span>

#include "util/state.h"

namespace tlsfront::http {
namespace {

constexpr std::string_view kV1Prefix = "PROXY ";
constexpr char kV2Signature[12] = {'\r', '\n', '\r', '\n', '\0', '\r', '\n', 'Q', 'U', 'I', 'T', '\n'};
constexpr std::string_view kV2Sig(kV2Signature, sizeof kV2Signature);

// v2 address families (high nibble of octet 13) and their block sizes.
constexpr uint8_t kAfUnspec = 0, kAfInet = 1, kAfInet6 = 2, kAfUnix = 3;
constexpr size_t kAddressBlock[] = {0, 12, 36, 216};
constexpr uint8_t kProtoStream = 1;

constexpr uint8_t kTlvAlpn = 0x01, kTlvAuthority = 0x02, kTlvCrc32c = 0x03, kTlvUniqueId = 0x05;

// The CRC32c table, one entry per octet value (reflected 0x82F63B78).
constexpr std::array<uint32_t, 256> kCrc32cTable = [] {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}();

// A decimal port: 0..65535, no leading zero but "0" itself.
bool parse_port(std::string_view s, uint16_t& out) {
  if (s.empty() || s.size() > 5 || (s.size() > 1 && s[0] == '0')) return false;
  uint32_t n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + static_cast<uint32_t>(c - '0');
  }
  if (n > 65535) return false;
  out = static_cast<uint16_t>(n);
  return true;
}

// An address of the family the v1 protocol names: TCP4 takes a dotted quad,
// TCP6 an IPv6 literal (one with ':'; an IPv4-mapped one becomes IPv4).
std::optional<IpAddress> parse_v1_address(std::string_view s, bool v6) {
  if ((s.find(':') != std::string_view::npos) != v6) return std::nullopt;
  return IpAddress::parse(s);
}

uint16_t be16(const char* p) {
  return static_cast<uint16_t>((static_cast<uint8_t>(p[0]) << 8) | static_cast<uint8_t>(p[1]));
}

}  // namespace

uint32_t crc32c(std::string_view bytes) {
  uint32_t c = 0xFFFFFFFFu;
  for (char b : bytes) c = kCrc32cTable[(c ^ static_cast<uint8_t>(b)) & 0xff] ^ (c >> 8);
  return ~c;
}

const char* failure_name(ProxyHeaderReader::Failure f) {
  switch (f) {
    case ProxyHeaderReader::Failure::None: return "";
    case ProxyHeaderReader::Failure::NotProxy: return "not_proxy";
    case ProxyHeaderReader::Failure::Malformed: return "malformed";
    case ProxyHeaderReader::Failure::TooLong: return "too_long";
  }
  return "";
}

void ProxyHeaderReader::fail(Failure f, const char* why) {
  transition(phase_, Phase::Failed);
  failure_ = f;
  reason_ = why;
}

size_t ProxyHeaderReader::feed(std::string_view in) {
  size_t used = 0;
  while (used < in.size()) {
    switch (phase_) {
      case Phase::Signature: {
        const char c = in[used++];
        buf_.push_back(c);
        const std::string_view want = buf_[0] == 'P' ? kV1Prefix : kV2Sig;
        if (want[buf_.size() - 1] != c) {
          fail(Failure::NotProxy, buf_[0] == '\x16' ? "a TLS record where a PROXY protocol header was required"
                                                    : "no PROXY protocol signature");
          return used;
        }
        if (buf_.size() == want.size()) {
          if (want == kV1Prefix) {
            transition(phase_, Phase::V1Line);
          } else {
            transition(phase_, Phase::V2Fixed);
            need_ = kV2Fixed;
          }
        }
        break;
      }
      case Phase::V1Line: {
        // Up to the LF, within kMaxV1 octets in all.
        const size_t room = kMaxV1 - buf_.size();
        const std::string_view rest = in.substr(used, room);
        const size_t lf = rest.find('\n');
        const size_t take = lf == std::string_view::npos ? rest.size() : lf + 1;
        buf_.append(rest.substr(0, take));
        used += take;
        if (lf != std::string_view::npos) {
          parse_v1();
        } else if (buf_.size() >= kMaxV1) {
          fail(Failure::TooLong, "a v1 line longer than 107 octets");
        }
        if (phase_ != Phase::V1Line) return used;
        break;
      }
      case Phase::V2Fixed:
      case Phase::V2Body: {
        const size_t take = std::min(need_ - buf_.size(), in.size() - used);
        buf_.append(in.substr(used, take));
        used += take;
        if (buf_.size() < need_) break;
        if (phase_ == Phase::V2Fixed) {
          parse_v2_fixed();
          if (phase_ == Phase::Failed) return used;
          if (buf_.size() < need_) break;  // a body to read
        }
        parse_v2_body();
        return used;
      }
      case Phase::Done:
      case Phase::Failed:
        return used;
    }
  }
  return used;
}

void ProxyHeaderReader::parse_v1() {
  if (buf_.size() < kV1Prefix.size() + 2 || buf_[buf_.size() - 2] != '\r') {
    fail(Failure::Malformed, "a v1 line not ended by CRLF");
    return;
  }
  std::string_view line(buf_);
  line = line.substr(kV1Prefix.size(), line.size() - kV1Prefix.size() - 2);
  header_.version = 1;
  // "UNKNOWN" and anything after it: the receiver ignores the rest (§2.1).
  if (line == "UNKNOWN" || line.starts_with("UNKNOWN ")) {
    transition(phase_, Phase::Done);
    return;
  }
  std::string_view fields[5];
  size_t n = 0;
  for (;;) {
    if (n == 5) {
      n = 6;  // a sixth field
      break;
    }
    const size_t sp = line.find(' ');
    fields[n++] = line.substr(0, sp);
    if (sp == std::string_view::npos) break;
    line.remove_prefix(sp + 1);
  }
  if (n != 5) {
    fail(Failure::Malformed, "a v1 line without exactly a protocol, two addresses and two ports");
    return;
  }
  const bool v6 = fields[0] == "TCP6";
  if (!v6 && fields[0] != "TCP4") {
    fail(Failure::Malformed, "a v1 protocol other than TCP4, TCP6 or UNKNOWN");
    return;
  }
  header_.source = parse_v1_address(fields[1], v6);
  header_.destination = parse_v1_address(fields[2], v6);
  if (!header_.source || !header_.destination) {
    fail(Failure::Malformed, "a v1 address that is not of its protocol's family");
    return;
  }
  if (!parse_port(fields[3], header_.source_port) || !parse_port(fields[4], header_.destination_port)) {
    fail(Failure::Malformed, "a v1 port that is not 0..65535");
    return;
  }
  transition(phase_, Phase::Done);
}

void ProxyHeaderReader::parse_v2_fixed() {
  const auto ver_cmd = static_cast<uint8_t>(buf_[12]);
  if ((ver_cmd >> 4) != 2 || (ver_cmd & 0x0f) > 1) {
    fail(Failure::Malformed, "a v2 header with a version other than 2 or a command other than LOCAL and PROXY");
    return;
  }
  const size_t length = be16(buf_.data() + 14);
  if (length > kMaxV2Payload) {
    fail(Failure::TooLong, "a v2 header longer than 2048 octets after its fixed part");
    return;
  }
  transition(phase_, Phase::V2Body);
  need_ = kV2Fixed + length;
  buf_.reserve(need_);
}

bool ProxyHeaderReader::checksum_matches(size_t at) const {
  const auto* p = reinterpret_cast<const uint8_t*>(buf_.data() + at);
  const uint32_t sent = (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
  std::string zeroed = buf_;
  std::memset(zeroed.data() + at, 0, 4);
  return crc32c(zeroed) == sent;
}

void ProxyHeaderReader::parse_v2_body() {
  header_.version = 2;
  header_.local = (static_cast<uint8_t>(buf_[12]) & 0x0f) == 0;
  if (header_.local) {
    // §2.2: the receiver must use the real connection endpoints and skip
    // the protocol block.
    transition(phase_, Phase::Done);
    return;
  }
  const auto fam = static_cast<uint8_t>(buf_[13]);
  const uint8_t af = fam >> 4, proto = fam & 0x0f;
  if (af > kAfUnix || proto > 2) {
    fail(Failure::Malformed, "a v2 address family or transport protocol the specification does not define");
    return;
  }
  const std::string_view body = std::string_view(buf_).substr(kV2Fixed);
  const size_t block = kAddressBlock[af];
  if (body.size() < block) {
    fail(Failure::Malformed, "a v2 header shorter than its address block");
    return;
  }
  if (proto == kProtoStream && (af == kAfInet || af == kAfInet6)) {
    const size_t alen = af == kAfInet ? 4 : 16;
    const auto* p = reinterpret_cast<const uint8_t*>(body.data());
    header_.source = IpAddress::from_octets(std::span<const uint8_t>(p, alen));
    header_.destination = IpAddress::from_octets(std::span<const uint8_t>(p + alen, alen));
    header_.source_port = be16(body.data() + 2 * alen);
    header_.destination_port = be16(body.data() + 2 * alen + 2);
  }
  static_assert(kAfUnspec == 0);
  std::string_view tlvs = body.substr(block);
  while (!tlvs.empty()) {
    if (tlvs.size() < 3) {
      fail(Failure::Malformed, "a v2 TLV cut short");
      return;
    }
    const auto type = static_cast<uint8_t>(tlvs[0]);
    const size_t len = be16(tlvs.data() + 1);
    if (tlvs.size() - 3 < len) {
      fail(Failure::Malformed, "a v2 TLV longer than the header");
      return;
    }
    const std::string_view value = tlvs.substr(3, len);
    if (type == kTlvAlpn) {
      header_.tlvs.alpn.assign(value);
    } else if (type == kTlvAuthority) {
      header_.tlvs.authority.assign(value);
    } else if (type == kTlvUniqueId) {
      if (len > kMaxUniqueId) {
        fail(Failure::Malformed, "a v2 unique ID longer than 128 octets");
        return;
      }
      header_.tlvs.unique_id.assign(value);
    } else if (type == kTlvCrc32c) {
      if (len != 4 || !checksum_matches(static_cast<size_t>(value.data() - buf_.data()))) {
        fail(Failure::Malformed, "a v2 CRC32C checksum that does not match the header");
        return;
      }
    }
    tlvs.remove_prefix(3 + len);
  }
  transition(phase_, Phase::Done);
}

}  // namespace tlsfront::http
