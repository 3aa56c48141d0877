#include "data/http/response_compression.h"

#include <array>

#include "message/accept_encoding.h"

namespace tlsfront::http {
namespace {

bool named(const Header& h, std::string_view name) { return iequals(h.name, name); }

// "Type/Sub; charset=x" -> "Type/Sub" (OWS trimmed).
std::string_view media_type(std::string_view content_type) {
  content_type = content_type.substr(0, content_type.find(';'));
  while (!content_type.empty() && (content_type.back() == ' ' || content_type.back() == '\t')) {
    content_type.remove_suffix(1);
  }
  while (!content_type.empty() && (content_type.front() == ' ' || content_type.front() == '\t')) {
    content_type.remove_prefix(1);
  }
  return content_type;
}

// `listed` is lowercase "type/subtype" or "type/*".
bool type_matches(std::string_view listed, std::string_view type) {
  if (listed.size() >= 2 && listed.ends_with("/*")) {
    const std::string_view prefix = listed.substr(0, listed.size() - 1);  // "text/"
    return type.size() > prefix.size() && iequals(type.substr(0, prefix.size()), prefix);
  }
  return iequals(listed, type);
}

bool compressible_type(const config::Compression& c, const ResponseHead& head) {
  for (const auto& h : head.headers) {
    if (!named(h, "content-type")) continue;
    const std::string_view type = media_type(h.value);
    for (const auto& listed : c.types) {
      if (type_matches(listed, type)) return true;
    }
    return false;  // the first Content-Type decides
  }
  return false;  // no type: nothing says it is text
}

}  // namespace

std::optional<ContentCoding> accepted_coding(const config::Compression& c, const RequestHead& request) {
  if (c.encodings.empty()) return std::nullopt;
  std::array<std::string_view, 2> offered{};  // the loader allows "br" and "gzip", once each
  size_t n = 0;
  for (const auto& e : c.encodings) {
    if (n < offered.size()) offered[n++] = e;
  }
  auto chosen = negotiate_encoding(request.headers, std::span<const std::string_view>(offered.data(), n));
  if (!chosen) return std::nullopt;
  return coding_from_name(offered[*chosen]);
}

CompressionVerdict judge_response(const config::Compression& c, std::string_view method, const ResponseHead& head,
                                  bool accepted) {
  if (c.encodings.empty()) return CompressionVerdict::Untouched;
  if (head.status < 200 || head.status > 299 || head.status == 204 || head.status == 205 || head.status == 206) {
    return CompressionVerdict::Untouched;
  }
  if (head.content_length && (*head.content_length == 0 || *head.content_length < c.min_bytes)) {
    return CompressionVerdict::Untouched;
  }
  for (const auto& h : head.headers) {
    if (named(h, "content-encoding") || named(h, "content-range")) return CompressionVerdict::Untouched;
    if (named(h, "cache-control") && list_contains(h.value, "no-transform")) return CompressionVerdict::Untouched;
  }
  if (!compressible_type(c, head)) return CompressionVerdict::Untouched;
  return accepted && method != "HEAD" ? CompressionVerdict::Compress : CompressionVerdict::VaryOnly;
}

void add_vary_accept_encoding(std::vector<Header>& headers) {
  Header* last = nullptr;
  for (auto& h : headers) {
    if (!named(h, "vary")) continue;
    if (list_contains(h.value, "accept-encoding") || list_contains(h.value, "*")) return;
    last = &h;
  }
  if (last == nullptr) {
    headers.push_back(Header{"Vary", "Accept-Encoding", HeaderToken::Other});
  } else if (last->value.empty()) {
    last->value = "Accept-Encoding";
  } else {
    last->value += ", Accept-Encoding";
  }
}

void mark_compressed(ResponseHead& head, ContentCoding coding) {
  head.content_length.reset();
  std::erase_if(head.headers, [](const Header& h) { return named(h, "accept-ranges"); });
  for (auto& h : head.headers) {
    if (named(h, "etag") && !h.value.empty() && h.value.front() == '"') h.value.insert(0, "W/");
  }
  head.headers.push_back(Header{"Content-Encoding", std::string(coding_name(coding)), HeaderToken::Other});
  add_vary_accept_encoding(head.headers);
}

int compression_level(const config::Compression& c, ContentCoding coding) {
  return coding == ContentCoding::Gzip ? c.gzip_level : c.brotli_level;
}

}  // namespace tlsfront::http
