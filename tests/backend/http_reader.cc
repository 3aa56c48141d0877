// Strict blocking HTTP/1.1 request reader; see http_reader.h.
#include "http_reader.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <charconv>

namespace tlsfront::backend {
namespace {

constexpr std::size_t kRecvChunk = 16 * 1024;

bool is_tchar(unsigned char c) {
  if (c >= '0' && c <= '9') return true;
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return true;
  switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+':
    case '-': case '.': case '^': case '_': case '`': case '|': case '~':
      return true;
    default:
      return false;
  }
}

bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (unsigned char c : s) {
    if (!is_tchar(c)) return false;
  }
  return true;
}

// field-value / chunk-ext characters: VCHAR, obs-text, SP, HTAB.
bool is_field_text(std::string_view s) {
  for (unsigned char c : s) {
    if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
  }
  return true;
}

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Splits a comma-separated list, trimming OWS; empty elements are skipped.
std::vector<std::string_view> split_list(std::string_view s) {
  std::vector<std::string_view> out;
  while (true) {
    auto comma = s.find(',');
    auto item = trim_ows(s.substr(0, comma));
    if (!item.empty()) out.push_back(item);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

bool istarts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && iequals(s.substr(0, prefix.size()), prefix);
}

}  // namespace

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    unsigned char x = static_cast<unsigned char>(a[i]);
    unsigned char y = static_cast<unsigned char>(b[i]);
    if (x >= 'A' && x <= 'Z') x = static_cast<unsigned char>(x | 0x20);
    if (y >= 'A' && y <= 'Z') y = static_cast<unsigned char>(y | 0x20);
    if (x != y) return false;
  }
  return true;
}

const std::string* Request::header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (iequals(n, name)) return &v;
  }
  return nullptr;
}

bool HttpReader::fill() {
  if (pos_ > 0 && (pos_ >= in_.size() || pos_ > kRecvChunk * 4)) {
    in_.erase(0, pos_);
    pos_ = 0;
  }
  char buf[kRecvChunk];
  while (true) {
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n > 0) {
      in_.append(buf, static_cast<std::size_t>(n));
      return true;
    }
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
}

ReadStatus HttpReader::bad(int status, std::string detail) {
  error_status_ = status;
  error_detail_ = std::move(detail);
  return ReadStatus::Bad;
}

ReadStatus HttpReader::too_long(int status) {
  return bad(status, status == 431 ? "request head or trailer section too large" : "line too long");
}

ReadStatus HttpReader::read_line(std::string& line, std::size_t max, int too_long_status) {
  std::size_t scanned = pos_;
  while (true) {
    auto nl = in_.find('\n', scanned);
    if (nl != std::string::npos) {
      if (nl - pos_ > max + 1) return too_long(too_long_status);
      if (nl == pos_ || in_[nl - 1] != '\r') return bad(400, "bare LF");
      std::string_view content(in_.data() + pos_, nl - 1 - pos_);
      if (content.find('\r') != std::string_view::npos) return bad(400, "bare CR");
      line.assign(content);
      keep(pos_, nl + 1 - pos_);
      pos_ = nl + 1;
      return ReadStatus::Ok;
    }
    if (in_.size() - pos_ > max + 1) return too_long(too_long_status);
    scanned = in_.size();
    std::size_t offset = scanned - pos_;
    if (!fill()) return ReadStatus::Partial;
    scanned = pos_ + offset;  // fill() may have compacted the buffer
  }
}

ReadStatus HttpReader::read_exact(std::uint64_t n, std::string* out) {
  while (n > 0) {
    if (pos_ == in_.size() && !fill()) return ReadStatus::Partial;
    std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(n, in_.size() - pos_));
    if (out) out->append(in_, pos_, take);
    keep(pos_, take);
    pos_ += take;
    n -= take;
  }
  return ReadStatus::Ok;
}

