// import-nginx: add_header, proxy_hide_header and proxy_set_header →
// response_headers / request_headers (tools/nginx_import_detail.h has the
// rules: import_headers).
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "config/config.h"
#include "tools/nginx_import_detail.h"
#include "tools/nginx_values.h"

namespace tlsfront::tools::nginx::detail {

std::string tlsfront_value(const std::string& v, int variables, std::string& why) {
  if (!v.empty() && (v.front() == ' ' || v.front() == '\t' || v.back() == ' ' || v.back() == '\t')) {
    why = "not carried over: the value has leading or trailing whitespace (a header value has none, RFC 9110 §5.5)";
    return {};
  }
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    auto c = static_cast<unsigned char>(v[i]);
    if ((c < 0x20 && c != '\t') || c == 0x7f) {
      why = "not carried over: the value contains a control byte";
      return {};
    }
    if (c != '$') {
      out += v[i];
      continue;
    }
    bool braced = i + 1 < v.size() && v[i + 1] == '{';
    size_t begin = i + (braced ? 2 : 1), end = begin;
    while (end < v.size() && (std::isalnum(static_cast<unsigned char>(v[end])) || v[end] == '_')) ++end;
    if (end == begin || (braced && (end >= v.size() || v[end] != '}'))) {
      out += "$$";
      continue;
    }
    std::string name = v.substr(begin, end - begin);
    if (name == "ssl_client_escaped_cert") {
      name = "ssl_client_cert";  // tlsfront's $ssl_client_cert is the URL-encoded PEM
    } else if (name == "ssl_client_cert" || name == "ssl_client_raw_cert") {
      why = "not carried over: nginx's $" + name +
            " is the PEM on several lines; tlsfront sends it URL-encoded as $ssl_client_cert (nginx's "
            "$ssl_client_escaped_cert)";
      return {};
    } else if (name == "ssl_client_fingerprint") {
      why = "carried over: tlsfront's $ssl_client_fingerprint is the SHA-256 of the certificate (64 hex digits), "
            "nginx's its SHA-1 (40): update what the upstream compares it with";
    }
    if (std::none_of(config::kHeaderVariables, config::kHeaderVariables + variables,
                     [&](const char* k) { return name == k; })) {
      why = "not carried over: tlsfront has no $" + name + " here (its variables: docs/configuration.md, [response_headers])";
      return {};
    }
    out += "${" + name + "}";
    i = braced ? end : end - 1;
  }
  return out;
}

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// nginx adds a header without `always` only to these statuses.
constexpr const char* kNginxAddHeaderStatuses = "200, 201, 204, 206, 301, 302, 303, 304, 307 and 308";

// The header directives that apply in one context: per name, those of the
// innermost block of the chain that has any (nginx's array inheritance).
// In a grpc_pass location proxy_hide_header / proxy_set_header are
// grpc_hide_header / grpc_set_header (the fields keep proxy_'s names).
struct HeaderSet {
  std::vector<const Directive*> add_header, proxy_hide_header, proxy_set_header;
  bool same_response(const HeaderSet& o) const {
    return add_header == o.add_header && proxy_hide_header == o.proxy_hide_header;
  }
  bool same_request(const HeaderSet& o) const { return proxy_set_header == o.proxy_set_header; }
};

HeaderSet header_set(const Chain& chain, PassKind kind = PassKind::Http) {
  const PassDirectives& names = pass_directives(kind);
  return {effective(chain, "add_header"), effective(chain, names.hide_header), effective(chain, names.set_header)};
}

// A header name as a TOML key: bare when it can be.
std::string toml_key(const std::string& name) {
  bool bare =
      std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isalnum(c) || c == '-' || c == '_'; });
  return bare ? name : toml_string(name);
}

