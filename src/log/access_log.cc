// The JSON access-log encoder and the per-worker batch.
#include "log/access_log.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <iterator>
#include <utility>

#include <fmt/format.h>

#include "log/log.h"
#include "log/log_writer.h"

namespace tlsfront::log {
namespace {

using namespace std::string_view_literals;

constexpr char kHex[] = "0123456789abcdef";
constexpr std::string_view kReplacement = "\\ufffd";

// Per byte: 0 = copy as is, 1 = needs a JSON escape, 2 = starts (or breaks)
// a multibyte UTF-8 sequence.
constexpr std::array<uint8_t, 256> kByteClass = [] {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 0x20; ++c) t[c] = 1;
  t['"'] = 1;
  t['\\'] = 1;
  for (int c = 0x80; c < 0x100; ++c) t[c] = 2;
  return t;
}();

// True when none of the 8 bytes in `w` needs attention (control byte, '"',
// '\\' or non-ASCII). May report false for a safe word (the caller then
// looks at the bytes one by one); never reports true for an unsafe one.
bool word_is_plain_ascii(uint64_t w) {
  constexpr uint64_t kOnes = 0x0101010101010101ull;
  constexpr uint64_t kHigh = 0x8080808080808080ull;
  const auto has_zero = [](uint64_t v) { return (v - kOnes) & ~v & kHigh; };
  const uint64_t below_space = (w - kOnes * 0x20) & ~w & kHigh;
  return ((w & kHigh) | below_space | has_zero(w ^ (kOnes * '"')) | has_zero(w ^ (kOnes * '\\'))) == 0;
}

// Length (2-4) of the well-formed UTF-8 sequence at `p` (p < end, *p >= 0x80),
// or 0 if the bytes there are not one (Unicode Table 3-7: rejects stray
// continuation bytes, overlongs, surrogates, code points above U+10FFFF and
// truncated sequences).
size_t utf8_sequence_length(const unsigned char* p, const unsigned char* end) {
  const unsigned char lead = p[0];
  size_t len;
  unsigned char lo = 0x80, hi = 0xbf;  // bounds for the second byte
  if (lead >= 0xc2 && lead <= 0xdf) {
    len = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    len = 3;
    if (lead == 0xe0) lo = 0xa0;       // overlong
    else if (lead == 0xed) hi = 0x9f;  // surrogates
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    len = 4;
    if (lead == 0xf0) lo = 0x90;       // overlong
    else if (lead == 0xf4) hi = 0x8f;  // above U+10FFFF
  } else {
    return 0;  // continuation byte, C0/C1 overlong lead, F5..FF
  }
  if (static_cast<size_t>(end - p) < len) return 0;
  if (p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i < len; ++i) {
    if (p[i] < 0x80 || p[i] > 0xbf) return 0;
  }
  return len;
}

void append_escape(std::string& out, unsigned char c) {
  switch (c) {
    case '"': out.append("\\\""sv); return;
    case '\\': out.append("\\\\"sv); return;
    case '\n': out.append("\\n"sv); return;
    case '\r': out.append("\\r"sv); return;
    case '\t': out.append("\\t"sv); return;
    case '\b': out.append("\\b"sv); return;
    case '\f': out.append("\\f"sv); return;
    default: {
      const char esc[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xf]};
      out.append(esc, sizeof esc);
    }
  }
}

template <typename Int>
void append_int(std::string& out, Int value) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, value);
  out.append(buf, r.ptr);
}

