// Black-box harness for tlsfront's integration tests: the proxy and the
// recording backend as child processes (temp dirs, free ports and the
// process helpers are shared/process.h's), TOML generation,
// clients (libcurl and a raw OpenSSL client for byte-exact requests),
// access-log and backend-record helpers.
//
// Every helper polls against a deadline; nothing sleeps to synchronize.
// Thread affinity: the test thread only.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <atomic>
#include <mutex>
#include <thread>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "shared/process.h"

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_session_st SSL_SESSION;

namespace tlsfront::itest {

std::string pki(std::string_view file);  // TLSFRONT_TEST_PKI_DIR/<file>

// The port a process logged: the digits right after the first `before` in
// `log` that are followed by `after` ("listening on 127.0.0.1:" ... " (").
std::optional<int> logged_port(std::string_view log, std::string_view before, std::string_view after);
// A listening TCP socket on 127.0.0.1 with a kernel-chosen port (in `port`),
// held by the test (what systemd does for socket activation, or "something
// else listens here"); the caller closes it. -1 on failure.
int listen_loopback(int backlog, int& port);

// The recording backend (tests/backend).
class Backend {
 public:
  // Listening on `host`:`port` (0: a free one); `tag` tells apart the files
  // of several backends in one directory. Does not start.
  explicit Backend(const TempDir& dir, std::string host = "127.0.0.1", int port = 0, std::string tag = "");
  bool start();  // waits for the port file
  void stop() { process_.stop(); }
  // Extra arguments for the next start() ("--delay-ms", "200").
  void set_args(std::vector<std::string> args) { args_ = std::move(args); }
  Process& process() { return process_; }
  int port() const { return port_; }
  std::string address() const { return host_ + ":" + std::to_string(port_); }
  const std::string& record_dir() const { return record_dir_; }
  // Sorted file names (no directory) of DIR/*.<ext>.
  std::vector<std::string> records(std::string_view ext) const;
  size_t count(std::string_view ext) const { return records(ext).size(); }
  std::string read_record(const std::string& name) const { return read_file(record_dir_ + "/" + name); }
  // Waits for at least `n` .req records and returns their contents in order.
  std::vector<std::string> wait_requests(size_t n, milliseconds timeout = kDefaultDeadline) const;

