#include "control/acme/acme_http.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>

namespace tlsfront::acme {
namespace {

struct Sink {
  HttpResponse* response;
  size_t header_bytes = 0;
  bool too_big = false;
};

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* s = static_cast<Sink*>(user);
  const size_t len = size * n;
  if (s->response->body.size() + len > AcmeHttp::kMaxBody) {
    s->too_big = true;
    return 0;  // aborts the transfer
  }
  s->response->body.append(data, len);
  return len;
}

// Whether `line` is the field `name` (lowercase): HTTP/2 sends field names
// in lowercase, HTTP/1.1 in any case ("Replay-Nonce").
bool iequals_prefix(std::string_view line, std::string_view name) {
  return line.size() > name.size() && line[name.size()] == ':' &&
         std::equal(name.begin(), name.end(), line.begin(),
                    [](char lower, char c) { return std::tolower(static_cast<unsigned char>(c)) == lower; });
}

std::string_view trimmed_value(std::string_view line, size_t name_len) {
  std::string_view v = line.substr(name_len + 1);
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == '\r' || v.back() == '\n' || v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* s = static_cast<Sink*>(user);
  const size_t len = size * n;
  s->header_bytes += len;
  if (s->header_bytes > AcmeHttp::kMaxHeaderBytes) {
    s->too_big = true;
    return 0;
  }
  const std::string_view line(data, len);
  if (line.starts_with("HTTP/")) {  // a new response (after a 100): forget the last one's
    *s->response = HttpResponse{};
    return len;
  }
  for (auto [name, field] : {std::pair{std::string_view("content-type"), &s->response->content_type},
                             std::pair{std::string_view("location"), &s->response->location},
                             std::pair{std::string_view("replay-nonce"), &s->response->replay_nonce},
                             std::pair{std::string_view("retry-after"), &s->response->retry_after}}) {
    if (iequals_prefix(line, name)) field->assign(trimmed_value(line, name.size()));
  }
  return len;
}

}  // namespace

struct AcmeHttp::Curl {
  CURL* easy = curl_easy_init();
  ~Curl() {
    if (easy) curl_easy_cleanup(easy);
  }
};

AcmeHttp::AcmeHttp(std::string ca_file, std::chrono::milliseconds timeout)
    : curl_(std::make_unique<Curl>()), ca_file_(std::move(ca_file)), timeout_(timeout) {}

AcmeHttp::~AcmeHttp() = default;

Result<HttpResponse> AcmeHttp::get(const std::string& url) { return exchange(Method::Get, url, nullptr); }
Result<HttpResponse> AcmeHttp::head(const std::string& url) { return exchange(Method::Head, url, nullptr); }
Result<HttpResponse> AcmeHttp::post_jose(const std::string& url, const std::string& body) {
  return exchange(Method::Post, url, &body);
}

Result<HttpResponse> AcmeHttp::exchange(Method m, const std::string& url, const std::string* body) {
  if (!url.starts_with("https://")) return make_error(Errc::Protocol, "ACME URL is not https: " + url);
  CURL* e = curl_->easy;
  if (e == nullptr) return make_error(Errc::Internal, "curl_easy_init failed");
  curl_easy_reset(e);  // keeps the connection cache
  HttpResponse response;
  Sink sink{&response};
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "User-Agent: tlsfront-acme");
  if (m == Method::Post) headers = curl_slist_append(headers, "Content-Type: application/jose+json");
  curl_easy_setopt(e, CURLOPT_URL, url.c_str());
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https");
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_.count()));
  curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(kMaxBody));
  if (!ca_file_.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, ca_file_.c_str());
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, &sink);
  if (m == Method::Head) curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  if (m == Method::Post) {
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body->data());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
  }
  const CURLcode rc = curl_easy_perform(e);
  curl_slist_free_all(headers);
  if (sink.too_big) {
    return make_error(Errc::Protocol, url + ": response over " + std::to_string(kMaxBody) + " body or " +
                                          std::to_string(kMaxHeaderBytes) + " header octets");
  }
  if (rc != CURLE_OK) return make_error(Errc::Io, url + ": " + curl_easy_strerror(rc));
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

}  // namespace tlsfront::acme
