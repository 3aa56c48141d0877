// tlsfront_test_backend: a small recording HTTP/1.1 origin server.
//
// Used by the integration tests (to see exactly what tlsfront forwarded) and
// as the demo backend of scripts/run.sh. Plain POSIX sockets, one thread per
// connection, blocking I/O, no dependencies beyond the C++ standard library.
//
//   tlsfront_test_backend --listen HOST:PORT [--port-file FILE] [--record DIR]
//                         [--idle-timeout-ms N]
//
// --listen       IPv4 "127.0.0.1:0" or IPv6 "[::1]:0"; port 0 picks a free one.
// --port-file    after listen(), the bound port and a newline are written to
//                FILE (via a temporary file and rename, so pollers never see
//                a partial write).
// --record       each fully read request is stored as DIR/NNNNNN.req, its raw
//                bytes exactly as received; a request cut short by EOF, or
//                rejected as malformed, goes to DIR/NNNNNN.partial (if
//                non-empty). NNNNNN is one sequence across all connections
//                (and restarts: it goes on from the directory's last), and
//                the file exists before the response is sent. Requests
//                for /healthz (a health check's, answered 200) are not
//                stored, so that counts of requests stay the clients'.
// --idle-timeout-ms  close a keep-alive connection idle this long (default: never).
// --delay-ms     wait this long before every response (a slow server).
//
// Every response has X-Backend-Conn (1-based connection number), X-Backend-Req
// (n-th request on that connection) and Content-Type: text/plain (the /json
// routes: application/json, or the request's X-Backend-Content-Type). The
// routes are listed in route() below. SIGTERM/SIGINT exit 0 at once.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>

#include "http_reader.h"
#include "response_text.h"
#include "shared/json_body.h"

namespace tlsfront::backend {
namespace {

constexpr std::size_t kResponseChunkBytes = 4096;

struct Options {
  std::string listen = "127.0.0.1:0";
  std::string port_file;
  std::string record_dir;
  int idle_timeout_ms = 0;
  int delay_ms = 0;  // every response waits this long (a slow server)
};

// Shared by all connection threads; lives in main() until the process exits.
struct Backend {
  Options options;
  std::atomic<std::uint64_t> next_conn{1};
  std::atomic<std::uint64_t> next_record{1};
};

void log_error(const char* fmt, const std::string& arg) {
  std::fprintf(stderr, "tlsfront_test_backend: ");
  std::fprintf(stderr, fmt, arg.c_str());
  std::fprintf(stderr, "\n");
}

bool write_file_atomically(const std::string& path, std::string_view data, const std::string& tmp) {
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    log_error("cannot create %s", tmp + ": " + std::strerror(errno));
    return false;
  }
  std::size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      log_error("cannot write %s", tmp + ": " + std::strerror(errno));
      ::close(fd);
      ::unlink(tmp.c_str());
      return false;
    }
    off += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    log_error("cannot rename to %s", path + ": " + std::strerror(errno));
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

// Stores `data` as DIR/NNNNNN.<ext> when recording is on.
void record(Backend& b, const char* ext, std::string_view data) {
  if (b.options.record_dir.empty()) return;
  std::uint64_t seq = b.next_record.fetch_add(1);
  char name[32];
  std::snprintf(name, sizeof name, "%06llu", static_cast<unsigned long long>(seq));
  const std::string& dir = b.options.record_dir;
  write_file_atomically(dir + "/" + name + "." + ext, data, dir + "/." + name + ".tmp");
}

bool send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Sends FIN, then reads and discards what the peer still sends (for at most
// about a second) before closing, so unread input does not turn our close
// into a RST that could destroy the response in flight.
void graceful_close(int fd) {
  ::shutdown(fd, SHUT_WR);
  timeval tv{0, 200 * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char buf[16384];
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (std::chrono::steady_clock::now() < deadline) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0) break;
    if (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) break;
  }
  ::close(fd);
}

void reset_close(int fd) {
  linger l{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  ::close(fd);
}

// One request's response context.
class Responder {
 public:
  Responder(int fd, std::uint64_t conn, std::uint64_t req_no, const Request& req)
      : fd_(fd), conn_(conn), req_no_(req_no), req_(req),
        head_only_(req.method == "HEAD"), keep_alive_(req.keep_alive) {}

  // Status line and the common headers, plus `extra` (complete header lines).
  // `close` adds Connection: close and makes the connection end after this response.
  std::string head(int status, std::string_view extra, bool close, std::string_view content_type = "text/plain") {
    if (close) keep_alive_ = false;
    std::string h = "HTTP/1.1 " + std::to_string(status) + " " + reason(status) + "\r\n";
    h += "X-Backend-Conn: " + std::to_string(conn_) + "\r\n";
    h += "X-Backend-Req: " + std::to_string(req_no_) + "\r\n";
    if (!content_type.empty()) h += "Content-Type: " + std::string(content_type) + "\r\n";
    h.append(extra);
    if (!keep_alive_) {
      h += "Connection: close\r\n";
    } else if (req_.version_minor == 0) {
      h += "Connection: keep-alive\r\n";
    }
    h += "\r\n";
    return h;
  }

  // A complete Content-Length framed response (no body for HEAD).
  bool simple(int status, std::string_view body, bool close = false) {
    std::string out = head(status, "Content-Length: " + std::to_string(body.size()) + "\r\n", close);
    if (!head_only_) out.append(body);
    return send_all(fd_, out);
  }

  // `total` bytes from `body_at(offset, len)`, chunked (close-delimited for HTTP/1.0).
  template <typename BodyAt>
  bool chunked(std::uint64_t total, BodyAt body_at, std::string_view trailer) {
    bool http10 = req_.version_minor == 0;
    std::string extra = http10 ? "" : "Transfer-Encoding: chunked\r\n";
    if (!http10 && !trailer.empty()) extra += "Trailer: X-Trailer\r\n";
    if (!send_all(fd_, head(200, extra, http10))) return false;
    if (head_only_) return true;
    for (std::uint64_t off = 0; off < total;) {
      std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kResponseChunkBytes, total - off));
      std::string data = body_at(off, n);
      if (!send_all(fd_, http10 ? data : chunk(data))) return false;
      off += n;
    }
    if (http10) return true;
    std::string last = "0\r\n";
    last.append(trailer);
    last.append("\r\n");
    return send_all(fd_, last);
  }