 private:
  const TempDir& dir_;
  std::string host_;
  std::string tag_;
  std::vector<std::string> args_;
  std::string record_dir_;
  Process process_;
  int port_ = 0;
};

struct ProxyOptions {
  int workers = 2;
  // Default: the backend. An entry starting with "{" is a server table,
  // written as it is ({ address = "...", weight = 3 }).
  std::vector<std::string> upstream_servers;
  std::string upstream_extra;                 // extra lines in [[upstream]]
  std::string tls_extra;                      // extra lines in [tls]
  std::string routes;                         // replaces the catch-all [[route]] when set
  std::string extra;                          // appended tables ([limits], [timeouts], ...)
  std::string listen_extra;                   // extra lines in [[listen]] (alpn = [...])
  std::string certificate = pki("localhost.chain.pem");
  std::string key = pki("localhost.key");
  std::string certificates;                   // [[certificate]] tables; when set, replaces certificate/key
  int admin_port = 0;                         // [admin] on 127.0.0.1:admin_port; 0 = any free port; -1 = off
  unsigned long open_files_limit = 0;         // RLIMIT_NOFILE soft limit of the tlsfront process; 0 = the test's
  std::string top_level;                      // top-level keys (shutdown_timeout = ...), before any table
  // Set: a second [[listen]], cleartext (tls = false) on kCleartextIp, port
  // 0, with these extra lines (redirect_https = false, ...).
  std::optional<std::string> cleartext;
  // Set: written as tlsfront.toml instead of make_config's text (its
  // [[listen]] on 127.0.0.1:0, and on kCleartextIp:0 when `cleartext` is
  // set; admin_port -1 when it has no [admin]).
  std::optional<std::string> config_text;
};

// The address of ProxyOptions::cleartext's listener (loopback; port 0 may be
// listed once per host, and the TLS listener has 127.0.0.1).
inline constexpr const char* kCleartextIp = "127.0.0.2";

// Debian's python3, which has python3-h2 and python3-websockets (the peers).
inline constexpr const char* kPython = "/usr/bin/python3";

// The [[listen]] port of a config that lets tlsfront pick a free port: the
// start-up log names it ("listening on 127.0.0.1:PORT (N workers)"), and a
// reload with the same text keeps its socket.
inline constexpr int kAnyPort = 0;

// The TOML text for `o` (listening on `port`, logging to `access_log`).
std::string make_config(const ProxyOptions& o, int port, const std::string& access_log);

class Proxy {
 public:
  explicit Proxy(const TempDir& dir);
  // Writes tlsfront.toml (listening on kAnyPort, [admin] on port 0 unless
  // `o` names one) and starts `tlsfront --config`; ready = it logged the
  // ports it got and a TLS handshake to the listener succeeds (deadline
  // 10 s). False (with a gtest failure naming stderr) when it does not come up.
  bool start(const ProxyOptions& o);
  ExitStatus stop(milliseconds timeout = milliseconds(5'000)) { return process_.stop(timeout); }
  Process& process() { return process_; }
  int port() const { return port_; }              // the [[listen]] port it got
  int cleartext_port() const { return cleartext_port_; }  // ProxyOptions::cleartext's (0 when none)
  int admin_port() const { return admin_port_; }  // [admin]'s (0 when off)
  const std::string& config_path() const { return config_path_; }
  const std::string& access_log() const { return access_log_; }
  // Waits until the access log holds at least `n` lines; returns them all.
  std::vector<std::string> wait_log_lines(size_t n, milliseconds timeout = kDefaultDeadline) const;

 private:
  const TempDir& dir_;
  Process process_;
  int port_ = 0;
  int cleartext_port_ = 0;
  int admin_port_ = 0;
  std::string config_path_, access_log_;
};

// Raw JSON value of top-level `key` in a flat JSON object line: strings keep
// their quotes ("\"GET\""), numbers/true/false/null as written. nullopt when absent.
std::optional<std::string> json_raw(std::string_view line, std::string_view key);
// The unescaped string value of `key` (nullopt when absent or not a string).
std::optional<std::string> json_string(std::string_view line, std::string_view key);

// ---- libcurl ---------------------------------------------------------------

struct HttpRequest {
  std::string method = "GET";
  std::string path = "/";
  std::vector<std::string> headers;        // "Name: value"; "Name:" removes a curl default
  std::optional<std::string> body;         // sent with Content-Length
  std::vector<std::string> chunks;         // non-empty: sent chunked, one read callback per chunk
  long ssl_version = 0;                    // CURLOPT_SSLVERSION value (0: default)
  long expect_100_timeout_ms = 0;          // 0: curl's default
  bool no_body = false;                    // HEAD
  bool http2 = false;                      // ALPN h2 (CURL_HTTP_VERSION_2TLS), else HTTP/1.1 only
  // CURLOPT_ACCEPT_ENCODING: libcurl sends it ("" = every coding it
  // decodes) and decodes the body; nullopt: neither (an Accept-Encoding in
  // `headers` then gets the body as sent).
  std::optional<std::string> accept_encoding;
  // http://localhost:PORT to kCleartextIp (no TLS); with http2: HTTP/2 with
  // prior knowledge (CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE).
  bool cleartext = false;
  milliseconds timeout{20'000};
};

struct HttpResponse {
  int curl_code = -1;  // CURLcode
  std::string error;
  long status = 0;
  std::string headers;  // all header lines as received, 1xx responses included
  std::string body;
  long http_version = 0;  // CURL_HTTP_VERSION_1_1, CURL_HTTP_VERSION_2_0, ...
  // Value of the first header `name` in the final response (case-insensitive).
  std::optional<std::string> header(std::string_view name) const;
};

// One libcurl easy handle (keeps its connection between perform() calls).
class CurlClient {
 public:
  explicit CurlClient(int port);
  ~CurlClient();
  CurlClient(const CurlClient&) = delete;
  CurlClient& operator=(const CurlClient&) = delete;
  HttpResponse perform(const HttpRequest& req);

 private:
  int port_;
  void* curl_;
  void* resolve_;
};

// A fresh handle per call.
HttpResponse http(int port, const HttpRequest& req);
// All of `reqs` at once over HTTP/2 on one connection (curl multi,
// CURLPIPE_MULTIPLEX + CURLOPT_PIPEWAIT); responses in request order.
std::vector<HttpResponse> http2_parallel(int port, const std::vector<HttpRequest>& reqs);
inline HttpResponse http_get(int port, const std::string& path) {
  HttpRequest r;
  r.path = path;
  return http(port, r);
}

// ---- raw TLS client ----------------------------------------------------------

struct TlsOptions {
  std::string sni = "localhost";  // "" = no SNI
  int min_version = 0;            // TLS1_2_VERSION...; 0 = library default
  int max_version = 0;
  std::vector<std::string> alpn = {"http/1.1"};  // empty = no ALPN extension
  SSL_SESSION* session = nullptr;                // borrowed; offered for resumption
  std::string cipher_list;                       // "" = default
  bool verify = true;                            // verify against root.pem
  bool no_ticket = false;                        // SSL_OP_NO_TICKET (session-ID resumption only)
  std::string ip = "127.0.0.1";                  // the address connected to (IPv4 or IPv6)
  std::string source_ip;                         // "" = the kernel's choice; else bound before connecting
  // Written in clear once connected, before the ClientHello (a PROXY
  // protocol header).
  std::string preamble;
  // A client certificate (PEM chain) and its key, sent when the server asks.
  std::string cert, key;
};

struct ParsedResponse {
  int status = 0;
  std::string head;  // status line + header lines (final response)
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;  // de-chunked
  size_t wire_bytes = 0;  // bytes this response took on the wire (interim 1xx included)
  std::optional<std::string> header(std::string_view name) const;
};

// Parses one response from the front of `buf` (1xx interim responses are
// skipped). Returns the number of bytes consumed, or 0 when `buf` does not
// yet hold a complete response. `eof`: the connection has closed, so a
// response without framing ends at the end of `buf`. `head_request`: no body.
size_t parse_response(std::string_view buf, bool eof, bool head_request, ParsedResponse& out);

class TlsClient {
 public:
  TlsClient();
  ~TlsClient();
  TlsClient(const TlsClient&) = delete;
  TlsClient& operator=(const TlsClient&) = delete;

  // TCP connect to 127.0.0.1:`port` and handshake. False on failure; the
  // OpenSSL error text is in error().
  bool connect(int port, const TlsOptions& o = {}, milliseconds timeout = kDefaultDeadline);
  bool write(std::string_view bytes);
  // Reads until the peer closes (or the connection fails) or `timeout`
  // passes. closed() says whether it closed.
  std::string read_all(milliseconds timeout = kDefaultDeadline);
  // Reads until one complete response is buffered; returns it. nullopt on
  // close/timeout before a complete response.
  std::optional<ParsedResponse> read_response(bool head_request = false,
                                              milliseconds timeout = kDefaultDeadline);
  // Waits up to `timeout` for more plaintext; returns all buffered bytes
  // (possibly empty) and clears the buffer.
  std::string read_available(milliseconds timeout);
  bool closed() const { return closed_; }
  // Why connect() failed, or the OpenSSL errors (a received alert) a read
  // ended with.
  const std::string& error() const { return error_; }
  SSL* ssl() const { return ssl_; }
  bool session_reused() const;
  std::string alpn_selected() const;
  std::string protocol() const;  // "TLSv1.3"
  // The current session (owned by the caller: SSL_SESSION_free), for resumption.
  SSL_SESSION* take_session() const;

 private:
  // One read into buf_ with `deadline`; false on close/error/timeout.
  bool read_some(Clock::time_point deadline);
  int fd_ = -1;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  bool closed_ = false;
  std::string error_;
  std::string buf_;
};

// A one-connection-at-a-time fake upstream on 127.0.0.1:0 for upstream
// misbehaviour the recording backend cannot produce. It reads a request head
// and answers with `response` verbatim, then closes. With
// `drop_second_request`, it keeps the connection open after the answer and
// closes it, without a byte of response, when the next request head arrives
// (a keepalive connection that dies under a reused request).
class FakeUpstream {
 public:
  explicit FakeUpstream(std::string response, bool drop_second_request = false);
  ~FakeUpstream();  // stops the thread
  FakeUpstream(const FakeUpstream&) = delete;
  FakeUpstream& operator=(const FakeUpstream&) = delete;
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int accepted() const;  // connections accepted so far

 private:
  struct State;
  std::shared_ptr<State> state_;
  int port_ = 0;
};

// A plain TCP connection to `ip`:`port` (-1 on failure; `ip` a dotted quad
// or an IPv6 literal), from `source` (of the same family; null: the
// kernel's choice).
int tcp_connect(int port, const char* ip = "127.0.0.1", const char* source = nullptr);
// Sends `request` over plain TCP to `ip`:`port` (the admin listener, a
// cleartext listener); returns what arrived until the peer closed or
// `timeout` passed.
std::string plain_request(int port, const std::string& request, milliseconds timeout = milliseconds(5'000),
                          const char* ip = "127.0.0.1");
// name{labels} -> value, from a Prometheus exposition body. A series that
// appears twice (the same name and labels) makes the whole exposition
// invalid for Prometheus, and fails the calling test.
std::map<std::string, double> parse_metrics(std::string_view exposition);
// GET /metrics from the admin listener on `admin_port`, parsed as above
// (empty when the answer is not a 200 with a body).
std::map<std::string, double> scrape_metrics(int admin_port);
// Waits for the peer to close `fd` (EOF or reset) up to `timeout`; true if it did.
bool wait_for_close(int fd, milliseconds timeout);

// De-chunks an HTTP chunked body (the part after the head). nullopt when malformed.
std::optional<std::string> dechunk(std::string_view chunked);
// Splits a raw request into head (through CRLFCRLF) and the rest.
std::pair<std::string, std::string> split_head(std::string_view raw);
// Header values named `name` in `head` (request or response head), in order.
std::vector<std::string> header_values(std::string_view head, std::string_view name);

// Byte i of the backend's generated bodies is 'a' + i % 26.
bool matches_pattern(std::string_view body);
// A request body of `n` bytes holding all 256 byte values, repeated, so any
// transformation of it shows.
std::string binary_body(size_t n);
// The body part of a recorded request (Backend::wait_requests), de-chunked
// when it was sent chunked; a malformed chunked body fails the test ("").
std::string recorded_body(const std::string& raw);

// ---- fixture -----------------------------------------------------------------

// A temp dir, a started backend; tests start the proxy with their options.
// Continuous load from a thread: calls `batch(round, record)` for round =
// 0, 1, ... until stop(); the batch sends requests and passes each response
// to `record`, which counts 200s as ok and anything else as a failure.
// Stops and joins on destruction, so an ASSERT in the test cannot leave the
// thread running.
// True once a TLS handshake to 127.0.0.1:`port` succeeds (1 s per attempt).
bool wait_tls_ready(int port, milliseconds timeout = kDefaultDeadline);

class LoadLoop {
 public:
  using Record = std::function<void(const HttpResponse&)>;
  explicit LoadLoop(std::function<void(int round, const Record& record)> batch);
  ~LoadLoop() { stop(); }
  LoadLoop(const LoadLoop&) = delete;
  LoadLoop& operator=(const LoadLoop&) = delete;
  // Waits until `n` more requests than now have succeeded.
  bool wait_ok(int n, milliseconds timeout = kDefaultDeadline) const;
  void stop();
  int ok() const { return ok_.load(); }
  int failed() const { return failed_.load(); }
  std::string first_failure() const;  // "<status> <curl error>" of the first failure

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> ok_{0}, failed_{0};
  mutable std::mutex mu_;
  std::string first_failure_;
  std::thread thread_;
};

class ProxyTest : public ::testing::Test {
 protected:
  ProxyTest() : backend_(dir_), proxy_(dir_) {}
  void SetUp() override;
  void TearDown() override;
  // Starts the proxy; fails the test (fatal in the caller via ASSERT) if not ready.
  bool start_proxy(ProxyOptions o = {});
  // Rewrites the running proxy's configuration with `o` (the same listener
  // and access log; the test backend when `o` names no upstream server),
  // sends SIGHUP and waits for "reload: generation N is live"; a gtest
  // failure (fatal: ASSERT_NO_FATAL_FAILURE in the caller) when it is not.
  void reload_proxy(ProxyOptions o, int generation);
  int port() const { return proxy_.port(); }

  TempDir dir_;
  Backend backend_;
  Proxy proxy_;
};

// For the memory tests, in scope while tlsfront starts (it inherits the
// environment): ASan keeps freed blocks in a quarantine (256 MB by default)
// that RSS counts, so a tunnel's or a stream's passing buffers would look held; this
// gives it 1 MB. Nothing without ASan.
struct SmallAsanQuarantine {
#ifdef __SANITIZE_ADDRESS__
  std::string saved = std::getenv("ASAN_OPTIONS") ? std::getenv("ASAN_OPTIONS") : "";
  SmallAsanQuarantine() { ::setenv("ASAN_OPTIONS", (saved + ":quarantine_size_mb=1").c_str(), 1); }
  ~SmallAsanQuarantine() { ::setenv("ASAN_OPTIONS", saved.c_str(), 1); }
#endif
};

}  // namespace tlsfront::itest
