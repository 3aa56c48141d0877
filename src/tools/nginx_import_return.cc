// import-nginx: a location's `return` → the route's fixed answer (redirect
// or return; tools/nginx_import_detail.h, fixed_answer).
#include <fmt/format.h>

#include "config/config.h"
#include "tools/nginx_import_detail.h"
#include "tools/nginx_values.h"

namespace tlsfront::tools::nginx::detail {

Keys fixed_answer(const Directive& ret, const Chain& chain, Ledger& l) {
  const auto& a = ret.args;
  bool bare_url = a.size() == 1 && (a[0].starts_with("http://") || a[0].starts_with("https://") || a[0].starts_with("$scheme"));
  int code = 302;
  if (!bare_url) {
    if (a.empty() || a.size() > 2 || a[0].empty() || a[0].size() > 3 ||
        a[0].find_first_not_of("0123456789") != std::string::npos) {
      l.note(ret, "not carried over: return code [text] or return URL");
      return {};
    }
    code = std::stoi(a[0]);
  }
  if (code == 444) {
    l.note(ret, "no equivalent: 444 closes the connection without a response");
    return {};
  }
  bool redirect = code == 301 || code == 302 || code == 303 || code == 307 || code == 308;
  if (redirect) {
    const std::string& url = a.size() == 2 ? a[1] : a[0];
    std::string why;
    std::string location = url.empty() ? "" : tlsfront_value(url, config::kLocationVariableCount, why);
    if (location.empty()) {
      l.note(ret, why.empty() ? "not carried over: a redirect without a URL" : why);
      return {};
    }
    l.carry(ret);
    return {{"redirect", fmt::format("{{ status = {}, location = {} }}", code, toml_string(location)), origin(ret)}};
  }
  if (code < 200 || code > 599) {
    l.note(ret, "not carried over: tlsfront's return answers 200..599");
    return {};
  }
  std::string fields = fmt::format("status = {}", code);
  if (a.size() == 2 && code != 204 && code != 304) {
    if (has_variable(a[1])) {
      l.note(ret, "not carried over: the text has variables (tlsfront's body is literal)");
      return {};
    }
    const Directive* type = effective_one(chain, "default_type");
    std::string content_type = type && type->args.size() == 1 ? type->args[0] : "text/plain";
    fields += ", body = " + toml_string(a[1]) + ", content_type = " + toml_string(content_type);
  } else if (a.size() == 1) {
    l.note(ret, "carried over; nginx sends its own HTML page for the status, tlsfront an empty body");
  }
  l.carry(ret);
  return {{"return", "{ " + fields + " }", origin(ret)}};
}

}  // namespace tlsfront::tools::nginx::detail