// Fields of one set or add table, in order, a name once (its values grouped).
// `index` maps each lowercased name to its place in `v`, so that adding n
// fields costs O(n), not O(n²) (a server with 20k add_header lines).
struct Fields {
  std::vector<std::pair<std::string, std::vector<std::string>>> v;
  std::unordered_map<std::string, size_t> index;
  bool has(const std::string& name) const { return index.count(lower(name)) != 0; }
  void add(const std::string& name, std::string value) {
    auto [it, added] = index.try_emplace(lower(name), v.size());
    if (!added) return v[it->second].second.push_back(std::move(value));
    v.push_back({name, {std::move(value)}});
  }
  std::string toml() const {
    std::string s = "{ ";
    for (size_t i = 0; i < v.size(); ++i) {
      const auto& [name, values] = v[i];
      s += (i ? ", " : "") + toml_key(name) + " = ";
      if (values.size() == 1) {
        s += toml_string(values[0]);
      } else {
        s += "[";
        for (size_t j = 0; j < values.size(); ++j) s += (j ? ", " : "") + toml_string(values[j]);
        s += "]";
      }
    }
    return s + " }";
  }
};

std::string toml_array(const std::vector<std::string>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + toml_string(v[i]);
  return s + "]";
}

class HeaderImporter {
 public:
  HeaderImporter(Model& m, Ledger& l) : m_(m), l_(l) {}

  // The [tls] hsts value when `defaults` has `add_header
  // Strict-Transport-Security V always` and every route gets that same one; ""
  // otherwise.
  void find_hsts(const HeaderSet& defaults);
  Keys response(const HeaderSet& h);
  Keys request(const HeaderSet& h);
  // A note on the first directive of the innermost block in `chain` that has
  // `name` when an outer block has some too (nginx discards those there).
  void note_dropped(const Chain& chain, const std::string& name);

 private:
  bool is_hsts(const Directive& d) const {
    return hsts_ != nullptr && d.args.size() == 3 && lower(d.args[0]) == "strict-transport-security" &&
           d.args[1] == hsts_->args[1] && d.args[2] == "always";
  }
  Model& m_;
  Ledger& l_;
  const Directive* hsts_ = nullptr;
};

void HeaderImporter::find_hsts(const HeaderSet& defaults) {
  for (const Directive* d : defaults.add_header) {
    if (d->args.size() != 3 || lower(d->args[0]) != "strict-transport-security" || d->args[2] != "always") continue;
    std::string why;
    const std::string& v = d->args[1];
    // Only a value the loader takes as [tls] hsts; otherwise it stays a header rule.
    if (has_variable(v) || tlsfront_value(v, config::kHeaderVariableCount, why).empty() ||
        !config::hsts_problem(v).empty())
      continue;
    hsts_ = d;
    break;
  }
  if (hsts_ == nullptr) return;
  for (const auto& r : m_.routes) {
    auto adds = header_set(r.chain).add_header;
    if (std::none_of(adds.begin(), adds.end(), [&](const Directive* d) { return is_hsts(*d); })) {
      hsts_ = nullptr;  // a route without it: keep it a header rule, as nginx
                        // applies it
      return;
    }
  }
  m_.tls.push_back({"hsts", toml_string(hsts_->args[1]), origin(*hsts_)});
}

Keys HeaderImporter::response(const HeaderSet& h) {
  std::vector<std::string> remove;
  std::unordered_set<std::string> removed;  // remove's names, for lookups
  const Directive* first_remove = nullptr;
  for (const Directive* d : h.proxy_hide_header) {
    if (d->args.size() != 1) {
      l_.note(*d, "not carried over: " + d->name + " takes one name");
      continue;
    }
    if (std::string why = config::header_name_problem(d->args[0], config::HeaderDirection::Response); !why.empty()) {
      l_.note(*d, "not carried over: " + why);
      continue;
    }
    if (!removed.insert(lower(d->args[0])).second) continue;
    remove.push_back(lower(d->args[0]));
    if (first_remove == nullptr) first_remove = d;
    l_.carry(*d);
  }
  Fields add;
  std::vector<const Directive*> carried;
  for (const Directive* d : h.add_header) {
    if (is_hsts(*d)) {
      l_.carry(*d);  // [tls] hsts
      continue;
    }
    if (d->args.size() != 2 && !(d->args.size() == 3 && d->args[2] == "always")) {
      l_.note(*d, "not carried over: add_header name value [always]");
      continue;
    }
    if (std::string why = config::header_name_problem(d->args[0], config::HeaderDirection::Response); !why.empty()) {
      l_.note(*d, "not carried over: " + why);
      continue;
    }
    if (d->args[1].empty()) {
      l_.note(*d, "not carried over: nginx adds nothing for an empty value");
      continue;
    }
    std::string why;
    std::string value = tlsfront_value(d->args[1], config::kHeaderVariableCount, why);
    if (value.empty()) {
      l_.note(*d, why);
      continue;
    }
    add.add(d->args[0], std::move(value));
    carried.push_back(d);
  }
  size_t with_always =
      std::count_if(carried.begin(), carried.end(), [](const Directive* d) { return d->args.size() == 3; });
  bool always = !carried.empty() && with_always == carried.size();
  for (const Directive* d : carried) {
    l_.carry(*d);
    if (always) continue;
    l_.note(*d, d->args.size() == 3 ? "carried over without always: tlsfront's always applies to a "
                                      "table as a whole, and this one has "
                                      "add_header without always (so tlsfront's own error answers "
                                      "do not get it)"
                                    : fmt::format("carried over; nginx adds it only to {} "
                                                  "responses, tlsfront to every upstream response "
                                                  "(not to its own error answers)",
                                                  kNginxAddHeaderStatuses));
  }
  Keys ks;
  if (!remove.empty()) ks.push_back({"remove", toml_array(remove), origin(*first_remove)});
  if (!add.v.empty()) ks.push_back({"add", add.toml(), origin(*carried.front())});
  if (always) ks.push_back({"always", "true", "add_header ... always"});
  return ks;
}

