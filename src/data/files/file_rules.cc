#include "data/files/file_rules.h"

#include <charconv>
#include <cstdio>
#include <cstring>

namespace tlsfront::files {
namespace {

constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool eq_nocase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x + 32);
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y + 32);
    if (x != y) return false;
  }
  return true;
}

// Reads exactly `n` digits at `s`.
bool digits(std::string_view& s, size_t n, int& out) {
  if (s.size() < n) return false;
  out = 0;
  for (size_t i = 0; i < n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    out = out * 10 + (s[i] - '0');
  }
  s.remove_prefix(n);
  return true;
}

bool literal(std::string_view& s, std::string_view lit) {
  if (!s.starts_with(lit)) return false;
  s.remove_prefix(lit.size());
  return true;
}

bool month(std::string_view& s, int& out) {
  for (int i = 0; i < 12; ++i) {
    if (s.starts_with(kMonths[i])) {
      out = i;
      s.remove_prefix(3);
      return true;
    }
  }
  return false;
}

bool clock(std::string_view& s, struct tm& tm) {
  return digits(s, 2, tm.tm_hour) && literal(s, ":") && digits(s, 2, tm.tm_min) && literal(s, ":") &&
         digits(s, 2, tm.tm_sec) && tm.tm_hour < 24 && tm.tm_min < 60 && tm.tm_sec <= 60;
}

// 1*DIGIT; one too large for 64 bits is UINT64_MAX (a range position past
// any file: a last-pos clamped to the end, a first-pos unsatisfiable, a
// suffix-length the whole file), not a syntax error.
std::optional<uint64_t> number(std::string_view s) {
  uint64_t v = 0;
  if (s.empty()) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (p != s.data() + s.size()) return std::nullopt;
  if (ec == std::errc::result_out_of_range) return UINT64_MAX;
  if (ec != std::errc()) return std::nullopt;
  return v;
}

// The opaque tag of one list member, and whether it is weak; false when
// the member is not an entity-tag.
bool split_tag(std::string_view member, std::string_view& opaque, bool& weak) {
  weak = member.starts_with("W/");
  if (weak) member.remove_prefix(2);
  if (member.size() < 2 || member.front() != '"' || member.back() != '"') return false;
  opaque = member;
  return true;
}

}  // namespace

