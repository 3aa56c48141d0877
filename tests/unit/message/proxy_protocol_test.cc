// ProxyHeaderReader: PROXY protocol v1 and v2 as the HAProxy specification
// writes them, fed whole and byte by byte; what is refused, and why.
#include "message/proxy_protocol.h"

#include <gtest/gtest.h>

#include <string>

namespace tlsfront::http {
namespace {

using Phase = ProxyHeaderReader::Phase;
using Failure = ProxyHeaderReader::Failure;

const std::string kSig("\r\n\r\n\0\r\nQUIT\n", 12);

// A v2 header: signature, version/command, family/protocol, length, body.
std::string v2(uint8_t ver_cmd, uint8_t fam, const std::string& body) {
  std::string h = kSig;
  h.push_back(static_cast<char>(ver_cmd));
  h.push_back(static_cast<char>(fam));
  h.push_back(static_cast<char>(body.size() >> 8));
  h.push_back(static_cast<char>(body.size() & 0xff));
  return h + body;
}

std::string inet4(const char a[4], const char b[4], uint16_t sp, uint16_t dp) {
  std::string s(a, 4);
  s.append(b, 4);
  for (uint16_t p : {sp, dp}) {
    s.push_back(static_cast<char>(p >> 8));
    s.push_back(static_cast<char>(p & 0xff));
  }
  return s;
}

std::string tlv(uint8_t type, const std::string& value) {
  std::string s;
  s.push_back(static_cast<char>(type));
  s.push_back(static_cast<char>(value.size() >> 8));
  s.push_back(static_cast<char>(value.size() & 0xff));
  return s + value;
}

// Feeds `input` whole and then byte by byte; both must agree. Returns the
// whole-feed reader and the octets it consumed.
struct Fed {
  ProxyHeaderReader reader;
  size_t used = 0;
};
Fed feed(const std::string& input) {
  Fed whole;
  whole.used = whole.reader.feed(input);
  ProxyHeaderReader bytes;
  size_t used = 0;
  for (size_t i = 0; i < input.size() && !bytes.done() && !bytes.failed(); ++i) {
    used += bytes.feed(std::string_view(input).substr(i, 1));
  }
  EXPECT_EQ(bytes.phase(), whole.reader.phase()) << "byte by byte";
  EXPECT_EQ(used, whole.used) << "byte by byte";
  return whole;
}

TEST(ProxyProtocol, V1Tcp4) {
  const std::string line = "PROXY TCP4 192.0.2.7 198.51.100.1 56324 443\r\n";
  Fed f = feed(line + "\x16\x03\x01");
  ASSERT_TRUE(f.reader.done()) << f.reader.reason();
  EXPECT_EQ(f.used, line.size());  // the ClientHello's octets are left
  const ProxyHeader& h = f.reader.header();
  EXPECT_EQ(h.version, 1);
  EXPECT_FALSE(h.local);
  EXPECT_EQ(h.source->to_string(), "192.0.2.7");
  EXPECT_EQ(h.source_port, 56324);
  EXPECT_EQ(h.destination->to_string(), "198.51.100.1");
  EXPECT_EQ(h.destination_port, 443);
}

TEST(ProxyProtocol, V1Tcp6AndUnknown) {
  Fed f = feed("PROXY TCP6 2001:db8::7 2001:db8::1 0 65535\r\n");
  ASSERT_TRUE(f.reader.done()) << f.reader.reason();
  EXPECT_EQ(f.reader.header().source->to_string(), "2001:db8::7");
  EXPECT_EQ(f.reader.header().source_port, 0);
  EXPECT_EQ(f.reader.header().destination_port, 65535);
  for (std::string unknown : {"PROXY UNKNOWN\r\n", "PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n"}) {
    Fed u = feed(unknown);
    ASSERT_TRUE(u.reader.done()) << unknown;
    EXPECT_FALSE(u.reader.header().source);
    EXPECT_EQ(u.used, unknown.size());
  }
}

TEST(ProxyProtocol, V1LongestLineFitsAndOneMoreOctetDoesNot) {
  // §2.1's worst case is 107 octets with CRLF.
  const std::string max = "PROXY UNKNOWN " + std::string(107 - 16, 'x') + "\r\n";
  ASSERT_EQ(max.size(), 107u);
  EXPECT_TRUE(feed(max).reader.done());
  const std::string over = "PROXY UNKNOWN " + std::string(107 - 15, 'x') + "\r\n";
  Fed f = feed(over);
  EXPECT_TRUE(f.reader.failed());
  EXPECT_EQ(f.reader.failure(), Failure::TooLong);
  EXPECT_EQ(f.used, 107u);  // never more than the bound is read
}

TEST(ProxyProtocol, V1Malformed) {
  for (std::string bad : {
           "PROXY TCP4 192.0.2.7 198.51.100.1 56324\r\n",          // a port missing
           "PROXY TCP4 192.0.2.7 198.51.100.1 56324 443 1\r\n",    // a field too many
           "PROXY TCP4 192.0.2.7  198.51.100.1 56324 443\r\n",     // two spaces
           "PROXY TCP4 2001:db8::7 2001:db8::1 1 2\r\n",           // family mismatch
           "PROXY TCP6 192.0.2.7 198.51.100.1 1 2\r\n",            // family mismatch
           "PROXY TCP4 192.0.2.7 198.51.100.1 65536 443\r\n",      // port range
           "PROXY TCP4 192.0.2.7 198.51.100.1 0443 443\r\n",       // leading zero
           "PROXY TCP4 192.0.2.07 198.51.100.1 1 2\r\n",           // leading zero
           "PROXY TCP4 example.com 198.51.100.1 1 2\r\n",          // a name
           "PROXY UDP4 192.0.2.7 198.51.100.1 1 2\r\n",            // protocol
           "PROXY TCP4 192.0.2.7 198.51.100.1 1 2\n",              // LF without CR
           "PROXY \r\n",
       }) {
    Fed f = feed(bad);
    EXPECT_TRUE(f.reader.failed()) << bad;
    EXPECT_EQ(f.reader.failure(), Failure::Malformed) << bad;
  }
}

TEST(ProxyProtocol, NotAHeaderIsRefusedAtTheFirstWrongOctet) {
  // A TLS ClientHello where a header was required: refused at its first octet.
  Fed tls = feed(std::string("\x16\x03\x01\x02\x00\x01", 6));
  EXPECT_EQ(tls.reader.failure(), Failure::NotProxy);
  EXPECT_EQ(tls.used, 1u);
  EXPECT_STREQ(tls.reader.reason(), "a TLS record where a PROXY protocol header was required");
  for (std::string bad : {std::string("GET / HTTP/1.1\r\n"), std::string("PROXX TCP4"), std::string("proxy TCP4"), std::string("\r\n\r\n\0\r\nQUIT\r", 12)}) {
    Fed f = feed(bad);
    EXPECT_EQ(f.reader.failure(), Failure::NotProxy) << bad;
  }
}

TEST(ProxyProtocol, TruncatedNeedsMore) {
  ProxyHeaderReader r;
  EXPECT_EQ(r.feed("PROXY TCP4 192.0.2.7"), 20u);
  EXPECT_EQ(r.phase(), Phase::V1Line);
  ProxyHeaderReader r2;
  const std::string h = v2(0x21, 0x11, inet4("\xc0\x00\x02\x07", "\xc6\x33\x64\x01", 1, 2));
  EXPECT_EQ(r2.feed(std::string_view(h).substr(0, 20)), 20u);
  EXPECT_EQ(r2.phase(), Phase::V2Body);
  EXPECT_EQ(r2.feed(std::string_view(h).substr(20)), h.size() - 20);
  EXPECT_TRUE(r2.done());
}

TEST(ProxyProtocol, V2ProxyInetWithTlvs) {
  const std::string body = inet4("\xc0\x00\x02\x07", "\xc6\x33\x64\x01", 56324, 443) + tlv(0x01, "h2") +
                           tlv(0x02, "api.example.com") + tlv(0x04, std::string(5, '\0')) +
                           tlv(0x05, "conn-0001") + tlv(0x20, std::string("\x01\0\0\0\0", 5)) + tlv(0xe0, "x");
  const std::string h = v2(0x21, 0x11, body);
  Fed f = feed(h + "rest");
  ASSERT_TRUE(f.reader.done()) << f.reader.reason();
  EXPECT_EQ(f.used, h.size());
  const ProxyHeader& p = f.reader.header();
  EXPECT_EQ(p.version, 2);
  EXPECT_EQ(p.source->to_string(), "192.0.2.7");
  EXPECT_EQ(p.source_port, 56324);
  EXPECT_EQ(p.destination->to_string(), "198.51.100.1");
  EXPECT_EQ(p.destination_port, 443);
  EXPECT_EQ(p.tlvs.alpn, "h2");
  EXPECT_EQ(p.tlvs.authority, "api.example.com");
  EXPECT_EQ(p.tlvs.unique_id, "conn-0001");
}

// RFC 3720 §B.4's check value, and a header whose checksum TLV is right,
// wrong in one bit, or of the wrong length.
TEST(ProxyProtocol, V2Crc32cVerified) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);
  const std::string addr = inet4("\xc0\x00\x02\x07", "\xc6\x33\x64\x01", 56324, 443);
  std::string h = v2(0x21, 0x11, addr + tlv(0x03, std::string(4, '\0')) + tlv(0x05, "id-1"));
  const size_t at = 16 + addr.size() + 3;
  const uint32_t sum = crc32c(h);
  for (int i = 0; i < 4; ++i) h[at + i] = static_cast<char>(sum >> (24 - 8 * i));
  Fed good = feed(h);
  ASSERT_TRUE(good.reader.done()) << good.reader.reason();
  EXPECT_EQ(good.reader.header().tlvs.unique_id, "id-1");
  std::string flipped = h;
  flipped[at + 3] = static_cast<char>(flipped[at + 3] ^ 1);
  EXPECT_EQ(feed(flipped).reader.failure(), Failure::Malformed);
  std::string tampered = h;
  tampered.back() = 'X';  // the unique ID changed after the checksum was made
  EXPECT_EQ(feed(tampered).reader.failure(), Failure::Malformed);
  EXPECT_EQ(feed(v2(0x21, 0x11, addr + tlv(0x03, "abc"))).reader.failure(), Failure::Malformed);
}

