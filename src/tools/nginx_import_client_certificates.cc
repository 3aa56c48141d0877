// import-nginx: a server's client certificate verification (nginx's
// ssl_verify_client, ssl_client_certificate, ssl_crl, ssl_verify_depth) →
// its certificates' client_ca, verify_client, crl, verify_depth
// (tools/nginx_import_detail.h has the rules; the $ssl_client_* variables of
// proxy_set_header are mapped in nginx_import_headers.cc).
#include <charconv>

#include "tools/nginx_import_detail.h"
#include "tools/nginx_values.h"

namespace tlsfront::tools::nginx::detail {

Keys client_certificate_keys(const Server& s, const std::string& base, Ledger& l) {
  const Directive* verify = effective_one(s.chain, "ssl_verify_client");
  const Directive* ca = effective_one(s.chain, "ssl_client_certificate");
  const Directive* crl = effective_one(s.chain, "ssl_crl");
  const Directive* depth = effective_one(s.chain, "ssl_verify_depth");
  const std::string mode = verify && verify->args.size() == 1 ? verify->args[0] : "off";
  if (mode == "off") {
    if (verify) l.carry(*verify);  // tlsfront's default
    for (const Directive* d : {ca, crl, depth}) {
      if (d) l.note(*d, "not needed: ssl_verify_client is off");
    }
    return {};
  }
  if (mode != "on" && mode != "optional" && mode != "optional_no_ca") {
    l.note(*verify, "not carried over: on, optional, optional_no_ca or off");
    return {};
  }
  if (ca == nullptr || !one_path(*ca)) {
    const std::string why = "not carried over: tlsfront verifies client certificates against client_ca, which needs "
                            "one ssl_client_certificate file";
    l.note(*verify, why);
    if (ca) l.note(*ca, why);
    return {};
  }
  Keys out;
  out.push_back({"client_ca", toml_string(absolute(base, ca->args[0])), origin(*ca)});
  l.carry(*ca);
  out.push_back({"verify_client", mode == "on" ? "\"required\"" : "\"optional\"", origin(*verify)});
  l.carry(*verify);
  if (mode == "on") {
    l.note(*verify, "carried over: a client without a valid certificate fails the TLS handshake (the alert says why), "
                    "where nginx completes it and answers 400");
  } else if (mode == "optional") {
    l.note(*verify, "carried over: a certificate that fails verification is let through with $ssl_client_verify = "
                    "FAILED:<reason>, where nginx answers 400; set require_client_cert = true on the routes that "
                    "need a verified one");
  } else {
    l.note(*verify, "carried over as optional: tlsfront still verifies against client_ca and passes the verdict on "
                    "($ssl_client_verify)");
  }
  if (crl) {
    if (one_path(*crl)) {
      out.push_back({"crl", toml_string(absolute(base, crl->args[0])), origin(*crl)});
      l.carry(*crl);
    } else {
      l.note(*crl, "not carried over: one file name without variables");
    }
  }
  if (depth) {
    int n = 0;
    const std::string* a = depth->args.size() == 1 ? &depth->args[0] : nullptr;
    const bool number = a && std::from_chars(a->data(), a->data() + a->size(), n).ptr == a->data() + a->size();
    if (number && n >= 1 && n <= 16) {
      out.push_back({"verify_depth", std::to_string(n), origin(*depth)});
      l.carry(*depth);
    } else {
      l.note(*depth, "not carried over: an integer 1..16");
    }
  }
  return out;
}

}  // namespace tlsfront::tools::nginx::detail
