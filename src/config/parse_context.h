// Internal to src/config: the shared machinery of the parse_<section>.cc files.
// ParseContext carries what every error and relative path needs (source name,
// base directory); TableReader wraps one TOML table at a key path and offers
// typed getters that return Errc::Config errors formatted
// "<file>:<line>:<column>: <key path>: <message>", plus unknown-key detection.
//
// This is the one header that includes toml++: it is included only by the .cc
// files of src/config (never by a public header), so the toml++ types and its
// TOML_* configuration stay private to this folder.
//
// Error positions: a bad value points at its key; a bad array element at the
// element; a missing key at its table's header; a missing table at 1:1.
// Single-threaded: one load at a time per context.
#pragma once

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "config/toml_fixed.h"

#include "config/config.h"
#include "util/result.h"

namespace tlsfront::config::detail {

class ParseContext {
 public:
  // `source_name` is what messages call the file; relative paths resolve
  // against `base_dir`.
  ParseContext(std::string source_name, std::filesystem::path base_dir);

  const std::string& source_name() const { return source_name_; }

  // "file:line:col" of `where` (1:1 when toml++ recorded no position).
  std::string position(const toml::source_region& where) const;

  // Errc::Config "file:line:col: key_path: message".
  Error error(const toml::source_region& where, std::string_view key_path,
              std::string_view message) const;

  // `path` made absolute against the base directory and normalized.
  std::string resolve_path(std::string_view path) const;

  // Set: TableReader::check_keys appends there every key it accepts, as
  // "table.key" without array indices (loader.h's accepted_keys).
  void record_accepted_keys(std::vector<std::string>* sink) { accepted_keys_ = sink; }
  std::vector<std::string>* accepted_keys() const { return accepted_keys_; }

 private:
  std::string source_name_;
  std::filesystem::path base_dir_;
  std::vector<std::string>* accepted_keys_ = nullptr;
};

// "string", "integer", ...: the bare form used in "got ...".
std::string_view type_name(toml::node_type type);

// Errc::Config "<pos of node>: path: expected <expected>, got <type of node>".
Error type_error(const ParseContext& ctx, const toml::node& node, std::string_view path,
                 std::string_view expected);

// `key` as it appears in a key path: bare when it is a TOML bare key, quoted otherwise.
std::string key_segment(std::string_view key);

enum class Presence { Optional, Required };

// One TOML table at `path` ("" for the root, "upstream[1]", "tls"). Borrows
// `ctx` and `table`, which must outlive it. Getters leave `out` untouched when
// an optional key is absent.
class TableReader {
 public:
  TableReader(const ParseContext& ctx, const toml::table& table, std::string path);

  const ParseContext& context() const { return ctx_; }
  const toml::table& table() const { return table_; }
  const std::string& path() const { return path_; }

  // Errc::Config naming the first key (in file order) not in `known`; with
  // ParseContext::record_accepted_keys set, also records `known`.
  [[nodiscard]] Status check_keys(std::initializer_list<std::string_view> known) const;

  // The node at `key`, or nullptr.
  const toml::node* find(std::string_view key) const;
  // "path.key" (or "key" at the root).
  std::string path_of(std::string_view key) const;
  // Errc::Config at the position of `key`, which must be present.
  Error error_at(std::string_view key, std::string_view message) const;
  // "file:line:col" of `key`, which must be present.
  std::string position_of(std::string_view key) const;
  // Errc::Config at this table's header: missing required key.
  Error missing(std::string_view key) const;

  [[nodiscard]] Status get_string(std::string_view key, std::string& out,
                                  Presence presence = Presence::Optional,
                                  bool allow_empty = true) const;
  [[nodiscard]] Status get_bool(std::string_view key, bool& out) const;
  [[nodiscard]] Status get_int(std::string_view key, int64_t min, int64_t max, int64_t& out) const;
  // A string "30s" or an integer of seconds, at least `min`.
  [[nodiscard]] Status get_duration(std::string_view key, Millis min, Millis& out) const;
  // A string "16k" or an integer of bytes, within min..max.
  [[nodiscard]] Status get_size(std::string_view key, uint64_t min, uint64_t max,
                                uint64_t& out) const;
  // A path string resolved by the context; "" kept as "" when `allow_empty`.
  [[nodiscard]] Status get_path(std::string_view key, std::string& out, Presence presence,
                                bool allow_empty) const;
  // The array at `key`; nullptr when absent and optional.
  [[nodiscard]] Result<const toml::array*> get_array(std::string_view key,
                                                     Presence presence) const;

  // Integer getter into any integer field type; range-checked by get_int.
  template <typename T>
  [[nodiscard]] Status get_integer(std::string_view key, int64_t min, int64_t max, T& out) const {
    int64_t value = static_cast<int64_t>(out);
    Status status = get_int(key, min, max, value);
    if (status.ok()) out = static_cast<T>(value);
    return status;
  }