TEST(ProxyProtocol, V2Inet6AndOtherFamilies) {
  std::string a6(16, '\0'), b6(16, '\0');
  a6[0] = '\x20', a6[1] = '\x01', a6[2] = '\x0d', a6[3] = '\xb8', a6[15] = '\x07';
  b6[15] = '\x01';
  std::string body = a6 + b6 + std::string("\x01\xbb\x00\x50", 4);
  Fed f = feed(v2(0x21, 0x21, body));
  ASSERT_TRUE(f.reader.done()) << f.reader.reason();
  EXPECT_EQ(f.reader.header().source->to_string(), "2001:db8::7");
  EXPECT_EQ(f.reader.header().source_port, 443);
  // AF_UNSPEC, AF_UNIX and DGRAM: accepted, no address taken.
  for (const std::string& h : {v2(0x21, 0x00, ""), v2(0x21, 0x31, std::string(216, 'u')),
                               v2(0x21, 0x12, inet4("\x01\x02\x03\x04", "\x05\x06\x07\x08", 1, 2))}) {
    Fed g = feed(h);
    ASSERT_TRUE(g.reader.done()) << g.reader.reason();
    EXPECT_FALSE(g.reader.header().source);
    EXPECT_EQ(g.used, h.size());
  }
}

TEST(ProxyProtocol, V2LocalSkipsItsBlock) {
  // A health check: LOCAL, any family, the block (even garbage) skipped.
  const std::string h = v2(0x20, 0x11, std::string("\xff\xff\xff", 3));
  Fed f = feed(h + "\x16");
  ASSERT_TRUE(f.reader.done()) << f.reader.reason();
  EXPECT_TRUE(f.reader.header().local);
  EXPECT_FALSE(f.reader.header().source);
  EXPECT_EQ(f.used, h.size());
  EXPECT_TRUE(feed(v2(0x20, 0x00, "")).reader.done());
}

