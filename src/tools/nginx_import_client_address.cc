// import-nginx: nginx's realip module (set_real_ip_from, real_ip_header,
// real_ip_recursive) → [[listen]] trusted_proxies, real_ip_header,
// real_ip_recursive, or proxy_protocol_from (tools/nginx_import_detail.h
// has the rules; `listen ... proxy_protocol` is read in nginx_import.cc).
#include <algorithm>

#include "tools/nginx_import_detail.h"
#include "tools/nginx_values.h"
#include "util/ip_address.h"

namespace tlsfront::tools::nginx::detail {
namespace {

constexpr const char* kNames[] = {"set_real_ip_from", "real_ip_header", "real_ip_recursive"};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// A server other than the default one whose realip settings differ: tlsfront
// has them per listener, and every listener serves every server.
void note_differences(const Server& s, const Server& def, Ledger& l) {
  for (const char* name : kNames) {
    auto mine = effective(s.chain, name);
    auto ref = effective(def.chain, name);
    if (same_args(mine, ref)) {
      for (size_t i = 0; i < mine.size(); ++i) l.same_as(*mine[i], *ref[i]);
      continue;
    }
    const std::string why = std::string(name) + " not carried over for this server: differs from the default server's (" +
                            (ref.empty() ? std::string("nginx's default") : ref[0]->where()) +
                            "); tlsfront's [[listen]] keys apply to every server";
    if (mine.empty()) l.note(*s.block, why);
    for (const Directive* d : mine) l.note(*d, why);
  }
}

}  // namespace

void import_client_address(const std::vector<Server>& servers, size_t def, Model& m, Ledger& l) {
  const Server& d = servers[def];
  for (const Server& s : servers) {
    if (s.tls && &s != &d) note_differences(s, d, l);
  }
  const auto from = effective(d.chain, "set_real_ip_from");
  const Directive* header = effective_one(d.chain, "real_ip_header");
  const Directive* recursive = effective_one(d.chain, "real_ip_recursive");
  if (from.empty()) {
    for (const Directive* x : {header, recursive}) {
      if (x) l.note(*x, "not needed: without set_real_ip_from no header is believed");
    }
    return;
  }
  // nginx's default header is X-Real-IP.
  const std::string name = header == nullptr ? "x-real-ip" : header->args.size() == 1 ? lower(header->args[0]) : "";
  const bool via_proxy_protocol = name == "proxy_protocol";
  if (!via_proxy_protocol && name != "x-forwarded-for" && name != "x-real-ip") {
    const std::string why = "not carried over: tlsfront believes X-Forwarded-For, X-Real-IP or the PROXY protocol";
    l.note(*header, why);
    for (const Directive* f : from) l.note(*f, why);
    if (recursive) l.note(*recursive, why);
    return;
  }
  std::string list;
  std::vector<std::string> seen;
  for (const Directive* f : from) {
    std::string why;
    const auto block = f->args.size() == 1 ? Cidr::parse(f->args[0], &why) : std::nullopt;
    if (!block) {
      l.note(*f, "not carried over: " + (f->args.size() == 1 && f->args[0].starts_with("unix:")
                                             ? std::string("no UNIX-domain listeners")
                                             : "one IP address or CIDR block (names are not resolved): " + why));
      continue;
    }
    const std::string text = block->to_string();
    if (std::find(seen.begin(), seen.end(), text) != seen.end()) {
      l.note(*f, "not needed: the same as another set_real_ip_from");
      continue;
    }
    seen.push_back(text);
    list += (list.empty() ? "[" : ", ") + toml_string(text);
    l.carry(*f);
  }
  if (list.empty()) return;
  list += "]";
  if (via_proxy_protocol) {
    const bool any = std::any_of(m.listens.begin(), m.listens.end(), [](const auto& x) { return x.proxy_protocol; });
    if (!any) {
      const std::string why = "not carried over: no listen ... proxy_protocol";
      l.note(*header, why);
      for (const Directive* f : from) l.note(*f, why);
      return;
    }
    l.carry(*header);
    m.proxy_protocol_from = {"proxy_protocol_from", list, "set_real_ip_from, real_ip_header proxy_protocol"};
    for (const Directive* f : from) {
      l.note(*f, "carried over as proxy_protocol_from: other peers are refused at accept (nginx accepts them and "
                 "keeps their own address)");
    }
    if (recursive) l.note(*recursive, "not needed: there is no list to walk in a PROXY protocol header");
    return;
  }
  const bool xff = name == "x-forwarded-for";
  if (std::any_of(m.listens.begin(), m.listens.end(), [](const auto& x) { return x.proxy_protocol; })) {
    for (const Directive* f : from) {
      if (l.carried(*f)) {
        l.note(*f, "carried over, but on a proxy_protocol listener tlsfront matches trusted_proxies against the PROXY "
                   "protocol header's address (nginx: against the load balancer's own)");
      }
    }
  }
  m.real_ip.push_back({"trusted_proxies", list, "set_real_ip_from"});
  m.real_ip.push_back({"real_ip_header", xff ? "\"X-Forwarded-For\"" : "\"X-Real-IP\"",
                       header ? origin(*header) : "nginx's default real_ip_header"});
  if (header) l.carry(*header);
  if (xff) {
    const bool on = recursive != nullptr && recursive->args.size() == 1 && recursive->args[0] == "on";
    m.real_ip.push_back({"real_ip_recursive", on ? "true" : "false",
                         recursive ? origin(*recursive) : "nginx's default real_ip_recursive off"});
    if (recursive) l.carry(*recursive);
  } else if (recursive) {
    l.note(*recursive, "not needed: X-Real-IP holds one address");
  }
}

}  // namespace tlsfront::tools::nginx::detail