Keys HeaderImporter::request(const HeaderSet& h) {
  Fields set;
  std::vector<std::string> remove;
  std::unordered_set<std::string> removed;  // remove's names, for lookups
  const Directive* first = nullptr;
  for (const Directive* d : h.proxy_set_header) {
    if (d->args.size() != 2) {
      l_.note(*d, "not carried over: " + d->name + " name value");
      continue;
    }
    std::string name = lower(d->args[0]);
    const std::string& v = d->args[1];
    if (name == "connection" && (v.empty() || v == "keep-alive")) {
      l_.note(*d,
              "not needed: tlsfront removes the client's Connection and "
              "keeps upstream connections alive");
      continue;
    }
    // nginx's WebSocket pattern: proxy_http_version 1.1 + these two
    // (Connection from a `map $http_upgrade $connection_upgrade`, or
    // "upgrade"). tlsfront forwards the Upgrade a route allows by itself.
    if ((name == "upgrade" && v == "$http_upgrade") ||
        (name == "connection" && (v == "$connection_upgrade" || lower(v) == "upgrade"))) {
      l_.note(*d,
              "not needed: tlsfront forwards the Upgrade a route allows with Connection: upgrade "
              "(upgrade = [\"websocket\"] by default)");
      continue;
    }
    if (name == "host" && (v == "$host" || v == "$http_host")) {
      l_.note(*d, "not needed: Host is forwarded as the client sent it");
      continue;
    }
    if (name == "x-forwarded-for" && v == "$proxy_add_x_forwarded_for") {
      l_.note(*d, "not needed: tlsfront appends the client address to X-Forwarded-For");
      continue;
    }
    if (name == "x-real-ip" && v == "$remote_addr") {
      l_.note(*d, "not needed: tlsfront adds X-Real-IP");
      continue;
    }
    if (name == "x-forwarded-proto" && (v == "$scheme" || v == "https")) {
      l_.note(*d, "not needed: tlsfront adds X-Forwarded-Proto");
      continue;
    }
    if (std::string why = config::header_name_problem(d->args[0], config::HeaderDirection::Request); !why.empty()) {
      l_.note(*d, "not carried over: " + why);
      continue;
    }
    if (set.has(name) || removed.count(name) != 0) {
      l_.note(*d, "not carried over: a second " + d->name + " for " + d->args[0] + " (tlsfront's set sends one field)");
      continue;
    }
    if (v.empty()) {
      if (name == "host") {
        l_.note(*d, "not carried over: an HTTP/1.1 request needs a Host");
        continue;
      }
      remove.push_back(name);  // nginx: an empty value is not passed
      removed.insert(name);
    } else {
      std::string why;
      std::string value = tlsfront_value(v, config::kHeaderVariableCount, why);
      if (value.empty()) {
        l_.note(*d, why);
        continue;
      }
      if (!why.empty()) l_.note(*d, why);  // carried, with a difference to know
      set.add(d->args[0], std::move(value));
    }
    if (first == nullptr) first = d;
    l_.carry(*d);
  }
  Keys ks;
  if (!remove.empty()) ks.push_back({"remove", toml_array(remove), origin(*first)});
  if (!set.v.empty()) ks.push_back({"set", set.toml(), origin(*first)});
  return ks;
}

