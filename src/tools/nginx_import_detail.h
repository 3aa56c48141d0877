// Shared by the parts of import-nginx (tools/nginx_import.h): the tlsfront
// configuration being built, the record of what became of each directive,
// and nginx's inheritance of directives from outer blocks.
// Thread affinity: none (one owner).
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tools/nginx_import.h"

namespace tlsfront::tools::nginx::detail {

// key = value  # origin
struct Key {
  std::string key, value, origin;  // value is TOML ("\"10m\"", "true", "[...]"); origin "file:line" or a comment
};
using Keys = std::vector<Key>;

// The block chain of a context, innermost first: {location, server, http}.
using Chain = std::vector<const Directive*>;

struct Model {
  Keys root;  // workers
  struct Listen {
    std::string address;
    bool tls = true;
    bool redirect_https = true;  // tls = false only
    int https_port = 443;        // the port a redirecting one names
    bool h2 = false;
    int backlog = 0;        // 0: not set
    int tcp_fastopen = -1;  // listen ... fastopen=N; -1: not set (tlsfront's "auto")
    bool proxy_protocol = false;  // listen ... proxy_protocol
    bool quic = false;            // listen ... quic (HTTP/3 on the same address)
    bool quic_retry = false;      // quic_retry on (with quic)
    std::string origin;
  };
  std::vector<Listen> listens;
  // The real client address keys of every [[listen]] (trusted_proxies,
  // real_ip_header, real_ip_recursive), and proxy_protocol_from of those
  // with proxy_protocol (a TOML array; "" for none): import_client_address.
  Keys real_ip;
  Key proxy_protocol_from;
  Keys tls, session_cache, ticket_keys;
  struct Cert {
    std::string cert, key;
    std::vector<std::string> names;
    bool is_default = false;
    Keys ocsp;
    std::string origin;
    Keys client_auth;  // client_ca, verify_client, verify_depth, crl of its servers
  };
  std::vector<Cert> certs;
  struct Upstream {
    std::string name;
    Keys keys;
    std::string origin;
  };
  std::vector<Upstream> upstreams;
  // How a route's path is matched (path_prefix, path_exact, path_regex), in
  // the order nginx tries location kinds: exact, then a `^~` prefix, then
  // regular expressions, then the other prefixes.
  enum class Match { Exact, StopPrefix, Regex, Prefix };
  struct Route {
    std::string host, path, upstream, origin;
    Match match = Match::Prefix;
    Chain chain;    // the location's blocks (for the header directives that apply)
    Keys headers;   // response_headers = {...}, request_headers = {...}: inline tables
    Keys answer;    // return = {...} or redirect = {...} (then upstream is "")
    bool grpc = false;  // from grpc_pass: its header directives are grpc_set_header, grpc_hide_header
    Keys limits;        // access, limit_req, limit_conn (import_limits)
    Keys extra;         // access_log = false (location_log_switch)
  };
  std::vector<Route> routes;
  Keys response_headers, request_headers;  // [response_headers], [request_headers]: the defaults
  Keys compression;                        // [compression]
  Keys resolver;                           // [resolver]
  Keys log, limits, timeouts, http2;
  // [[limit_req]] / [[limit_conn]] (import_limits): tlsfront's zone name,
  // the nginx zone it comes from, its keys.
  struct Zone {
    std::string name, nginx_name;
    Keys keys;
  };
  std::vector<Zone> limit_req_zones, limit_conn_zones;
};

// What became of each directive: carried over, and/or the reasons it (or a
// parameter of it) is not.
class Ledger {
 public:
  void carry(const Directive& d) { carried_.insert(&d); }
  // The same reason twice (an http-level directive inherited by several servers) is kept once.
  void note(const Directive& d, std::string why) {
    auto& v = why_[&d];
    if (std::find(v.begin(), v.end(), why) == v.end()) v.push_back(std::move(why));
  }
  // `d` is a block whose children were looked at one by one (so each is listed).
  void examined(const Directive& d) { examined_.insert(&d); }
  // `d` has the same value as `ref`, already handled: it gets the same record.
  void same_as(const Directive& d, const Directive& ref) {
    if (carried(ref)) carry(d);
    if (auto it = why_.find(&ref); it != why_.end()) {
      auto copy = it->second;
      for (auto& w : copy) note(d, w);
    }
  }
  bool carried(const Directive& d) const { return carried_.count(&d) != 0; }
  bool noted(const Directive& d) const { return why_.count(&d) != 0; }
  bool was_examined(const Directive& d) const { return examined_.count(&d) != 0; }

  // Names import-nginx maps when a server it imports uses them (the fallback reason differs).
  void handled(std::set<std::string> names) { handled_ = std::move(names); }

  // Every directive of `tree` not carried over, or carried with notes, in order.
  std::vector<Note> list(const std::vector<Directive>& tree) const;