TEST(ProxyProtocol, V2Malformed) {
  const std::string addr = inet4("\x01\x02\x03\x04", "\x05\x06\x07\x08", 1, 2);
  for (const std::string& h : {
           v2(0x11, 0x11, addr),                              // version 1 in binary
           v2(0x22, 0x11, addr),                              // command 2
           v2(0x21, 0x41, addr),                              // family 4
           v2(0x21, 0x13, addr),                              // protocol 3
           v2(0x21, 0x11, addr.substr(0, 11)),                // shorter than its block
           v2(0x21, 0x21, addr),                              // INET6 with an INET block
           v2(0x21, 0x11, addr + std::string("\x01\x00", 2)),  // a TLV cut short
           v2(0x21, 0x11, addr + tlv(0x01, "h2").substr(0, 4)),  // a TLV longer than the header
           v2(0x21, 0x11, addr + tlv(0x05, std::string(129, 'u'))),  // unique ID over 128
       }) {
    Fed f = feed(h);
    EXPECT_TRUE(f.reader.failed());
    EXPECT_EQ(f.reader.failure(), Failure::Malformed) << f.reader.reason();
  }
  EXPECT_TRUE(feed(v2(0x21, 0x11, addr + tlv(0x05, std::string(128, 'u')))).reader.done());
}

TEST(ProxyProtocol, V2OversizedIsRefusedBeforeItsBodyIsRead) {
  std::string h = kSig + std::string("\x21\x11\x08\x01", 4);  // 2049 octets announced
  Fed f = feed(h + std::string(100, 'x'));
  EXPECT_EQ(f.reader.failure(), Failure::TooLong);
  EXPECT_EQ(f.used, 16u);
  const std::string max = v2(0x21, 0x00, tlv(0x04, std::string(ProxyHeaderReader::kMaxV2Payload - 3, '\0')));
  EXPECT_TRUE(feed(max).reader.done());
}

TEST(ProxyProtocol, NothingIsTakenAfterTheEnd) {
  ProxyHeaderReader r;
  EXPECT_EQ(r.feed("PROXY UNKNOWN\r\nGET"), 15u);
  EXPECT_EQ(r.feed("GET / HTTP/1.1"), 0u);
  EXPECT_TRUE(r.done());
  EXPECT_EQ(r.consumed(), 15u);
  EXPECT_STREQ(failure_name(Failure::TooLong), "too_long");
}

}  // namespace
}  // namespace tlsfront::http
