// The JSON access-log encoder and the per-worker batch.
//
// The encoder runs once per request, so its cost is counted in instructions
// (scripts/callgrind.sh): a line is written into room sized once from the
// entry (json_line_room), never cleared first (LogBatch); a string that
// needs no escape and no UTF-8 check, as nearly all do, is copied and
// checked a word at a time (copy_if_plain) and only the others take the
// octet-by-octet path; integers and milliseconds are written two digits at
// a time, without std::to_chars or llround for the common magnitudes.
#include "log/access_log.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstring>
#include <utility>

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

constexpr uint64_t kOnes = 0x0101010101010101ull;
constexpr uint64_t kHigh = 0x8080808080808080ull;

// Nonzero when some byte of the 8 in `w` needs attention (a control byte,
// '"', '\\' or non-ASCII): a byte below 0x20 borrows in w - 0x20..., one
// equal to '"' or '\\' is zero after the XOR and borrows in the - 0x01...;
// a borrow only ever flags bytes above a byte that needs attention, so the
// word is zero exactly when all 8 bytes are plain. The caller ORs these
// words and keeps the high bits (kHigh) once.
inline uint64_t attention_bits(uint64_t w) {
  return (w - kOnes * 0x20) | ((w ^ (kOnes * '"')) - kOnes) | ((w ^ (kOnes * '\\')) - kOnes) | w;
}

bool word_is_plain_ascii(uint64_t w) { return (attention_bits(w) & kHigh) == 0; }

inline uint64_t load64(const void* p) {
  uint64_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}
inline void store64(void* p, uint64_t w) { std::memcpy(p, &w, sizeof w); }
inline uint32_t load32(const void* p) {
  uint32_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}
inline void store32(void* p, uint32_t w) { std::memcpy(p, &w, sizeof w); }

// Copies the n bytes at `s` to `out` and returns true when none of them
// needs an escape or a UTF-8 check (the common case: every field tlsfront
// makes itself and most a client sends); false otherwise, with `out`'s n
// bytes unspecified. Reads and writes whole words (overlapping at the end),
// never outside the n bytes.
inline bool copy_if_plain(char* out, const char* s, size_t n) {
  uint64_t acc;
  if (n >= 8) {
    acc = 0;
    for (size_t i = 0; i + 8 < n; i += 8) {
      const uint64_t w = load64(s + i);
      acc |= attention_bits(w);
      store64(out + i, w);
    }
    const uint64_t last = load64(s + n - 8);
    acc |= attention_bits(last);
    store64(out + n - 8, last);
  } else if (n >= 4) {
    const uint32_t lo = load32(s), hi = load32(s + n - 4);
    store32(out, lo);
    store32(out + n - 4, hi);
    acc = attention_bits(lo | uint64_t{hi} << 32);
  } else if (n != 0) {
    // 1-3 bytes: the first, middle and last (some the same), spaces above.
    const auto a = static_cast<unsigned char>(s[0]), m = static_cast<unsigned char>(s[n / 2]),
               z = static_cast<unsigned char>(s[n - 1]);
    out[0] = static_cast<char>(a);
    out[n / 2] = static_cast<char>(m);
    out[n - 1] = static_cast<char>(z);
    acc = attention_bits(a | m << 8 | z << 16 | 0x2020202020000000ull);
  } else {
    return true;
  }
  return (acc & kHigh) == 0;
}

// "00" ... "99": two digits at a time.
constexpr std::array<char, 200> kDigitPairs = [] {
  std::array<char, 200> t{};
  for (int i = 0; i < 100; ++i) {
    t[2 * i] = static_cast<char>('0' + i / 10);
    t[2 * i + 1] = static_cast<char>('0' + i % 10);
  }
  return t;
}();

inline void write_pair(char* p, unsigned v) { std::memcpy(p, &kDigitPairs[2 * v], 2); }

// `v` in decimal at `p`; returns the end. Values below 100,000 (status,
// ports, most counters) inline, larger ones by std::to_chars (at most 20
// digits).
inline char* write_uint(char* p, uint64_t v) {
  if (v >= 100000) return std::to_chars(p, p + 20, v).ptr;
  auto u = static_cast<unsigned>(v);
  const size_t len = u < 10 ? 1 : u < 100 ? 2 : u < 1000 ? 3 : u < 10000 ? 4 : 5;
  char* const end = p + len;
  char* q = end;
  while (u >= 100) {
    q -= 2;
    write_pair(q, u % 100);
    u /= 100;
  }
  if (u >= 10) write_pair(q - 2, u);
  else q[-1] = static_cast<char>('0' + u);
  return end;
}