// Milliseconds with 3 decimals; null for NaN/infinity (not valid JSON).
// Fixed point (integer microseconds) rather than a float formatter: the
// encoder runs once per request and fmt's "{:.3f}" was a third of its time.
void append_ms(std::string& out, double ms) {
  if (!std::isfinite(ms)) {
    out.append("null"sv);
    return;
  }
  if (!(std::fabs(ms) < 1e12)) {  // beyond 31 years: a broken clock; keep it exact
    fmt::format_to(std::back_inserter(out), "{:.3f}", ms);
    return;
  }
  auto us = static_cast<int64_t>(std::llround(ms * 1000.0));
  if (us < 0) {
    out.push_back('-');
    us = -us;
  }
  append_int(out, us / 1000);
  const auto frac = static_cast<unsigned>(us % 1000);
  const char digits[] = {'.', static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
                         static_cast<char>('0' + frac % 10)};
  out.append(digits, sizeof digits);
}

void append_optional_ms(std::string& out, const std::optional<double>& ms) {
  if (ms) append_ms(out, *ms);
  else out.append("null"sv);
}

void append_string_or_null(std::string& out, std::string_view s) {
  if (s.empty()) out.append("null"sv);
  else append_json_string(out, s);
}

void append_bool(std::string& out, bool b) { out.append(b ? "true" : "false"); }

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
  out.reserve(out.size() + s.size() + 2);
  out.push_back('"');
  const auto* const begin = reinterpret_cast<const unsigned char*>(s.data());
  const auto* const end = begin + s.size();
  const auto* run = begin;  // start of the bytes not yet copied
  const auto* p = begin;
  while (p < end) {
    // Fast path: skip whole words of plain ASCII.
    while (end - p >= 8) {
      uint64_t w;
      std::memcpy(&w, p, sizeof w);
      if (!word_is_plain_ascii(w)) break;
      p += 8;
    }
    if (p == end) break;
    const unsigned char c = *p;
    const uint8_t cls = kByteClass[c];
    if (cls == 0) {
      ++p;
      continue;
    }
    if (cls == 2) {
      if (const size_t len = utf8_sequence_length(p, end)) {
        p += len;  // well-formed: stays in the run and is copied unchanged
        continue;
      }
    }
    out.append(reinterpret_cast<const char*>(run), static_cast<size_t>(p - run));
    if (cls == 1) append_escape(out, c);
    else out.append(kReplacement);
    run = ++p;
  }
  out.append(reinterpret_cast<const char*>(run), static_cast<size_t>(end - run));
  out.push_back('"');
}