  bool keep_alive() const { return keep_alive_; }
  bool head_only() const { return head_only_; }
  void set_head_only() { head_only_ = true; }
  int fd() const { return fd_; }

 private:
  int fd_;
  std::uint64_t conn_;
  std::uint64_t req_no_;
  const Request& req_;
  bool head_only_;
  bool keep_alive_;
};

enum class After { KeepAlive, Close, Drop, Reset };

After finish(bool ok, const Responder& r) {
  if (!ok) return After::Drop;
  return r.keep_alive() ? After::KeepAlive : After::Close;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// /json/N: N bytes of tests/shared/json_body.h with Content-Length;
// /json-chunked/N: the same, chunked; /json-wait/N: chunked, N bytes, then,
// once the file the request's X-Backend-Wait-File names exists (polled for
// up to 10 s), N more (a streamed answer the test releases). The request
// may say X-Backend-Status (default 200; 204 and 304 send no body),
// X-Backend-Content-Type (default application/json, "none" for none) and
// X-Backend-Header: "Name: value" (repeatable) for more response fields.
After json(const Request& req, Responder& r, std::string_view kind, std::string_view arg) {
  std::uint64_t n = 0;
  const bool wait = kind == "/json-wait/";
  const std::string* wait_file = req.header("X-Backend-Wait-File");
  if (!parse_number(arg, n) || n > (64u << 20) || (wait && wait_file == nullptr)) {
    return finish(r.simple(400, "bad /json arguments\n"), r);
  }
  std::uint64_t status = 200;
  if (const std::string* s = req.header("X-Backend-Status");
      s && (!parse_number(*s, status) || status < 200 || status > 599)) {
    return finish(r.simple(400, "bad X-Backend-Status\n"), r);
  }
  const std::string* type = req.header("X-Backend-Content-Type");
  std::string extra;
  for (const auto& [name, value] : req.headers) {
    if (strcasecmp(name.c_str(), "X-Backend-Header") == 0) extra += value + "\r\n";
  }
  const bool no_body = status == 204 || status == 304;
  if (no_body) r.set_head_only();
  const bool chunked = kind != "/json/";
  if (!chunked && status != 204) extra += "Content-Length: " + std::to_string(n) + "\r\n";
  if (chunked && !no_body) extra += "Transfer-Encoding: chunked\r\n";
  const std::string body = tlsfront::testdata::json_body(n);
  bool ok = send_all(r.fd(), r.head(static_cast<int>(status), extra, false,
                                    !type             ? "application/json"
                                    : *type == "none" ? ""
                                                      : std::string_view(*type)));
  if (!ok || r.head_only()) return finish(ok, r);
  if (!chunked) return finish(send_all(r.fd(), body), r);
  for (std::size_t off = 0; ok && off < body.size(); off += kResponseChunkBytes) {
    ok = send_all(r.fd(), chunk(std::string_view(body).substr(off, kResponseChunkBytes)));
  }
  if (ok && wait) {
    struct stat st {};
    for (int i = 0; i < 1000 && ::stat(wait_file->c_str(), &st) != 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ok = send_all(r.fd(), chunk(body));
  }
  return finish(ok && send_all(r.fd(), "0\r\n\r\n"), r);
}

// Answers `req` and says what to do with the connection afterwards.
After route(const Request& req, Responder& r) {
  std::string_view path = req.path;
  std::uint64_t n = 0;

  if (path == "/echo") return finish(r.simple(200, req.body), r);
  if (path == "/echo-chunked") {
    auto at = [&](std::uint64_t off, std::size_t len) { return req.body.substr(off, len); };
    return finish(r.chunked(req.body.size(), at, "X-Trailer: done\r\n"), r);
  }
  if (path == "/headers") return finish(r.simple(200, req.head), r);
  if (path == "/healthz") return finish(r.simple(200, "ok\n"), r);

  for (std::string_view prefix : {"/bytes/", "/bytes-chunked/", "/bytes-eof/"}) {
    if (!starts_with(path, prefix)) continue;
    if (!parse_number(path.substr(prefix.size()), n)) return finish(r.simple(400, "bad byte count\n"), r);
    if (prefix == "/bytes-chunked/") return finish(r.chunked(n, pattern, ""), r);
    bool eof = prefix == "/bytes-eof/";
    std::string extra = eof ? "" : "Content-Length: " + std::to_string(n) + "\r\n";
    bool ok = send_all(r.fd(), r.head(200, extra, eof));
    for (std::uint64_t off = 0; ok && !r.head_only() && off < n;) {
      std::size_t len = static_cast<std::size_t>(std::min<std::uint64_t>(64 * 1024, n - off));
      ok = send_all(r.fd(), pattern(off, len));
      off += len;
    }
    return finish(ok, r);
  }

  if (starts_with(path, "/slow/")) {
    if (!parse_number(path.substr(6), n)) return finish(r.simple(400, "bad delay\n"), r);
    std::this_thread::sleep_for(std::chrono::milliseconds(n));
    return finish(r.simple(200, "slow\n"), r);
  }
  if (starts_with(path, "/slow-body/")) {
    if (!parse_number(path.substr(11), n)) return finish(r.simple(400, "bad delay\n"), r);
    bool ok = send_all(r.fd(), r.head(200, "Content-Length: 10\r\n", false));
    if (ok && !r.head_only()) {
      ok = send_all(r.fd(), pattern(0, 5));
      std::this_thread::sleep_for(std::chrono::milliseconds(n));
      ok = ok && send_all(r.fd(), pattern(5, 5));
    }
    return finish(ok, r);
  }
  if (starts_with(path, "/status/")) {
    if (!parse_number(path.substr(8), n) || n < 200 || n > 599) {
      return finish(r.simple(400, "bad status\n"), r);
    }
    int status = static_cast<int>(n);
    if (status == 204 || status == 304) return finish(send_all(r.fd(), r.head(status, "", false)), r);
    return finish(r.simple(status, ""), r);
  }
  if (path == "/close") return finish(r.simple(200, "close\n", true), r);
  // RFC 8470 §5.2: 425 to a request an intermediary marked as early data.
  if (path == "/too-early") {
    const bool early = strcasestr(req.head.c_str(), "\r\nEarly-Data: 1\r\n") != nullptr;
    return finish(early ? r.simple(425, "too early\n") : r.simple(200, "late\n"), r);
  }
  if (path == "/drop-after") {
    r.simple(200, "drop\n");
    return After::Drop;  // close right after the response, keep-alive notwithstanding
  }
  if (path == "/early-hints") {
    if (req.version_minor == 1 &&
        !send_all(r.fd(), "HTTP/1.1 103 Early Hints\r\nLink: </x>; rel=preload\r\n\r\n")) {
      return After::Drop;
    }
    return finish(r.simple(200, "hints\n"), r);
  }
  if (path == "/reset") return After::Reset;
  for (std::string_view prefix : {"/json/", "/json-chunked/", "/json-wait/"}) {
    if (!starts_with(path, prefix)) continue;
    return json(req, r, prefix, path.substr(prefix.size()));
  }

  return finish(r.simple(200, "ok " + req.method + " " + req.path + "\n"), r);
}

void serve(Backend& b, int fd, std::uint64_t conn) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  HttpReader reader(fd, !b.options.record_dir.empty());
  std::uint64_t req_no = 0;
  Request req;

  auto reject = [&](const Request& partial) {
    record(b, "partial", reader.raw_with_unconsumed());
    Request copy = partial;
    copy.keep_alive = false;
    copy.method = "GET";  // an error response always has its body
    Responder r(fd, conn, req_no + 1, copy);
    r.simple(reader.error_status(), reader.error_detail() + "\n", true);
    graceful_close(fd);
  };

  while (true) {
    ReadStatus s = reader.read_head(req, b.options.idle_timeout_ms);
    if (s == ReadStatus::Eof || s == ReadStatus::Timeout) return graceful_close(fd);
    if (s == ReadStatus::Partial) {
      record(b, "partial", reader.raw_with_unconsumed());
      return (void)::close(fd);
    }
    if (s == ReadStatus::Bad) return reject(req);

    bool keep_body = req.path == "/echo" || req.path == "/echo-chunked";
    bool has_body = req.chunked || req.content_length.value_or(0) > 0;
    if (req.expect_continue && has_body && req.version_minor == 1 &&
        !send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n")) {
      record(b, "partial", reader.raw_with_unconsumed());
      return (void)::close(fd);
    }
    s = reader.read_body(req, keep_body);
    if (s == ReadStatus::Partial) {
      record(b, "partial", reader.raw_with_unconsumed());
      return (void)::close(fd);
    }
    if (s == ReadStatus::Bad) return reject(req);

    if (req.path != "/healthz") record(b, "req", reader.raw());
    ++req_no;
    Responder r(fd, conn, req_no, req);
    if (b.options.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(b.options.delay_ms));
    switch (route(req, r)) {
      case After::KeepAlive: continue;
      case After::Close: return graceful_close(fd);
      case After::Drop: return (void)::close(fd);
      case After::Reset: return reset_close(fd);
    }
  }
}

[[noreturn]] void usage(int code) {
  std::fprintf(code == 0 ? stdout : stderr,
               "usage: tlsfront_test_backend --listen HOST:PORT [--port-file FILE] [--record DIR]\n"
               "                             [--idle-timeout-ms N] [--delay-ms N]\n");
  std::exit(code);
}

Options parse_args(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool has_value = false;
    if (auto eq = arg.find('='); starts_with(arg, "--") && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg.resize(eq);
      has_value = true;
    }
    if (arg == "-h" || arg == "--help") usage(0);
    if (arg != "--listen" && arg != "--port-file" && arg != "--record" && arg != "--idle-timeout-ms" &&
        arg != "--delay-ms") {
      std::fprintf(stderr, "tlsfront_test_backend: unknown argument %s\n", argv[i]);
      usage(2);
    }
    if (!has_value) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "tlsfront_test_backend: %s needs a value\n", arg.c_str());
        usage(2);
      }
      value = argv[++i];
    }
    if (arg == "--listen") o.listen = value;
    if (arg == "--port-file") o.port_file = value;
    if (arg == "--record") o.record_dir = value;
    if (arg == "--idle-timeout-ms") {
      std::uint64_t ms = 0;
      if (!parse_number(value, ms) || ms > 24 * 3600 * 1000ULL) {
        std::fprintf(stderr, "tlsfront_test_backend: bad --idle-timeout-ms %s\n", value.c_str());
        usage(2);
      }
      o.idle_timeout_ms = static_cast<int>(ms);
    }
    if (arg == "--delay-ms") {
      std::uint64_t ms = 0;
      if (!parse_number(value, ms) || ms > 60'000) {
        std::fprintf(stderr, "tlsfront_test_backend: bad --delay-ms %s\n", value.c_str());
        usage(2);
      }
      o.delay_ms = static_cast<int>(ms);
    }
  }
  return o;
}

