// LocalAnswer: a response tlsfront makes itself instead of forwarding the
// request: its own errors (400, 404, 413, 502, ...), a route's fixed answer
// (return = {...}, redirect = {...}) and a cleartext listener's redirect to
// HTTPS. build_local_answer() turns one into a head and a body that both
// sessions send as they send an upstream's response (HTTP/1.1 framing or
// HTTP/2 HEADERS + DATA; a HEAD request gets the head only).
//
// Header rules: a route's fixed answer is that route's response, so it gets
// the route's response_headers (as an upstream response would, whatever the
// status); every other answer gets only the always = true rules
// (HeaderPlan, local_answer_edit()). On a cleartext listener neither ever
// carries Strict-Transport-Security (RFC 6797 §7.2).
// Thread affinity: owning worker only.
#pragma once

#include <string>
#include <string_view>

#include "config/config.h"
#include "data/http/request_record.h"
#include "data/http/session_env.h"
#include "message/request.h"

namespace tlsfront::http {

struct LocalAnswer {
  int status = 0;
  // A route's return or redirect (borrowed from the Router, which outlives
  // the request); null for tlsfront's own answers and the HTTPS redirect.
  const config::FixedAnswer* fixed = nullptr;
  std::string location;  // the Location field of a redirect, expanded; "" = none
  uint32_t retry_after = 0;  // a 429's Retry-After in seconds (RFC 9110 §10.2.3); 0 = none
  const char* allow = nullptr;  // a 405's Allow field (RFC 9110 §15.5.6); null = none
  // tlsfront's own text/plain body (an ACME HTTP-01 key authorization,
  // RFC 8555 §8.3); "" = the one-line status text.
  std::string body{};
  // The head itself was refused (its method, or its codec's rules) before
  // admission: an HTTP/1.1 connection closes after the answer.
  bool head_refused = false;
};

// The head (status, Server, Content-Type, Location, the rules' fields,
// Content-Length) and body of `answer` to `record`. The body is the route's
// `return` body, answer.body, or a one-line text ("301 Moved Permanently\n").
void build_local_answer(const SessionEnv& env, const ConnectionInfo& info, const RequestRecord& record,
                        const LocalAnswer& answer, ResponseHead& head, std::string& body);

// `parts` with the values of `vars` (a redirect's configured location).
std::string expand_location(const std::vector<config::HeaderValuePart>& parts, const HeaderVars& vars);

// True when `host` (a routing key: lowercase, port stripped) is something a
// redirect may name: a DNS name of letter-digit-hyphen labels (RFC 1123
// §2.1; 1..63 bytes each, 253 in all, no empty label, no trailing dot), an
// IPv4 address (dotted digits, as such a name) or a bracketed IPv6 literal
// (hex digits, ":" and "."; no zone). Anything else — "%", "_", "~", "@",
// a bare ":" — is refused, so a Location never names a malformed host.
bool redirectable_host(std::string_view host);

// The Location of a cleartext listener's redirect: "https://" + `host` +
// (":" + https_port unless 443) + `request_uri`.
std::string https_location(std::string_view host, uint16_t https_port, std::string_view request_uri);

}  // namespace tlsfront::http