void append_json_line(std::string& out, const AccessLogEntry& e) {
  // One reservation for the line: keys and numbers take under 730 bytes, and
  // an escaped string at most 6 bytes per input byte.
  const size_t strings = e.remote_addr.size() + e.sni.size() + e.alpn.size() + e.scheme.size() + e.protocol.size() +
                         e.method.size() + e.path.size() + e.ssl_protocol.size() + e.ssl_cipher.size() +
                         e.ssl_resumption.size() + e.upstream_addr.size() + e.upstream_error.size() +
                         e.user_agent.size() + e.request_id.size() + e.content_encoding.size();
  out.reserve(out.size() + 730 + 6 * strings);
  out.append("{\"time\":\""sv);
  append_timestamp(out, e.time);
  out.append("\",\"remote_addr\":"sv);
  append_json_string(out, e.remote_addr);
  out.append(",\"remote_port\":"sv);
  append_int(out, e.remote_port);
  out.append(",\"sni\":"sv);
  append_string_or_null(out, e.sni);
  out.append(",\"alpn\":"sv);
  append_string_or_null(out, e.alpn);
  out.append(",\"scheme\":"sv);
  append_json_string(out, e.scheme);
  out.append(",\"protocol\":"sv);
  append_json_string(out, e.protocol);
  out.append(",\"method\":"sv);
  append_json_string(out, e.method);
  out.append(",\"path\":"sv);
  append_json_string(out, e.path);
  out.append(",\"status\":"sv);
  append_int(out, e.status);
  out.append(",\"response_complete\":"sv);
  append_bool(out, e.response_complete);
  out.append(",\"bytes_sent\":"sv);
  append_int(out, e.bytes_sent);
  out.append(",\"bytes_received\":"sv);
  append_int(out, e.bytes_received);
  out.append(",\"request_time_ms\":"sv);
  append_ms(out, e.request_time_ms);
  out.append(",\"ssl_protocol\":"sv);
  append_string_or_null(out, e.ssl_protocol);
  out.append(",\"ssl_cipher\":"sv);
  append_string_or_null(out, e.ssl_cipher);
  out.append(",\"ssl_session_reused\":"sv);
  append_bool(out, e.ssl_session_reused);
  out.append(",\"ssl_early_data\":"sv);
  append_bool(out, e.ssl_early_data);
  out.append(",\"ssl_resumption\":"sv);
  append_string_or_null(out, e.ssl_resumption);
  out.append(",\"tls_handshake_ms\":"sv);
  append_optional_ms(out, e.tls_handshake_ms);
  out.append(",\"connection_id\":"sv);
  append_int(out, e.connection_id);
  out.append(",\"connection_requests\":"sv);
  append_int(out, e.connection_requests);
  out.append(",\"stream_id\":"sv);
  if (e.stream_id == 0) out.append("null"sv);
  else append_int(out, e.stream_id);
  out.append(",\"upstream_addr\":"sv);
  append_string_or_null(out, e.upstream_addr);
  out.append(",\"upstream_error\":"sv);
  append_string_or_null(out, e.upstream_error);
  out.append(",\"upstream_status\":"sv);
  if (e.upstream_status == 0) out.append("null"sv);
  else append_int(out, e.upstream_status);
  out.append(",\"upstream_connect_ms\":"sv);
  append_optional_ms(out, e.upstream_connect_ms);
  out.append(",\"upstream_response_ms\":"sv);
  append_optional_ms(out, e.upstream_response_ms);
  out.append(",\"upstream_connection_reused\":"sv);
  if (e.upstream_connection_reused) append_bool(out, *e.upstream_connection_reused);
  else out.append("null"sv);
  out.append(",\"upstream_protocol\":"sv);
  append_string_or_null(out, e.upstream_protocol);
  out.append(",\"grpc_status\":"sv);
  if (e.grpc_status) append_int(out, *e.grpc_status);
  else out.append("null"sv);
  out.append(",\"user_agent\":"sv);
  append_string_or_null(out, e.user_agent);
  out.append(",\"request_id\":"sv);
  append_string_or_null(out, e.request_id);
  out.append(",\"content_encoding\":"sv);
  append_string_or_null(out, e.content_encoding);
  out.append(",\"tunnel\":"sv);
  append_bool(out, e.tunnel);
  out.append("}\n"sv);
}

AccessLog::AccessLog(LogWriter* writer, uv_loop_t* loop) : writer_(writer) {
  if (writer_ == nullptr || loop == nullptr) return;
  if (timer_.init([loop](uv_timer_t* t) { return uv_timer_init(loop, t); }, this) == 0) {
    uv_unref(timer_.handle());
  }
}

AccessLog::~AccessLog() { flush(); }

void AccessLog::log(const AccessLogEntry& entry) {
  if (writer_ == nullptr) return;
  const bool first = buffer_.empty();
  if (buffer_.capacity() < kFlushBytes) buffer_.reserve(kFlushBytes + 4096);  // one allocation per batch
  append_json_line(buffer_, entry);
  if (buffer_.size() >= kFlushBytes) {
    flush();
  } else if (first && timer_.active()) {
    uv_timer_start(
        timer_.get(),
        [](uv_timer_t* t) {
          if (t->data) static_cast<AccessLog*>(t->data)->flush();
        },
        kFlushDelayMs, 0);
  }
}

void AccessLog::flush() {
  if (timer_.active()) uv_timer_stop(timer_.get());
  if (writer_ == nullptr || buffer_.empty()) return;
  writer_->write(std::exchange(buffer_, std::string()));
}

void AccessLog::close() {
  flush();
  timer_.close();
}

}  // namespace tlsfront::log
