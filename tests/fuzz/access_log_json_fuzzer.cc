// Fuzz target access_log_json: the bytes fill an AccessLogEntry (strings,
// numbers, optional fields; FuzzedDataProvider), append_json_line() encodes
// it, and simdjson, a strict RFC 8259 parser that also validates UTF-8,
// must accept the line as one JSON object and give every field back: each
// string exactly as it went in when it was valid UTF-8 (else valid UTF-8
// with U+FFFD in it), integers exact, null where the encoder promises null,
// milliseconds within the 3 decimals written, and the line no longer than
// json_line_room() (the room the encoder wrote into). Any difference aborts.
#include <fuzzer/FuzzedDataProvider.h>
#include <simdjson.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "log/access_log.h"

namespace {

using tlsfront::log::AccessLogEntry;
using simdjson::dom::element;

[[noreturn]] void fail(const char* what, std::string_view key, const std::string& line) {
  std::fprintf(stderr, "access_log_json: %s: \"%.*s\" in %s\n", what, static_cast<int>(key.size()), key.data(),
               line.c_str());
  std::abort();
}

// `e` must be the string `want`: exactly, when `want` is valid UTF-8.
void check_string(element e, std::string_view want, std::string_view key, const std::string& line) {
  std::string_view got;
  if (e.get_string().get(got) != simdjson::SUCCESS) fail("not a string", key, line);
  if (simdjson::validate_utf8(want.data(), want.size())) {
    if (got != want) fail("string changed", key, line);
  } else if (got.find("\xef\xbf\xbd") == std::string_view::npos) {
    fail("invalid UTF-8 without U+FFFD", key, line);
  }
}

struct Checker {
  element obj;
  const std::string& line;

