// import-nginx: plain-HTTP listens → [[listen]] tls = false
// (tools/nginx_import.h has the rules).
#include <algorithm>
#include <cstring>

#include "tools/nginx_import_detail.h"

namespace tlsfront::tools::nginx::detail {

void cleartext_listens(const Server& s, bool redirect, Model& m, Ledger& l, int https_port) {
  for (const auto& listen : s.cleartext) {
    const std::string& address = listen.address;
    const Directive* d = listen.directive;
    auto same = std::find_if(m.listens.begin(), m.listens.end(), [&](const auto& x) { return x.address == address; });
    if (same != m.listens.end() && (same->tls || same->redirect_https != redirect || same->https_port != https_port)) {
      l.note(*d, "not carried over: " + address + " is already a listener of another kind");
      continue;
    }
    l.carry(*d);
    if (!redirect) {
      l.note(*d,
             "carried over as a cleartext listener that routes like the TLS ones (redirect_https = false), as nginx "
             "serves this server on it; tlsfront's default (redirect_https) would redirect to https");
    }
    if (same == m.listens.end()) {
      m.listens.push_back({.address = address,
                           .tls = false,
                           .redirect_https = redirect,
                           .https_port = https_port,
                           .tcp_fastopen = listen.tcp_fastopen,
                           .proxy_protocol = listen.proxy_protocol,
                           .origin = origin(*d)});
    } else {
      if (listen.tcp_fastopen >= 0) same->tcp_fastopen = listen.tcp_fastopen;
      same->proxy_protocol = same->proxy_protocol || listen.proxy_protocol;
    }
  }
}

bool redirect_server(const Server& s, Model& m, Ledger& l) {
  if (s.cleartext.empty()) return false;
  const Directive* ret = nullptr;
  for (const Directive& c : s.block->children) {
    if (c.name == "return") ret = &c;
  }
  if (ret == nullptr || ret->args.size() != 2) return false;
  const std::string& code = ret->args[0];
  const std::string& url = ret->args[1];
  if ((code != "301" && code != "302" && code != "307" && code != "308") || !url.starts_with("https://") ||
      !url.ends_with("$request_uri")) {
    return false;
  }
  // "https://HOST[:PORT]$request_uri": the port becomes https_port.
  std::string host = url.substr(8, url.size() - 8 - std::strlen("$request_uri"));
  int port = 443;
  if (size_t colon = host.rfind(':'); colon != std::string::npos && host.find(']', colon) == std::string::npos) {
    const std::string digits = host.substr(colon + 1);
    if (digits.empty() || digits.size() > 5 || digits.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(digits) < 1 || std::stoi(digits) > 65535) {
      return false;
    }
    port = std::stoi(digits);
    host = host.substr(0, colon);
  }
  cleartext_listens(s, true, m, l, port);
  l.carry(*s.block);
  l.examined(*s.block);
  l.carry(*ret);
  std::vector<std::string> why;
  if (code == "301" || code == "302")
    why.push_back("tlsfront answers 301 to GET and HEAD, 308 to other methods (a " + code +
                  " turns a POST into a GET)");
  if (code == "307" || code == "308") why.push_back("tlsfront answers 301 to GET and HEAD, 308 to other methods");
  if (host != "$host") why.push_back("it redirects to the request's own host ($host), not " + host);
  for (const auto& w : why) l.note(*ret, "carried over as a cleartext listener's redirect_https: " + w);
  for (const Directive& c : s.block->children) {
    if (c.name == "server_name") {
      l.carry(c);
      l.note(c, "carried over: a redirecting cleartext listener redirects every valid host");
    } else if (c.name == "location" && !c.args.empty() && c.args.back().find("acme-challenge") != std::string::npos) {
      l.note(c,
             "not carried over by import-nginx: an ACME client's upstream is the listener's acme_upstream "
             "(docs/configuration.md, [[listen]]); static files (root) have no equivalent");
    }
  }
  return true;
}

}  // namespace tlsfront::tools::nginx::detail
