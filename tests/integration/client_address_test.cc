// The real client address (issue 36 §1) against the real binary on loopback:
// PROXY protocol v1 and v2 from a test client and from a real HAProxy in TCP
// mode (send-proxy, send-proxy-v2), what happens to bad, truncated,
// oversized and slow headers and to a ClientHello where a header was
// required (closed, counted, logged; never read as TLS); trusted_proxies
// with X-Forwarded-For (recursive) and X-Real-IP, where no spoofing attempt
// changes remote_addr. Each case checks what the backend was sent
// (X-Forwarded-For, X-Real-IP) and the access log (remote_addr, remote_port,
// peer_addr).
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "harness.h"
#include "haproxy_peer.h"

namespace tlsfront::itest {
namespace {

using Values = std::vector<std::string>;

// The listeners, all with port 0 (one free port per host), on one tlsfront.
constexpr const char* kPp = "127.0.0.3";           // TLS, proxy_protocol from 127/8, trusts 10/8 headers
constexpr const char* kXff = "127.0.0.4";          // TLS, trusts 127/8 and 10/8 (X-Forwarded-For)
constexpr const char* kUntrusting = "127.0.0.6";   // TLS, trusts 10/8 only (the test client is not)
constexpr const char* kRealIp = "127.0.0.7";       // TLS, trusts 127.0.0.1, X-Real-IP
constexpr const char* kPpCleartext = "127.0.0.8";  // cleartext, proxy_protocol
constexpr const char* kPpFromElsewhere = "127.0.0.9";  // TLS, proxy_protocol from 127.0.0.99 only

const std::string kSig("\r\n\r\n\0\r\nQUIT\n", 12);

std::string be16(uint16_t v) { return std::string{static_cast<char>(v >> 8), static_cast<char>(v & 0xff)}; }

std::string v2(uint8_t ver_cmd, uint8_t fam, const std::string& body) {
  return kSig + std::string{static_cast<char>(ver_cmd), static_cast<char>(fam)} +
         be16(static_cast<uint16_t>(body.size())) + body;
}

std::string tlv(uint8_t type, const std::string& value) {
  return std::string(1, static_cast<char>(type)) + be16(static_cast<uint16_t>(value.size())) + value;
}

class ClientAddress : public ProxyTest {
 protected:
  void start() {
    ProxyOptions o;
    o.workers = 1;  // one access log writer: lines in request order
    o.extra = R"([timeouts]
handshake = "1s"

[request_headers]
set = { "X-LB-Connection" = "$proxy_protocol_tlv_unique_id" }

[[listen]]
address = "127.0.0.3:0"
proxy_protocol = true
proxy_protocol_from = ["127.0.0.0/8"]
trusted_proxies = ["10.0.0.0/8"]

[[listen]]
address = "127.0.0.4:0"
trusted_proxies = ["127.0.0.0/8", "10.0.0.0/8"]

[[listen]]
address = "127.0.0.6:0"
trusted_proxies = ["10.0.0.0/8"]

[[listen]]
address = "127.0.0.7:0"
trusted_proxies = ["127.0.0.1"]
real_ip_header = "X-Real-IP"

[[listen]]
address = "127.0.0.8:0"
tls = false
redirect_https = false
proxy_protocol = true

[[listen]]
address = "127.0.0.9:0"
proxy_protocol = true
proxy_protocol_from = ["127.0.0.99"]
)";
    ASSERT_TRUE(start_proxy(o));
    ASSERT_TRUE(wait_until([&] {
      const std::string err = proxy_.process().err();
      for (const char* ip : {kPp, kXff, kUntrusting, kRealIp, kPpCleartext, kPpFromElsewhere}) {
        if (!logged_port(err, std::string("listening on ") + ip + ":", " (")) return false;
      }
      return true;
    }));
  }

  int port_of(const char* ip) {
    return *logged_port(proxy_.process().err(), std::string("listening on ") + ip + ":", " (");
  }