ReadStatus HttpReader::read_head(Request& req, int idle_timeout_ms) {
  req = Request{};
  raw_.clear();
  in_body_ = false;
  error_detail_.clear();

  // RFC 9112 §2.2: ignore empty lines before the request line (not recorded).
  while (true) {
    if (pos_ == in_.size()) {
      if (idle_timeout_ms > 0) {
        pollfd p{fd_, POLLIN, 0};
        int r;
        do {
          r = ::poll(&p, 1, idle_timeout_ms);
        } while (r < 0 && errno == EINTR);
        if (r == 0) return ReadStatus::Timeout;
      }
      if (!fill()) return ReadStatus::Eof;
    }
    if (in_.compare(pos_, 2, "\r\n") == 0) {
      pos_ += 2;
      continue;
    }
    if (in_.size() - pos_ == 1 && in_[pos_] == '\r') {
      if (!fill()) return ReadStatus::Partial;
      continue;
    }
    break;
  }

  std::string line;
  std::size_t budget = kMaxHeadBytes;
  auto next_line = [&]() {
    ReadStatus s = read_line(line, budget, 431);
    if (s == ReadStatus::Ok) {
      std::size_t used = line.size() + 2;
      if (used > budget) return bad(431, "request head too large");
      budget -= used;
    }
    return s;
  };

  if (ReadStatus s = next_line(); s != ReadStatus::Ok) return s;

  // request-line = method SP request-target SP HTTP-version
  std::string_view rl = line;
  auto sp1 = rl.find(' ');
  auto sp2 = sp1 == std::string_view::npos ? sp1 : rl.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || rl.find(' ', sp2 + 1) != std::string_view::npos) {
    return bad(400, "malformed request line");
  }
  std::string_view method = rl.substr(0, sp1);
  std::string_view target = rl.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = rl.substr(sp2 + 1);
  if (!is_token(method)) return bad(400, "bad method");
  if (target.empty()) return bad(400, "empty target");
  for (unsigned char c : target) {
    if (c <= 0x20 || c == 0x7f) return bad(400, "bad character in target");
  }
  if (version == "HTTP/1.1") {
    req.version_minor = 1;
  } else if (version == "HTTP/1.0") {
    req.version_minor = 0;
  } else if (version.size() == 8 && version.substr(0, 5) == "HTTP/" && version[6] == '.') {
    return bad(505, "unsupported HTTP version");
  } else {
    return bad(400, "bad HTTP version");
  }
  req.method.assign(method);
  req.target.assign(target);

  if (target.front() == '/') {
    req.path.assign(target.substr(0, target.find('?')));
  } else if (target == "*") {
    req.path = "*";
  } else if (istarts_with(target, "http://") || istarts_with(target, "https://")) {
    auto rest = target.substr(target.find("//") + 2);
    auto slash = rest.find_first_of("/?");
    if (slash == std::string_view::npos || rest[slash] == '?') {
      req.path = "/";
    } else {
      auto p = rest.substr(slash);
      req.path.assign(p.substr(0, p.find('?')));
    }
  } else if (method == "CONNECT") {
    req.path.assign(target);
  } else {
    return bad(400, "bad request target");
  }

  // header fields
  while (true) {
    if (ReadStatus s = next_line(); s != ReadStatus::Ok) return s;
    if (line.empty()) break;
    if (line.front() == ' ' || line.front() == '\t') return bad(400, "obsolete line folding");
    auto colon = line.find(':');
    if (colon == std::string::npos) return bad(400, "header line without colon");
    std::string_view name(line.data(), colon);
    if (!is_token(name)) return bad(400, "bad header name");
    std::string_view value = trim_ows(std::string_view(line).substr(colon + 1));
    if (!is_field_text(value)) return bad(400, "bad character in header value");
    req.headers.emplace_back(std::string(name), std::string(value));
  }
  req.head = raw_;

  // framing and connection semantics
  int hosts = 0;
  int content_lengths = 0;
  bool has_te = false;
  std::string te;
  req.keep_alive = req.version_minor == 1;
  for (const auto& [name, value] : req.headers) {
    if (iequals(name, "host")) {
      ++hosts;
    } else if (iequals(name, "content-length")) {
      ++content_lengths;
      std::uint64_t n = 0;
      const char* b = value.data();
      const char* e = b + value.size();
      if (value.empty() || value.size() > 18) return bad(400, "bad Content-Length");
      for (const char* p = b; p != e; ++p) {
        if (*p < '0' || *p > '9') return bad(400, "bad Content-Length");
      }
      std::from_chars(b, e, n);
      req.content_length = n;
    } else if (iequals(name, "transfer-encoding")) {
      has_te = true;
      if (!te.empty()) te += ',';
      te += value;
    } else if (iequals(name, "connection")) {
      for (auto token : split_list(value)) {
        if (iequals(token, "close")) {
          req.keep_alive = false;
        } else if (iequals(token, "keep-alive") && req.version_minor == 0) {
          req.keep_alive = true;
        }
      }
    } else if (iequals(name, "expect")) {
      if (iequals(value, "100-continue")) req.expect_continue = true;
    }
  }
  // "Connection: close" wins over a "keep-alive" token in an HTTP/1.0 request.
  for (const auto& [name, value] : req.headers) {
    if (!iequals(name, "connection")) continue;
    for (auto token : split_list(value)) {
      if (iequals(token, "close")) req.keep_alive = false;
    }
  }
  if (req.version_minor == 1 && hosts != 1) return bad(400, "HTTP/1.1 request needs exactly one Host");
  if (hosts > 1) return bad(400, "more than one Host");
  if (content_lengths > 1) return bad(400, "more than one Content-Length");
  if (has_te) {
    if (req.version_minor == 0) return bad(400, "Transfer-Encoding in an HTTP/1.0 request");
    if (content_lengths > 0) return bad(400, "both Transfer-Encoding and Content-Length");
    auto codings = split_list(te);
    if (codings.empty() || !iequals(codings.back(), "chunked")) return bad(400, "Transfer-Encoding not ending in chunked");
    if (codings.size() != 1) return bad(501, "unsupported transfer coding");
    req.chunked = true;
  }
  return ReadStatus::Ok;
}

