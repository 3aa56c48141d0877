// The TOML text of an import-nginx Model (tools/nginx_import_detail.h), in
// the order of conf/tlsfront.toml; each key carries the nginx directive it
// came from as a comment.
#include <algorithm>

#include <fmt/format.h>

#include "tools/nginx_import_detail.h"
#include "tools/nginx_values.h"

namespace tlsfront::tools::nginx::detail {
namespace {

using Out = std::back_insert_iterator<std::string>;

void keys(std::string& out, const Keys& ks) {
  std::vector<std::string> seen;  // a key once (the importer adds each once: put())
  for (const Key& k : ks) {
    if (std::find(seen.begin(), seen.end(), k.key) != seen.end()) continue;
    seen.push_back(k.key);
    std::string line = k.key + " = " + k.value;
    if (!k.origin.empty()) {
      std::string comment = k.origin;
      for (char& c : comment) {
        auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f) c = ' ';
        if (u >= 0x80) c = '?';  // a comment must be UTF-8; nginx files need not be
      }
      line += std::string(line.size() < 40 ? 40 - line.size() : 1, ' ') + "# " + comment;
    }
    out += line + "\n";
  }
}

void table(std::string& out, const std::string& header, const Keys& ks, bool always = false) {
  if (ks.empty() && !always) return;
  out += "\n" + header + "\n";
  keys(out, ks);
}

std::string array(const std::vector<std::string>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + toml_string(v[i]);
  return s + "]";
}

}  // namespace

std::string render(const Model& m, const std::string& source, size_t not_carried) {
  std::string out;
  Out o(out);
  fmt::format_to(o, "# Imported from {} by tlsfront import-nginx.\n", source);
  fmt::format_to(o,
                 "# {} report line(s) on stderr: directives or parameters not carried over, or carried over with a "
                 "difference.\n",
                 not_carried);
  fmt::format_to(o, "# Check it: tlsfront --test --config FILE\n");
  if (!m.root.empty()) out += "\n";
  keys(out, m.root);
  for (const auto& l : m.listens) {
    Keys ks{{"address", toml_string(l.address), l.origin}};
    if (l.backlog) ks.push_back({"backlog", std::to_string(l.backlog), ""});
    if (l.tcp_fastopen >= 0) ks.push_back({"tcp_fastopen", std::to_string(l.tcp_fastopen), "fastopen="});
    if (l.proxy_protocol) {
      ks.push_back({"proxy_protocol", "true", "listen ... proxy_protocol"});
      if (!m.proxy_protocol_from.value.empty()) ks.push_back(m.proxy_protocol_from);
    }
    if (l.quic) ks.push_back({"quic", "true", "listen ... quic"});
    if (l.quic_retry) ks.push_back({"quic_retry", "true", "quic_retry on"});
    ks.insert(ks.end(), m.real_ip.begin(), m.real_ip.end());
    if (!l.tls) {
      ks.push_back({"tls", "false", "no ssl"});
      if (!l.redirect_https) ks.push_back({"redirect_https", "false", "nginx serves this server's locations on it"});
      if (l.redirect_https && l.https_port != 443) ks.push_back({"https_port", std::to_string(l.https_port), "return 30x https://...:PORT"});
    } else {
      ks.push_back({"alpn", l.h2 ? R"(["h2", "http/1.1"])" : R"(["http/1.1"])", l.h2 ? "http2" : "no http2"});
    }
    table(out, "[[listen]]", ks);
  }
  Keys tls = m.tls;
  if (m.certs.size() == 1) {
    tls.push_back({"certificate", toml_string(m.certs[0].cert), ""});
    tls.push_back({"key", toml_string(m.certs[0].key), m.certs[0].origin});
    tls.insert(tls.end(), m.certs[0].client_auth.begin(), m.certs[0].client_auth.end());
  }
  table(out, "[tls]", tls, true);
  table(out, "[tls.session_cache]", m.session_cache);
  table(out, "[tls.ticket_keys]", m.ticket_keys);
  if (m.certs.size() == 1) table(out, "[tls.ocsp]", m.certs[0].ocsp);
  if (m.certs.size() > 1) {
    for (const auto& c : m.certs) {
      Keys ks{{"cert", toml_string(c.cert), ""}, {"key", toml_string(c.key), c.origin}};
      if (!c.names.empty()) ks.push_back({"names", array(c.names), "server_name"});
      if (c.is_default) ks.push_back({"default", "true", "the default server"});
      ks.insert(ks.end(), c.client_auth.begin(), c.client_auth.end());
      table(out, "[[certificate]]", ks);
      table(out, "[certificate.ocsp]", c.ocsp);
    }
  }
  for (const auto& u : m.upstreams) {
    Keys ks{{"name", toml_string(u.name), u.origin}};
    ks.insert(ks.end(), u.keys.begin(), u.keys.end());
    table(out, "[[upstream]]", ks);
  }
  table(out, "[response_headers]", m.response_headers);
  table(out, "[request_headers]", m.request_headers);
  table(out, "[compression]", m.compression);
  table(out, "[resolver]", m.resolver);
  for (const auto& r : m.routes) {
    const char* path_key = r.match == Model::Match::Exact   ? "path_exact"
                           : r.match == Model::Match::Regex ? "path_regex"
                                                            : "path_prefix";
    Keys ks{{"host", toml_string(r.host), r.host.empty() ? "any host (the default server)" : "server_name"},
            {path_key, toml_string(r.path), r.origin}};
    if (r.answer.empty()) ks.push_back({"upstream", toml_string(r.upstream), ""});
    ks.insert(ks.end(), r.answer.begin(), r.answer.end());
    ks.insert(ks.end(), r.headers.begin(), r.headers.end());
    ks.insert(ks.end(), r.limits.begin(), r.limits.end());
    ks.insert(ks.end(), r.extra.begin(), r.extra.end());
    table(out, "[[route]]", ks);
  }
  for (const auto& z : m.limit_req_zones) {
    Keys ks{{"name", toml_string(z.name), "limit_req_zone " + z.nginx_name}};
    ks.insert(ks.end(), z.keys.begin(), z.keys.end());
    table(out, "[[limit_req]]", ks);
  }
  for (const auto& z : m.limit_conn_zones) {
    Keys ks{{"name", toml_string(z.name), "limit_conn_zone " + z.nginx_name}};
    ks.insert(ks.end(), z.keys.begin(), z.keys.end());
    table(out, "[[limit_conn]]", ks);
  }
  table(out, "[log]", m.log);
  table(out, "[limits]", m.limits);
  table(out, "[timeouts]", m.timeouts);
  table(out, "[http2]", m.http2);
  return out;
}

}  // namespace tlsfront::tools::nginx::detail
