// [acme]: certificates ordered and renewed from an ACME CA (RFC 8555) by the
// fleet (control/acme_manager.h). Needs [tls.store]: the account key and
// the certificates are kept there, sealed. Parsed after [[route]] (names =
// "from_routes" reads the routes' hosts).
#include <algorithm>

#include "config/parse_context.h"
#include "config/units.h"

namespace tlsfront::config::detail {
namespace {

// A name an HTTP-01 or TLS-ALPN-01 challenge can prove: lowercase
// letter-digit-hyphen labels of 1..63 (RFC 1123 §2.1), 253 in all, at least
// two labels, not all digits (an IP address is not a DNS identifier, RFC
// 8555 §9.7.7), no wildcard (only DNS-01 proves those, RFC 8555 §7.1.3).
bool orderable_name(std::string_view name) {
  if (name.empty() || name.size() > 253 || name.find('.') == std::string_view::npos) return false;
  size_t label = 0;
  bool letter = false;
  for (size_t i = 0; i <= name.size(); ++i) {
    const char c = i < name.size() ? name[i] : '.';
    if (c == '.') {
      if (label == 0 || label > 63 || name[i - 1] == '-' || name[i - label] == '-') return false;
      label = 0;
      continue;
    }
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
    letter |= (c >= 'a' && c <= 'z') || c == '-';
    ++label;
  }
  return letter;
}

Status parse_names(const TableReader& t, const std::vector<Route>& routes, Acme& out) {
  const toml::node* node = t.find("names");
  if (node == nullptr) return t.missing("names");
  if (const auto* s = node->as_string()) {
    if (s->get() != "from_routes") return t.error_at("names", "expected an array of names or \"from_routes\"");
    out.names_from_routes = true;
    for (const Route& r : routes) {
      if (orderable_name(r.host) && std::find(out.names.begin(), out.names.end(), r.host) == out.names.end()) {
        out.names.push_back(r.host);
      }
    }
    if (out.names.empty()) return t.error_at("names", "no [[route]] has a host that can be ordered (an exact DNS name)");
    return {};
  }
  auto array = t.get_array("names", Presence::Required);
  if (!array.ok()) return array.take_error();
  if ((*array)->empty()) return t.error_at("names", "needs at least one name");
  if ((*array)->size() > 1000) return t.error_at("names", "at most 1000 names");
  for (size_t i = 0; i < (*array)->size(); ++i) {
    const toml::node& element = *(*array)->get(i);
    const std::string path = t.path_of("names") + "[" + std::to_string(i) + "]";
    const auto* name = element.as_string();
    if (name == nullptr) return type_error(t.context(), element, path, "a string");
    if (!orderable_name(name->get())) {
      return t.context().error(element.source(), path,
                               quote(name->get()) + " is not a lowercase DNS name an HTTP-01 or TLS-ALPN-01 "
                                                    "challenge can prove (no wildcard, no IP address)");
    }
    if (std::find(out.names.begin(), out.names.end(), name->get()) != out.names.end()) {
      return t.context().error(element.source(), path, quote(name->get()) + " is listed twice");
    }
    out.names.push_back(name->get());
  }
  return {};
}

Status parse_strings(const TableReader& t, std::string_view key, std::vector<std::string>& out) {
  auto array = t.get_array(key, Presence::Optional);
  if (!array.ok()) return array.take_error();
  if (*array == nullptr) return {};
  if ((*array)->size() > 16) return t.error_at(key, "at most 16 entries");
  for (size_t i = 0; i < (*array)->size(); ++i) {
    const toml::node& element = *(*array)->get(i);
    const auto* s = element.as_string();
    const std::string path = t.path_of(key) + "[" + std::to_string(i) + "]";
    if (s == nullptr) return type_error(t.context(), element, path, "a string");
    out.push_back(s->get());
  }
  return {};
}

}  // namespace

Status parse_acme(const TableReader& root, const Config& config, Acme& out) {
  auto table = table_of(root, "acme");
  if (!table.ok()) return table.take_error();
  if (*table == nullptr) return {};
  TableReader t(root.context(), **table, "acme");
  if (Status s = t.check_keys({"directory", "contact", "eab_kid", "eab_hmac_key_file", "names", "key_type",
                               "challenges", "renew_before", "ca_bundle", "check_interval", "lock_lease"});
      !s.ok()) {
    return s;
  }
  out.enabled = true;
  out.origin = t.context().position(t.table().source());
  if (!config.tls.store.enabled) {
    return t.context().error(t.table().source(), "acme",
                             "needs [tls.store]: the account key and the certificates are kept there, sealed");
  }
  if (Status s = t.get_string("directory", out.directory, Presence::Required, false); !s.ok()) return s;
  if (!out.directory.starts_with("https://") || out.directory.size() == 8 ||
      std::any_of(out.directory.begin(), out.directory.end(),
                  [](char c) { return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f; })) {
    return t.error_at("directory", "expected an https:// URL (RFC 8555 §6.1), got " + quote(out.directory));
  }
  if (Status s = parse_strings(t, "contact", out.contact); !s.ok()) return s;
  for (size_t i = 0; i < out.contact.size(); ++i) {
    if (!out.contact[i].starts_with("mailto:") || out.contact[i].size() == 7 ||
        out.contact[i].find_first_of(", \t\r\n") != std::string::npos) {
      return t.error_at("contact", "expected \"mailto:<address>\" entries, got " + quote(out.contact[i]));
    }
  }
  if (Status s = t.get_string("eab_kid", out.eab_kid, Presence::Optional, false); !s.ok()) return s;
  if (Status s = t.get_path("eab_hmac_key_file", out.eab_hmac_key_file, Presence::Optional, false); !s.ok()) return s;
  if (out.eab_kid.empty() != out.eab_hmac_key_file.empty()) {
    return t.error_at(out.eab_kid.empty() ? "eab_hmac_key_file" : "eab_kid",
                      "External Account Binding needs both eab_kid and eab_hmac_key_file");
  }
  if (Status s = parse_names(t, config.routes, out); !s.ok()) return s;
  std::string key_type = "ecdsa";
  if (Status s = t.get_string("key_type", key_type); !s.ok()) return s;
  if (key_type == "ecdsa") {
    out.key_type = AcmeKeyType::Ecdsa;
  } else if (key_type == "rsa") {
    out.key_type = AcmeKeyType::Rsa;
  } else if (key_type == "both") {
    out.key_type = AcmeKeyType::Both;
  } else {
    return t.error_at("key_type", "unknown key type " + quote(key_type) + " (expected \"ecdsa\", \"rsa\" or \"both\")");
  }
  std::vector<std::string> challenges;
  if (Status s = parse_strings(t, "challenges", challenges); !s.ok()) return s;
  if (t.find("challenges") != nullptr) {
    out.challenges.clear();
    if (challenges.empty()) return t.error_at("challenges", "needs at least one challenge type");
    for (const auto& c : challenges) {
      const AcmeChallenge type = c == "http-01" ? AcmeChallenge::Http01 : AcmeChallenge::TlsAlpn01;
      if (c != "http-01" && c != "tls-alpn-01") {
        return t.error_at("challenges", "unknown challenge " + quote(c) + " (expected \"http-01\" or \"tls-alpn-01\")");
      }
      if (std::find(out.challenges.begin(), out.challenges.end(), type) != out.challenges.end()) {
        return t.error_at("challenges", quote(c) + " is listed twice");
      }
      out.challenges.push_back(type);
    }
  }
  if (Status s = t.get_duration("renew_before", Millis{3'600'000}, out.renew_before); !s.ok()) return s;
  if (out.renew_before > Millis{int64_t{366} * 86'400'000}) return t.error_at("renew_before", "must be at most 366d");
  if (Status s = t.get_path("ca_bundle", out.ca_bundle, Presence::Optional, false); !s.ok()) return s;
  if (Status s = t.get_duration("check_interval", Millis{1000}, out.check_interval); !s.ok()) return s;
  if (out.check_interval > Millis{86'400'000}) return t.error_at("check_interval", "must be at most 24h");
  if (Status s = t.get_duration("lock_lease", Millis{10'000}, out.lock_lease); !s.ok()) return s;
  if (out.lock_lease > Millis{86'400'000}) return t.error_at("lock_lease", "must be at most 24h");
  return {};
}

}  // namespace tlsfront::config::detail
