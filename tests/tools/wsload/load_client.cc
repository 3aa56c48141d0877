#include "wsload/load_client.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <map>
#include <vector>

#include "wsload/net.h"
#include "wsload/ws_frame.h"

namespace tlsfront::wsload {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kMaxResponseHead = 16384;
constexpr auto kRetryDelay = std::chrono::milliseconds(10);

enum class State { kConnecting, kTls, kUpgrade, kAwaitEcho, kIdle, kRetry, kFailed };

struct Tunnel {
  State state = State::kRetry;
  int fd = -1;
  SSL* ssl = nullptr;
  uint32_t generation = 0;  // in epoll data, so a closed fd's stale event is ignored
  uint32_t registered = 0;
  Clock::time_point deadline;
  std::string in, out;
  size_t out_at = 0;
  std::string accept;    // the Sec-WebSocket-Accept expected
  std::string expected;  // the payload of the message in flight
  uint64_t sequence = 0;
};

class Load {
 public:
  explicit Load(const LoadOptions& o) : o_(o), tunnels_(static_cast<size_t>(o.tunnels)) {}
  ~Load();
  int run();

 private:
  void start(size_t i);
  void on_event(size_t i, uint32_t events);
  bool progress(Tunnel& t);  // false: an error was recorded
  bool tls_step(Tunnel& t);
  bool read_some(Tunnel& t, bool& eof);
  bool flush(Tunnel& t);
  bool on_input(Tunnel& t);
  void queue_message(Tunnel& t);
  void error(Tunnel& t, const std::string& reason);
  void close_tunnel(Tunnel& t);
  void update_interest(size_t i);
  uint64_t random64();