 private:
  const ParseContext& ctx_;
  const toml::table& table_;
  std::string path_;
};

// name = "...": a metrics label chosen by the operator ([[listen]],
// [[route]]): 1..64 of letters, digits and "-_.:/". Absent: `out` untouched.
[[nodiscard]] Status get_label_name(const TableReader& t, std::string& out);

// The tables of the array of tables `key` of `root` ([[listen]] etc.); empty
// when absent. Errc::Config when it is not an array of tables.
[[nodiscard]] Result<std::vector<const toml::table*>> tables_of(const TableReader& root,
                                                                std::string_view key);

// The table `key` of `root` ([tls] etc.), or nullptr when absent.
// Errc::Config when it is not a table.
[[nodiscard]] Result<const toml::table*> table_of(const TableReader& root, std::string_view key);

// Errc::Config at file:1:1: a required table is absent.
Error missing_table(const ParseContext& ctx, std::string_view key, bool array_of_tables);

// The section parsers, one per parse_<section>.cc. Each reads its table(s)
// from `root` and fills `out`; absent optional tables keep the defaults.
[[nodiscard]] Status parse_listen(const TableReader& root, std::vector<Listener>& out);
// Once [[upstream]] is parsed: every acme_upstream of `listeners` names one.
[[nodiscard]] Status check_acme_upstreams(const TableReader& root, const std::vector<Listener>& listeners,
                                          const std::vector<Upstream>& upstreams);
// parse_client_address.cc: proxy_protocol, proxy_protocol_from,
// trusted_proxies, real_ip_header and real_ip_recursive of one [[listen]].
[[nodiscard]] Status parse_client_address(const TableReader& t, Listener& listener);
[[nodiscard]] Status parse_tls(const TableReader& root, Tls& out);
// The `protocols` key of `t` ([tls] or [upstream.tls]): "TLSv1.2" /
// "TLSv1.3", not empty, no duplicate; `out` untouched when absent.
[[nodiscard]] Status parse_tls_protocols(const TableReader& t, std::vector<TlsVersion>& out);
// [[certificate]] entries or the [tls] certificate/key shorthand (`tls` is the
// [tls] table); called by parse_tls after tls.strict_sni is read.
[[nodiscard]] Status parse_certificates(const TableReader& root, const TableReader& tls, Tls& out);
// parse_client_auth.cc: client_ca, verify_client, verify_depth and crl of `t`
// ([tls], or a [[certificate]] entry) over `out` (the entry starts from
// [tls]'s); `out` untouched when none is present.
[[nodiscard]] Status parse_client_auth(const TableReader& t, ClientAuth& out);
// parse_ocsp.cc: the OCSP keys of one certificate, from the table `ocsp` of
// `parent` ([tls] now; a [[certificate]] entry later), and the global
// `ocsp_cache_dir` key of `tls`.
[[nodiscard]] Status parse_ocsp(const TableReader& parent, Ocsp& out);
// parse_cert_store.cc: [tls.store] of `tls`; `out` untouched when absent.
[[nodiscard]] Status parse_cert_store(const TableReader& tls, CertStore& out);
[[nodiscard]] Status parse_ocsp_cache_dir(const TableReader& tls, std::string& out);
// parse_acme.cc: [acme], once [tls] and [[route]] are parsed (it needs
// [tls.store]; names = "from_routes" reads the routes' hosts).
[[nodiscard]] Status parse_acme(const TableReader& root, const Config& config, Acme& out);
[[nodiscard]] Status parse_upstream(const TableReader& root, std::vector<Upstream>& out);
// parse_upstream_tls.cc: the `tls` key of one [[upstream]] table `t` (a
// table, or true/false) into `u.tls`, once u.protocol is known ("h2"
// enables it).
[[nodiscard]] Status parse_upstream_tls(const TableReader& t, Upstream& u);
// parse_health_check.cc: the `health_check` table of one [[upstream]] `t`
// into `u.health_check`, once u.protocol is known (type = "grpc" needs h2c
// or h2).
[[nodiscard]] Status parse_health_check(const TableReader& t, Upstream& u);
[[nodiscard]] Status parse_route(const TableReader& root, const Config& config,
                                 std::vector<Route>& out);
// parse_compression.cc: top-level [compression] into `defaults`, then each
// [[route]]'s compress* keys over a copy of them into routes[i].compression
// (`routes` as parse_route filled them, one per [[route]] table).
// parse_files.cc: the file keys of a [[route]] `t` with root or alias.
[[nodiscard]] Status parse_files(const TableReader& t, const Route& route, FileRoute& out);
// parse_files.cc: the top-level [open_file_cache] table.
[[nodiscard]] Status parse_open_file_cache(const TableReader& root, OpenFileCache& out);
// parse_files.cc: try_files = [..., "@name"]: the named route (with an
// upstream) into FileRoute::fallback_route, once routes are named.
[[nodiscard]] Status resolve_try_files_routes(const std::vector<const toml::table*>& tables, const TableReader& root,
                                              std::vector<Route>& routes);
[[nodiscard]] Status parse_compression(const TableReader& root, Compression& defaults, std::vector<Route>& routes);
[[nodiscard]] Status parse_log(const TableReader& root, Log& out);
// parse_resolver.cc: [resolver].
[[nodiscard]] Status parse_resolver(const TableReader& root, Resolver& out);
[[nodiscard]] Status parse_admin(const TableReader& root, const std::vector<Listener>& listeners, Admin& out);
[[nodiscard]] Status parse_limits(const TableReader& root, Limits& out);
// server_name, verify, trusted_ca, certificate, key and protocols: the keys
// a TLS client table shares ([upstream.tls], redis_tls), with their rules
// (config/parse_upstream_tls.cc).
[[nodiscard]] Status parse_tls_client_keys(const TableReader& t, std::string& server_name, bool& verify,
                                           std::string& trusted_ca, std::string& certificate, std::string& key,
                                           std::vector<TlsVersion>& protocols);
template <typename T>
[[nodiscard]] Status parse_tls_client_keys(const TableReader& t, T& out) {
  return parse_tls_client_keys(t, out.server_name, out.verify, out.trusted_ca, out.certificate, out.key,
                               out.protocols);
}
// The keys of a table with a Redis, after `redis` (config/parse_redis.cc).
inline constexpr std::string_view kRedisKeys[] = {"redis",         "redis_user",    "redis_password_file",
                                                  "redis_prefix",  "redis_timeout", "redis_tls"};
// redis_user, redis_password_file, redis_prefix of a table with a Redis
// (config/parse_redis.cc).
[[nodiscard]] Status parse_redis_auth(const TableReader& t, std::string& user, std::string& password_file,
                                      std::string& prefix);
// redis_tls = true | false | { enabled, server_name, verify, trusted_ca,
// certificate, key, protocols } (an inline table or [<table>.redis_tls]):
// TLS to the Redis; an error when set with a Unix socket (`unix_socket`
// non-empty) (config/parse_redis.cc).
[[nodiscard]] Status parse_redis_tls(const TableReader& t, const std::string& unix_socket, RedisTls& out);
// Where and how a table's Redis is reached: redis ("host:port"; also
// "unix:/path" when `unix_socket` is not null), parse_redis_auth's keys,
// redis_timeout (min_timeout..max_timeout, a whole number of seconds at
// most) and redis_tls (config/parse_redis.cc).
[[nodiscard]] Status parse_redis_connection(const TableReader& t, Endpoint& address, std::string* unix_socket,
                                            std::string& user, std::string& password_file, std::string& prefix,
                                            Millis& timeout, Millis min_timeout, Millis max_timeout,
                                            RedisTls& tls);
// The same for a table struct with the usual field names (redis,
// redis_unix_socket when it has one, redis_user, redis_password_file,
// redis_prefix, redis_timeout, redis_tls).
template <typename T>
[[nodiscard]] Status parse_redis_connection(const TableReader& t, T& out, Millis min_timeout, Millis max_timeout) {
  std::string* unix_socket = nullptr;
  if constexpr (requires { out.redis_unix_socket; }) unix_socket = &out.redis_unix_socket;
  return parse_redis_connection(t, out.redis, unix_socket, out.redis_user, out.redis_password_file, out.redis_prefix,
                                out.redis_timeout, min_timeout, max_timeout, out.redis_tls);
}
// `access` of a [[listen]] or [[route]] (config/parse_access.cc).
[[nodiscard]] Status parse_access(const TableReader& t, std::vector<AccessRule>& out);
// [[limit_req]] and [[limit_conn]] zones.
[[nodiscard]] Status parse_limit_zones(const TableReader& root, std::vector<LimitReqZone>& req,
                                       std::vector<LimitConnZone>& conn);
// A [[route]]'s access, limit_req and limit_conn (zones parsed before).
[[nodiscard]] Status parse_route_limits(const TableReader& t, const std::vector<LimitReqZone>& req,
                                        const std::vector<LimitConnZone>& conn, Route& route);
[[nodiscard]] Status parse_timeouts(const TableReader& root, Timeouts& out);
[[nodiscard]] Status parse_http2(const TableReader& root, Http2& out);
// parse_headers.cc: the table `key` of `parent` (response_headers or
// request_headers; `in_route`: a [[route]]'s, which may say inherit), its
// tls.hsts value, and the top-level request_id_header.
// RFC 9110 §5.6.2 tchar (header names, methods).
bool is_tchar(unsigned char c);

[[nodiscard]] Status parse_header_rules(const TableReader& parent, std::string_view key, HeaderDirection direction,
                                        bool in_route, HeaderRules& out);
[[nodiscard]] Status parse_hsts(const TableReader& tls, std::string& out);
// A header value (or a redirect's location) at `node`: a string split into
// literal and variable parts, the variables being the first `variables` of
// kHeaderVariables (kHeaderVariableCount, or kLocationVariableCount).
[[nodiscard]] Status parse_header_value(const ParseContext& ctx, const toml::node& node, const std::string& path,
                                        int variables, std::vector<HeaderValuePart>& out);
[[nodiscard]] Status parse_request_id_header(const TableReader& root, std::string& out);

}  // namespace tlsfront::config::detail