  // One GET /headers over TLS to `ip` (after `preamble`, from `source`);
  // the head the backend received ("" when the request failed).
  std::string request(const char* ip, const std::string& preamble, const Values& headers = {},
                      const std::string& source = "") {
    TlsClient c;
    TlsOptions o;
    o.ip = ip;
    o.preamble = preamble;
    o.source_ip = source;
    if (!c.connect(port_of(ip), o)) {
      ADD_FAILURE() << ip << ": " << c.error();
      return "";
    }
    std::string req = "GET /headers HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n";
    for (const auto& h : headers) req += h + "\r\n";
    c.write(req + "\r\n");
    auto r = c.read_response();
    if (!r) {
      ADD_FAILURE() << ip << ": no response";
      return "";
    }
    EXPECT_EQ(r->status, 200);
    ++logged_;
    return r->body;
  }

  // The access-log line of the last request().
  std::string last_line() {
    auto lines = proxy_.wait_log_lines(logged_);
    EXPECT_EQ(lines.size(), logged_);
    return lines.empty() ? "" : lines.back();
  }

  // Expects the last request's client to be `addr` (and port, when not 0),
  // its TCP peer `peer` ("": the same: no peer_addr field).
  void expect_logged(const std::string& addr, int port, const std::string& peer) {
    const std::string line = last_line();
    EXPECT_EQ(json_string(line, "remote_addr"), addr) << line;
    if (port != 0) {
      EXPECT_EQ(json_raw(line, "remote_port"), std::to_string(port)) << line;
    }
    if (peer.empty()) {
      EXPECT_FALSE(json_raw(line, "peer_addr")) << line;
    } else {
      EXPECT_EQ(json_string(line, "peer_addr"), peer) << line;
    }
  }

  // A raw connection to `ip` that sends `bytes` (then, with `half_close`,
  // its FIN); true when tlsfront closes it without a byte of answer.
  bool closed_silently(const char* ip, const std::string& bytes, bool half_close) {
    const int fd = tcp_connect(port_of(ip), ip);
    if (fd < 0) return false;
    if (!bytes.empty()) EXPECT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), ssize_t(bytes.size()));
    if (half_close) ::shutdown(fd, SHUT_WR);
    std::string got;
    char buf[4096];
    bool closed = false;
    wait_until([&] {
      const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) got.append(buf, static_cast<size_t>(n));
      closed = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
      return closed;
    });
    ::close(fd);
    EXPECT_EQ(got, "") << "tlsfront answered";
    return closed;
  }

  double metric(const std::string& series) {
    auto m = scrape_metrics(proxy_.admin_port());
    auto it = m.find(series);
    return it == m.end() ? -1 : it->second;
  }

  size_t logged_ = 0;
};

