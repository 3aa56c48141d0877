// The real client address a trusted proxy names in a request header
// (nginx's ngx_http_realip_module: set_real_ip_from, real_ip_header,
// real_ip_recursive), for [[listen]] trusted_proxies.
//
// Rule: the header is believed only when `peer` (the connection's client
// address: the TCP peer, or the PROXY protocol header's source) is in
// `trusted`; from anyone else it is never read.
//   X-Forwarded-For (every field of the name, in order, as one list; RFC
//   7239 §7.1's de-facto syntax: comma-separated addresses): walked from the
//   right. `recursive`: each address in `trusted` is another proxy and the
//   walk goes on; the first one that is not trusted is the client (all
//   trusted: the left-most). Not recursive: the right-most address is the
//   client, trusted or not.
//   X-Real-IP: exactly one field holding one address; several fields are
//   ignored (which one a client added is unknowable).
// Entries: an IPv4 or IPv6 literal, optionally "a.b.c.d:port" or
// "[v6]" / "[v6]:port" (the port is dropped), with spaces and tabs around.
// Anything else (empty, "unknown", a name, garbage) stops the walk: the
// client is then the last address the walk reached (a trusted proxy, or
// `peer` itself: nothing changes). So a header can name as client only an
// address that some trusted hop wrote; whatever a client put on the left of
// the list is never reached while a trusted hop appended after it.
// Returns nullopt when the client stays `peer`. No allocation.
// Thread affinity: none (a pure function).
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "message/header_token.h"
#include "message/request.h"
#include "util/ip_address.h"

namespace tlsfront::http {

// `header`: HeaderToken::XForwardedFor or HeaderToken::XRealIp.
std::optional<IpAddress> real_client_address(const std::vector<Header>& headers, HeaderToken header,
                                             const IpAddress& peer, std::span<const Cidr> trusted, bool recursive);

// One header entry as described above ("203.0.113.7", " [2001:db8::1]:443").
std::optional<IpAddress> parse_forwarded_address(std::string_view entry);

}  // namespace tlsfront::http