template <typename Int>
inline char* write_int(char* p, Int v) {
  if constexpr (std::is_signed_v<Int>) {
    if (v < 0) {
      *p++ = '-';
      return write_uint(p, uint64_t{0} - static_cast<uint64_t>(static_cast<int64_t>(v)));
    }
  }
  return write_uint(p, static_cast<uint64_t>(v));
}

// llround(x) for |x| < 2^52, without the libm call: truncation and the
// fractional part are exact there, and a half rounds away from zero.
inline int64_t round_half_away(double x) {
  auto i = static_cast<int64_t>(x);
  const double frac = x - static_cast<double>(i);
  if (frac >= 0.5) ++i;
  else if (frac <= -0.5) --i;
  return i;
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

// Writes a line into memory its caller sized from the entry (json_line_room):
// every key is a fixed-size copy, every value has a known upper bound, so no
// write checks capacity. The encoder runs once per request; appending to a
// std::string piece by piece (41 capacity checks and memcpy calls a line)
// was a third of its instructions.
// memcpy of n bytes to `out`, returning the end; nothing for n == 0 (an
// empty string_view may have a null data(), which memcpy must not get).
inline char* copy_bytes(char* out, const void* src, size_t n) {
  if (n != 0) std::memcpy(out, src, n);
  return out + n;
}

class Cursor {
 public:
  explicit Cursor(char* p) : p_(p) {}
  char* pos() const { return p_; }

  template <size_t N>
  void lit(const char (&s)[N]) {  // a string literal, without its NUL
    std::memcpy(p_, s, N - 1);
    p_ += N - 1;
  }
  void raw(std::string_view s) {
    p_ = copy_bytes(p_, s.data(), s.size());
  }
  template <typename Int>
  void integer(Int value) {  // at most 20 digits and a sign
    p_ = write_int(p_, value);
  }
  void boolean(bool b) {
    if (b) lit("true");
    else lit("false");
  }
  void json_string(std::string_view s) { p_ = write_json_string(p_, s); }
  void string_or_null(std::string_view s) {
    if (s.empty()) lit("null");
    else json_string(s);
  }
  // Milliseconds with 3 decimals; null for NaN/infinity (not valid JSON).
  // Fixed point (integer microseconds) rather than a float formatter: fmt's
  // "{:.3f}" was a third of the encoder's time. Room: ms_room().
  void ms(double ms) {
    if (!std::isfinite(ms)) {
      lit("null");
      return;
    }
    if (!(std::fabs(ms) < 1e12)) {  // beyond 31 years: a broken clock; keep it exact
      p_ = std::to_chars(p_, p_ + kHugeMsRoom, ms, std::chars_format::fixed, 3).ptr;
      return;
    }
    int64_t us = round_half_away(ms * 1000.0);
    if (us < 0) {
      *p_++ = '-';
      us = -us;
    }
    p_ = write_uint(p_, static_cast<uint64_t>(us) / 1000);
    const auto frac = static_cast<unsigned>(static_cast<uint64_t>(us) % 1000);
    p_[0] = '.';
    p_[1] = static_cast<char>('0' + frac / 100);
    write_pair(p_ + 2, frac % 100);
    p_ += 4;
  }
  void optional_ms(const std::optional<double>& v) {
    if (v) ms(*v);
    else lit("null");
  }
  // "YYYY-MM-DDTHH:MM:SS.mmmZ" (RFC 3339, UTC). The text up to the second
  // is kept per thread and rebuilt once a second (log::append_timestamp).
  void timestamp(std::chrono::system_clock::time_point t) {
    using namespace std::chrono;
    struct SecondText {
      int64_t second = INT64_MIN;
      std::string text;  // "YYYY-MM-DDTHH:MM:SS." (20 bytes), or a whole odd year's stamp
    };
    thread_local SecondText cache;
    const auto ms = floor<milliseconds>(t);
    const int64_t second = floor<seconds>(ms).time_since_epoch().count();
    if (second != cache.second) {
      cache.second = second;
      cache.text.clear();
      append_timestamp(cache.text, floor<seconds>(t));
      cache.text.resize(cache.text.size() - 4);  // drop "000Z"
    }
    raw(cache.text);
    const auto millis = static_cast<unsigned>(ms.time_since_epoch().count() - second * 1000);
    p_[0] = static_cast<char>('0' + millis / 100);
    p_[1] = static_cast<char>('0' + millis / 10 % 10);
    p_[2] = static_cast<char>('0' + millis % 10);
    p_[3] = 'Z';
    p_ += 4;
  }

  static constexpr size_t kHugeMsRoom = 330;  // DBL_MAX in fixed notation with 3 decimals, and a sign
  static size_t ms_room(double ms) { return std::isfinite(ms) && !(std::fabs(ms) < 1e12) ? kHugeMsRoom : 0; }
  static size_t ms_room(const std::optional<double>& v) { return v ? ms_room(*v) : 0; }

 private:
  static char* write_escape(char* p, unsigned char c) {
    char second = 0;
    switch (c) {
      case '"': second = '"'; break;
      case '\\': second = '\\'; break;
      case '\n': second = 'n'; break;
      case '\r': second = 'r'; break;
      case '\t': second = 't'; break;
      case '\b': second = 'b'; break;
      case '\f': second = 'f'; break;
      default: {
        const char esc[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xf]};
        std::memcpy(p, esc, sizeof esc);
        return p + sizeof esc;
      }
    }
    p[0] = '\\';
    p[1] = second;
    return p + 2;
  }

 public:
  // Writes `s` quoted and escaped (append_json_string's rules) at `p`, which
  // has room for 6 * s.size() + 2 bytes; returns the end.
  static char* write_json_string(char* out, std::string_view s) {
    *out = '"';
    if (copy_if_plain(out + 1, s.data(), s.size())) {
      out[s.size() + 1] = '"';
      return out + s.size() + 2;
    }
    return write_escaped_json_string(out + 1, s);
  }

 private:
  // write_json_string() for a string that needs escaping or a UTF-8 check,
  // from just after the opening quote. Out of line: it takes registers the
  // fast path above does not need.
  [[gnu::noinline]] static char* write_escaped_json_string(char* out, std::string_view s) {
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
      out = copy_bytes(out, run, static_cast<size_t>(p - run));
      if (cls == 1) {
        out = write_escape(out, c);
      } else {
        std::memcpy(out, kReplacement.data(), kReplacement.size());
        out += kReplacement.size();
      }
      run = ++p;
    }
    out = copy_bytes(out, run, static_cast<size_t>(end - run));
    *out++ = '"';
    return out;
  }

 private:
  char* p_;
};

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
  const size_t start = out.size();
  out.resize(start + 6 * s.size() + 2);
  char* end = Cursor::write_json_string(out.data() + start, s);
  out.resize(static_cast<size_t>(end - out.data()));
}