ReadStatus HttpReader::read_chunked(Request& req, bool keep_body) {
  std::string line;
  std::uint64_t total = 0;
  while (true) {
    if (ReadStatus s = read_line(line, kMaxChunkLineBytes, 400); s != ReadStatus::Ok) return s;
    // chunk-size [ BWS ";" chunk-ext ] CRLF
    std::string_view l = line;
    std::size_t i = 0;
    std::uint64_t size = 0;
    while (i < l.size()) {
      char c = l[i];
      int d;
      if (c >= '0' && c <= '9') d = c - '0';
      else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
      else break;
      if (i >= 15) return bad(400, "chunk size too large");
      size = size * 16 + static_cast<std::uint64_t>(d);
      ++i;
    }
    if (i == 0) return bad(400, "missing chunk size");
    std::string_view rest = l.substr(i);
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
    if (!rest.empty()) {
      if (rest.front() != ';') return bad(400, "garbage after chunk size");
      if (!is_field_text(rest)) return bad(400, "bad character in chunk extension");
    }
    if (size == 0) break;
    total += size;
    if (keep_body && total > kMaxBodyBytes) return bad(413, "body too large");
    if (ReadStatus s = read_exact(size, keep_body ? &req.body : nullptr); s != ReadStatus::Ok) return s;
    std::string crlf;
    if (ReadStatus s = read_exact(2, &crlf); s != ReadStatus::Ok) return s;
    if (crlf != "\r\n") return bad(400, "chunk data not followed by CRLF");
  }
  // trailer-section CRLF
  std::size_t budget = kMaxTrailerBytes;
  while (true) {
    if (ReadStatus s = read_line(line, budget, 431); s != ReadStatus::Ok) return s;
    if (line.empty()) return ReadStatus::Ok;
    if (line.size() + 2 > budget) return bad(431, "trailer section too large");
    budget -= line.size() + 2;
    if (line.front() == ' ' || line.front() == '\t') return bad(400, "obsolete line folding in trailer");
    auto colon = line.find(':');
    if (colon == std::string::npos || !is_token(std::string_view(line).substr(0, colon))) {
      return bad(400, "bad trailer field");
    }
    if (!is_field_text(trim_ows(std::string_view(line).substr(colon + 1)))) {
      return bad(400, "bad character in trailer value");
    }
  }
}

ReadStatus HttpReader::read_body(Request& req, bool keep_body) {
  in_body_ = true;
  if (req.chunked) return read_chunked(req, keep_body);
  std::uint64_t n = req.content_length.value_or(0);
  if (keep_body && n > kMaxBodyBytes) return bad(413, "body too large");
  return read_exact(n, keep_body ? &req.body : nullptr);
}

}  // namespace tlsfront::backend
