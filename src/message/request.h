// RequestHead / ResponseHead: an HTTP message head as parsed, owning its bytes
// (copied out of the read buffer, so it outlives the read callback).
// Thread affinity: owning worker only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "message/header_token.h"

namespace tlsfront::http {

// Header vectors reserve this many entries when a head starts: one allocation
// for a typical head instead of one per doubling.
inline constexpr size_t kHeadersReserved = 12;  // 864 bytes: within glibc's tcache (1032)

struct Header {
  std::string name;   // as received
  std::string value;  // as received, surrounding whitespace trimmed by the parser
  HeaderToken token = HeaderToken::Other;
  // A value that changes with every message (a configured field with a
  // variable): HTTP/2 sends it never indexed (RFC 7541 §6.2.3), so it does
  // not churn the HPACK dynamic tables of both peers.
  bool no_index = false;
};

// Room a head's field vector takes at its first field: a typical API
// request or response has 4-10 fields, and growing 1, 2, 4, 8 would
// allocate four times.
inline constexpr size_t kFieldsReserved = 8;

struct RequestHead {
  std::string method;
  std::string target;  // request-target as received
  int version_major = 1;
  int version_minor = 1;
  std::vector<Header> headers;
  std::optional<uint64_t> content_length;
  bool chunked = false;
  bool keep_alive = true;        // llhttp_should_keep_alive at headers-complete
  bool expect_continue = false;  // "Expect: 100-continue"
  std::string host;              // Host value lowercased, port and a trailing dot stripped (routing key)
  // What the upstream request line carries instead of `target` when the
  // route says pass_normalized and normalization changed the path: the
  // normalized path and the query as sent. "" = `target` as received.
  std::string upstream_target;
  // The protocol an Upgrade request asks for (RFC 9110 §7.8: "Upgrade:
  // websocket" with "Connection: upgrade", or HTTP/2's RFC 8441 :protocol),
  // lowercase; "" for an ordinary request. Set by the session, cleared by
  // admit() when the route does not allow it; when set, the request goes up
  // with "Upgrade" and "Connection: upgrade" and a 101 opens a tunnel.
  std::string upgrade;
  // An HTTP/2 extended CONNECT (RFC 8441 §4) mapped to `GET` + `upgrade`
  // (data/http/extended_connect.h): a tunnel or nothing, so admit()
  // answers 400 where an HTTP/1.1 request would drop its Upgrade.
  bool extended_connect = false;

  bool has_body() const { return chunked || (content_length && *content_length > 0); }
  // RFC 9110 §9.2.2.
  bool idempotent() const;
  // First header with `token`, or nullptr.
  const Header* find(HeaderToken token) const;
};

struct ResponseHead {
  int status = 0;
  std::string reason;
  int version_minor = 1;
  std::vector<Header> headers;
  std::optional<uint64_t> content_length;
  bool chunked = false;
  // An HTTP/2 upstream's final head whose HEADERS frame did not end the
  // stream: a trailer section may follow the body, whatever its
  // Content-Length says (RFC 9113 §8.1). False for an HTTP/1.1 upstream's.
  bool trailers_may_follow = false;

  // The Content-Length a response to the client states: its body's length,
  // or for a response without a body (HEAD, 304) the length the body would
  // have had (RFC 9110 §8.6); never for 1xx or 204.
  bool states_length() const { return content_length && status >= 200 && status != 204; }
};

// What a proxy passes on must be well-formed whatever its upstream sent
// (llhttp 8.1 accepts a bare CR in the reason phrase and names like "X A"
// in responses): a status of 100-599, a reason phrase of visible octets,
// spaces and tabs (RFC 9112 §4), every field name a token and every value
// free of CR, LF and NUL (RFC 9110 §5.1, §5.5).
bool valid_response_head(const ResponseHead& head);

// RFC 9110 §7.8, §15.2.2: a 101 names in its Upgrade field the protocol in
// effect after it, which must be the one the request asked for: true when
// the field's first protocol is `protocol` (case-insensitively, as a
// client compares it; RFC 6455 §4.1). False for a 101 without the field.
bool switches_to(const ResponseHead& head, std::string_view protocol);

// RFC 9110 §7.2 / RFC 3986 §3.2.2: a Host (or :authority) value is a
// reg-name (or IPv4 address) or a bracketed IPv6 address (checked with
// inet_pton; no zone ID, nothing after "]" but the port), with an optional
// 1-5 digit port. A reg-name has no empty label but for one trailing dot
// ("a.example." is accepted, then stripped: set_routing_host; "a..example",
// ".a", "a.example.." and "." are not, as nginx refuses them). Anything
// else is 400: the route and the upstream must never read two different
// hosts out of one value.
bool valid_host(std::string_view host);

// Lowercase host without port ("[::1]" keeps its brackets): the routing key.
std::string host_key(std::string_view host);

// For a head whose Host field valid_host() accepted (HTTP/1.1's Host, the
// absolute-form authority put in its place, HTTP/2's :authority copied
// into it): removes one trailing dot from the field's name, in place and
// keeping the port ("A.example.:8443" becomes "A.example:8443"; RFC 1034
// §3.1: a name ending in "." is the absolute form of the same name, and
// nginx strips it as tlsfront's SNI match does), then sets head.host to
// its host_key() ("" without a Host field). So the route's host, the
// HTTP/2 certificate check (421), $host, a cleartext redirect's Location
// and the Host or :authority the upstream receives name the host one way;
// a backend never gets "admin.example." where tlsfront routed another host.
void set_routing_host(RequestHead& head);

}  // namespace tlsfront::http
