// Client certificates (mTLS): client_ca, verify_client, verify_depth and crl
// of [tls] (every name's default) or of one [[certificate]] entry (its names'
// own). The files are read by tls/client_auth.cc when the SSL_CTX is built;
// here only the shape and the keys' dependencies.
#include <string>

#include "config/parse_context.h"
#include "config/units.h"

namespace tlsfront::config::detail {

Status parse_client_auth(const TableReader& t, ClientAuth& out) {
  const bool own = t.find("client_ca") || t.find("verify_client") || t.find("verify_depth") || t.find("crl");
  if (!own) return {};
  out.setting = t.path();
  if (t.find("client_ca")) {
    if (Status s = t.get_path("client_ca", out.ca, Presence::Optional, false); !s.ok()) return s;
    out.ca_origin = t.position_of("client_ca");
  }
  if (t.find("crl")) {
    // "" turns off an inherited CRL.
    if (Status s = t.get_path("crl", out.crl, Presence::Optional, true); !s.ok()) return s;
    out.crl_origin = t.position_of("crl");
  }
  // OpenSSL's limit is far above; a longer client chain is a misconfiguration.
  if (Status s = t.get_integer("verify_depth", 1, 16, out.depth); !s.ok()) return s;
  std::string verify;
  if (Status s = t.get_string("verify_client", verify); !s.ok()) return s;
  if (verify == "off") {
    out.verify = VerifyClient::Off;
  } else if (verify == "optional") {
    out.verify = VerifyClient::Optional;
  } else if (verify == "required") {
    out.verify = VerifyClient::Required;
  } else if (!verify.empty()) {
    return t.error_at("verify_client",
                      "unknown value " + quote(verify) + " (expected \"off\", \"optional\" or \"required\")");
  } else if (t.find("verify_client")) {
    return t.error_at("verify_client", "must not be empty (expected \"off\", \"optional\" or \"required\")");
  }
  if (out.enabled() && out.ca.empty()) {
    return t.error_at(t.find("verify_client") ? "verify_client" : t.find("crl") ? "crl" : "verify_depth",
                      "needs client_ca (the CAs client certificates are verified against)");
  }
  if (!out.enabled()) {
    for (std::string_view key : {"crl", "verify_depth"}) {
      if (t.find(key) && !(key == "crl" && out.crl.empty())) {
        return t.error_at(key, "only used with verify_client = \"optional\" or \"required\"");
      }
    }
  }
  return {};
}

}  // namespace tlsfront::config::detail
