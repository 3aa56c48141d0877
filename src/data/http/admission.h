// Admission: the checks made on a complete request head before anything is
// forwarded, and the exchange that then carries the request. Called by
// RequestStream::admit() (data/http/request_stream.h) for every client
// codec, after the codec's own validation of its framing.
// Thread affinity: owning worker only.
#pragma once

#include <memory>

#include "data/http/exchange.h"
#include "data/http/exchange_sink.h"
#include "data/http/local_answer.h"
#include "data/http/proxy_exchange.h"
#include "data/http/request_record.h"
#include "data/http/session_env.h"
#include "message/request.h"

namespace tlsfront::http {

// 405 for a method tlsfront never forwards, else 0: CONNECT (RFC 9110 §9.3.6)
// would open a tunnel, which is not proxied. Checked before the head's other
// validation, as nginx answers it.
int refused_method(const RequestHead& head);

// The exchange for `record.head`, not yet started, or the answer to give
// locally. First, on a listener with trusted_proxies, the client a trusted
// peer's real_ip_header names goes into record.client_addr
// (message/real_ip.h). Then: 413 when its Content-Length exceeds limits.max_body_bytes; 400
// when its target is refused by normalization (message/request_path.h: ".."
// above "/" or after an empty segment, %2F, %5C, %00, bad percent-encoding
// or UTF-8); 404 when no route matches its host, method and normalized path
// (the asterisk-form "*" of OPTIONS never does); 421 when the names differ
// in client certificate policy and the request's host is not under its
// connection's (tls::CertIndex::same_client_auth); 403 when the route says
// require_client_cert and the connection has no verified client
// certificate; the route's access rules and limits
// (data/http/request_limits.h: 403, 429 with Retry-After, 503, or a wait and
// slots the exchange holds); the matching route's return or redirect. Clears
// head.upgrade unless the route's `upgrade` list names it (and on every
// path that is not a route's: ACME, fixed answers); an HTTP/2 extended
// CONNECT (head.extended_connect) whose protocol the route does not allow
// is answered 400 instead, never forwarded. Sets
// head.upstream_target when the route passes the normalized target on.
// `sink` is borrowed by the exchange. First, a client its listener trusts
// (trust_request_id) has its own valid request ID header adopted as
// record.request_id; the route's header rules go into record.route_headers.
// The exchange borrows `record` (its host and request ID) for its life.
//
// On a cleartext listener (ConnectionInfo::listener, tls = false): a
// normalized path /.well-known/acme-challenge/<token> whose token [acme]
// published (SessionEnv::acme) is answered 200 with its key authorization;
// another path under /.well-known/acme-challenge/ goes to its
// acme_upstream when it has one (with the rules of no route); otherwise,
// with redirect_https, every request is answered 301 (GET, HEAD) or 308
// (any other method: RFC 9110 §15.4.9, the method and body are kept) to
// https://$host[:https_port]$request_uri, or 400 when the host is missing
// or not redirectable_host() — never a redirect to a malformed host.
//
// A route with root or alias (RouteAction::Files) answers GET and HEAD
// (anything else: 405 with Allow) from the file files::resolve() opens: a
// FileExchange (data/http/file_exchange.h), or its 301 to a directory's
// "/", its 403/404/5xx (the cause logged), or try_files' "@name": the
// request is forwarded as that route would forward it; or try_files' last
// path: routed again (nginx's internal redirect, once), the route matching
// it taking the request as if it had come with that path (a route with an
// upstream gets it as head.upstream_target, without the query).
struct Admission {
  std::unique_ptr<Exchange> exchange;
  LocalAnswer answer;  // when exchange is null
};
Admission admit(const SessionEnv& env, ExchangeSink* sink, RequestRecord& record);

// The response_headers rules for tlsfront's own answer to `record`
// (HeaderPlan: always = true ones and HSTS, none of it on a cleartext
// listener); null when there are none.
const HeaderEdit* local_answer_edit(const SessionEnv& env, const ConnectionInfo& info, const RequestRecord& record);

}  // namespace tlsfront::http
