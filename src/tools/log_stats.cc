#include "tools/log_stats.h"

#include <simdjson.h>

#include <cstring>

namespace tlsfront::tools {
namespace {

// The DOM API, not On-Demand: libsimdjson picks the fastest kernel for this
// CPU at run time for DOM parsing, while On-Demand is compiled inline for
// the build's target (without -march flags: the slow portable fallback).
namespace dom = simdjson::dom;

// A string, or "" for null. False when it is neither.
bool get_string(dom::element v, std::string_view& out) {
  if (v.is_null()) return true;
  return !v.get_string().get(out);
}

bool get_optional_double(dom::element v, std::optional<double>& out) {
  if (v.is_null()) return true;
  double d = 0;
  if (v.get_double().get(d)) return false;
  out = d;
  return true;
}

bool get_optional_bool(dom::element v, std::optional<bool>& out) {
  if (v.is_null()) return true;
  bool b = false;
  if (v.get_bool().get(b)) return false;
  out = b;
  return true;
}

template <typename Member>
struct Field {
  std::string_view key;
  Member LogRecord::*member;
};
constexpr Field<std::string_view> kStringFields[] = {
    {"time", &LogRecord::time},
    {"sni", &LogRecord::sni},
    {"alpn", &LogRecord::alpn},
    {"ssl_protocol", &LogRecord::ssl_protocol},
    {"ssl_cipher", &LogRecord::ssl_cipher},
    {"ssl_resumption", &LogRecord::ssl_resumption},
    {"upstream_addr", &LogRecord::upstream_addr},
};
constexpr Field<std::optional<double>> kDurationFields[] = {
    {"request_time_ms", &LogRecord::request_time_ms},
    {"tls_handshake_ms", &LogRecord::tls_handshake_ms},
    {"upstream_response_ms", &LogRecord::upstream_response_ms},
};

// The member `key` names in `fields`, or null.
template <typename Member, size_t N>
Member LogRecord::*find_field(const Field<Member> (&fields)[N], std::string_view key) {
  for (const auto& f : fields) {
    if (f.key == key) return f.member;
  }
  return nullptr;
}

// The entry of `m` for `key`, made if missing; once `m` holds `max_keys`
// entries, new keys share "(other)" (bounded memory for untrusted keys).
template <typename Map>
typename Map::mapped_type& slot(Map& m, std::string_view key, size_t max_keys) {
  auto it = m.find(key);
  if (it == m.end()) {
    if (m.size() >= max_keys) {
      key = "(other)";
      it = m.find(key);
    }
    if (it == m.end()) it = m.try_emplace(std::string(key)).first;
  }
  return it->second;
}

}  // namespace

struct LineParser::Impl {
  dom::parser parser;
  std::string buf;  // the line plus simdjson's padding
};

LineParser::LineParser() : impl_(std::make_unique<Impl>()) {}
LineParser::~LineParser() = default;

bool LineParser::parse(std::string_view line, LogRecord& out) {
  out = LogRecord{};
  std::string& buf = impl_->buf;
  if (buf.size() < line.size() + simdjson::SIMDJSON_PADDING) buf.resize(line.size() + simdjson::SIMDJSON_PADDING);
  std::memcpy(buf.data(), line.data(), line.size());
  dom::element doc;
  if (impl_->parser.parse(buf.data(), line.size(), /*realloc_if_needed=*/false).get(doc)) return false;
  dom::object obj;
  if (doc.get_object().get(obj)) return false;
  bool has_status = false;
  for (const auto [key, v] : obj) {
    bool ok = true;
    if (key == "status") {
      int64_t s = 0;
      ok = !v.get_int64().get(s) && s >= 0 && s < 1000;
      out.status = static_cast<int>(s);
      has_status = ok;
    } else if (key == "upstream_connection_reused") {
      ok = get_optional_bool(v, out.upstream_connection_reused);
    } else if (key == "tunnel") {
      std::optional<bool> tunnel;
      ok = get_optional_bool(v, tunnel);
      out.tunnel = tunnel.value_or(false);
    } else if (auto str = find_field(kStringFields, key)) {
      ok = get_string(v, out.*str);
    } else if (auto ms = find_field(kDurationFields, key)) {
      ok = get_optional_double(v, out.*ms);
    }
    if (!ok) return false;
  }
  return has_status;
}

void Stats::add(const LogRecord& r) {
  ++requests;
  if (r.tls_handshake_ms) {
    ++handshakes;
    const std::string_view resumption = r.ssl_resumption.empty() ? std::string_view("none") : r.ssl_resumption;
    ++slot(this->resumption, resumption, kMaxKeys);
    ++slot(versions, r.ssl_protocol.empty() ? std::string_view("(none)") : r.ssl_protocol, kMaxKeys);
    ++slot(ciphers, r.ssl_cipher.empty() ? std::string_view("(none)") : r.ssl_cipher, kMaxKeys);
    (resumption == "none" ? handshake_full_ms : handshake_resumed_ms).add(*r.tls_handshake_ms);
  }
  if (r.tunnel) {
    ++tunnels;
  } else {
    if (r.request_time_ms) request_ms.add(*r.request_time_ms);
    if (r.upstream_response_ms) upstream_response_ms.add(*r.upstream_response_ms);
  }
  if (r.upstream_connection_reused) {
    ++upstream_requests;
    if (*r.upstream_connection_reused) ++upstream_reused;
  }
  const int cls = r.status / 100;
  ++status_class[cls >= 1 && cls <= 5 ? cls : 0];
  if (r.status == 499) ++status_499;
  if (r.status == 502) ++status_502;
  if (r.status == 504) ++status_504;
}

std::optional<Grouping> parse_grouping(std::string_view name) {
  if (name == "sni") return Grouping::Sni;
  if (name == "alpn") return Grouping::Alpn;
  if (name == "upstream") return Grouping::Upstream;
  if (name == "hour") return Grouping::Hour;
  return std::nullopt;
}

std::string_view to_string(Grouping g) {
  switch (g) {
    case Grouping::None: return "none";
    case Grouping::Sni: return "sni";
    case Grouping::Alpn: return "alpn";
    case Grouping::Upstream: return "upstream";
    case Grouping::Hour: return "hour";
  }
  return "none";
}

std::string_view StatsTable::key_of(const LogRecord& r) const {
  std::string_view key;
  switch (by_) {
    case Grouping::None: return {};
    case Grouping::Sni: key = r.sni; break;
    case Grouping::Alpn: key = r.alpn; break;
    case Grouping::Upstream: key = r.upstream_addr; break;
    case Grouping::Hour: key = r.time.substr(0, 13); break;  // "2026-12-01T12"
  }
  return key.empty() ? std::string_view("(none)") : key;
}

void StatsTable::add_line(std::string_view line) {
  ++lines_;
  if (!parser_.parse(line, record_)) {
    ++malformed_;
    return;
  }
  overall_.add(record_);
  if (by_ != Grouping::None) slot(groups_, key_of(record_), kMaxGroups).add(record_);
}

}  // namespace tlsfront::tools
