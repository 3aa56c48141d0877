// [tls.ocsp] (per certificate) and [tls] ocsp_cache_dir (global): OCSP
// stapling settings. parse_ocsp reads the `ocsp` table of whatever table it is
// given, so the per-certificate keys can move into [[certificate]] entries
// without change.
#include <string>

#include "config/parse_context.h"
#include "config/units.h"

namespace tlsfront::config::detail {
namespace {

// The responder override: an absolute http:// URL (RFC 6960 A.1 is HTTP; an
// https responder would need a handshake to check the certificate status).
Status check_responder_url(const TableReader& t, const std::string& url) {
  constexpr std::string_view kScheme = "http://";
  if (!url.starts_with(kScheme) || url.size() == kScheme.size() || url[kScheme.size()] == '/') {
    return t.error_at("responder", "expected an http:// URL with a host, got " + quote(url));
  }
  for (char c : url) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return t.error_at("responder", "must not contain spaces or control characters");
    }
  }
  return {};
}

}  // namespace

Status parse_ocsp(const TableReader& parent, Ocsp& out) {
  auto table = table_of(parent, "ocsp");
  if (!table.ok()) return table.take_error();
  if (*table == nullptr) {
    out.origin = parent.context().position(parent.table().source());
    return {};
  }
  TableReader t(parent.context(), **table, parent.path_of("ocsp"));
  out.origin = t.context().position(t.table().source());
  if (Status s = t.check_keys({"stapling", "responder", "response_file", "staple_policy", "refresh_at_percent",
                               "refresh_jitter_percent", "fetch_timeout", "max_response_bytes"});
      !s.ok()) {
    return s;
  }
  if (Status s = t.get_bool("stapling", out.stapling); !s.ok()) return s;
  if (t.find("stapling") != nullptr) out.stapling_origin = t.position_of("stapling");
  if (Status s = t.get_string("responder", out.responder, Presence::Optional, false); !s.ok()) return s;
  if (!out.responder.empty()) {
    if (Status s = check_responder_url(t, out.responder); !s.ok()) return s;
  }
  if (Status s = t.get_path("response_file", out.response_file, Presence::Optional, false); !s.ok()) return s;
  out.response_file_setting = t.path_of("response_file");
  out.response_file_origin = t.find("response_file") ? t.position_of("response_file") : out.origin;
  if (!out.response_file.empty() && !out.responder.empty()) {
    return t.error_at("responder", "not used with response_file (the response is not fetched)");
  }
  std::string policy = "lenient";
  if (Status s = t.get_string("staple_policy", policy); !s.ok()) return s;
  if (policy == "lenient") {
    out.staple_policy = StaplePolicy::Lenient;
  } else if (policy == "strict") {
    out.staple_policy = StaplePolicy::Strict;
  } else if (policy == "must_staple") {
    out.staple_policy = StaplePolicy::MustStaple;
  } else {
    return t.error_at("staple_policy", "unknown policy " + quote(policy) +
                                           " (expected \"lenient\", \"strict\" or \"must_staple\")");
  }
  if (Status s = t.get_integer("refresh_at_percent", 1, 90, out.refresh_at_percent); !s.ok()) return s;
  if (Status s = t.get_integer("refresh_jitter_percent", 0, 50, out.refresh_jitter_percent); !s.ok()) return s;
  if (Status s = t.get_duration("fetch_timeout", Millis{100}, out.fetch_timeout); !s.ok()) return s;
  if (out.fetch_timeout > Millis{60'000}) return t.error_at("fetch_timeout", "must be at most 60s");
  if (Status s = t.get_size("max_response_bytes", 1024, 1024 * 1024, out.max_response_bytes); !s.ok()) return s;
  return {};
}

Status parse_ocsp_cache_dir(const TableReader& tls, std::string& out) {
  return tls.get_path("ocsp_cache_dir", out, Presence::Optional, false);
}

}  // namespace tlsfront::config::detail
