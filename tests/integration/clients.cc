// Integration harness, the client half (see harness.h): libcurl requests
// and HTTP response/chunk parsing (the raw OpenSSL client: tls_client.cc;
// the fake upstream: fake_upstream.cc).
#include "harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace tlsfront::itest {
namespace {


bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}


// Parses a chunked body at the front of `s` into `out`. Returns bytes
// consumed, 0 when incomplete, npos when malformed.
size_t parse_chunked(std::string_view s, std::string& out) {
  size_t pos = 0;
  out.clear();
  while (true) {
    size_t eol = s.find("\r\n", pos);
    if (eol == std::string_view::npos) return 0;
    std::string_view line = s.substr(pos, eol - pos);
    if (auto semi = line.find(';'); semi != std::string_view::npos) line = line.substr(0, semi);
    line = trim(line);
    if (line.empty() || line.size() > 15) return std::string_view::npos;
    uint64_t size = 0;
    for (char c : line) {
      int v = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
              : (c >= 'a' && c <= 'f')                   ? c - 'a' + 10
              : (c >= 'A' && c <= 'F')                   ? c - 'A' + 10
                                                         : -1;
      if (v < 0) return std::string_view::npos;
      size = size * 16 + static_cast<uint64_t>(v);
    }
    pos = eol + 2;
    if (size == 0) {
      // Trailer section: lines until an empty one.
      while (true) {
        size_t e = s.find("\r\n", pos);
        if (e == std::string_view::npos) return 0;
        bool empty = e == pos;
        pos = e + 2;
        if (empty) return pos;
      }
    }
    if (s.size() < pos + size + 2) return 0;
    out.append(s.substr(pos, size));
    if (s.substr(pos + size, 2) != "\r\n") return std::string_view::npos;
    pos += size + 2;
  }
}

}  // namespace

// ---- libcurl ------------------------------------------------------------------------

namespace {

size_t write_cb(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

struct ChunkReader {
  const std::vector<std::string>* chunks;
  size_t index = 0;
  size_t offset = 0;
};

// One chunk (or part of it) per call, so libcurl emits one HTTP chunk per piece.
size_t read_cb(char* buf, size_t size, size_t n, void* user) {
  auto* r = static_cast<ChunkReader*>(user);
  if (r->index >= r->chunks->size()) return 0;
  const std::string& c = (*r->chunks)[r->index];
  size_t len = std::min(size * n, c.size() - r->offset);
  std::memcpy(buf, c.data() + r->offset, len);
  r->offset += len;
  if (r->offset == c.size()) {
    ++r->index;
    r->offset = 0;
  }
  return len;
}

}  // namespace

std::optional<std::string> HttpResponse::header(std::string_view name) const {
  // The final response starts at the last status line.
  size_t start = 0;
  for (size_t p = 0; (p = headers.find("HTTP/", p)) != std::string::npos; p += 5) {
    if (p == 0 || headers[p - 1] == '\n') start = p;
  }
  auto values = header_values(std::string_view(headers).substr(start), name);
  if (values.empty()) return std::nullopt;
  return values.front();
}

CurlClient::CurlClient(int port) : port_(port), curl_(curl_easy_init()), resolve_(nullptr) {
  std::string entry = "localhost:" + std::to_string(port) + ":127.0.0.1";
  resolve_ = curl_slist_append(nullptr, entry.c_str());
}

CurlClient::~CurlClient() {
  curl_easy_cleanup(static_cast<CURL*>(curl_));
  curl_slist_free_all(static_cast<curl_slist*>(resolve_));
}

namespace {

// Everything but the body source; `resp` and `errbuf` must outlive the transfer.
void setup_easy(CURL* c, const HttpRequest& req, const std::string& url, curl_slist* resolve, HttpResponse& resp,
                char* errbuf) {
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);  // the target exactly as the test wrote it (no dot removal)
  curl_easy_setopt(c, CURLOPT_RESOLVE, resolve);
  curl_easy_setopt(c, CURLOPT_CAINFO, pki("root.pem").c_str());
  const long version = !req.http2      ? CURL_HTTP_VERSION_1_1
                       : req.cleartext ? CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE
                                       : CURL_HTTP_VERSION_2TLS;
  curl_easy_setopt(c, CURLOPT_HTTP_VERSION, version);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(req.timeout.count()));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write_cb);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &resp.body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, write_cb);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &resp.headers);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "tlsfront-itest/1");
  curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, req.accept_encoding ? req.accept_encoding->c_str() : nullptr);
}

}  // namespace

