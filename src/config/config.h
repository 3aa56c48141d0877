// Config: the validated configuration as plain structs with their defaults.
// Produced by config::load_file (loader.h) from one TOML file; immutable once
// built and shared read-only by every thread through a Generation.
// Every default here is documented in conf/tlsfront.toml.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/files_config.h"
#include "config/listener_config.h"
#include "config/upstream_config.h"
#include "config/values.h"
#include "util/ip_address.h"

namespace re2 {
class RE2;
}

namespace tlsfront::config {

enum class SessionStore { Memory, Redis };
enum class TicketKeySource { Auto, Files, Redis };

// redis_tls = true | { ... } (every table with a Redis: [tls.session_cache],
// [tls.ticket_keys], [tls.store], [[limit_req]]): TLS to that Redis
// (redis/tls_context.h), with the keys of [upstream.tls] but session_reuse.
// Only with a TCP `redis` (Redis speaks TLS on its tls-port).
struct RedisTls {
  bool enabled = false;
  // server_name: SNI and the name the certificate must carry; "" = the
  // address's IP (a Redis written "localhost" is 127.0.0.1), not sent.
  std::string server_name;
  bool verify = true;       // false: any certificate
  std::string trusted_ca;   // PEM trust anchors; "" = OpenSSL's default store (the system's)
  std::string certificate;  // client certificate chain (PEM) for tls-auth-clients; with `key`
  std::string key;
  std::vector<TlsVersion> protocols{TlsVersion::Tls12, TlsVersion::Tls13};
  std::string origin;       // "file:line:col" of redis_tls, for errors found when loading files
  bool operator==(const RedisTls&) const = default;
};

// [tls.session_cache]: sessions kept by tlsfront (not OpenSSL's per-SSL_CTX
// cache), shared by all workers and kept across reloads.
struct SessionCache {
  bool enabled = true;
  uint64_t size_bytes = 10 * 1024 * 1024;  // size = "10m" (nginx shared:SSL:10m; ~40k TLS 1.3 sessions)
  Millis timeout{24 * 3600 * 1000};        // "1d"; also the ticket lifetime hint
  SessionStore store = SessionStore::Memory;
  // store = "redis" (data/redis_session_store.h): sessions are also written
  // to and looked up in Redis, shared by every node using the same prefix.
  Endpoint redis{"127.0.0.1", 6379};      // redis = "127.0.0.1:6379" (IP literal or localhost)
  std::string redis_user;                 // ACL user for AUTH; "" = AUTH <password> only
  std::string redis_password_file;        // path; read at start-up ("" = no AUTH)
  std::string redis_prefix = "tlsfront";  // keys are "<prefix>:sess:<hex>"
  Millis redis_timeout{50};               // a lookup slower than this is a miss (full handshake)
  RedisTls redis_tls;
  bool operator==(const SessionCache&) const = default;
};

// [tls.ticket_keys]: session ticket encryption keys (STEKs), RFC 5077.
struct TicketKeys {
  TicketKeySource source = TicketKeySource::Auto;
  Millis rotate_every{3600 * 1000};  // "1h" (source = "auto" or "redis")
  std::vector<std::string> files;    // nginx ssl_session_ticket_key format; the first encrypts
  std::string files_origin;          // "file:line:col" of `files`
  // source = "redis" (src/tls/TICKET_ROTATION.md). All nodes of a cluster must
  // use the same rotate_every, redis_prefix and wrap key.
  Endpoint redis{"127.0.0.1", 6379};  // redis = "127.0.0.1:6379" (IP literal or localhost)
  std::string redis_unix_socket;      // redis = "unix:/path" (then `redis` is unused)
  std::string redis_user;             // ACL user for AUTH; "" = AUTH <password> only
  std::string redis_password_file;    // path; the password is read from it at start-up ("" = no AUTH)
  std::string redis_prefix = "tlsfront";  // keys are "<prefix>:stek:<slot>"
  Millis redis_timeout{500};          // per Redis exchange (connect, each pipelined round)
  RedisTls redis_tls;
  std::string wrap_key_file;          // path to 32 random bytes: AES-256-GCM wraps the ring in Redis
  std::string redis_origin;           // "file:line:col" of `redis` (of the table when absent)
  bool operator==(const TicketKeys&) const = default;
};

// [tls.store]: the cluster certificate store in Redis (tls/store_entry.h,
// control/cert_store.h). Present = enabled; restart-only.
struct CertStore {
  bool enabled = false;
  // This node's region: it serves the region's entries and the "global"
  // ones; a name in both resolves to the region's. [a-z0-9._-], 1..64, not "global".
  std::string region;
  // Sealing keys (32 random bytes each): the first seals, every one unseals.
  std::vector<std::string> seal_key_files;
  std::string cache_dir;               // sealed copies of the last good entries ("" = none)
  Millis poll_interval{1000};          // version counters read this often
  Millis reconcile_interval{60'000};   // every index read this often, changed or not
  Endpoint redis{"127.0.0.1", 6379};   // as [tls.ticket_keys]
  std::string redis_unix_socket;
  std::string redis_user;
  std::string redis_password_file;
  std::string redis_prefix = "tlsfront";  // keys "<prefix>:cert:<region>:<name>", ...
  Millis redis_timeout{500};           // per Redis exchange (connect, each pipelined round)
  RedisTls redis_tls;
  bool operator==(const CertStore&) const = default;
};

enum class StaplePolicy { Lenient, Strict, MustStaple };

// [tls.ocsp] (with the [tls] certificate/key shorthand) or [certificate.ocsp]
// (per [[certificate]] entry): OCSP stapling of one certificate (tls/ocsp_stapler.h).
struct Ocsp {
  bool stapling = true;          // stapling = false: never staple this certificate
  std::string responder;         // responder = "http://..." overrides the leaf's AIA URL (nginx ssl_stapling_responder)
  std::string response_file;     // path of a DER OCSP response the operator provides (no fetching; SIGHUP re-reads)
  StaplePolicy staple_policy = StaplePolicy::Lenient;  // "lenient" | "strict" | "must_staple"
  int refresh_at_percent = 50;     // refresh at thisUpdate + this % of (nextUpdate - thisUpdate), 1..90
  int refresh_jitter_percent = 10; // ± up to this % of the window, 0..50
  Millis fetch_timeout{10'000};    // whole fetch (connect + request + response), 100ms..60s
  uint64_t max_response_bytes = 64 * 1024;  // responses over this are rejected, 1k..1m
  std::string origin;              // "file:line:col" of the ocsp table (of its parent when absent)
  std::string stapling_origin;     // "file:line:col" of an explicit `stapling` key; "" when left at its default
  // For messages about response_file: its key path and "file:line:col".
  std::string response_file_setting = "tls.ocsp.response_file", response_file_origin;
  bool operator==(const Ocsp&) const = default;
};

// [[certificate]], or the [tls] certificate/key shorthand (then it is the one
// entry, `is_default`). Selection by SNI: tls/cert_index.h.
// Client certificates (mTLS, RFC 8446 §4.3.2 / RFC 5246 §7.4.4; nginx's
// ssl_verify_client, ssl_client_certificate, ssl_verify_depth, ssl_crl):
// [tls] client_ca, verify_client, verify_depth and crl are the default of
// every certificate name; a [[certificate]] entry's own keys replace them
// for its names (one SSL_CTX per name set, chosen by SNI). The files are read
// when a configuration is loaded (start-up and every reload).
enum class VerifyClient : uint8_t { Off, Optional, Required };
struct ClientAuth {
  VerifyClient verify = VerifyClient::Off;  // verify_client = "off" | "optional" | "required"
  std::string ca;   // client_ca: PEM file of the CAs a client certificate must chain to (absolute)
  std::string crl;  // crl: PEM file of CRLs, checked for every certificate of the chain; "" = none
  int depth = 1;    // verify_depth: CA certificates above the client's (nginx's default 1: issued by a client_ca)
  // "tls" or "certificate[1]" (messages) and the keys' config positions.
  std::string setting = "tls", ca_origin, crl_origin;
  bool enabled() const { return verify != VerifyClient::Off; }
  bool same_policy(const ClientAuth& o) const {
    return verify == o.verify && ca == o.ca && crl == o.crl && depth == o.depth;
  }
};

struct Certificate {
  std::string cert;                // PEM path: leaf, intermediates, in any order (required; tls/cert_chain.h)
  std::string key;                 // PEM path (required)
  // names = ["api.example.com", "*.example.com"]: the SNI names served, each
  // covered by the leaf's subjectAltName; [] = the leaf's SAN DNS names.
  // Lowercase, no trailing dot; "*" only as the whole left-most label (RFC 6125 §6.4.3).
  std::vector<std::string> names;
  bool is_default = false;         // default = true: for clients without SNI or with an unknown name
  Ocsp ocsp;                       // its OCSP stapling settings
  ClientAuth client_auth;          // [tls]'s, with this entry's own keys applied
  // Setting names for messages ("tls.certificate", "certificate[1].cert") and
  // their config positions ("file:line:col"; the table's when a key is absent).
  std::string cert_setting = "tls.certificate", key_setting = "tls.key", names_setting = "tls.names";
  std::string cert_origin, key_origin, names_origin;
};


// [tls]
// [tls] session_id_context (both derivations: tls/tls_context.cc).
enum class SessionIdContext { Tlsfront, Nginx };

struct Tls {
  std::vector<TlsVersion> protocols{TlsVersion::Tls12, TlsVersion::Tls13};  // ["TLSv1.2","TLSv1.3"]
  // OpenSSL cipher list for TLS 1.2: ECDHE + AEAD only.
  std::string ciphers =
      "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
      "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
      "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
  std::string ciphersuites = "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";
  std::string groups = "X25519:P-256";
  bool prefer_server_ciphers = false;
  // [tls] certificate + key (one entry) or [[certificate]] entries (>= 1), in file order.
  std::vector<Certificate> certificates;
  bool strict_sni = false;  // refuse (unrecognized_name) clients without SNI or with an unknown name
  std::string trusted_ca;   // PEM path of trust anchors ending the chain; "" = system store
  std::string issuers_dir;  // directory of trusted intermediates (*.pem, *.crt); "" = none
  ClientAuth client_auth;   // [tls] client_ca, verify_client, verify_depth, crl: every certificate's default
  std::string trusted_ca_origin;   // positions as below
  std::string issuers_dir_origin;
  // Config-file positions ("file:line:col") of these keys (of the [tls] table
  // when a key is absent), so errors found by OpenSSL point back at the config.
  std::string ciphers_origin;
  std::string ciphersuites_origin;
  std::string groups_origin;
  bool session_tickets = true;  // nginx ssl_session_tickets; false: no tickets at all
  // How the session ID context is derived from the certificates (OpenSSL
  // resumes a session, from the cache or a ticket, only in the context it
  // was made in): tlsfront's own, or nginx's, so that nodes of a fleet
  // sharing ticket keys with nginx resume each other's sessions.
  SessionIdContext session_id_context = SessionIdContext::Tlsfront;
  // TLS 1.3 NewSessionTickets after a full handshake. 1, as Go's crypto/tls:
  // each costs a session encoding, encryption and MAC; a client resuming one
  // connection at a time gets a fresh one with every resumption that renews.
  int session_ticket_count = 1;
  SessionCache session_cache;
  TicketKeys ticket_keys;
  CertStore store;
  std::string ocsp_cache_dir;  // global: last good OCSP responses kept here ("" = not kept)
  // hsts = "max-age=31536000; includeSubDomains": Strict-Transport-Security
  // on every response, tlsfront's own answers included (RFC 6797 §6.1);
  // "" (the default) sends none.
  std::string hsts;
  // TLS 1.3 early data (0-RTT, RFC 8446 §2.3, RFC 8470), nginx's ssl_early_data.
  // Off by default: requests in early data can be replayed; with it on, only
  // `early_data_methods` requests without a body go upstream before the
  // handshake completes (with Early-Data: 1), all others wait for it.
  bool early_data = false;
  uint64_t max_early_data = 16 * 1024;  // bytes of early data a ticket allows ("16k")
  std::vector<std::string> early_data_methods{"GET", "HEAD", "OPTIONS"};
};

// The variables a header rule's value may use, in this order (the data
// path's http::HeaderVar mirrors it): $host (lowercased, port stripped),
// $remote_addr, $scheme, $request_id, $ssl_protocol, $ssl_cipher,
// $ssl_session_reused ("r" or ".", as nginx's), $server_port, the client
// certificate's $ssl_client_verify, $ssl_client_s_dn, $ssl_client_i_dn,
// $ssl_client_serial, $ssl_client_fingerprint and $ssl_client_cert
// (tls/client_certificate.h), and the PROXY protocol v2 header's TLVs
// $proxy_protocol_tlv_alpn, $proxy_protocol_tlv_authority and
// $proxy_protocol_tlv_unique_id (message/proxy_protocol.h; "" without one).
// The last two groups are the connection's identity: a request field of the
// name a rule sends one under is always removed from what the client sent.
// A redirect's location may also use the last, $request_uri (the
// request-target as received: path and query).
inline constexpr const char* kHeaderVariables[] = {
    "host",         "remote_addr",        "scheme",          "request_id",      "ssl_protocol",
    "ssl_cipher",   "ssl_session_reused", "server_port",     "ssl_client_verify", "ssl_client_s_dn",
    "ssl_client_i_dn", "ssl_client_serial", "ssl_client_fingerprint", "ssl_client_cert",
    "proxy_protocol_tlv_alpn", "proxy_protocol_tlv_authority", "proxy_protocol_tlv_unique_id", "request_uri"};
inline constexpr int kHeaderVariableCount = 17;    // in header values
inline constexpr int kLocationVariableCount = 18;  // in a redirect's location
// The identity variables (client certificate, PROXY TLVs):
// kHeaderVariables[kFirstIdentityVariable, kHeaderVariableCount).
inline constexpr int kFirstIdentityVariable = 8;

// One piece of a header value, split once at load: a literal, or a variable
// (index into kHeaderVariables).
struct HeaderValuePart {
  std::string literal;  // when variable < 0
  int variable = -1;
  bool operator==(const HeaderValuePart&) const = default;
};

// One field of a set/add rule: the name as written (a valid token, never a
// hop-by-hop or framing name) and its value's parts (no CR, LF, NUL or other
// control byte but HTAB).
struct HeaderField {
  std::string name;
  std::vector<HeaderValuePart> value;
  bool operator==(const HeaderField&) const = default;
};

// response_headers / request_headers = { set = {...}, add = {...}, remove = [...] }
// (docs/configuration.md "[response_headers]" gives the semantics): applied remove, then set, then add;
// a route's after the defaults'.
struct HeaderRules {
  std::vector<HeaderField> set;
  std::vector<HeaderField> add;
  std::vector<std::string> remove;  // names, lowercased
  bool always = false;   // response_headers only: also on tlsfront's own answers (404, 502, ...)
  bool inherit = true;   // in a [[route]]: the defaults apply first (false: only this route's)
  bool operator==(const HeaderRules&) const = default;
};

// Which message a header rule edits: the request to the upstream or the
// response to the client.
enum class HeaderDirection { Request, Response };

// Why a set/add/remove rule may not name `name` (any case), or "" when it
// may: not a token (RFC 9110 §5.6.2), an HTTP/2 pseudo-header, a hop-by-hop
// or framing header, Host in a response, Expect in a request. The check
// response_headers and request_headers get at load (config/parse_headers.cc),
// for code that writes rules (import-nginx).
std::string header_name_problem(std::string_view name, HeaderDirection direction);

// Why `value` cannot be [tls] hsts, or "" when it can: a control character,
// or no max-age=<seconds> directive (RFC 6797 §6.1.1). The check [tls] hsts
// gets at load, for code that writes it (import-nginx).
std::string hsts_problem(std::string_view value);

// Response compression (docs/configuration.md "[compression]"): top-level [compression] is
// the default of every route; a [[route]]'s compress, compress_types,
// compress_min_bytes and compress_level replace its parts.
struct Compression {
  // compress = ["br", "gzip"]: content codings tlsfront applies, the
  // server's preference first (a client's q-values come first); empty = off.
  std::vector<std::string> encodings;
  // compress_types: media types ("type/subtype" or "type/*", lowercase)
  // whose responses are compressed; matched without parameters.
  std::vector<std::string> types = {"application/json", "text/*", "application/javascript", "image/svg+xml"};
  // compress_min_bytes: a response whose Content-Length is below it is not
  // compressed (one of unknown length is).
  uint64_t min_bytes = 1024;
  // compress_level = { gzip = 1, br = 4 }: zlib 1..9, brotli quality 0..11.
  int gzip_level = 1;
  int brotli_level = 4;
  // [compression] max_memory (bytes, per worker; top level only, routes
  // carry the copy): what all of a worker's encoders may hold together;
  // past it responses go out uncompressed (data/http/compression_budget.h).
  uint64_t max_memory = uint64_t{64} << 20;
  bool operator==(const Compression&) const = default;
};

// [[route]]: first match wins, in file order.
// How a route's `path` is compared with the normalized request path
// (message/request_path.h): a byte prefix, the whole path, or an RE2
// regular expression that must match the whole path (RE2::FullMatch).
enum class PathMatch { Prefix, Exact, Regex };

// What a route does with a request: forward it to its upstream, or answer
// it itself (return = {...}, redirect = {...}); exactly one per route.
// Files: answered from a directory (root or alias: Route::files).
enum class RouteAction { Proxy, Return, Redirect, Files };

// A route's own answer (RouteAction::Return or Redirect).
struct FixedAnswer {
  int status = 0;                           // return: 200..599; redirect: 301, 302, 303, 307 or 308
  std::string body;                         // return only (none for 204 and 304)
  std::string content_type = "text/plain";  // return only
  std::vector<HeaderValuePart> location;    // redirect only: with variables (kLocationVariableCount)
};

struct Route {
  // "" for any host; an exact host (lowercase, port ignored); or "*.example.com",
  // which covers exactly one more label ("a.example.com", not "example.com"
  // nor "a.b.example.com"), as certificate names do (RFC 6125 §6.4.3).
  std::string host;
  std::string path = "/";   // path_prefix, path_exact or path_regex, as `path_match` says
  std::string upstream;     // name of an [[upstream]] (must exist); "" for a fixed answer
  RouteAction action = RouteAction::Proxy;
  FixedAnswer answer;  // action Return or Redirect
  std::shared_ptr<FileRoute> files;  // action Files (config/files_config.h); null otherwise
  PathMatch path_match = PathMatch::Prefix;
  std::shared_ptr<const re2::RE2> regex;  // path_regex compiled at load (null otherwise)
  std::vector<std::string> methods;       // methods = [...]: case-sensitive tokens; empty = any
  // The upstream gets the normalized path (and the query as sent) instead of
  // the request-target exactly as the client sent it.
  bool pass_normalized = false;
  std::string position;  // "file:line:col" of the [[route]] header (for warnings)
  // The route's label in metrics, unique among the routes: name = "api"
  // (letters, digits and "-_.:/", at most 64), else its match as written
  // (parse_route.cc: default_route_name).
  std::string name;
  HeaderRules response_headers;  // to the client, after the defaults (unless inherit = false)
  HeaderRules request_headers;   // to the upstream, after the defaults (unless inherit = false)
  Compression compression;       // [compression] with this route's compress* keys applied
  // Upgrade tokens (RFC 9110 §7.8) a request on this route may switch to,
  // lowercase: an allowed `Upgrade` is forwarded on a new upstream
  // connection and a 101 becomes a byte tunnel (HTTP/2: RFC 8441 extended
  // CONNECT's :protocol). Empty: every Upgrade is dropped (hop-by-hop).
  std::vector<std::string> upgrade{"websocket"};
  // access = [...] (AccessRule): a request whose client address
  // (RequestRecord::client_addr) is refused gets 403 before any upstream.
  std::vector<AccessRule> access;
  // limit_req = ["zone", ...] / limit_conn = ["zone", ...]: indices into
  // Config::limit_req / Config::limit_conn, in the order written (each
  // checked in turn; the first that refuses answers).
  std::vector<size_t> limit_req;
  std::vector<size_t> limit_conn;
  // require_client_cert = true: a request without a verified client
  // certificate ($ssl_client_verify other than SUCCESS) is answered 403
  // before the upstream.
  bool require_client_cert = false;
  // access_log = false: the route's requests get no access-log line (nginx
  // `access_log off` in a location); they are still counted in metrics.
  bool access_log = true;
};

// What a [[limit_req]] or [[limit_conn]] zone counts by (nginx's variables):
// the client address ($remote_addr: RequestRecord::client_addr, the real
// client's), the routing host ($host), or one request header field's value
// ($header_<name>, its first occurrence; a request without it is not limited,
// as nginx does not limit an empty key), or the client certificate's SHA-256
// fingerprint ($ssl_client_fingerprint; a request without a certificate is
// not limited by it).
enum class LimitKey : uint8_t { RemoteAddr, Host, Header, ClientFingerprint };

// [[limit_req]]: one request-rate zone (nginx limit_req_zone + limit_req),
// GCRA (data/limits/gcra_table.h). A key may make `rate` requests per
// second on average; up to `burst` more are let in above it, each delayed so
// that they go up at `rate` (nodelay: at once; delay = N: the first N at
// once, the rest delayed); past the burst a request gets 429 with
// Retry-After.
struct LimitReqZone {
  std::string name;                   // name = "api" (required, unique)
  LimitKey key = LimitKey::RemoteAddr;
  std::string header;                 // key = "$header_x_api_key": "x-api-key" (lowercase)
  uint64_t emission_ns = 0;           // rate = "10r/s" | "600r/m": 1e9 / (requests per second)
  std::string rate_text;              // as written ("10r/s"), for messages and metrics
  uint64_t burst = 0;                 // burst = 0..100000
  uint64_t delay = 0;                 // delay = N; nodelay = true sets kNoDelay
  static constexpr uint64_t kNoDelay = UINT64_MAX;
  uint64_t size_bytes = 10 * 1024 * 1024;  // size = "10m": the keys' memory, LRU past it
  // store = "redis": the check is one atomic GCRA script in Redis
  // (data/redis_rate_limiter.h), shared by every node using the same
  // Redis and prefix; a Redis that does not answer lets requests through.
  SessionStore store = SessionStore::Memory;
  Endpoint redis{"127.0.0.1", 6379};        // redis = "127.0.0.1:6379"
  std::string redis_user;                   // ACL user for AUTH; "" = AUTH <password> only
  std::string redis_password_file;          // path; read at start-up ("" = no AUTH)
  std::string redis_prefix = "tlsfront";    // keys are "<prefix>:lreq:<zone>:<key>"
  Millis redis_timeout{50};                 // no answer within it: the request goes on
  RedisTls redis_tls;
  bool operator==(const LimitReqZone&) const = default;
};

// [[limit_conn]]: concurrent requests per key (nginx limit_conn_zone +
// limit_conn): at `max` requests of one key in progress on this node, the
// next gets 503 (nginx's limit_conn_status) until one ends.
struct LimitConnZone {
  std::string name;
  LimitKey key = LimitKey::RemoteAddr;
  std::string header;
  uint64_t max = 0;                        // max = 1..1000000 (required)
  uint64_t size_bytes = 1024 * 1024;       // size = "1m": past it new keys get 503 (nginx)
  bool operator==(const LimitConnZone&) const = default;
};

// [log]
struct Log {
  std::string access_log;      // absolute path; "" (the default) disables access logging
  std::string level = "info";  // error log level on stderr: debug, info, warn, error
};

// [limits]
struct Limits {
  size_t max_header_bytes = 16 * 1024;                 // request line + headers; over it: 431
  uint64_t max_body_bytes = 1024 * 1024;  // request body; over it: 413 ("1m" as nginx client_max_body_size; 0 = unlimited)
  // Requests per client connection (nginx keepalive_requests; the upstream
  // side's is [[upstream]] keepalive_requests): HTTP/1.1 answers the last one
  // with Connection: close; HTTP/2 sends GOAWAY naming the last stream.
  uint64_t keepalive_requests = 1000;
  // Client connections per worker; at it the worker stops accepting until
  // one closes (new clients wait in the listen backlog). 0 = no limit but
  // the open-files limit.
  uint64_t max_connections = 0;
  // Concurrent client connections per client address on this node (all
  // workers), checked at accept (after the PROXY protocol header): one more
  // is closed at once. 0 = no limit.
  uint64_t max_connections_per_client = 0;
  // Full TLS handshakes per second per client address on this node (GCRA
  // with a burst of the same number), checked in the ClientHello callback
  // before the key exchange; a ClientHello offering a resumption (a TLS 1.3
  // pre_shared_key or a TLS 1.2 session ticket) is not charged unless it
  // ends as a full handshake. 0 = no limit.
  uint64_t max_full_handshakes_per_client = 0;
};

// [timeouts] (client side)
struct Timeouts {
  Millis handshake{10'000};       // TCP accept -> TLS handshake done
  Millis header{30'000};          // first byte of a request -> end of its headers
  Millis body{60'000};            // between two reads of a request body (nginx client_body_timeout)
  Millis keepalive{75'000};       // idle between requests on a client connection
  Millis send{60'000};            // a client not draining our writes
  // An Upgrade tunnel (WebSocket) with no byte in either direction for this
  // long is closed (nginx: proxy_read_timeout/proxy_send_timeout on the
  // upgraded connection, 60s; an idle WebSocket is normal, hence 1h).
  Millis tunnel{3'600'000};
};

// [resolver]: the DNS resolver of [[upstream]] servers given by name (nginx's
// `resolver`), run once per process on the control thread (c-ares).
struct Resolver {
  std::vector<Endpoint> addresses;  // DNS servers; empty: /etc/resolv.conf's
  // How long an answer is used before the name is resolved again: its TTL
  // clamped to [min_ttl, max_ttl], or `valid` when set (nginx's valid=).
  std::optional<Millis> valid;
  Millis min_ttl{1'000};
  Millis max_ttl{300'000};
  Millis timeout{2'000};  // per query attempt (c-ares timeout; 2 attempts per server)
  bool ipv4 = true;       // ask for A records
  bool ipv6 = true;       // ask for AAAA records
  bool operator==(const Resolver&) const = default;
};

// [acme]: certificates ordered from an ACME CA (RFC 8555) and renewed by the
// fleet, one node of a region at a time (control/acme_manager.h); the account
// key and the certificates live in [tls.store] (required). Present = enabled;
// restart-only.
enum class AcmeKeyType : uint8_t { Ecdsa, Rsa, Both };
enum class AcmeChallenge : uint8_t { Http01, TlsAlpn01 };
struct Acme {
  bool enabled = false;
  std::string directory;               // https:// URL of the CA's directory (required)
  std::vector<std::string> contact;    // "mailto:ops@example.com", ...
  std::string eab_kid;                 // External Account Binding (RFC 8555 §7.3.4): key id ...
  std::string eab_hmac_key_file;       // ... and the file holding its base64url MAC key; both or neither
  // Names ordered, one certificate (store entry) each: lowercase DNS names,
  // no wildcard. names = "from_routes": every [[route]] host that is such a name.
  std::vector<std::string> names;
  bool names_from_routes = false;
  AcmeKeyType key_type = AcmeKeyType::Ecdsa;  // "ecdsa" (P-256) | "rsa" (2048) | "both" (a pair)
  std::vector<AcmeChallenge> challenges{AcmeChallenge::Http01, AcmeChallenge::TlsAlpn01};  // preference
  Millis renew_before{0};              // 0 = at 2/3 of the certificate's lifetime
  std::string ca_bundle;               // trust for the directory's HTTPS ("" = the system's)
  Millis check_interval{600'000};      // how often a node looks for names to order
  Millis lock_lease{600'000};          // the region's order lock expires after this without renewal
  std::string origin;                  // "file:line:col" of the [acme] table
  bool operator==(const Acme&) const = default;
};

// [admin]: plain-HTTP admin listener (/metrics, /healthz; metrics/admin_server.h).
struct Admin {
  bool enabled = true;
  Endpoint address{"127.0.0.1", 9901};  // keep it on loopback or a private network
  bool operator==(const Admin&) const = default;
};

// [http2]: HTTP/2 to clients (RFC 9113 §6.5.2 SETTINGS we send).
struct Http2 {
  uint32_t max_concurrent_streams = 128;   // SETTINGS_MAX_CONCURRENT_STREAMS
  uint32_t initial_window_size = 65535;    // SETTINGS_INITIAL_WINDOW_SIZE (bytes, per stream)
  uint32_t max_frame_size = 16384;         // SETTINGS_MAX_FRAME_SIZE (bytes, 16384..16777215)
  uint32_t max_header_list_size = 16384;   // SETTINGS_MAX_HEADER_LIST_SIZE (bytes); larger: 431
};

struct Config {
  std::string path;    // the file this came from
  int workers = 0;     // workers = N | "auto" (0 means auto: one per CPU)
  // On SIGTERM/SIGQUIT/SIGINT: in-flight requests get this long to finish
  // before the remaining connections are closed (nginx worker_shutdown_timeout).
  Millis shutdown_timeout{30'000};
  // pid_file = "/run/tlsfront/tlsfront.pid" (nginx `pid`; control/pid_file.h):
  // absolute after loading; "" (the default) writes none. --pid-file overrides.
  std::string pid_file;
  std::vector<Listener> listeners;
  Tls tls;
  std::vector<Upstream> upstreams;
  Resolver resolver;
  std::vector<Route> routes;
  // Top-level [response_headers] / [request_headers]: the defaults every
  // route starts from (HeaderRules::inherit).
  HeaderRules response_headers;
  HeaderRules request_headers;
  // request_id_header = "X-Request-ID": the header $request_id is sent
  // upstream in (and read from a trusted client); "" sends none.
  std::string request_id_header = "X-Request-ID";
  // Top-level [compression]: the default of every route (Route::compression).
  Compression compression;
  OpenFileCache open_file_cache;  // [open_file_cache] (config/files_config.h)
  Log log;
  Limits limits;
  std::vector<LimitReqZone> limit_req;    // [[limit_req]]
  std::vector<LimitConnZone> limit_conn;  // [[limit_conn]]
  Timeouts timeouts;
  Admin admin;
  Http2 http2;
  Acme acme;
};

}  // namespace tlsfront::config