 private:
  void list_into(const std::vector<Directive>& v, std::vector<Note>& out) const;
  std::set<const Directive*> carried_, examined_;
  std::set<std::string> handled_;
  std::map<const Directive*, std::vector<std::string>> why_;
};

// Adds `k` to `ks` unless its key is there already (a repeated directive,
// or two that set one key): then `d` gets a note and it is false.
bool put(Keys& ks, Key k, const Directive& d, Ledger& l);

// The directives named `name` that apply in `chain`: those of the innermost
// block that has any (nginx's inheritance of array and scalar directives).
std::vector<const Directive*> effective(const Chain& chain, const std::string& name);
const Directive* effective_one(const Chain& chain, const std::string& name);  // the last of those, or null
// The same directives with the same arguments, in order.
bool same_args(const std::vector<const Directive*>& a, const std::vector<const Directive*>& b);

// A file of server and upstream blocks without an http block (a
// sites-available file, which nginx.conf's http block includes): its
// directives wrapped in one http block (at the place of the first), as nginx
// reads them; nullopt for any other file (one with an http block, or neither
// server nor upstream blocks).
std::optional<Directive> http_of_site_file(const std::vector<Directive>& tree);

std::string join_args(const Directive& d);
size_t count_all(const std::vector<Directive>& v);  // directives in `v`, nested ones included
// "a.conf:12: ssl_protocols TLSv1 ..." for TOML comments.
std::string origin(const Directive& d);
// `path` absolute: relative ones against `base_dir`, normalized.
std::string absolute(const std::string& base_dir, const std::string& path);
bool has_variable(const std::string& s);
bool one_path(const Directive& d);  // one non-empty file name without variables
// An nginx value (add_header, proxy_set_header, return's URL) as a tlsfront
// header or location value: the same `$name` / `${name}` syntax, limited to
// the first `variables` of config::kHeaderVariables; a `$` that starts no
// name is literal ("$$"); nginx's $ssl_client_escaped_cert is tlsfront's
// $ssl_client_cert. Empty, and the report line in `why`, when it cannot be
// one; a value carried with a difference worth reporting ($ssl_client_fingerprint)
// also sets `why` (nginx_import_headers.cc).
std::string tlsfront_value(const std::string& nginx_value, int variables, std::string& why);

struct Server {
  const Directive* block = nullptr;
  Chain chain;  // {server, http}
  bool tls = false;
  bool is_default = false;
  std::vector<std::string> exact_names, wildcard_names;  // for routes and [[certificate]] names
  struct Cleartext {
    std::string address;
    const Directive* directive;
    int tcp_fastopen;  // as Model::Listen's
    bool proxy_protocol;
  };
  std::vector<Cleartext> cleartext;  // listens without ssl
};

// Cleartext listens (nginx_import_cleartext.cc). cleartext_listens: those
// of `s` as tls = false listeners, redirecting to https, or (`redirect`
// false: `s` also has TLS listens, so nginx serves its locations on both)
// with redirect_https = false. redirect_server: `s` has cleartext listens
// only and just redirects to https (`return 301|302|307|308
// https://...$request_uri`): its listens become redirecting listeners, and
// true; false (nothing written) when it does anything else.
void cleartext_listens(const Server& s, bool redirect, Model& m, Ledger& ledger, int https_port = 443);
bool redirect_server(const Server& s, Model& m, Ledger& ledger);

// The access log (nginx_import_log.cc). import_access_log: the access_log
// directives `v` that apply to the default server as [log] access_log (the
// first file, relative to `base_dir`, or "" for `off`; syslog: and paths
// with variables listed, a second file listed), the log_format of `http`
// it names listed with the fields its variables map to.
// default_access_log: for a default server with no access_log at all
// (nginx then logs to its compiled-in default), [log] access_log =
// kDefaultAccessLog, and a report line on the server block saying so.
inline constexpr const char* kDefaultAccessLog = "/var/log/tlsfront/access.log";
void import_access_log(const std::vector<const Directive*>& v, const Directive* http, const std::string& base_dir,
                       Model& m, Ledger& l);
void default_access_log(const Server& default_server, Model& m, Ledger& l);

// Compression (nginx_import_compression.cc): the default server's gzip,
// gzip_types, gzip_min_length and gzip_comp_level as [compression]
// (encodings = ["gzip"]).
void import_compression(const Server& default_server, Model& m, Ledger& ledger);

// The resolver (nginx_import_resolver.cc): the default server's resolver
// (addresses, valid=, ipv4=, ipv6=) and resolver_timeout as [resolver].
void import_resolver(const Server& default_server, Model& m, Ledger& ledger);

// Certificates (nginx_import_certificates.cc): the ssl_certificate and
// ssl_certificate_key pairs of the TLS `servers`, one Model::Cert per
// distinct pair (the names of every server using it), relative paths against
// `base_dir`, with each server's ssl_stapling* settings.
void import_certificates(const std::vector<Server>& servers, const std::string& base_dir, Model& m, Ledger& ledger);

// Client certificates (nginx_import_client_certificates.cc): the
// ssl_verify_client, ssl_client_certificate, ssl_crl and ssl_verify_depth
// that apply to server `s` as the keys of its certificates (client_ca,
// verify_client = "required" for `on`, "optional" for `optional` and
// `optional_no_ca`, crl, verify_depth; relative paths against `base_dir`);
// none when verification is off. What differs from nginx is reported.
Keys client_certificate_keys(const Server& s, const std::string& base_dir, Ledger& ledger);

// What a location passes with (nginx_import_grpc.cc): proxy_pass (HTTP/1.1
// upstreams) or grpc_pass (an h2c upstream), and the names of the
// directives that go with each.
enum class PassKind { Http, Grpc };
struct PassDirectives {
  const char *pass, *connect_timeout, *read_timeout, *send_timeout, *set_header, *hide_header;
};
const PassDirectives& pass_directives(PassKind kind);
// grpc_pass's argument (`grpc://host:port`, `grpcs://host:port` — then
// `tls` is set — or `host:port`) as "host[:port]"; empty, and the report
// line in `why`, for unix: and anything else.
std::string grpc_target(const std::string& arg, bool& tls, std::string& why);

// The `tls` inline table of the [[upstream]] a `proxy_pass https://` (or
// `grpc_pass grpcs://`, `kind`) location `pass` goes to, from the
// proxy_ssl_* (grpc_ssl_*) directives that apply in `chain`
// (nginx_import_upstream_tls.cc): verify = false unless nginx verifies (its
// default does not: reported), trusted_ca, server_name (ssl_name, else
// nginx's $proxy_host: `proxy_host`), certificate, key, protocols,
// session_reuse; the rest reported. Relative paths against `base_dir`.
std::string upstream_tls_value(const Directive& pass, const Chain& chain, PassKind kind, const std::string& proxy_host,
                               const std::string& base_dir, Ledger& l);

// Upstreams and routes (nginx_import_proxy.cc): the upstream blocks of
// `http`, the proxy_pass and grpc_pass locations of `servers` (grpc_pass:
// an [[upstream]] with protocol = "h2c", its timeouts from grpc_*_timeout).
// `def` is the default server.
void import_proxy(const Directive& http, const std::vector<Server>& servers, size_t def, const std::string& base_dir,
                  Model& m, Ledger& ledger);

// Files (nginx_import_files.cc), once import_proxy has made the routes of
// `location` (out[first_route..]; `routed`: it made some): a location that
// neither proxies nor returns, where a root (its own or inherited) or its
// alias applies, becomes a route with root or alias (relative paths against
// `base_dir`) and the index, try_files, expires, gzip_static (precompressed
// = ["gzip"]), autoindex off and disable_symlinks that apply, in
// Model::Route::answer (they replace the upstream); then `access_log off`
// in `location` becomes access_log = false on each of its routes. Returns
// whether the location has a route now.
bool import_file_location(const Directive& location, const Chain& chain, const std::string& path, Model::Match match,
                          const std::string& base_dir, size_t first_route, bool routed, std::vector<Model::Route>& out,
                          Ledger& l);

// nginx's `return code [text|URL]` / `return URL` as a route's fixed answer
// (nginx_import_return.cc): redirect = {...} for 301, 302, 303, 307, 308
// (and a bare URL: 302), return = {...} otherwise (the body literal, the
// Content-Type nginx's default_type). Empty and a report line when tlsfront
// cannot answer so.
Keys fixed_answer(const Directive& ret, const Chain& chain, Ledger& l);

// Header rules (nginx_import_headers.cc): add_header, proxy_hide_header and
// proxy_set_header as nginx applies them to each imported route (per
// directive name, those of the innermost block that has any), written as the
// defaults ([response_headers], [request_headers]: what the default server's
// own level applies, which also reaches tlsfront's own answers) and, on a
// route where nginx applies others, as that route's rules with
// inherit = false. An `add_header Strict-Transport-Security ... always`
// that every route gets becomes [tls] hsts. Runs after import_proxy; then
// lists the header directives of `http` that no route gets.
void import_headers(const Directive& http, const Server& default_server, Model& m, Ledger& ledger);

// The real client address (nginx_import_client_address.cc): the default
// server's set_real_ip_from, real_ip_header and real_ip_recursive (nginx's
// realip module) as every [[listen]]'s trusted_proxies, real_ip_header
// (X-Forwarded-For or X-Real-IP; nginx's default is X-Real-IP) and
// real_ip_recursive (nginx's default off); with `real_ip_header
// proxy_protocol`, set_real_ip_from becomes proxy_protocol_from of the
// listeners with `listen ... proxy_protocol` (nginx then believes the
// header from those peers only). Another server's different values, names
// instead of addresses and other headers are listed.
void import_client_address(const std::vector<Server>& servers, size_t def, Model& m, Ledger& ledger);

// The TOML text of `m` (nginx_render.cc).
std::string render(const Model& m, const std::string& source, size_t not_carried);

// Access rules and limits (nginx_import_limits.cc): the allow/deny,
// limit_req and limit_conn that apply to each proxying route (its chain) as
// the route's access, limit_req and limit_conn, and the zones they use
// (limit_req_zone, limit_conn_zone of `http`) as [[limit_req]] and
// [[limit_conn]], one per distinct use.
void import_limits(const Directive& http, Model& m, Ledger& l);

}  // namespace tlsfront::tools::nginx::detail