std::vector<HttpResponse> http2_parallel(int port, const std::vector<HttpRequest>& reqs) {
  std::vector<HttpResponse> out(reqs.size());
  std::vector<std::array<char, CURL_ERROR_SIZE>> errbufs(reqs.size());
  std::string entry = "localhost:" + std::to_string(port) + ":127.0.0.1";
  curl_slist* resolve = curl_slist_append(nullptr, entry.c_str());
  CURLM* multi = curl_multi_init();
  curl_multi_setopt(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
  curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, 1L);
  std::vector<CURL*> easies;
  std::vector<std::string> urls;
  for (const auto& r : reqs) urls.push_back("https://localhost:" + std::to_string(port) + r.path);
  for (size_t i = 0; i < reqs.size(); ++i) {
    CURL* c = curl_easy_init();
    errbufs[i][0] = 0;
    setup_easy(c, reqs[i], urls[i], resolve, out[i], errbufs[i].data());
    curl_easy_setopt(c, CURLOPT_PIPEWAIT, 1L);
    if (reqs[i].body) {
      curl_easy_setopt(c, CURLOPT_POSTFIELDS, reqs[i].body->data());
      curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(reqs[i].body->size()));
    } else if (reqs[i].method != "GET") {
      curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, reqs[i].method.c_str());
    }
    curl_multi_add_handle(multi, c);
    easies.push_back(c);
  }
  auto deadline = Clock::now() + milliseconds(60'000);
  int running = 1;
  while (running > 0 && Clock::now() < deadline) {
    curl_multi_perform(multi, &running);
    if (running > 0) curl_multi_poll(multi, nullptr, 0, 100, nullptr);
  }
  for (size_t i = 0; i < easies.size(); ++i) {
    out[i].curl_code = CURLE_OK;
    curl_easy_getinfo(easies[i], CURLINFO_RESPONSE_CODE, &out[i].status);
    curl_easy_getinfo(easies[i], CURLINFO_HTTP_VERSION, &out[i].http_version);
    out[i].error = errbufs[i].data();
  }
  int left = 0;
  while (CURLMsg* m = curl_multi_info_read(multi, &left)) {
    if (m->msg != CURLMSG_DONE) continue;
    for (size_t i = 0; i < easies.size(); ++i) {
      if (easies[i] == m->easy_handle) out[i].curl_code = m->data.result;
    }
  }
  if (running > 0) {
    for (auto& r : out) {
      if (r.status == 0) r.curl_code = CURLE_OPERATION_TIMEDOUT;
    }
  }
  for (CURL* c : easies) {
    curl_multi_remove_handle(multi, c);
    curl_easy_cleanup(c);
  }
  curl_multi_cleanup(multi);
  curl_slist_free_all(resolve);
  return out;
}

HttpResponse CurlClient::perform(const HttpRequest& req) {
  CURL* c = static_cast<CURL*>(curl_);
  curl_easy_reset(c);  // keeps the live connection
  HttpResponse resp;
  std::string url = (req.cleartext ? "http://localhost:" : "https://localhost:") + std::to_string(port_) + req.path;
  char errbuf[CURL_ERROR_SIZE] = "";
  curl_slist* cleartext_resolve = nullptr;
  if (req.cleartext) {
    const std::string entry = "localhost:" + std::to_string(port_) + ":" + kCleartextIp;
    cleartext_resolve = curl_slist_append(nullptr, entry.c_str());
  }
  setup_easy(c, req, url, cleartext_resolve ? cleartext_resolve : static_cast<curl_slist*>(resolve_), resp, errbuf);
  if (req.ssl_version) curl_easy_setopt(c, CURLOPT_SSLVERSION, req.ssl_version);
  if (req.expect_100_timeout_ms) curl_easy_setopt(c, CURLOPT_EXPECT_100_TIMEOUT_MS, req.expect_100_timeout_ms);

  curl_slist* headers = nullptr;
  for (const auto& h : req.headers) headers = curl_slist_append(headers, h.c_str());
  ChunkReader reader{&req.chunks};
  if (req.no_body || req.method == "HEAD") {
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  } else if (req.body) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, req.body->data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body->size()));
    if (req.method != "POST") curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req.method.c_str());
  } else if (!req.chunks.empty()) {
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, read_cb);
    curl_easy_setopt(c, CURLOPT_READDATA, &reader);
    headers = curl_slist_append(headers, "Transfer-Encoding: chunked");
    if (req.method != "POST") curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req.method.c_str());
  } else if (req.method != "GET") {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req.method.c_str());
  }
  if (headers) curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);

  CURLcode rc = curl_easy_perform(c);
  resp.curl_code = rc;
  resp.error = errbuf[0] ? errbuf : curl_easy_strerror(rc);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp.status);
  curl_easy_getinfo(c, CURLINFO_HTTP_VERSION, &resp.http_version);
  curl_slist_free_all(headers);
  curl_slist_free_all(cleartext_resolve);
  return resp;
}

