// Fuzz target proxy_protocol: the bytes are a connection's first octets on a
// proxy_protocol listener, for ProxyHeaderReader (message/proxy_protocol.h),
// and also one X-Forwarded-For value for real_client_address
// (message/real_ip.h). Beyond not crashing:
//   - the reader fed the input whole and fed it in two pieces (split at an
//     offset the first octet picks) ends in the same phase, having taken the
//     same octets, with the same header;
//   - it never takes more than its bounds (107 octets for v1, 16 + 2048 for
//     v2) nor anything past a header it accepted; an accepted v1 header ends
//     in CRLF;
//   - the X-Forwarded-For client, when one is named, has only trusted
//     addresses to its right (no spoofed entry can be reached past an
//     untrusted one) and is never named when the peer is not trusted.
// Any difference aborts.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "message/proxy_protocol.h"
#include "message/real_ip.h"

namespace {

using tlsfront::Cidr;
using tlsfront::IpAddress;
using tlsfront::http::Header;
using tlsfront::http::HeaderToken;
using tlsfront::http::ProxyHeader;
using tlsfront::http::ProxyHeaderReader;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "proxy_protocol: %s\n", what);
  std::abort();
}

bool same(const ProxyHeader& a, const ProxyHeader& b) {
  return a.version == b.version && a.local == b.local && a.source == b.source && a.source_port == b.source_port &&
         a.destination == b.destination && a.destination_port == b.destination_port &&
         a.tlvs.alpn == b.tlvs.alpn && a.tlvs.authority == b.tlvs.authority && a.tlvs.unique_id == b.tlvs.unique_id;
}

void check_reader(std::string_view in) {
  ProxyHeaderReader whole;
  const size_t used = whole.feed(in);
  if (used > in.size() || used != whole.consumed()) fail("took more than it was given");
  const size_t split = in.empty() ? 0 : static_cast<uint8_t>(in[0]) % (in.size() + 1);
  ProxyHeaderReader parts;
  size_t used2 = parts.feed(in.substr(0, split));
  if (!parts.done() && !parts.failed()) used2 += parts.feed(in.substr(split));
  if (parts.phase() != whole.phase() || used2 != used) fail("whole and split disagree");
  if (whole.done()) {
    if (!same(whole.header(), parts.header())) fail("whole and split headers differ");
    const ProxyHeader& h = whole.header();
    if (h.version == 1 && (used > ProxyHeaderReader::kMaxV1 || in.substr(used - 2, 2) != "\r\n")) fail("v1 bounds");
    if (h.version == 2 && used > ProxyHeaderReader::kV2Fixed + ProxyHeaderReader::kMaxV2Payload) fail("v2 bounds");
    if (h.local && h.source) fail("LOCAL with an address");
    if (h.tlvs.unique_id.size() > ProxyHeaderReader::kMaxUniqueId) fail("unique ID bound");
    if (whole.feed("more") != 0) fail("took octets after the header");
  } else if (!whole.failed() && used != in.size()) {
    fail("stopped early without an end");
  }
  if (whole.consumed() > ProxyHeaderReader::kV2Fixed + ProxyHeaderReader::kMaxV2Payload) fail("unbounded");
}

void check_real_ip(std::string_view in) {
  static const std::vector<Cidr> trusted = {*Cidr::parse("10.0.0.0/8", nullptr), *Cidr::parse("::1", nullptr)};
  std::vector<Header> headers;
  headers.push_back(Header{"X-Forwarded-For", std::string(in), HeaderToken::XForwardedFor});
  const IpAddress peer = *IpAddress::parse("10.0.0.1");
  if (tlsfront::http::real_client_address(headers, HeaderToken::XForwardedFor, *IpAddress::parse("192.0.2.1"),
                                          trusted, true)) {
    fail("believed an untrusted peer");
  }
  const auto client = tlsfront::http::real_client_address(headers, HeaderToken::XForwardedFor, peer, trusted, true);
  if (!client) return;
  // Right of the chosen entry: trusted addresses only.
  std::string_view list = in;
  for (;;) {
    const size_t comma = list.rfind(',');
    const std::string_view entry = comma == std::string_view::npos ? list : list.substr(comma + 1);
    const auto a = tlsfront::http::parse_forwarded_address(entry);
    if (!a) fail("walked past a malformed entry");
    if (*a == *client) return;
    if (!tlsfront::contains_any(trusted, *a)) fail("walked past an untrusted address");
    if (comma == std::string_view::npos) fail("named an address not in the list");
    list = list.substr(0, comma);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  check_reader(in);
  check_real_ip(in);
  return 0;
}