  element get(std::string_view key) {
    element e;
    if (obj[key].get(e) != simdjson::SUCCESS) fail("missing key", key, line);
    return e;
  }
  void string(std::string_view key, std::string_view want) { check_string(get(key), want, key, line); }
  void string_or_null(std::string_view key, std::string_view want) {
    if (want.empty()) null(key);
    else string(key, want);
  }
  void null(std::string_view key) {
    if (!get(key).is_null()) fail("not null", key, line);
  }
  void uint(std::string_view key, uint64_t want) {
    uint64_t got;
    if (get(key).get_uint64().get(got) != simdjson::SUCCESS || got != want) fail("integer changed", key, line);
  }
  void sint(std::string_view key, int64_t want) {
    int64_t got;
    if (get(key).get_int64().get(got) != simdjson::SUCCESS || got != want) fail("integer changed", key, line);
  }
  void boolean(std::string_view key, bool want) {
    bool got;
    if (get(key).get_bool().get(got) != simdjson::SUCCESS || got != want) fail("bool changed", key, line);
  }
  void ms(std::string_view key, std::optional<double> want) {
    if (!want || !std::isfinite(*want)) return null(key);
    double got;
    if (get(key).get_double().get(got) != simdjson::SUCCESS) fail("not a number", key, line);
    // Three decimals, rounded; relative for values beyond double's exact range.
    if (std::fabs(got - *want) > 0.0005 + std::fabs(*want) * 1e-12) fail("milliseconds changed", key, line);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  // Each string up to 64 bytes, so every field gets some of the input.
  auto str = [&] { return in.ConsumeRandomLengthString(64); };
  // Durations: mostly within ±1e13 ms (both sides of the encoder's 1e12
  // switch to its exact formatter), sometimes NaN, ±infinity or the largest
  // double (formatted digit by digit: slow, so rare).
  auto ms = [&]() -> double {
    switch (in.ConsumeIntegralInRange<int>(0, 15)) {
      case 0: return std::nan("");
      case 1: return HUGE_VAL;
      case 2: return -HUGE_VAL;
      case 3: return std::numeric_limits<double>::max();
      default: return in.ConsumeFloatingPointInRange<double>(-1e13, 1e13);
    }
  };
  auto opt_ms = [&]() -> std::optional<double> {
    if (!in.ConsumeBool()) return std::nullopt;
    return ms();
  };
  std::string remote_addr = str(), sni = str(), alpn = str(), protocol = str(), method = str(), path = str(),
              ssl_protocol = str(), ssl_cipher = str(), ssl_resumption = str(), upstream_addr = str(),
              user_agent = str(), request_id = str();
  // The optional and rarer fields too: every string the encoder writes
  // counts toward json_line_room, whose room it fills without clearing.
  std::string peer_addr = str(), upstream_error = str(), content_encoding = str(), limit = str(), cache = str(),
              client_verify = str(), client_s_dn = str(), client_i_dn = str(), client_serial = str(),
              client_fingerprint = str(), route = str();
  AccessLogEntry e;
  // 1970 to 2255 (system_clock counts nanoseconds in 64 bits: up to 2262).
  e.time = std::chrono::system_clock::time_point(
      std::chrono::milliseconds(in.ConsumeIntegralInRange<int64_t>(0, 9'000'000'000'000)));
  e.remote_addr = remote_addr;
  e.remote_port = in.ConsumeIntegral<uint16_t>();
  e.sni = sni;
  e.alpn = alpn;
  e.protocol = protocol;
  e.method = method;
  e.path = path;
  e.status = in.ConsumeIntegral<int>();
  e.bytes_sent = in.ConsumeIntegral<uint64_t>();
  e.bytes_received = in.ConsumeIntegral<uint64_t>();
  e.request_time_ms = ms();
  e.ssl_protocol = ssl_protocol;
  e.ssl_cipher = ssl_cipher;
  e.ssl_session_reused = in.ConsumeBool();
  e.ssl_early_data = in.ConsumeBool();
  e.ssl_resumption = ssl_resumption;
  e.tls_handshake_ms = opt_ms();
  e.rtt_ms = opt_ms();
  e.migrated = in.ConsumeBool();
  e.connection_id = in.ConsumeIntegral<uint64_t>();
  e.connection_requests = in.ConsumeIntegral<uint64_t>();
  e.stream_id = in.ConsumeIntegral<uint32_t>();
  e.route = route;
  e.upstream_addr = upstream_addr;
  e.upstream_status = in.ConsumeIntegral<int>();
  e.upstream_connect_ms = opt_ms();
  e.upstream_response_ms = opt_ms();
  if (in.ConsumeBool()) e.upstream_connection_reused = in.ConsumeBool();
  e.upstream_protocol = in.ConsumeBool() ? "h2c" : "";
  if (in.ConsumeBool()) e.grpc_status = in.ConsumeIntegral<int>();
  e.user_agent = user_agent;
  e.request_id = request_id;
  e.peer_addr = peer_addr;
  e.upstream_error = upstream_error;
  e.content_encoding = content_encoding;
  e.limit = limit;
  e.cache = cache;
  e.tunnel = in.ConsumeBool();
  e.ssl_client_verify = client_verify;
  e.ssl_client_s_dn = client_s_dn;
  e.ssl_client_i_dn = client_i_dn;
  e.ssl_client_serial = client_serial;
  e.ssl_client_fingerprint = client_fingerprint;
  // The rest: one more string, encoded alone.
  const std::string rest = in.ConsumeRemainingBytesAsString();

  std::string line;
  tlsfront::log::append_json_line(line, e);
  if (line.empty() || line.back() != '\n' || line.find('\n') != line.size() - 1) fail("not one line", "", line);
  // The encoder writes into room it sized once: the line must fit it.
  if (line.size() > tlsfront::log::json_line_room(e)) fail("longer than json_line_room", "", line);

  static simdjson::dom::parser parser;
  element doc;
  if (parser.parse(line.data(), line.size() - 1).get(doc) != simdjson::SUCCESS) fail("invalid JSON", "", line);
  if (!doc.is_object()) fail("not an object", "", line);
  Checker c{doc, line};
  c.get("time");
  c.string("remote_addr", e.remote_addr);
  if (!e.peer_addr.empty()) c.string("peer_addr", e.peer_addr);
  c.uint("remote_port", e.remote_port);
  c.string_or_null("sni", e.sni);
  c.string_or_null("alpn", e.alpn);
  c.string("scheme", e.scheme);
  c.string("protocol", e.protocol);
  c.string("method", e.method);
  c.string("path", e.path);
  c.sint("status", e.status);
  c.uint("bytes_sent", e.bytes_sent);
  c.uint("bytes_received", e.bytes_received);
  c.ms("request_time_ms", e.request_time_ms);
  c.string_or_null("ssl_protocol", e.ssl_protocol);
  c.string_or_null("ssl_cipher", e.ssl_cipher);
  c.boolean("ssl_session_reused", e.ssl_session_reused);
  c.boolean("ssl_early_data", e.ssl_early_data);
  c.string_or_null("ssl_resumption", e.ssl_resumption);
  c.ms("tls_handshake_ms", e.tls_handshake_ms);
  c.ms("rtt_ms", e.rtt_ms);
  c.boolean("migrated", e.migrated);
  c.uint("connection_id", e.connection_id);
  c.uint("connection_requests", e.connection_requests);
  if (e.stream_id == 0) c.null("stream_id");
  else c.uint("stream_id", e.stream_id);
  if (!e.ssl_client_verify.empty()) {
    c.string("ssl_client_verify", e.ssl_client_verify);
    c.string_or_null("ssl_client_s_dn", e.ssl_client_s_dn);
    c.string_or_null("ssl_client_i_dn", e.ssl_client_i_dn);
    c.string_or_null("ssl_client_serial", e.ssl_client_serial);
    c.string_or_null("ssl_client_fingerprint", e.ssl_client_fingerprint);
  }
  c.string_or_null("route", e.route);
  c.string_or_null("upstream_addr", e.upstream_addr);
  c.string_or_null("upstream_error", e.upstream_error);
  if (e.upstream_status == 0) c.null("upstream_status");
  else c.sint("upstream_status", e.upstream_status);
  c.ms("upstream_connect_ms", e.upstream_connect_ms);
  c.ms("upstream_response_ms", e.upstream_response_ms);
  if (e.upstream_connection_reused) c.boolean("upstream_connection_reused", *e.upstream_connection_reused);
  else c.null("upstream_connection_reused");
  c.string_or_null("upstream_protocol", e.upstream_protocol);
  if (e.grpc_status) c.sint("grpc_status", *e.grpc_status);
  else c.null("grpc_status");
  c.string_or_null("user_agent", e.user_agent);
  c.string_or_null("request_id", e.request_id);
  c.string_or_null("content_encoding", e.content_encoding);
  c.boolean("tunnel", e.tunnel);
  if (!e.limit.empty()) c.string("limit", e.limit);
  if (!e.cache.empty()) c.string("cache", e.cache);

  std::string alone;
  tlsfront::log::append_json_string(alone, rest);
  element s;
  if (parser.parse(alone).get(s) != simdjson::SUCCESS) fail("invalid JSON string", "", alone);
  check_string(s, rest, "", alone);
  return 0;
}