size_t json_line_room(const AccessLogEntry& e) {
  // Keys and their alternatives (615 bytes), numbers (at most 20 digits and
  // a sign), booleans, the timestamp and 17 strings' quotes or nulls take
  // under 1024 bytes, the client certificate's 5 fields (when present)
  // under 256 more; an escaped string at most 6 bytes per input byte; a
  // duration from a broken clock up to 330.
  const size_t strings = e.remote_addr.size() + e.peer_addr.size() + e.sni.size() + e.alpn.size() + e.scheme.size() +
                         e.protocol.size() + e.method.size() + e.path.size() + e.ssl_protocol.size() +
                         e.ssl_cipher.size() + e.ssl_resumption.size() + e.route.size() + e.upstream_addr.size() +
                         e.upstream_error.size() + e.upstream_protocol.size() + e.user_agent.size() +
                         e.request_id.size() + e.content_encoding.size() + e.limit.size() + e.cache.size() +
                         e.ssl_client_verify.size() + e.ssl_client_s_dn.size() + e.ssl_client_i_dn.size() +
                         e.ssl_client_serial.size() + e.ssl_client_fingerprint.size();
  // (The room is zero-filled by resize(): no more of it than needed.)
  return 1024 + (e.ssl_client_verify.empty() ? 0 : 256) + 6 * strings + Cursor::ms_room(e.request_time_ms) +
         Cursor::ms_room(e.tls_handshake_ms) + Cursor::ms_room(e.rtt_ms) + Cursor::ms_room(e.upstream_connect_ms) +
         Cursor::ms_room(e.upstream_response_ms);
}

