// Alt-Svc (RFC 7838 §3) on the TCP responses of a listener that also serves
// HTTP/3 ([[listen]] quic = true, alt_svc_max_age > 0): h3=":PORT"; ma=N,
// PORT the connection's local port (the UDP sockets share it), so a client
// moves to HTTP/3 for its next connections, as nginx's `add_header Alt-Svc`
// and Caddy's automatic one do. An upstream's own Alt-Svc field wins (the
// backend knows its deployment better).
// Thread affinity: any (pure).
#pragma once

#include <charconv>
#include <string_view>

#include "data/http/exchange_sink.h"
#include "message/header_token.h"
#include "message/request.h"

namespace tlsfront::http {

struct AltSvcBuffer {
  char text[48];
};

// The field value for a final response `head` on the connection `info`,
// written into `buf`; "" when none is to be added.
inline std::string_view alt_svc_value(const ConnectionInfo& info, const ResponseHead& head, AltSvcBuffer& buf) {
  const config::Listener* l = info.listener;
  if (l == nullptr || !l->quic || l->alt_svc_max_age == 0 || info.server_port[0] == '\0') return {};
  for (const Header& h : head.headers) {
    if (h.name.size() == 7 && iequals(h.name, "alt-svc")) return {};
  }
  char* p = buf.text;
  char* const end = buf.text + sizeof buf.text;
  auto put = [&](std::string_view s) {
    s.copy(p, s.size());
    p += s.size();
  };
  put("h3=\":");
  put(info.server_port);
  put("\"; ma=");
  p = std::to_chars(p, end, l->alt_svc_max_age).ptr;
  return std::string_view(buf.text, static_cast<size_t>(p - buf.text));
}

}  // namespace tlsfront::http
