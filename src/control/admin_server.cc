#include "control/admin_server.h"

#include <string_view>

#include "control/listener.h"
#include "log/log.h"

namespace tlsfront::control {

class AdminServer::Conn {
 public:
  Conn(AdminServer* server, uint64_t seq) : server_(server), seq_(seq) {}

  uint64_t seq() const { return seq_; }
  bool answering() const { return responded_; }

  bool start(UniqueFd fd) {
    if (tcp_.init([this](uv_tcp_t* h) { return uv_tcp_init(server_->loop_, h); }, this) != 0) return false;
    if (uv_tcp_open(tcp_.get(), fd.get()) != 0) return false;
    fd.release();  // the handle owns it now
    timer_.init([this](uv_timer_t* h) { return uv_timer_init(server_->loop_, h); }, this);
    uv_timer_start(
        timer_.get(), [](uv_timer_t* t) {
          if (t->data) static_cast<Conn*>(t->data)->finish();
        },
        kRequestTimeoutMs, 0);
    return uv_read_start(
               tcp_.stream(),
               [](uv_handle_t*, size_t, uv_buf_t* buf) {
                 static char scratch[kMaxRequestBytes];  // control loop only: one read at a time
                 *buf = uv_buf_init(scratch, sizeof(scratch));
               },
               [](uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
                 if (s->data) static_cast<Conn*>(s->data)->on_read(n, buf);
               }) == 0;
  }

 private:
  struct Write {
    uv_write_t req;
    std::string bytes;
  };

  void on_read(ssize_t n, const uv_buf_t* buf) {
    if (n < 0) return finish();
    if (n == 0) return;
    head_.append(buf->base, static_cast<size_t>(n));
    const size_t end = head_.find("\r\n\r\n");
    // The head, its blank line included, must fit in kMaxRequestBytes.
    if (end == std::string::npos ? head_.size() >= kMaxRequestBytes : end + 4 > kMaxRequestBytes) {
      return respond(431, "Request Header Fields Too Large", "request head too large\n", false);
    }
    if (end == std::string::npos) return;
    head_.resize(end);
    respond_to(head_);
  }

  void respond_to(std::string_view head);
  void respond(int status, std::string_view reason, std::string_view body, bool head_only, std::string_view type = "text/plain; charset=utf-8");

  void finish() { server_->remove(this); }

  AdminServer* server_;
  uint64_t seq_;  // accept order
  UvHandle<uv_tcp_t> tcp_;
  UvHandle<uv_timer_t> timer_;
  std::string head_;
  bool responded_ = false;
};

void AdminServer::Conn::respond_to(std::string_view head) {
  const size_t line_end = head.find("\r\n");
  const std::string_view line = head.substr(0, line_end);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || !line.substr(sp2 + 1).starts_with("HTTP/1.")) {
    return respond(400, "Bad Request", "bad request line\n", false);
  }
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view path = target.substr(0, target.find('?'));
  const bool head_only = method == "HEAD";
  if (method != "GET" && !head_only) return respond(405, "Method Not Allowed", "GET or HEAD only\n", false);
  if (path == "/metrics") {
    return respond(200, "OK", server_->handlers_.metrics(), head_only, "text/plain; version=0.0.4; charset=utf-8");
  }
  if (path == "/healthz") {
    if (server_->handlers_.healthy()) return respond(200, "OK", "ok\n", head_only);
    return respond(503, "Service Unavailable", "draining\n", head_only);
  }
  if (path == "/upstreams" && server_->handlers_.upstreams) {
    return respond(200, "OK", server_->handlers_.upstreams(), head_only, "application/json");
  }
  respond(404, "Not Found", "not found: try /metrics, /healthz or /upstreams\n", head_only);
}

