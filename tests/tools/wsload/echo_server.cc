#include "wsload/echo_server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <unordered_map>

#include "wsload/net.h"
#include "wsload/ws_frame.h"

namespace tlsfront::wsload {
namespace {

constexpr size_t kMaxHead = 8192;
constexpr size_t kMaxMessage = 1 << 20;
constexpr size_t kOutputHighWater = 1 << 20;
constexpr size_t kReadChunk = 65536;

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

// kHandshake -> kOpen -> kClosing; kHandshake -> kClosing (a refused request).
enum class ConnState { kHandshake, kOpen, kClosing };

struct Conn {
  int fd = -1;
  ConnState state = ConnState::kHandshake;
  std::string in;
  std::string out;
  size_t out_at = 0;              // octets of `out` already sent
  bool reading = true;            // EPOLLIN wanted (false while over the output high-water mark)
  uint32_t registered = EPOLLIN;  // the events epoll has for fd
  Opcode message_opcode = Opcode::kBinary;
  bool in_message = false;  // a fragmented message is being reassembled
  std::string message;
};

class Server {
 public:
  explicit Server(const ServeOptions& o) : o_(o) {}
  int run();

 private:
  void accept_all();
  void on_event(Conn& c, uint32_t events);
  bool handshake(Conn& c);  // false: close now
  bool frames(Conn& c);     // false: close now
  void echo(Conn& c, Opcode op, std::string& payload);
  void fail(Conn& c, uint16_t code);
  bool flush(Conn& c);  // false: close now
  void update_interest(Conn& c);
  void close_conn(int fd);

  ServeOptions o_;
  int ep_ = -1, listen_fd_ = -1;
  long echoed_ = 0;
  std::unordered_map<int, std::unique_ptr<Conn>> conns_;
};

int Server::run() {
  listen_fd_ = listen_on(o_.ip, o_.port, 4096);
  if (listen_fd_ < 0) {
    std::fprintf(stderr, "tlsfront_wsload: cannot listen on %s:%u: %s\n", o_.ip.c_str(), o_.port, std::strerror(errno));
    return 1;
  }
  ep_ = epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listen_fd_;
  epoll_ctl(ep_, EPOLL_CTL_ADD, listen_fd_, &ev);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGPIPE, SIG_IGN);
  std::fprintf(stderr, "tlsfront_wsload: serving on %s:%u\n", o_.ip.c_str(), o_.port);
  epoll_event events[256];
  while (!g_stop) {
    int n = epoll_wait(ep_, events, 256, 500);
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == listen_fd_) {
        accept_all();
        continue;
      }
      auto it = conns_.find(fd);
      if (it != conns_.end()) on_event(*it->second, events[i].events);
    }
  }
  while (!conns_.empty()) close_conn(conns_.begin()->first);
  close(listen_fd_);
  close(ep_);
  return 0;
}

void Server::accept_all() {
  for (int i = 0; i < 256; ++i) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN, or EMFILE: the backlog keeps the rest
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev);
    conns_.emplace(fd, std::move(c));
  }
}

void Server::on_event(Conn& c, uint32_t events) {
  const int fd = c.fd;
  if ((events & EPOLLOUT) && !flush(c)) return close_conn(fd);
  if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && c.reading) {
    char buf[kReadChunk];
    ssize_t r = read(fd, buf, sizeof buf);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) return close_conn(fd);
    if (r > 0) {
      if (c.state == ConnState::kClosing) return;  // discarded after our close
      c.in.append(buf, static_cast<size_t>(r));
      bool ok = c.state == ConnState::kHandshake ? handshake(c) : true;
      if (ok && c.state == ConnState::kOpen) ok = frames(c);
      if (!ok) return close_conn(fd);
    }
  }
  if (!flush(c)) return close_conn(fd);
  if (c.state == ConnState::kClosing && c.out_at == c.out.size()) return close_conn(fd);
  update_interest(c);
}

bool contains_token(std::string v, std::string_view token) {
  for (auto& ch : v) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return v.find(token) != std::string::npos;
}

