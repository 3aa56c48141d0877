// Listener: a [[listen]] table (one address and how it is served: TLS or
// cleartext, ALPN, QUIC, PROXY protocol, real client addresses, access
// rules) and the AccessRule of its `access` list (also a route's). Part of
// Config (config.h); parsed by the loader.
// Thread affinity: any thread (immutable after load).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/values.h"
#include "util/ip_address.h"

namespace tlsfront::config {

// One rule of an `access` list ([[listen]] or [[route]]): "allow <CIDR>",
// "deny <CIDR>", "allow all" or "deny all" (nginx's allow/deny). Rules are
// tried in order and the first whose block contains the client address
// decides; an address no rule matches is allowed (nginx's rule). "all"
// matches every address of both families.
struct AccessRule {
  bool allow = false;
  bool all = false;
  Cidr block;  // unused when `all`
  bool operator==(const AccessRule&) const = default;
};

// Whether `rules` let `client` in: the first rule whose block contains it
// decides; none does: allowed.
bool access_allows(const std::vector<AccessRule>& rules, const IpAddress& client);

// [[listen]] real_ip_header: which request field names the client when the
// peer is one of trusted_proxies (message/real_ip.h).
enum class RealIpHeader : uint8_t { XForwardedFor, XRealIp };

// [[listen]]
struct Listener {
  Endpoint address;     // address = "0.0.0.0:8443" (required)
  // name = "public": the listener's label in metrics (letters, digits and
  // "-_.:/", at most 64); "" (the default): the address as written.
  std::string name;
  std::string label() const { return name.empty() ? address.to_string() : name; }
  int backlog = 511;    // backlog, as nginx
  // tcp_fastopen: the TCP Fast Open queue length (RFC 7413 §4.2, Linux's
  // TCP_FASTOPEN option), 0 = off. kTcpFastOpenAuto (key absent or "auto"):
  // kTcpFastOpenDefaultQueue when net.ipv4.tcp_fastopen has the server bit
  // (0x2), else off with one start-up warning (control/listener.cc).
  static constexpr int kTcpFastOpenAuto = -1;
  static constexpr int kTcpFastOpenDefaultQueue = 256;
  int tcp_fastopen = kTcpFastOpenAuto;
  // ALPN protocols offered, in server preference order (RFC 7301 §3.2):
  // "h2" and/or "http/1.1". A client sending no ALPN gets HTTP/1.1.
  std::vector<std::string> alpn{"h2", "http/1.1"};
  // trust_request_id = true: a client's own request ID header (Config::
  // request_id_header), when valid, becomes the request's $request_id.
  bool trust_request_id = false;
  // quic = true: HTTP/3 over QUIC (RFC 9114, RFC 9000) on UDP at the same
  // address and port, with the same certificates and routes (src/data/quic).
  // TLS listeners only, not with proxy_protocol. With port 0 the UDP
  // sockets take the port the TCP ones got.
  bool quic = false;
  // quic_retry = true: every new QUIC client proves its address first with
  // a Retry (RFC 9000 §8.1.2) unless its Initial carries a token tlsfront
  // issued (NEW_TOKEN, §8.1.3); without it, Retry only under load (more
  // than QuicEndpoint::kRetryAbove handshakes in progress on a worker).
  // nginx: quic_retry on. Only with quic = true.
  bool quic_retry = false;
  // alt_svc_max_age = N: the TCP responses of a listener with quic = true
  // carry Alt-Svc: h3=":PORT"; ma=N (RFC 7838 §3, PORT the connection's
  // local port) so clients move to HTTP/3; 0: no Alt-Svc.
  uint32_t alt_svc_max_age = 86400;
  // tls = false: a cleartext HTTP/1.1 listener (port 80; no h2c). The keys
  // below apply to it only (docs/configuration.md "[[listen]]").
  bool tls = true;
  // Every request answered 301 (GET, HEAD) or 308 with Location
  // https://$host[:https_port]$request_uri; false: routed like a TLS
  // listener's requests (a private network).
  bool redirect_https = true;
  uint16_t https_port = 443;  // the port the redirect names (left out when 443)
  // Requests under /.well-known/acme-challenge/ (normalized path) go to this
  // [[upstream]] (must exist), even when redirecting; "" = none.
  std::string acme_upstream;
  // The real client address (docs/configuration.md, "The real client address").
  // proxy_protocol = true: every connection starts with a PROXY protocol
  // header (v1 or v2, message/proxy_protocol.h), read before TLS within
  // timeouts.handshake; its source address is the client's. A connection
  // without a valid one is closed.
  bool proxy_protocol = false;
  // proxy_protocol_from = ["10.0.0.0/8", ...]: the only peers that may
  // connect (others are closed at accept); empty: any peer (with
  // proxy_protocol only).
  std::vector<Cidr> proxy_protocol_from;
  // trusted_proxies = [CIDRs]: the client addresses whose real_ip_header is
  // believed (nginx's set_real_ip_from); empty: no header is.
  std::vector<Cidr> trusted_proxies;
  RealIpHeader real_ip_header = RealIpHeader::XForwardedFor;  // "X-Forwarded-For" | "X-Real-IP"
  // X-Forwarded-For walked from the right past trusted addresses (nginx's
  // real_ip_recursive on); false: its right-most address is the client.
  bool real_ip_recursive = true;
  // access = ["deny 192.0.2.1", "allow 192.0.2.0/24", "deny all"]: checked
  // against the client address at accept (after the PROXY protocol header
  // on a proxy_protocol listener), before any TLS byte is read; a refused
  // connection is closed. Empty: everyone.
  std::vector<AccessRule> access;
  bool operator==(const Listener&) const = default;
};

}  // namespace tlsfront::config