void AdminServer::Conn::respond(int status, std::string_view reason, std::string_view body, bool head_only,
                                std::string_view type) {
  if (responded_) return;
  responded_ = true;
  uv_read_stop(tcp_.stream());
  auto* w = new Write{};
  w->bytes = "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason) + "\r\nContent-Type: " +
             std::string(type) + "\r\nContent-Length: " + std::to_string(body.size()) +
             "\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n";
  if (!head_only) w->bytes.append(body);
  uv_buf_t buf = uv_buf_init(w->bytes.data(), static_cast<unsigned>(w->bytes.size()));
  const int rc = uv_write(&w->req, tcp_.stream(), &buf, 1, [](uv_write_t* req, int) {
    auto* self = static_cast<Conn*>(req->handle->data);  // null once closed
    delete reinterpret_cast<Write*>(req);
    if (self) self->finish();
  });
  if (rc != 0) {
    delete w;
    finish();
  }
}

Result<std::unique_ptr<AdminServer>> AdminServer::start(uv_loop_t* loop, const config::Endpoint& address,
                                                        Handlers handlers) {
  std::unique_ptr<AdminServer> s(new AdminServer(loop, std::move(handlers)));
  config::Listener listener{address};
  listener.backlog = kBacklog;
  auto fd = bind_listener(listener);
  if (!fd) return make_error(Errc::Io, fd.error().message() + " (set [admin] address, or enabled = false)");
  s->address_ = bound_address(address, *fd);
  AdminServer* raw = s.get();
  if (int rc = s->backoff_.init([loop](uv_timer_t* h) { return uv_timer_init(loop, h); }, raw); rc != 0) {
    return make_error(Errc::Io, std::string("admin listener: uv_timer_init: ") + uv_strerror(rc));
  }
  const int rc = s->acceptor_.open(loop, std::move(fd).value(),
                                   Acceptor::Callbacks{[raw](UniqueFd c) { raw->on_connection(std::move(c)); },
                                                       [raw](int err) { raw->on_accept_failed(err); }});
  if (rc != 0) {
    return make_error(Errc::Io, "admin listener " + address.to_string() + ": " + uv_strerror(rc) +
                                    " (set [admin] address, or enabled = false)");
  }
  return s;
}

AdminServer::AdminServer(uv_loop_t* loop, Handlers handlers) : loop_(loop), handlers_(std::move(handlers)) {}

AdminServer::~AdminServer() = default;  // members close their handles

void AdminServer::on_accept_failed(int err) {
  // As a worker does (data/worker.h): the acceptor paused itself; resume later.
  if (!uv_is_active(backoff_.handle())) {
    uv_timer_start(
        backoff_.get(),
        [](uv_timer_t* t) {
          if (t->data) static_cast<AdminServer*>(t->data)->acceptor_.resume();
        },
        kBackoffMs, 0);
  }
  if (const uint64_t failures = report_.count(std::chrono::steady_clock::now()); failures > 0) {
    log::warn("admin: accept failed: {} ({}); not accepting for {} ms at a time; {} failed accept{} since the last "
              "report (at most one per {} s)",
              uv_strerror(-err), uv_err_name(-err), kBackoffMs, failures, failures == 1 ? "" : "s",
              kReportInterval.count());
  }
}

void AdminServer::on_connection(UniqueFd fd) {
  if (conns_.size() >= kMaxConnections) {
    // Full: the oldest connection still sending its head makes room, so idle
    // connections cannot lock a health checker out; connections being
    // answered are left alone (then the new one is dropped).
    Conn* oldest = nullptr;
    for (const auto& [raw, owned] : conns_) {
      if (!raw->answering() && (!oldest || raw->seq() < oldest->seq())) oldest = raw;
    }
    if (oldest) conns_.erase(oldest);
  }
  auto conn = std::make_unique<Conn>(this, next_seq_++);
  if (!conn->start(std::move(fd)) || conns_.size() >= kMaxConnections) return;  // dropped: its handles close
  Conn* raw = conn.get();
  conns_.emplace(raw, std::move(conn));
}

void AdminServer::remove(Conn* c) { conns_.erase(c); }

}  // namespace tlsfront::control