namespace {

// The line for `e` at `out`, which has json_line_room(e) bytes of room;
// returns its end.
char* write_json_line(char* out, const AccessLogEntry& e) {
  Cursor c(out);
  c.lit("{\"time\":\"");
  c.timestamp(e.time);
  c.lit("\",\"remote_addr\":");
  c.json_string(e.remote_addr);
  c.lit(",\"remote_port\":");
  c.integer(e.remote_port);
  if (!e.peer_addr.empty()) {
    c.lit(",\"peer_addr\":");
    c.json_string(e.peer_addr);
  }
  c.lit(",\"sni\":");
  c.string_or_null(e.sni);
  c.lit(",\"alpn\":");
  c.string_or_null(e.alpn);
  c.lit(",\"scheme\":");
  c.json_string(e.scheme);
  c.lit(",\"protocol\":");
  c.json_string(e.protocol);
  c.lit(",\"method\":");
  c.json_string(e.method);
  c.lit(",\"path\":");
  c.json_string(e.path);
  c.lit(",\"status\":");
  c.integer(e.status);
  c.lit(",\"response_complete\":");
  c.boolean(e.response_complete);
  c.lit(",\"bytes_sent\":");
  c.integer(e.bytes_sent);
  c.lit(",\"bytes_received\":");
  c.integer(e.bytes_received);
  c.lit(",\"request_time_ms\":");
  c.ms(e.request_time_ms);
  c.lit(",\"ssl_protocol\":");
  c.string_or_null(e.ssl_protocol);
  c.lit(",\"ssl_cipher\":");
  c.string_or_null(e.ssl_cipher);
  c.lit(",\"ssl_session_reused\":");
  c.boolean(e.ssl_session_reused);
  c.lit(",\"ssl_early_data\":");
  c.boolean(e.ssl_early_data);
  c.lit(",\"ssl_resumption\":");
  c.string_or_null(e.ssl_resumption);
  c.lit(",\"tls_handshake_ms\":");
  c.optional_ms(e.tls_handshake_ms);
  c.lit(",\"rtt_ms\":");
  c.optional_ms(e.rtt_ms);
  c.lit(",\"migrated\":");
  c.boolean(e.migrated);
  if (!e.ssl_client_verify.empty()) {
    c.lit(",\"ssl_client_verify\":");
    c.json_string(e.ssl_client_verify);
    c.lit(",\"ssl_client_s_dn\":");
    c.string_or_null(e.ssl_client_s_dn);
    c.lit(",\"ssl_client_i_dn\":");
    c.string_or_null(e.ssl_client_i_dn);
    c.lit(",\"ssl_client_serial\":");
    c.string_or_null(e.ssl_client_serial);
    c.lit(",\"ssl_client_fingerprint\":");
    c.string_or_null(e.ssl_client_fingerprint);
  }
  c.lit(",\"connection_id\":");
  c.integer(e.connection_id);
  c.lit(",\"connection_requests\":");
  c.integer(e.connection_requests);
  c.lit(",\"stream_id\":");
  if (e.stream_id == 0) c.lit("null");
  else c.integer(e.stream_id);
  c.lit(",\"route\":");
  c.string_or_null(e.route);
  c.lit(",\"upstream_addr\":");
  c.string_or_null(e.upstream_addr);
  c.lit(",\"upstream_error\":");
  c.string_or_null(e.upstream_error);
  c.lit(",\"upstream_status\":");
  if (e.upstream_status == 0) c.lit("null");
  else c.integer(e.upstream_status);
  c.lit(",\"upstream_connect_ms\":");
  c.optional_ms(e.upstream_connect_ms);
  c.lit(",\"upstream_response_ms\":");
  c.optional_ms(e.upstream_response_ms);
  c.lit(",\"upstream_connection_reused\":");
  if (e.upstream_connection_reused) c.boolean(*e.upstream_connection_reused);
  else c.lit("null");
  c.lit(",\"upstream_protocol\":");
  c.string_or_null(e.upstream_protocol);
  c.lit(",\"grpc_status\":");
  if (e.grpc_status) c.integer(*e.grpc_status);
  else c.lit("null");
  c.lit(",\"user_agent\":");
  c.string_or_null(e.user_agent);
  c.lit(",\"request_id\":");
  c.string_or_null(e.request_id);
  c.lit(",\"content_encoding\":");
  c.string_or_null(e.content_encoding);
  c.lit(",\"tunnel\":");
  c.boolean(e.tunnel);
  if (!e.limit.empty()) {
    c.lit(",\"limit\":");
    c.json_string(e.limit);
  }
  if (!e.cache.empty()) {
    c.lit(",\"cache\":");
    c.json_string(e.cache);
  }
  c.lit("}\n");
  return c.pos();
}

}  // namespace

void append_json_line(std::string& out, const AccessLogEntry& e) {
  const size_t start = out.size();
  out.resize(start + json_line_room(e));
  char* const end = write_json_line(out.data() + start, e);
  out.resize(static_cast<size_t>(end - out.data()));
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
  // One allocation per batch (a line with more room than the 4 KiB over
  // kFlushBytes makes it larger); the room is not cleared first.
  const size_t need = buffer_.size() + json_line_room(entry);
  if (need > buffer_.capacity()) buffer_.reserve(std::max(need, kFlushBytes + 4096));
  buffer_.set_size(static_cast<size_t>(write_json_line(buffer_.data() + buffer_.size(), entry) - buffer_.data()));
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
  writer_->write(std::exchange(buffer_, LogBatch()));
}

void AccessLog::close() {
  flush();
  timer_.close();
}

}  // namespace tlsfront::log