std::string http_date(time_t t) {
  struct tm tm {};
  gmtime_r(&t, &tm);
  char buf[40];
  snprintf(buf, sizeof buf, "%s, %02d %s %04d %02d:%02d:%02d GMT", kDays[tm.tm_wday], tm.tm_mday, kMonths[tm.tm_mon],
           tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

std::optional<time_t> parse_http_date(std::string_view s) {
  s = trim(s);
  struct tm tm {};
  int year = 0;
  const size_t comma = s.find(',');
  if (comma == 3) {  // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT"
    s.remove_prefix(4);
    if (!(literal(s, " ") && digits(s, 2, tm.tm_mday) && literal(s, " ") && month(s, tm.tm_mon) && literal(s, " ") &&
          digits(s, 4, year) && literal(s, " ") && clock(s, tm) && s == " GMT")) {
      return std::nullopt;
    }
  } else if (comma != std::string_view::npos) {  // RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT"
    s.remove_prefix(comma + 1);
    int yy = 0;
    if (!(literal(s, " ") && digits(s, 2, tm.tm_mday) && literal(s, "-") && month(s, tm.tm_mon) && literal(s, "-") &&
          digits(s, 2, yy) && literal(s, " ") && clock(s, tm) && s == " GMT")) {
      return std::nullopt;
    }
    year = yy < 70 ? 2000 + yy : 1900 + yy;  // RFC 9110 §5.6.7: within 50 years; close enough
  } else {  // asctime: "Sun Nov  6 08:49:37 1994"
    if (s.size() < 4) return std::nullopt;
    s.remove_prefix(4);
    if (!month(s, tm.tm_mon) || !literal(s, " ")) return std::nullopt;
    if (literal(s, " ")) {
      if (!digits(s, 1, tm.tm_mday)) return std::nullopt;
    } else if (!digits(s, 2, tm.tm_mday)) {
      return std::nullopt;
    }
    if (!(literal(s, " ") && clock(s, tm) && literal(s, " ") && digits(s, 4, year) && s.empty())) return std::nullopt;
  }
  if (tm.tm_mday < 1 || tm.tm_mday > 31 || year < 1970) return std::nullopt;
  tm.tm_year = year - 1900;
  return timegm(&tm);
}

std::string strong_etag(int64_t mtime_ns, uint64_t size, std::string_view coding) {
  char buf[64];
  const uint64_t s = static_cast<uint64_t>(mtime_ns / 1000000000);
  const uint64_t ns = static_cast<uint64_t>(mtime_ns % 1000000000);
  int n = ns == 0 ? snprintf(buf, sizeof buf, "\"%llx-%llx", static_cast<unsigned long long>(s),
                             static_cast<unsigned long long>(size))
                  : snprintf(buf, sizeof buf, "\"%llx.%llx-%llx", static_cast<unsigned long long>(s),
                             static_cast<unsigned long long>(ns), static_cast<unsigned long long>(size));
  std::string tag(buf, static_cast<size_t>(n));
  if (!coding.empty()) {
    tag += '-';
    tag += coding;
  }
  tag += '"';
  return tag;
}

bool etag_list_matches(std::string_view list, std::string_view etag, bool weak) {
  if (trim(list) == "*") return true;
  std::string_view ours, their;
  bool ours_weak = false, their_weak = false;
  if (!split_tag(etag, ours, ours_weak)) return false;
  while (!list.empty()) {
    // Entity-tags hold no comma (etagc excludes it only by being a quoted
    // set of visible octets other than DQUOTE; a comma inside is accepted
    // here as a separator, which at worst fails to match).
    const size_t comma = list.find(',');
    std::string_view member = trim(list.substr(0, comma));
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    if (!split_tag(member, their, their_weak)) continue;
    if (their != ours) continue;
    if (weak || (!their_weak && !ours_weak)) return true;
  }
  return false;
}

std::optional<FileAnswer> single_range(std::string_view range, uint64_t size) {
  range = trim(range);
  const size_t eq = range.find('=');
  if (eq == std::string_view::npos || !eq_nocase(trim(range.substr(0, eq)), "bytes")) return std::nullopt;
  std::string_view spec = trim(range.substr(eq + 1));
  if (spec.find(',') != std::string_view::npos) return std::nullopt;  // more than one: the whole file
  const size_t dash = spec.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  const std::string_view first = spec.substr(0, dash), last = spec.substr(dash + 1);
  FileAnswer a{206};
  if (first.empty()) {  // suffix-range "-N": the last N octets
    auto n = number(last);
    if (!n) return std::nullopt;
    if (*n == 0) return FileAnswer{416};
    // RFC 9110 §14.1.2: satisfiable even for an empty file, where no 206
    // can say so (no Content-Range for zero octets): the whole (empty) file.
    if (size == 0) return std::nullopt;
    a.length = std::min(*n, size);
    a.offset = size - a.length;
    return a;
  }
  auto from = number(first);
  if (!from) return std::nullopt;
  uint64_t to = UINT64_MAX;
  if (!last.empty()) {
    auto t = number(last);
    if (!t || *t < *from) return std::nullopt;  // RFC 9110 §14.1.1: invalid, ignored
    to = *t;
  }
  if (*from >= size) return FileAnswer{416};
  a.offset = *from;
  a.length = std::min(to, size - 1) - *from + 1;
  return a;
}

Preconditions preconditions_of(const http::RequestHead& head) {
  Preconditions p;
  p.method = head.method;
  auto put = [](std::optional<std::string_view>& slot, const std::string& value) {
    if (!slot) slot = value;  // the first field of each (a list is rare; RFC 9110 allows joining)
  };
  for (const http::Header& h : head.headers) {
    const std::string_view n = h.name;
    if (n.size() < 5) continue;
    if (eq_nocase(n, "if-match")) put(p.if_match, h.value);
    else if (eq_nocase(n, "if-none-match")) put(p.if_none_match, h.value);
    else if (eq_nocase(n, "if-modified-since")) put(p.if_modified_since, h.value);
    else if (eq_nocase(n, "if-unmodified-since")) put(p.if_unmodified_since, h.value);
    else if (eq_nocase(n, "range")) put(p.range, h.value);
    else if (eq_nocase(n, "if-range")) put(p.if_range, h.value);
  }
  return p;
}

FileAnswer evaluate(const Preconditions& p, std::string_view etag, time_t mtime, uint64_t size) {
  const bool get_or_head = p.method == "GET" || p.method == "HEAD";
  // §13.2.2 step 1, 2.
  if (p.if_match) {
    if (!etag_list_matches(*p.if_match, etag, false)) return {412};
  } else if (p.if_unmodified_since) {
    if (auto d = parse_http_date(*p.if_unmodified_since); d && mtime > *d) return {412};
  }
  // Step 3, 4.
  if (p.if_none_match) {
    if (etag_list_matches(*p.if_none_match, etag, true)) return {get_or_head ? 304 : 412};
  } else if (get_or_head && p.if_modified_since) {
    if (auto d = parse_http_date(*p.if_modified_since); d && mtime <= *d) return {304};
  }
  // Step 5: Range (§14.2: GET only; HEAD answers as GET would, RFC 9110 §9.3.2).
  FileAnswer whole{200, 0, size};
  if (!get_or_head || !p.range) return whole;
  if (p.if_range) {
    const std::string_view v = trim(*p.if_range);
    if (v.starts_with("\"") || v.starts_with("W/")) {
      if (!etag_list_matches(v, etag, false)) return whole;
    } else {
      // §13.1.5: a date matches only the exact Last-Modified.
      auto d = parse_http_date(v);
      if (!d || *d != mtime) return whole;
    }
  }
  auto r = single_range(*p.range, size);
  return r ? *r : whole;
}

}  // namespace tlsfront::files