TEST_F(ClientAddress, ProxyV1AndV2AddressesBecomeTheClient) {
  ASSERT_NO_FATAL_FAILURE(start());
  std::string head = request(kPp, "PROXY TCP4 203.0.113.7 127.0.0.3 40001 443\r\n");
  EXPECT_EQ(header_values(head, "X-Forwarded-For"), Values{"203.0.113.7"}) << head;
  EXPECT_EQ(header_values(head, "X-Real-IP"), Values{"203.0.113.7"}) << head;
  expect_logged("203.0.113.7", 40001, "127.0.0.1");

  head = request(kPp, "PROXY TCP6 2001:db8::7 ::1 40002 443\r\n");
  EXPECT_EQ(header_values(head, "X-Forwarded-For"), Values{"2001:db8::7"}) << head;
  expect_logged("2001:db8::7", 40002, "127.0.0.1");

  // v2 over AF_INET with TLVs (ALPN, authority, a NOOP, a custom one).
  const std::string inet = std::string("\xc6\x33\x64\x09\x7f\x00\x00\x03", 8) + be16(40003) + be16(443);
  head = request(kPp, v2(0x21, 0x11, inet + tlv(0x01, "h2") + tlv(0x02, "localhost") + tlv(0x04, "") +
                                         tlv(0xe0, "custom")));
  EXPECT_EQ(header_values(head, "X-Real-IP"), Values{"198.51.100.9"}) << head;
  expect_logged("198.51.100.9", 40003, "127.0.0.1");

  std::string inet6(32, '\0');
  inet6[0] = '\x20', inet6[1] = '\x01', inet6[2] = '\x0d', inet6[3] = '\xb8', inet6[15] = '\x09', inet6[31] = '\x01';
  head = request(kPp, v2(0x21, 0x21, inet6 + be16(40004) + be16(443)));
  EXPECT_EQ(header_values(head, "X-Forwarded-For"), Values{"2001:db8::9"}) << head;
  expect_logged("2001:db8::9", 40004, "127.0.0.1");

  // A client's own X-Forwarded-For is appended to, as on any listener.
  head = request(kPp, "PROXY TCP4 203.0.113.7 127.0.0.3 40005 443\r\n", {"X-Forwarded-For: 6.6.6.6"});
  EXPECT_EQ(header_values(head, "X-Forwarded-For"), Values{"6.6.6.6, 203.0.113.7"}) << head;
  EXPECT_EQ(header_values(head, "X-Real-IP"), Values{"203.0.113.7"}) << head;
  expect_logged("203.0.113.7", 40005, "127.0.0.1");

  EXPECT_EQ(metric("tlsfront_proxy_protocol_headers_total{kind=\"v1\"}"), 3);
  EXPECT_EQ(metric("tlsfront_proxy_protocol_headers_total{kind=\"v2\"}"), 2);
}

TEST_F(ClientAddress, ProxyUnknownAndLocalKeepThePeer) {
  ASSERT_NO_FATAL_FAILURE(start());
  std::string head = request(kPp, "PROXY UNKNOWN\r\n");
  EXPECT_EQ(header_values(head, "X-Forwarded-For"), Values{"127.0.0.1"}) << head;
  expect_logged("127.0.0.1", 0, "");
  head = request(kPp, "PROXY UNKNOWN 192.0.2.1 192.0.2.2 1 2\r\n");
  expect_logged("127.0.0.1", 0, "");
  // v2 LOCAL (a load balancer's health check): its address block is skipped.
  head = request(kPp, v2(0x20, 0x11, std::string(12, '\x0a')));
  EXPECT_EQ(header_values(head, "X-Real-IP"), Values{"127.0.0.1"}) << head;
  expect_logged("127.0.0.1", 0, "");
  EXPECT_EQ(metric("tlsfront_proxy_protocol_headers_total{kind=\"v2_local\"}"), 1);
}

