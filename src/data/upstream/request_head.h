// UpstreamRequestHead: a client's request head as the upstream's protocol
// sends it, built once per exchange and kept for its attempts:
//   HTTP/1.1  the head's text (http::append_upstream_request_head)
//   HTTP/2    its fields (http::H2RequestFields, RFC 9113 §8.3): views into
//             the client's head, which must outlive this object unchanged
//             (a proxied request's record holds it for the exchange's life)
// with what the channel needs to know of the request (HEAD, Upgrade, a
// chunked body) and the Early-Data mark of RFC 8470 §5.1: added by an
// intermediary that forwards a request received in early data, unless the
// client sent its own (forwarded as it is); taken out again when the
// request goes (again) after the handshake completed.
// Not copyable or movable (the fields' views). Thread affinity: none.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "message/header_rewrite.h"
#include "message/request.h"

namespace tlsfront::upstream {

class UpstreamRequestHead {
 public:
  // `protocol`: the upstream group's. An Upgrade request to an HTTP/2
  // upstream goes as an ordinary one (HTTP/2 has no Upgrade, RFC 9113 §8.6).
  // `early_data`: the request goes in early data: "Early-Data: 1" is added
  // (RFC 8470 §5.1) unless the client's head has an Early-Data field of its
  // own (the client's fields are looked at only then).
  UpstreamRequestHead(config::UpstreamProtocol protocol, const http::RequestHead& head,
                      const http::UpstreamRequestOptions& opts, bool early_data = false);
  UpstreamRequestHead(const UpstreamRequestHead&) = delete;
  UpstreamRequestHead& operator=(const UpstreamRequestHead&) = delete;

  bool http2() const { return http2_; }
  // HTTP/1.1: the head's text, CRLF CRLF included.
  const std::string& text() const { return text_; }
  // HTTP/2: the fields, pseudo-fields first.
  const std::vector<http::FieldView>& fields() const { return fields_.fields(); }
  bool head_request() const { return head_request_; }  // its response has no body (RFC 9110 §9.3.2)
  bool upgrade() const { return upgrade_; }            // HTTP/1.1 only: a 101 may open a tunnel
  bool chunked() const { return chunked_; }            // HTTP/1.1 only: the body goes chunked
  bool has_body() const { return has_body_; }

  // Takes out the Early-Data mark added at construction, if any.
  void unmark_early_data();
  bool early_data_marked() const { return early_at_ != kNone; }

 private:
  static constexpr size_t kNone = static_cast<size_t>(-1);

  bool http2_;
  bool head_request_;
  bool upgrade_;
  bool chunked_;
  bool has_body_;
  std::string text_;
  http::H2RequestFields fields_;
  size_t early_at_ = kNone;  // where the mark is: an offset in text_ or an index in fields_
};

}  // namespace tlsfront::upstream