// Binds and listens on "HOST:PORT" or "[V6]:PORT"; returns the fd or -1.
int listen_on(const std::string& spec, std::string& bound) {
  std::string host;
  std::string port;
  if (starts_with(spec, "[")) {
    auto close = spec.find(']');
    if (close == std::string::npos || close + 1 >= spec.size() || spec[close + 1] != ':') return -1;
    host = spec.substr(1, close - 1);
    port = spec.substr(close + 2);
  } else {
    auto colon = spec.rfind(':');
    if (colon == std::string::npos) return -1;
    host = spec.substr(0, colon);
    port = spec.substr(colon + 1);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    log_error("cannot resolve %s", spec + ": " + ::gai_strerror(rc));
    return -1;
  }
  int fd = -1;
  for (addrinfo* ai = res; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, 1024) != 0) {
      log_error("cannot listen on %s", spec + ": " + std::strerror(errno));
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(res);
  if (fd < 0) return -1;

  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  char addr[INET6_ADDRSTRLEN] = "?";
  int bound_port = 0;
  if (ss.ss_family == AF_INET6) {
    auto* sa = reinterpret_cast<sockaddr_in6*>(&ss);
    ::inet_ntop(AF_INET6, &sa->sin6_addr, addr, sizeof addr);
    bound_port = ntohs(sa->sin6_port);
    bound = std::string("[") + addr + "]:" + std::to_string(bound_port);
  } else {
    auto* sa = reinterpret_cast<sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &sa->sin_addr, addr, sizeof addr);
    bound_port = ntohs(sa->sin_port);
    bound = std::string(addr) + ":" + std::to_string(bound_port);
  }
  return fd;
}