TEST_F(ClientAddress, ProxyHeaderOnACleartextListener) {
  ASSERT_NO_FATAL_FAILURE(start());
  // The header and the request in one segment: what follows the header is HTTP.
  const std::string answer = plain_request(port_of(kPpCleartext),
                                           "PROXY TCP4 203.0.113.8 127.0.0.8 40010 80\r\n"
                                           "GET /headers HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
                                           milliseconds(10'000), kPpCleartext);
  EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer;
  EXPECT_EQ(header_values(answer.substr(answer.find("\r\n\r\n") + 4), "X-Forwarded-For"), Values{"203.0.113.8"})
      << answer;
  ++logged_;
  expect_logged("203.0.113.8", 40010, "127.0.0.1");
  // A request where a header was required is closed unanswered.
  EXPECT_TRUE(closed_silently(kPpCleartext, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n", false));
}

TEST_F(ClientAddress, BadHeadersAreClosedCountedAndNeverReadAsTls) {
  ASSERT_NO_FATAL_FAILURE(start());
  // A TLS ClientHello where a header was required: the handshake fails.
  {
    TlsClient c;
    TlsOptions o;
    o.ip = kPp;
    EXPECT_FALSE(c.connect(port_of(kPp), o));
  }
  EXPECT_TRUE(closed_silently(kPp, "PROXY TCP4 203.0.113.7 127.0.0.3 99999 443\r\n", false));  // malformed
  EXPECT_TRUE(closed_silently(kPp, "PROXY TCP4 203.0.113.7 127.0.0.3 4", true));             // truncated
  EXPECT_TRUE(closed_silently(kPp, "PROXY UNKNOWN " + std::string(200, 'x'), false));         // oversized v1
  EXPECT_TRUE(closed_silently(kPp, kSig + std::string("\x21\x11\x10\x00", 4), false));       // oversized v2
  EXPECT_TRUE(closed_silently(kPp, v2(0x31, 0x11, std::string(12, '\0')), false));           // version 3
  EXPECT_TRUE(closed_silently(kPp, v2(0x21, 0x11, std::string(12, '\0') + "\x01\x00\x09h2"), false));  // TLV overrun
  // A slowloris header: a few octets, then nothing until timeouts.handshake.
  EXPECT_TRUE(closed_silently(kPp, "PROXY TCP4 1", false));
  EXPECT_TRUE(closed_silently(kPp, "", true));  // a TCP health check: connect, close

  auto m = scrape_metrics(proxy_.admin_port());
  const std::string refused = "tlsfront_proxy_protocol_refused_total{reason=\"";
  EXPECT_EQ(m[refused + "not_proxy\"}"], 1);
  EXPECT_EQ(m[refused + "malformed\"}"], 3);
  EXPECT_EQ(m[refused + "truncated\"}"], 1);
  EXPECT_EQ(m[refused + "too_long\"}"], 2);
  EXPECT_EQ(m[refused + "timeout\"}"], 1);
  EXPECT_EQ(m[refused + "empty\"}"], 1);
  // Never TLS: no handshake was attempted on any of them.
  EXPECT_EQ(m["tlsfront_tls_handshake_failures_total{reason=\"error\"}"], 0);
  // Logged at the default level (the first of them; then at most one line per 10 s).
  EXPECT_NE(proxy_.process().err().find("on a proxy_protocol listener: a TLS record where a PROXY protocol header "
                                        "was required (not_proxy)"),
            std::string::npos)
      << proxy_.process().err();
  // The listener still serves a good client, whose line is the only one.
  const std::string head = request(kPp, "PROXY TCP4 203.0.113.7 127.0.0.3 40001 443\r\n");
  EXPECT_EQ(header_values(head, "X-Real-IP"), Values{"203.0.113.7"}) << head;
  expect_logged("203.0.113.7", 40001, "127.0.0.1");
}

TEST_F(ClientAddress, PeersOutsideProxyProtocolFromAreRefusedAtAccept) {
  ASSERT_NO_FATAL_FAILURE(start());
  EXPECT_TRUE(closed_silently(kPpFromElsewhere, "PROXY TCP4 203.0.113.7 127.0.0.9 40001 443\r\n", false));
  EXPECT_EQ(metric("tlsfront_proxy_protocol_refused_total{reason=\"source\"}"), 1);
  EXPECT_EQ(metric("tlsfront_proxy_protocol_headers_total{kind=\"v1\"}"), 0);
}

TEST_F(ClientAddress, HaproxySendProxyV1AndV2) {
  ASSERT_NO_FATAL_FAILURE(start());
  Haproxy haproxy(dir_);
  const std::string pp = std::string(kPp) + ":" + std::to_string(port_of(kPp));
  ASSERT_TRUE(haproxy.start({pp + " send-proxy", pp + " send-proxy-v2", pp + " send-proxy-v2 proxy-v2-options crc32c"}));
  for (size_t i = 0; i < 3; ++i) {
    // The client connects to HAProxy from 127.0.0.5; HAProxy to tlsfront from 127.0.0.1.
    TlsClient c;
    TlsOptions o;
    o.source_ip = "127.0.0.5";
    ASSERT_TRUE(c.connect(haproxy.port(i), o)) << i << ": " << c.error();
    c.write("GET /headers HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nX-Forwarded-For: 6.6.6.6\r\n\r\n");
    auto r = c.read_response();
    ASSERT_TRUE(r) << i;
    EXPECT_EQ(header_values(r->body, "X-Forwarded-For"), Values{"6.6.6.6, 127.0.0.5"}) << r->body;
    EXPECT_EQ(header_values(r->body, "X-Real-IP"), Values{"127.0.0.5"}) << r->body;
    ++logged_;
    expect_logged("127.0.0.5", 0, "127.0.0.1");
  }
  EXPECT_GE(metric("tlsfront_proxy_protocol_headers_total{kind=\"v1\"}"), 1);
  EXPECT_GE(metric("tlsfront_proxy_protocol_headers_total{kind=\"v2\"}"), 2);
  haproxy.stop();
}

// HAProxy's IPv6 side (v1 TCP6, v2 AF_INET6 with a checksum and a unique ID
// TLV): the address is the client's, the unique ID reaches the backend as
// $proxy_protocol_tlv_unique_id, and a client's own field of that name never
// does.
TEST_F(ClientAddress, HaproxyIpv6ClientsAndTheUniqueIdTlv) {
  ASSERT_NO_FATAL_FAILURE(start());
  Haproxy haproxy(dir_);
  const std::string pp = std::string(kPp) + ":" + std::to_string(port_of(kPp));
  ASSERT_TRUE(haproxy.start(std::vector<Haproxy::Frontend>{
      {pp + " send-proxy", "::1", {}},
      {pp + " send-proxy-v2 proxy-v2-options crc32c,unique-id", "::1", {"unique-id-format lb-conn-7"}}}));
  for (size_t i = 0; i < 2; ++i) {
    TlsClient c;
    TlsOptions o;
    o.ip = "::1";
    ASSERT_TRUE(c.connect(haproxy.port(i), o)) << i << ": " << c.error();
    c.write("GET /headers HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nX-Forwarded-For: 6.6.6.6\r\n"
            "X-LB-Connection: forged\r\n\r\n");
    auto r = c.read_response();
    ASSERT_TRUE(r) << i;
    EXPECT_EQ(header_values(r->body, "X-Forwarded-For"), Values{"6.6.6.6, ::1"}) << r->body;
    EXPECT_EQ(header_values(r->body, "X-Real-IP"), Values{"::1"}) << r->body;
    EXPECT_EQ(header_values(r->body, "X-LB-Connection"), Values{i == 0 ? "" : "lb-conn-7"}) << r->body;
    ++logged_;
    expect_logged("::1", 0, "127.0.0.1");
  }
  EXPECT_EQ(metric("tlsfront_proxy_protocol_refused_total{reason=\"malformed\"}"), 0);
  haproxy.stop();
}

TEST_F(ClientAddress, TrustedXForwardedForIsWalkedFromTheRight) {
  ASSERT_NO_FATAL_FAILURE(start());
  // The load balancer (127.0.0.1, trusted) appended 203.0.113.9; an inner
  // proxy 10.0.0.2 (trusted) after it; 6.6.6.6 is the client's own claim.
  std::string head = request(kXff, "", {"X-Forwarded-For: 6.6.6.6, 203.0.113.9, 10.0.0.2"});
  EXPECT_EQ(header_values(head, "X-Real-IP"), Values{"203.0.113.9"}) << head;
  EXPECT_EQ(header_values(head, "X-Forwarded-For"), Values{"6.6.6.6, 203.0.113.9, 10.0.0.2, 127.0.0.1"}) << head;
  expect_logged("203.0.113.9", 0, "127.0.0.1");

  // Spoofing attempts: none gets past the right-most untrusted address, and
  // garbage stops the walk at the last address reached.
  struct Case {
    Values headers;
    std::string client;
  };
  for (const Case& k : {
           Case{{"X-Forwarded-For: 6.6.6.6", "X-Forwarded-For: 203.0.113.9"}, "203.0.113.9"},
           Case{{"X-Forwarded-For: 203.0.113.9, garbage"}, "127.0.0.1"},
           Case{{"X-Forwarded-For: 6.6.6.6, unknown, 10.0.0.2"}, "10.0.0.2"},
           Case{{"X-Forwarded-For: 6.6.6.6, 203.0.113.9:1234, [::ffff:10.0.0.2]:443"}, "203.0.113.9"},
           Case{{"X-Real-IP: 6.6.6.6"}, "127.0.0.1"},  // not the header this listener reads
           Case{{"X-Forwarded-For: 10.0.0.3, 10.0.0.2"}, "10.0.0.3"},  // all trusted: the left-most
       }) {
    head = request(kXff, "", k.headers);
    EXPECT_EQ(header_values(head, "X-Real-IP"), Values{k.client}) << head;
    expect_logged(k.client, 0, k.client == "127.0.0.1" ? "" : "127.0.0.1");
  }
}

TEST_F(ClientAddress, HeadersFromUntrustedPeersAreNeverBelieved) {
  ASSERT_NO_FATAL_FAILURE(start());
  for (const char* spoof : {"X-Forwarded-For: 203.0.113.9", "X-Forwarded-For: 10.0.0.2", "X-Real-IP: 203.0.113.9"}) {
    const std::string head = request(kUntrusting, "", {spoof});
    EXPECT_EQ(header_values(head, "X-Real-IP"), Values{"127.0.0.1"}) << head;
    expect_logged("127.0.0.1", 0, "");
  }
  // Behind PROXY: the header's source is the peer whose headers are judged.
  std::string head = request(kPp, "PROXY TCP4 203.0.113.7 127.0.0.3 40001 443\r\n", {"X-Forwarded-For: 6.6.6.6"});
  EXPECT_EQ(header_values(head, "X-Real-IP"), Values{"203.0.113.7"}) << head;
  expect_logged("203.0.113.7", 40001, "127.0.0.1");
  head = request(kPp, "PROXY TCP4 10.1.2.3 127.0.0.3 40002 443\r\n", {"X-Forwarded-For: 6.6.6.6, 198.51.100.9"});
  EXPECT_EQ(header_values(head, "X-Real-IP"), Values{"198.51.100.9"}) << head;
  EXPECT_EQ(header_values(head, "X-Forwarded-For"), Values{"6.6.6.6, 198.51.100.9, 10.1.2.3"}) << head;
  expect_logged("198.51.100.9", 40002, "127.0.0.1");
}

TEST_F(ClientAddress, XRealIpFromATrustedPeer) {
  ASSERT_NO_FATAL_FAILURE(start());
  std::string head = request(kRealIp, "", {"X-Real-IP: 203.0.113.9"});
  EXPECT_EQ(header_values(head, "X-Real-IP"), Values{"203.0.113.9"}) << head;
  expect_logged("203.0.113.9", 0, "127.0.0.1");
  // Two of them: which one the proxy wrote is unknowable; neither is believed.
  head = request(kRealIp, "", {"X-Real-IP: 203.0.113.9", "X-Real-IP: 6.6.6.6"});
  EXPECT_EQ(header_values(head, "X-Real-IP"), Values{"127.0.0.1"}) << head;
  expect_logged("127.0.0.1", 0, "");
  // From another source address the same header is not believed.
  head = request(kRealIp, "", {"X-Real-IP: 203.0.113.9"}, "127.0.0.5");
  EXPECT_EQ(header_values(head, "X-Real-IP"), Values{"127.0.0.5"}) << head;
  expect_logged("127.0.0.5", 0, "");
}

}  // namespace
}  // namespace tlsfront::itest
