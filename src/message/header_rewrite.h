// Header rewriting at the proxy boundary (RFC 9110 §7.6): hop-by-hop headers
// and those named by Connection are removed in both directions; the request
// gains X-Forwarded-For (appended, as nginx's $proxy_add_x_forwarded_for),
// X-Real-IP and X-Forwarded-Proto; framing headers are re-emitted by us from
// the parsed framing, never copied. The configured request_headers rules
// (HeaderEdit) apply last, to the client's fields and tlsfront's own alike,
// and the request ID goes in its own header.
// Thread affinity: any thread (pure functions).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "message/header_edit.h"
#include "message/request.h"

namespace tlsfront::http {

struct UpstreamRequestOptions {
  // Appended to X-Forwarded-For: the address this hop took the request from
  // (the connection's client: TCP peer or PROXY protocol source).
  std::string_view client_addr;
  // X-Real-IP: the request's client when a trusted proxy's header named
  // one ([[listen]] trusted_proxies); "": client_addr.
  std::string_view real_ip;
  std::string_view scheme = "https";  // X-Forwarded-Proto value: the client's listener's
  std::string_view default_host;   // Host to send when the client sent none (HTTP/1.0)
  bool close = false;              // send "Connection: close" (no keepalive pool)
  bool upstream_tls = false;       // the upstream is spoken to over TLS: an h2 request's :scheme is "https"
  // The request's ID, sent as `request_id_header` ("": not sent; a client's
  // field of that name is never forwarded, since tlsfront's replaces it).
  std::string_view request_id_header;
  std::string_view request_id;
  // The request_headers rules and the values of their variables; null: none.
  const HeaderEdit* edit = nullptr;
  const HeaderVars* vars = nullptr;
};

// Appends the HTTP/1.1 request head to send upstream for `head` to `out`.
void append_upstream_request_head(std::string& out, const RequestHead& head, const UpstreamRequestOptions& opts);

// One field of a head sent over HTTP/2: views, lowercase names.
struct FieldView {
  std::string_view name;
  std::string_view value;
  bool no_index = false;  // as Header::no_index
  // kOwnedName | kOwnedValue: the view is into H2RequestFields::text().
  uint8_t owned = 0;
  static constexpr uint8_t kOwnedName = 1, kOwnedValue = 2;
};

// The same request as HTTP/2 fields for an h2c or h2 upstream (RFC 9113
// §8.3): :method, :scheme ("https" over TLS, else "http": the scheme of the
// connection it goes on, RFC 9113 §8.3.1), :authority (from Host; omitted when there is
// none), :path, then the fields append_upstream_request_head() would send,
// names lowercased (§8.2.1), Host moved into :authority and no
// connection-specific field (§8.2.2) but "te: trailers" when the client's
// TE asked for trailers (gRPC needs it); Content-Length when the length is
// known. An Upgrade request goes as an ordinary one (HTTP/2 has none).
//
// The fields are views, not copies: into `head` (a field whose name is
// lowercase already, as every field of an HTTP/2 client's is, and every
// value the client sent), into the strings of `opts` (the client's address,
// the request ID, the default host) or into text(), which holds only what
// is made here (a lowercased name, a joined X-Forwarded-For, a configured
// field's value, the Content-Length digits). So `head` and what `opts`
// points to must outlive the fields and stay unchanged while they are used;
// a proxied request's head lives in its record for the exchange's life.
// Every name is lowercase, so an HTTP/2 encoder can point at names and
// values as they are (H2Session::submit: nghttp2 copies none of them).
// Building one allocates the field vector, and text() when something is
// made (nothing for an HTTP/2 client's plain request; was a string per name
// and value longer than 15 octets).
// Not copyable or movable: the views into text() would dangle.
class H2RequestFields {
 public:
  H2RequestFields() = default;
  H2RequestFields(const RequestHead& head, const UpstreamRequestOptions& opts) { build(head, opts); }
  H2RequestFields(const H2RequestFields&) = delete;
  H2RequestFields& operator=(const H2RequestFields&) = delete;

  // Empties, then builds the fields of `head`.
  void build(const RequestHead& head, const UpstreamRequestOptions& opts);
  const std::vector<FieldView>& fields() const { return fields_; }
  std::vector<FieldView>& fields() { return fields_; }  // for a static field added or erased later
  const std::string& text() const { return text_; }

 private:
  void add(std::string_view name, std::string_view value, bool no_index, bool lower_name, bool copy_value);
  std::vector<FieldView> fields_;
  std::string text_;
  size_t text_hint_ = 0;  // what text_ reserves at its first piece: the client's names + 64
};

// Removes hop-by-hop headers, headers named by Connection, and the framing
// headers Content-Length / Transfer-Encoding from a response head.
void strip_response_headers(std::vector<Header>& headers);

// True when a response to `method` with `status` carries no content
// (RFC 9110 §6.4.1: HEAD, 1xx, 204, 304).
bool response_has_no_body(std::string_view method, int status);

}  // namespace tlsfront::http