  LoadOptions o_;
  std::vector<Tunnel> tunnels_;
  SSL_CTX* ctx_ = nullptr;
  int ep_ = -1;
  bool hold_ = false;
  bool counting_ = true;
  uint64_t rng_ = 0x9E3779B97F4A7C15ull;
  long messages_ = 0, errors_ = 0;
  std::map<std::string, long> reasons_;
};

Load::~Load() {
  for (auto& t : tunnels_) close_tunnel(t);
  if (ctx_) SSL_CTX_free(ctx_);
  if (ep_ >= 0) close(ep_);
}

uint64_t Load::random64() {  // xorshift64*: masking keys need no cryptographic strength here
  rng_ ^= rng_ >> 12;
  rng_ ^= rng_ << 25;
  rng_ ^= rng_ >> 27;
  return rng_ * 0x2545F4914F6CDD1Dull;
}

void Load::close_tunnel(Tunnel& t) {
  if (t.ssl) SSL_free(t.ssl);
  t.ssl = nullptr;
  if (t.fd >= 0) close(t.fd);  // also drops it from the epoll set
  t.fd = -1;
  t.registered = 0;
  ++t.generation;
  t.in.clear();
  t.out.clear();
  t.out_at = 0;
}

void Load::error(Tunnel& t, const std::string& reason) {
  close_tunnel(t);
  if (counting_) {
    ++errors_;
    ++reasons_[reason];
  }
  t.state = hold_ ? State::kFailed : State::kRetry;
  t.deadline = Clock::now() + kRetryDelay;
}

void Load::start(size_t i) {
  Tunnel& t = tunnels_[i];
  t.fd = connect_nonblocking(o_.ip, o_.port);
  if (t.fd < 0) return error(t, "connect_failed");
  t.state = State::kConnecting;
  t.deadline = Clock::now() + std::chrono::milliseconds(o_.timeout_ms);
  epoll_event ev{};
  ev.events = EPOLLOUT;
  ev.data.u64 = (uint64_t{t.generation} << 32) | i;
  epoll_ctl(ep_, EPOLL_CTL_ADD, t.fd, &ev);
  t.registered = EPOLLOUT;
}

void Load::queue_message(Tunnel& t) {
  t.expected.resize(o_.message_bytes);
  const uint64_t seq = ++t.sequence;
  for (size_t k = 0; k < t.expected.size(); ++k)
    t.expected[k] = static_cast<char>(k < 8 ? (seq >> (8 * k)) & 0xFF : (k * 31 + seq) & 0xFF);
  const uint64_t r = random64();
  const uint8_t key[4] = {static_cast<uint8_t>(r), static_cast<uint8_t>(r >> 8), static_cast<uint8_t>(r >> 16),
                          static_cast<uint8_t>(r >> 24)};
  append_frame(t.out, Opcode::kBinary, t.expected, key);
  t.state = State::kAwaitEcho;
  t.deadline = Clock::now() + std::chrono::milliseconds(o_.timeout_ms);
}

bool Load::read_some(Tunnel& t, bool& eof) {
  char buf[65536];
  for (int round = 0; round < 16; ++round) {
    if (t.ssl) {
      int r = SSL_read(t.ssl, buf, sizeof buf);
      if (r > 0) {
        t.in.append(buf, static_cast<size_t>(r));
        continue;
      }
      int e = SSL_get_error(t.ssl, r);
      if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return true;
      eof = true;
      return e == SSL_ERROR_ZERO_RETURN;
    }
    ssize_t r = read(t.fd, buf, sizeof buf);
    if (r > 0) {
      t.in.append(buf, static_cast<size_t>(r));
      if (static_cast<size_t>(r) < sizeof buf) return true;
      continue;
    }
    if (r < 0 && (errno == EAGAIN || errno == EINTR)) return true;
    eof = true;
    return r == 0;
  }
  return true;
}

bool Load::flush(Tunnel& t) {
  while (t.out_at < t.out.size()) {
    const size_t n = t.out.size() - t.out_at;
    if (t.ssl) {
      int w = SSL_write(t.ssl, t.out.data() + t.out_at, static_cast<int>(n));
      if (w <= 0) {
        int e = SSL_get_error(t.ssl, w);
        return e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ;
      }
      t.out_at += static_cast<size_t>(w);
    } else {
      ssize_t w = send(t.fd, t.out.data() + t.out_at, n, MSG_NOSIGNAL);
      if (w < 0) return errno == EAGAIN || errno == EINTR;
      t.out_at += static_cast<size_t>(w);
    }
  }
  t.out.clear();
  t.out_at = 0;
  return true;
}

bool Load::tls_step(Tunnel& t) {
  int r = SSL_connect(t.ssl);
  if (r == 1) return true;
  int e = SSL_get_error(t.ssl, r);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return true;
  ERR_clear_error();
  return false;
}

// Parses what arrived: the 101 response, then echo frames.
bool Load::on_input(Tunnel& t) {
  if (t.state == State::kUpgrade) {
    const size_t end = t.in.find("\r\n\r\n");
    if (end == std::string::npos) {
      if (t.in.size() > kMaxResponseHead) return error(t, "response_head_too_large"), false;
      return true;
    }
    std::string_view head(t.in.data(), end + 2);
    if (!head.starts_with("HTTP/1.1 101 ")) {
      const std::string code = head.size() >= 12 ? std::string(head.substr(9, 3)) : "none";
      return error(t, "http_status_" + code), false;
    }
    if (header_value(head, "Sec-WebSocket-Accept") != t.accept) return error(t, "bad_accept"), false;
    t.in.erase(0, end + 4);
    queue_message(t);
  }
  size_t at = 0;
  Frame f;
  while (at < t.in.size()) {
    size_t used = 0;
    ParseStatus s = parse_frame(std::string_view(t.in).substr(at), o_.message_bytes + 125, f, used);
    if (s == ParseStatus::kIncomplete) break;
    if (s == ParseStatus::kError || f.masked) return error(t, "bad_frame"), false;
    at += used;
    if (f.opcode == Opcode::kClose) return error(t, "closed"), false;
    if (f.opcode == Opcode::kPing) {
      const uint8_t key[4] = {1, 2, 3, 4};
      append_frame(t.out, Opcode::kPong, f.payload, key);
      continue;
    }
    if (f.opcode == Opcode::kPong) continue;
    if (t.state != State::kAwaitEcho || !f.fin || f.opcode != Opcode::kBinary || f.payload != t.expected)
      return error(t, "echo_mismatch"), false;
    if (counting_) ++messages_;
    if (hold_) {
      t.state = State::kIdle;
    } else {
      queue_message(t);
    }
  }
  t.in.erase(0, at);
  return true;
}

bool Load::progress(Tunnel& t) {
  if (t.state == State::kConnecting) {
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(t.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return error(t, "connect_failed"), false;
    std::string key(16, '\0');
    for (size_t k = 0; k < key.size(); k += 8) {
      const uint64_t r = random64();
      for (size_t b = 0; b < 8; ++b) key[k + b] = static_cast<char>(r >> (8 * b));
    }
    key = base64(key);
    t.accept = accept_key(key);
    t.out = "GET " + o_.path + " HTTP/1.1\r\nHost: " + o_.sni +
            "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " + key +
            "\r\nSec-WebSocket-Version: 13\r\n\r\n";
    if (o_.tls) {
      t.ssl = SSL_new(ctx_);
      SSL_set_fd(t.ssl, t.fd);
      SSL_set_tlsext_host_name(t.ssl, o_.sni.c_str());
      t.state = State::kTls;
    } else {
      t.state = State::kUpgrade;
    }
  }
  if (t.state == State::kTls) {
    if (!tls_step(t)) return error(t, "tls_failed"), false;
    if (!SSL_is_init_finished(t.ssl)) return true;
    t.state = State::kUpgrade;
  }
  bool eof = false;
  if (!read_some(t, eof)) return error(t, t.ssl ? "tls_failed" : "closed"), false;
  if (!t.in.empty() && !on_input(t)) return false;
  if (eof) return error(t, "closed"), false;
  if (!flush(t)) return error(t, "closed"), false;
  return true;
}

void Load::update_interest(size_t i) {
  Tunnel& t = tunnels_[i];
  if (t.fd < 0) return;
  bool want_write = t.out_at < t.out.size() || t.state == State::kConnecting;
  if (t.ssl && t.state == State::kTls) want_write = SSL_want_write(t.ssl);
  const uint32_t want = (t.state == State::kConnecting ? 0u : EPOLLIN) | (want_write ? EPOLLOUT : 0u);
  if (want == t.registered) return;
  epoll_event ev{};
  ev.events = want;
  ev.data.u64 = (uint64_t{t.generation} << 32) | i;
  epoll_ctl(ep_, EPOLL_CTL_MOD, t.fd, &ev);
  t.registered = want;
}

void Load::on_event(size_t i, uint32_t) {
  if (progress(tunnels_[i])) update_interest(i);
}

int Load::run() {
  hold_ = o_.hold_s > 0;
  std::signal(SIGPIPE, SIG_IGN);
  ep_ = epoll_create1(EPOLL_CLOEXEC);
  if (o_.tls) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_NONE, nullptr);  // the bench checks the chain with curl
    SSL_CTX_set_mode(ctx_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_session_cache_mode(ctx_, SSL_SESS_CACHE_OFF);
    static const unsigned char kAlpn[] = "\x08http/1.1";
    SSL_CTX_set_alpn_protos(ctx_, kAlpn, sizeof kAlpn - 1);
  }
  const auto t0 = Clock::now();
  const auto seconds = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  size_t started = 0;
  bool announced = false;
  double hold_until = 0;
  std::vector<epoll_event> events(512);
  auto last_scan = t0;
  while (true) {
    const double now_s = seconds();
    if (!hold_ && now_s >= o_.duration_s) break;
    if (announced && now_s >= hold_until) break;
    // Start tunnels: all at once, or open_rate per second.
    const size_t due = hold_ && o_.open_rate > 0
                           ? std::min(tunnels_.size(), static_cast<size_t>(1 + now_s * o_.open_rate))
                           : tunnels_.size();
    for (; started < due; ++started) start(started);
    const int n = epoll_wait(ep_, events.data(), static_cast<int>(events.size()), 10);
    for (int k = 0; k < n; ++k) {
      const size_t i = events[k].data.u64 & 0xFFFFFFFFu;
      if (static_cast<uint32_t>(events[k].data.u64 >> 32) != tunnels_[i].generation) continue;
      on_event(i, events[k].events);
    }
    const auto now = Clock::now();
    if (now - last_scan < std::chrono::milliseconds(50)) continue;
    last_scan = now;
    size_t settled = 0;
    for (size_t i = 0; i < started; ++i) {
      Tunnel& t = tunnels_[i];
      if (t.state == State::kIdle || t.state == State::kFailed) {
        ++settled;
      } else if (t.state == State::kRetry) {
        if (now >= t.deadline) start(i);
      } else if (now >= t.deadline) {
        error(t, "timeout");
      }
    }
    if (hold_ && !announced && settled == tunnels_.size()) {
      std::printf("open=%ld errors=%ld\n", messages_, errors_);
      std::fflush(stdout);
      announced = true;
      hold_until = seconds() + o_.hold_s;
    }
  }
  counting_ = false;
  const double s = seconds();
  if (hold_) {
    long held = 0;
    for (auto& t : tunnels_) held += t.state == State::kIdle;
    if (!announced) std::printf("open=%ld errors=%ld\n", messages_, errors_);
    std::printf("held=%ld\n", held);
  } else {
    std::printf("tunnels=%d messages=%ld errors=%ld seconds=%.3f rate=%.0f\n", o_.tunnels, messages_, errors_, s,
                messages_ / s);
  }
  if (errors_ > 0) {
    std::printf("error_reason:");
    for (const auto& [reason, count] : reasons_) std::printf("%s=%ld ", reason.c_str(), count);
    std::printf("\n");
  }
  std::fflush(stdout);
  return hold_ ? (messages_ == o_.tunnels ? 0 : 1) : (messages_ > 0 ? 0 : 1);
}

}  // namespace

int run_load(const LoadOptions& o) { return Load(o).run(); }

}  // namespace tlsfront::wsload