void HeaderImporter::note_dropped(const Chain& chain, const std::string& name) {
  for (size_t i = 0; i < chain.size(); ++i) {
    const auto& own = chain[i]->children;
    auto first = std::find_if(own.begin(), own.end(), [&](const Directive& d) { return d.name == name; });
    if (first == own.end()) continue;
    // The outer ones this block does not repeat itself (looked up in a set:
    // thousands of add_header on both sides stay O(n log n)).
    std::set<std::vector<std::string>> repeated;
    for (const Directive& o : own) {
      if (o.name == name) repeated.insert(o.args);
    }
    std::string dropped;
    for (size_t j = i + 1; j < chain.size(); ++j) {
      for (const Directive& d : chain[j]->children) {
        if (d.name != name || d.args.empty()) continue;
        if (repeated.count(d.args) == 0) dropped += (dropped.empty() ? "" : ", ") + d.args[0];
      }
    }
    if (!dropped.empty()) {
      l_.note(
          *first,
          "nginx applies none of the enclosing blocks' " + name + " here (" + dropped +
              "): a block with its own inherits none; carried over as nginx applies it, the route gets only its own");
    }
    return;
  }
}

// One inline table: { k = v, ... }.
std::string inline_table(const Keys& ks) {
  std::string s = "{ ";
  for (size_t i = 0; i < ks.size(); ++i) s += (i ? ", " : "") + ks[i].key + " = " + ks[i].value;
  return s + " }";
}

// Header directives in blocks no route or default uses, and proxy_http_version.
void leftovers(const Directive& block, Ledger& l) {
  for (const Directive& d : block.children) {
    if (d.block && (d.name == "server" || d.name == "location") && !l.was_examined(d)) continue;  // listed as a whole
    if (d.block) leftovers(d, l);
    if (d.name == "proxy_http_version") {
      l.note(d, d.args == std::vector<std::string>{"1.1"}
                    ? "not needed: HTTP/1.1 to http/1.1 upstreams is the default"
                    : "no equivalent: tlsfront speaks HTTP/1.1 or h2c to upstreams ([[upstream]] protocol)");
    } else if ((d.name == "add_header" || d.name == "proxy_set_header" || d.name == "proxy_hide_header" ||
                d.name == "grpc_set_header" || d.name == "grpc_hide_header") &&
               !l.carried(d) && !l.noted(d)) {
      l.note(d, "not carried over: it applies to no imported route");
    }
  }
}

}  // namespace

void import_headers(const Directive& http, const Server& default_server, Model& m, Ledger& l) {
  HeaderImporter h(m, l);
  HeaderSet defaults = header_set(default_server.chain);
  h.find_hsts(defaults);
  m.response_headers = h.response(defaults);
  m.request_headers = h.request(defaults);
  for (auto& r : m.routes) {
    const PassDirectives& names = pass_directives(r.grpc ? PassKind::Grpc : PassKind::Http);
    HeaderSet own = header_set(r.chain, r.grpc ? PassKind::Grpc : PassKind::Http);
    if (!own.same_response(defaults)) {
      Keys ks = h.response(own);
      if (!m.response_headers.empty()) ks.insert(ks.begin(), {"inherit", "false", ""});
      if (!ks.empty()) {
        r.headers.push_back({"response_headers", inline_table(ks), std::string("add_header, ") + names.hide_header});
      }
      h.note_dropped(r.chain, "add_header");
      h.note_dropped(r.chain, names.hide_header);
    }
    if (!own.same_request(defaults) && r.answer.empty()) {  // a fixed answer sends nothing upstream
      Keys ks = h.request(own);
      if (!m.request_headers.empty()) ks.insert(ks.begin(), {"inherit", "false", ""});
      if (!ks.empty()) r.headers.push_back({"request_headers", inline_table(ks), names.set_header});
      h.note_dropped(r.chain, names.set_header);
    }
  }
  leftovers(http, l);
}

}  // namespace tlsfront::tools::nginx::detail
