// Header rewriting at the proxy boundary (RFC 9110 §7.6): hop-by-hop headers
// and those named by Connection are removed in both directions; the request
// gains X-Forwarded-For (appended, as nginx's $proxy_add_x_forwarded_for),
// X-Real-IP and X-Forwarded-Proto; framing headers are re-emitted by us from
// the parsed framing, never copied.
// Thread affinity: any thread (pure functions).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "message/request.h"

namespace tlsfront::http {

struct UpstreamRequestOptions {
  std::string_view client_addr;    // X-Forwarded-For / X-Real-IP value
  std::string_view default_host;   // Host to send when the client sent none (HTTP/1.0)
  bool close = false;              // send "Connection: close" (no keepalive pool)
};

// Appends the HTTP/1.1 request head to send upstream for `head` to `out`.
void append_upstream_request_head(std::string& out, const RequestHead& head, const UpstreamRequestOptions& opts);

// Removes hop-by-hop headers, headers named by Connection, and the framing
// headers Content-Length / Transfer-Encoding from a response head.
void strip_response_headers(std::vector<Header>& headers);

// True when a response to `method` with `status` carries no content
// (RFC 9110 §6.4.1: HEAD, 1xx, 204, 304).
bool response_has_no_body(std::string_view method, int status);

}  // namespace tlsfront::http
