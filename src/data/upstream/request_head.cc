#include "data/upstream/request_head.h"

#include <algorithm>

namespace tlsfront::upstream {
namespace {
constexpr std::string_view kEarlyDataLine = "Early-Data: 1\r\n";
}  // namespace

UpstreamRequestHead::UpstreamRequestHead(config::UpstreamProtocol protocol, const http::RequestHead& head,
                                         const http::UpstreamRequestOptions& opts, bool early_data)
    : http2_(config::is_http2(protocol)),
      head_request_(head.method == "HEAD"),
      upgrade_(!http2_ && !head.upgrade.empty()),
      chunked_(!http2_ && head.chunked),
      has_body_(head.has_body()) {
  if (http2_) {
    fields_.build(head, opts);
  } else {
    http::append_upstream_request_head(text_, head, opts);
  }
  // RFC 8470 §5.1: an intermediary adds it; a client's own is forwarded as it is.
  if (!early_data || std::any_of(head.headers.begin(), head.headers.end(),
                                 [](const http::Header& h) { return http::iequals(h.name, "early-data"); })) {
    return;
  }
  if (http2_) {
    early_at_ = fields_.fields().size();
    fields_.fields().push_back(http::FieldView{"early-data", "1", false});
  } else {
    early_at_ = text_.size() - 2;  // before the head's last CRLF
    text_.insert(early_at_, kEarlyDataLine);
  }
}

void UpstreamRequestHead::unmark_early_data() {
  if (early_at_ == kNone) return;
  if (http2_) {
    fields_.fields().erase(fields_.fields().begin() + static_cast<std::ptrdiff_t>(early_at_));
  } else {
    text_.erase(early_at_, kEarlyDataLine.size());
  }
  early_at_ = kNone;
}

}  // namespace tlsfront::upstream
