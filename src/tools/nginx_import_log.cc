// import-nginx: access_log (and the log_format it names) → [log]
// access_log, and nginx's default access log where it has none
// (tools/nginx_import_detail.h: import_access_log, default_access_log).
#include <string>
#include <vector>

#include "tools/nginx_import_detail.h"
#include "tools/nginx_values.h"

namespace tlsfront::tools::nginx::detail {

namespace {

// The log_format NAME of `http` gets the reason it is not carried over.
void log_format(const Directive* http, const std::string& name, Ledger& l) {
  if (http == nullptr) return;
  for (const Directive& d : http->children) {
    if (d.name == "log_format" && !d.args.empty() && d.args[0] == name) l.note(d, log_format_reason(d.args));
  }
}

}  // namespace

void import_access_log(const std::vector<const Directive*>& v, const Directive* http, const std::string& base_dir,
                       Model& m, Ledger& l) {
  bool kept = false;
  for (const Directive* d : v) {
    if (d->args.empty()) continue;
    const std::string& path = d->args[0];
    if (kept) {
      l.note(*d, "not carried over: tlsfront writes one access log (the first is kept)");
      continue;
    }
    if (path == "off") {
      m.log.push_back({"access_log", "\"\"", origin(*d)});
      l.carry(*d);
      kept = true;
      continue;
    }
    if (path.starts_with("syslog:") || has_variable(path) || path.empty()) {
      l.note(*d, "not carried over: the access log is a file path without variables");
      continue;
    }
    m.log.push_back({"access_log", toml_string(absolute(base_dir, path)), origin(*d)});
    l.carry(*d);
    kept = true;
    for (size_t i = 1; i < d->args.size(); ++i) {
      const std::string& p = d->args[i];
      if (i == 1 && p.find('=') == std::string::npos) {
        l.note(*d, "format " + p + " not carried over: tlsfront writes one JSON object per request, its own fields");
        log_format(http, p, l);
      } else if (p.starts_with("buffer=") || p.starts_with("flush=")) {
        l.note(*d, "parameter " + p + " not needed: lines are written in 64 KiB batches, within 50 ms");
      } else {
        l.note(*d, "parameter " + p + " not carried over: no equivalent");
      }
    }
  }
}

void default_access_log(const Server& default_server, Model& m, Ledger& l) {
  m.log.push_back({"access_log", toml_string(kDefaultAccessLog), "nginx's default: no access_log, yet nginx logs"});
  l.note(*default_server.block,
         std::string("no access_log: nginx logs every request by default (to its compiled-in path, e.g. "
                     "/var/log/nginx/access.log, combined format), tlsfront only to a configured file: written as "
                     "[log] access_log = \"") +
             kDefaultAccessLog +
             "\" (tlsfront's JSON lines; the systemd unit's LogsDirectory, rotated by its logrotate file)");
}

}  // namespace tlsfront::tools::nginx::detail
