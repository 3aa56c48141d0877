// [[listen]]'s real client address keys: the PROXY protocol
// (proxy_protocol, proxy_protocol_from) and the real-IP header
// (trusted_proxies, real_ip_header, real_ip_recursive).
// docs/configuration.md, "The real client address" describes them.
#include <string>

#include "config/parse_context.h"
#include "config/units.h"

namespace tlsfront::config::detail {
namespace {

// `key` = ["10.0.0.0/8", "192.0.2.7", "2001:db8::/32"]: each element a
// CIDR block or one address, no duplicates; `out` untouched when absent.
Status parse_cidrs(const TableReader& t, std::string_view key, std::vector<Cidr>& out) {
  auto array = t.get_array(key, Presence::Optional);
  if (!array.ok()) return array.take_error();
  if (*array == nullptr) return {};
  if ((*array)->empty()) return t.error_at(key, "must not be empty (omit it for none)");
  std::vector<Cidr> blocks;
  for (size_t i = 0; i < (*array)->size(); ++i) {
    const toml::node& element = *(*array)->get(i);
    const std::string path = t.path_of(key) + "[" + std::to_string(i) + "]";
    const auto* text = element.as_string();
    if (text == nullptr) return type_error(t.context(), element, path, "a string");
    std::string why;
    const auto block = Cidr::parse(text->get(), &why);
    if (!block) return t.context().error(element.source(), path, quote(text->get()) + ": " + why);
    for (const Cidr& seen : blocks) {
      if (seen == *block) return t.context().error(element.source(), path, "duplicate " + quote(block->to_string()));
    }
    blocks.push_back(*block);
  }
  out = std::move(blocks);
  return {};
}

}  // namespace

Status parse_client_address(const TableReader& t, Listener& listener) {
  if (Status s = t.get_bool("proxy_protocol", listener.proxy_protocol); !s.ok()) return s;
  if (Status s = parse_cidrs(t, "proxy_protocol_from", listener.proxy_protocol_from); !s.ok()) return s;
  if (!listener.proxy_protocol && t.find("proxy_protocol_from") != nullptr) {
    return t.error_at("proxy_protocol_from", "only with proxy_protocol = true");
  }
  if (Status s = parse_cidrs(t, "trusted_proxies", listener.trusted_proxies); !s.ok()) return s;
  for (const char* key : {"real_ip_header", "real_ip_recursive"}) {
    if (listener.trusted_proxies.empty() && t.find(key) != nullptr) {
      return t.error_at(key, "only with trusted_proxies (the peers whose header is believed)");
    }
  }
  std::string header;
  if (Status s = t.get_string("real_ip_header", header); !s.ok()) return s;
  if (t.find("real_ip_header") != nullptr) {
    // Field names are case-insensitive (RFC 9110 §5.1).
    std::string lower = header;
    for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    if (lower == "x-forwarded-for") {
      listener.real_ip_header = RealIpHeader::XForwardedFor;
    } else if (lower == "x-real-ip") {
      listener.real_ip_header = RealIpHeader::XRealIp;
    } else {
      return t.error_at("real_ip_header",
                        "must be \"X-Forwarded-For\" or \"X-Real-IP\", got " + quote(header));
    }
  }
  if (Status s = t.get_bool("real_ip_recursive", listener.real_ip_recursive); !s.ok()) return s;
  return {};
}

}  // namespace tlsfront::config::detail