int bound_port(const std::string& bound) { return std::atoi(bound.substr(bound.rfind(':') + 1).c_str()); }

}  // namespace
}  // namespace tlsfront::backend

int main(int argc, char** argv) {
  using namespace tlsfront::backend;

  // Signals are taken synchronously by one thread; every other thread blocks them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  static Backend backend;  // outlives every detached connection thread
  backend.options = parse_args(argc, argv);

  if (!backend.options.record_dir.empty()) {
    if (::mkdir(backend.options.record_dir.c_str(), 0755) != 0 && errno != EEXIST) {
      log_error("cannot create record dir %s", backend.options.record_dir + ": " + std::strerror(errno));
      return 1;
    }
    // A restart on the same directory goes on from its last record rather
    // than overwriting the first ones.
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(backend.options.record_dir, ec)) {
      const std::uint64_t seq = std::strtoull(entry.path().filename().c_str(), nullptr, 10);
      if (seq >= backend.next_record) backend.next_record = seq + 1;
    }
  }

  std::string bound;
  int listen_fd = listen_on(backend.options.listen, bound);
  if (listen_fd < 0) {
    log_error("bad or unusable --listen %s", backend.options.listen);
    return 1;
  }

  std::thread([stop_signals] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    std::fflush(stdout);
    std::_Exit(0);
  }).detach();

  if (!backend.options.port_file.empty()) {
    const std::string& f = backend.options.port_file;
    std::string tmp = f + ".tmp." + std::to_string(::getpid());
    if (!write_file_atomically(f, std::to_string(bound_port(bound)) + "\n", tmp)) return 1;
  }
  std::printf("backend listening on %s\n", bound.c_str());
  std::fflush(stdout);

  while (true) {
    int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      continue;  // EINTR, ECONNABORTED and friends
    }
    std::uint64_t conn = backend.next_conn.fetch_add(1);
    std::thread([fd, conn] { serve(backend, fd, conn); }).detach();
  }
}