bool Server::handshake(Conn& c) {
  const size_t end = c.in.find("\r\n\r\n");
  if (end == std::string::npos) return c.in.size() <= kMaxHead;
  std::string_view head(c.in.data(), end + 2);
  const std::string key = header_value(head, "Sec-WebSocket-Key");
  if (!head.starts_with("GET ") || !contains_token(header_value(head, "Upgrade"), "websocket") ||
      !contains_token(header_value(head, "Connection"), "upgrade") || key.empty()) {
    c.out += "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    c.state = ConnState::kClosing;
    return true;
  }
  c.out += "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
           accept_key(key) + "\r\n\r\n";
  c.in.erase(0, end + 4);
  c.state = ConnState::kOpen;
  return true;
}

void Server::fail(Conn& c, uint16_t code) {
  const char payload[2] = {static_cast<char>(code >> 8), static_cast<char>(code & 0xFF)};
  append_frame(c.out, Opcode::kClose, std::string_view(payload, 2), nullptr);
  c.state = ConnState::kClosing;
  c.in.clear();
}

void Server::echo(Conn& c, Opcode op, std::string& payload) {
  if (o_.corrupt_every > 0 && ++echoed_ % o_.corrupt_every == 0 && !payload.empty()) payload[0] ^= 0x01;
  append_frame(c.out, op, payload, nullptr);
}

bool Server::frames(Conn& c) {
  size_t at = 0;
  Frame f;
  while (c.state == ConnState::kOpen && c.out.size() - c.out_at <= kOutputHighWater) {
    size_t used = 0;
    ParseStatus s = parse_frame(std::string_view(c.in).substr(at), kMaxMessage, f, used);
    if (s == ParseStatus::kIncomplete) break;
    if (s == ParseStatus::kError || !f.masked) {
      fail(c, 1002);  // bad framing, or an unmasked client frame (§5.1)
      return true;
    }
    at += used;
    switch (f.opcode) {
      case Opcode::kPing:
        append_frame(c.out, Opcode::kPong, f.payload, nullptr);
        break;
      case Opcode::kPong:
        break;
      case Opcode::kClose:
        append_frame(c.out, Opcode::kClose, f.payload, nullptr);
        c.state = ConnState::kClosing;
        break;
      case Opcode::kText:
      case Opcode::kBinary:
        if (c.in_message) {
          fail(c, 1002);  // a new message inside a fragmented one (§5.4)
          return true;
        }
        if (f.fin) {
          echo(c, f.opcode, f.payload);
        } else {
          c.in_message = true;
          c.message_opcode = f.opcode;
          c.message = std::move(f.payload);
        }
        break;
      case Opcode::kContinuation:
        if (!c.in_message) {
          fail(c, 1002);
          return true;
        }
        if (c.message.size() + f.payload.size() > kMaxMessage) {
          fail(c, 1009);
          return true;
        }
        c.message += f.payload;
        if (f.fin) {
          c.in_message = false;
          echo(c, c.message_opcode, c.message);
          c.message.clear();
        }
        break;
    }
  }
  if (c.state == ConnState::kOpen) c.in.erase(0, at);
  // Reading stops while the output is over the high-water mark, so what
  // waits unparsed is at most one frame (head + payload) and one read.
  c.reading = c.out.size() - c.out_at <= kOutputHighWater;
  return c.in.size() <= 14 + kMaxMessage + kReadChunk;
}

bool Server::flush(Conn& c) {
  while (c.out_at < c.out.size()) {
    ssize_t w = send(c.fd, c.out.data() + c.out_at, c.out.size() - c.out_at, MSG_NOSIGNAL);
    if (w < 0) return errno == EAGAIN || errno == EINTR;
    c.out_at += static_cast<size_t>(w);
  }
  c.out.clear();
  c.out_at = 0;
  if (!c.reading && c.state == ConnState::kOpen) {
    c.reading = true;
    return frames(c);  // what waited behind the backpressure
  }
  return true;
}

void Server::update_interest(Conn& c) {
  const uint32_t want = (c.reading ? EPOLLIN : 0u) | (c.out_at < c.out.size() ? EPOLLOUT : 0u);
  if (want == c.registered) return;
  epoll_event ev{};
  ev.events = want;
  ev.data.fd = c.fd;
  epoll_ctl(ep_, EPOLL_CTL_MOD, c.fd, &ev);
  c.registered = want;
}

void Server::close_conn(int fd) {
  epoll_ctl(ep_, EPOLL_CTL_DEL, fd, nullptr);
  close(fd);
  conns_.erase(fd);
}

}  // namespace

int serve(const ServeOptions& o) { return Server(o).run(); }

}  // namespace tlsfront::wsload