HttpResponse http(int port, const HttpRequest& req) {
  CurlClient client(port);
  return client.perform(req);
}

// ---- HTTP parsing -----------------------------------------------------------------

std::vector<std::string> header_values(std::string_view head, std::string_view name) {
  std::vector<std::string> out;
  size_t pos = head.find("\r\n");
  if (pos == std::string_view::npos) return out;
  pos += 2;
  while (pos < head.size()) {
    size_t eol = head.find("\r\n", pos);
    if (eol == std::string_view::npos) eol = head.size();
    std::string_view line = head.substr(pos, eol - pos);
    if (line.empty()) break;
    size_t colon = line.find(':');
    if (colon != std::string_view::npos && iequals(line.substr(0, colon), name)) {
      out.emplace_back(trim(line.substr(colon + 1)));
    }
    pos = eol + 2;
  }
  return out;
}

std::optional<std::string> ParsedResponse::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (iequals(k, name)) return v;
  }
  return std::nullopt;
}

size_t parse_response(std::string_view buf, bool eof, bool head_request, ParsedResponse& out) {
  size_t pos = 0;
  while (true) {
    size_t end = buf.find("\r\n\r\n", pos);
    if (end == std::string_view::npos) return 0;
    std::string_view head = buf.substr(pos, end + 4 - pos);
    if (head.size() < 12 || head.substr(0, 5) != "HTTP/") return 0;
    int status = std::atoi(std::string(head.substr(9, 3)).c_str());
    size_t body_start = end + 4;
    if (status >= 100 && status < 200 && status != 101) {
      pos = body_start;
      continue;
    }
    out = ParsedResponse{};
    out.status = status;
    out.head = std::string(head);
    size_t lp = head.find("\r\n") + 2;
    while (lp < head.size()) {
      size_t eol = head.find("\r\n", lp);
      std::string_view line = head.substr(lp, eol - lp);
      if (line.empty()) break;
      size_t colon = line.find(':');
      if (colon != std::string_view::npos) {
        out.headers.emplace_back(std::string(line.substr(0, colon)), std::string(trim(line.substr(colon + 1))));
      }
      lp = eol + 2;
    }
    std::string_view rest = buf.substr(body_start);
    if (head_request || status == 204 || status == 304) return body_start;
    auto te = out.header("Transfer-Encoding");
    if (te && te->find("chunked") != std::string::npos) {
      size_t used = parse_chunked(rest, out.body);
      if (used == 0 || used == std::string_view::npos) return 0;
      return body_start + used;
    }
    if (auto cl = out.header("Content-Length")) {
      size_t n = std::strtoull(cl->c_str(), nullptr, 10);
      if (rest.size() < n) return 0;
      out.body = std::string(rest.substr(0, n));
      return body_start + n;
    }
    if (!eof) return 0;
    out.body = std::string(rest);
    return buf.size();
  }
}

std::optional<std::string> dechunk(std::string_view chunked) {
  std::string out;
  size_t used = parse_chunked(chunked, out);
  if (used == 0 || used == std::string_view::npos) return std::nullopt;
  return out;
}

std::pair<std::string, std::string> split_head(std::string_view raw) {
  size_t end = raw.find("\r\n\r\n");
  if (end == std::string_view::npos) return {std::string(raw), ""};
  return {std::string(raw.substr(0, end + 4)), std::string(raw.substr(end + 4))};
}

bool matches_pattern(std::string_view body) {
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != static_cast<char>('a' + i % 26)) return false;
  }
  return true;
}

std::string binary_body(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 7 + i / 256) & 0xff);
  return s;
}

std::string recorded_body(const std::string& raw) {
  auto [head, body] = split_head(raw);
  auto te = header_values(head, "Transfer-Encoding");
  if (!te.empty() && te.back() == "chunked") {
    auto d = dechunk(body);
    EXPECT_TRUE(d.has_value()) << "recorded chunked body is malformed";
    return d.value_or("");
  }
  return body;
}

}  // namespace tlsfront::itest
