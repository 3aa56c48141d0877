#include "data_path_upstream.h"

#include <netinet/in.h>

#include <algorithm>
#include <cctype>

#include "util/loop_context.h"

namespace tlsfront::harness {
namespace {

bool iequal(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

struct WriteReq {
  uv_write_t req{};
  std::string bytes;
};

uint16_t bound_port(uv_tcp_t* tcp) {
  sockaddr_storage ss{};
  int len = sizeof(ss);
  uv_tcp_getsockname(tcp, reinterpret_cast<sockaddr*>(&ss), &len);
  return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
}

}  // namespace

Reply Reply::ok(std::string_view body) {
  return raw("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + std::string(body));
}

std::string find_header(const HeaderPairs& headers, std::string_view name) {
  for (const auto& [n, v] : headers) {
    if (iequal(n, name)) return v;
  }
  return {};
}

bool has_header(const HeaderPairs& headers, std::string_view name) {
  return std::any_of(headers.begin(), headers.end(), [&](const auto& h) { return iequal(h.first, name); });
}

void HeaderCollector::on_field(const char* at, size_t n) {
  if (in_value) field.clear();
  in_value = false;
  field.append(at, n);
}

void HeaderCollector::on_value(HeaderPairs& headers, const char* at, size_t n) {
  if (!in_value) headers.emplace_back(field, std::string());
  in_value = true;
  headers.back().second.append(at, n);
}

#define TLSFRONT_PEER static_cast<ScriptedUpstream::Peer*>(p->data)
struct UpstreamParserHooks {
  static SeenRequest& req(llhttp_t* p) { return TLSFRONT_PEER->server->requests_[TLSFRONT_PEER->current]; }
  static int on_message_begin(llhttp_t* p) {
    auto* peer = TLSFRONT_PEER;
    peer->current = peer->server->requests_.size();
    peer->server->requests_.push_back(SeenRequest{peer->index, {}, {}, {}, {}, false, false});
    peer->reply = peer->server->next_reply();
    peer->collector.reset();
    return 0;
  }
  static int on_url(llhttp_t* p, const char* at, size_t n) {
    req(p).target.append(at, n);
    return 0;
  }
  static int on_header_field(llhttp_t* p, const char* at, size_t n) {
    TLSFRONT_PEER->collector.on_field(at, n);
    return 0;
  }
  static int on_header_value(llhttp_t* p, const char* at, size_t n) {
    TLSFRONT_PEER->collector.on_value(req(p).headers, at, n);
    return 0;
  }
  static int on_headers_complete(llhttp_t* p) {
    auto* peer = TLSFRONT_PEER;
    SeenRequest& r = req(p);
    r.method = llhttp_method_name(static_cast<llhttp_method_t>(llhttp_get_method(p)));
    r.chunked = (p->flags & F_CHUNKED) != 0;
    if (!peer->reply.at_head.empty()) peer->server->send_on(peer, peer->reply.at_head);
    if (peer->reply.close_at_head) {
      peer->server->close_peer(peer);
      return -1;
    }
    return 0;
  }
  static int on_body(llhttp_t* p, const char* at, size_t n) {
    req(p).body.append(at, n);
    return 0;
  }
  static int on_message_complete(llhttp_t* p) {
    auto* peer = TLSFRONT_PEER;
    req(p).complete = true;
    if (!peer->reply.at_end.empty()) peer->server->send_on(peer, peer->reply.at_end);
    if (peer->reply.close_at_end) {
      peer->server->close_peer(peer);
      return -1;
    }
    return 0;
  }
  static llhttp_settings_t make() {
    llhttp_settings_t s;
    llhttp_settings_init(&s);
    s.on_message_begin = on_message_begin;
    s.on_url = on_url;
    s.on_header_field = on_header_field;
    s.on_header_value = on_header_value;
    s.on_headers_complete = on_headers_complete;
    s.on_body = on_body;
    s.on_message_complete = on_message_complete;
    return s;
  }
};
#undef TLSFRONT_PEER

namespace {
const llhttp_settings_t kServerSettings = UpstreamParserHooks::make();
}  // namespace

ScriptedUpstream::ScriptedUpstream(uv_loop_t* loop) : loop_(loop) {
  listener_.init([loop](uv_tcp_t* h) { return uv_tcp_init(loop, h); }, this);
  sockaddr_in a{};
  uv_ip4_addr("127.0.0.1", 0, &a);
  uv_tcp_bind(listener_.get(), reinterpret_cast<sockaddr*>(&a), 0);
  uv_listen(listener_.stream(), 64, [](uv_stream_t* s, int status) {
    if (status == 0 && s->data) static_cast<ScriptedUpstream*>(s->data)->accept();
  });
  port_ = bound_port(listener_.get());
}

ScriptedUpstream::~ScriptedUpstream() { close_peers(); }

Reply ScriptedUpstream::next_reply() {
  if (script_.empty()) return default_;
  Reply r = std::move(script_.front());
  script_.pop_front();
  return r;
}

void ScriptedUpstream::accept() {
  auto peer = std::make_unique<Peer>();
  peer->server = this;
  peer->index = peers_.size();
  peer->tcp.init([this](uv_tcp_t* h) { return uv_tcp_init(loop_, h); }, peer.get());
  uv_accept(listener_.stream(), peer->tcp.stream());
  llhttp_init(&peer->parser, HTTP_REQUEST, &kServerSettings);
  peer->parser.data = peer.get();
  uv_read_start(peer->tcp.stream(), LoopContext::alloc_cb, [](uv_stream_t* s, ssize_t n, const uv_buf_t* b) {
    auto* p = static_cast<Peer*>(s->data);
    if (p) p->server->on_read(p, n, b);
  });
  peers_.push_back(std::move(peer));
}

void ScriptedUpstream::on_read(Peer* peer, ssize_t n, const uv_buf_t* buf) {
  if (n == 0) return;
  if (n < 0) {
    close_peer(peer);  // the proxy closed its side
    return;
  }
  llhttp_execute(&peer->parser, buf->base, static_cast<size_t>(n));
}

void ScriptedUpstream::send_on(Peer* peer, std::string_view bytes) {
  if (peer->closed || bytes.empty()) return;
  auto* w = new WriteReq;
  w->bytes.assign(bytes);
  w->req.data = w;
  uv_buf_t b = uv_buf_init(w->bytes.data(), static_cast<unsigned>(w->bytes.size()));
  if (uv_write(&w->req, peer->tcp.stream(), &b, 1, [](uv_write_t* r, int) { delete static_cast<WriteReq*>(r->data); }) != 0) {
    delete w;
  }
}

void ScriptedUpstream::close_peer(Peer* peer) {
  peer->closed = true;
  peer->tcp.close();
}

void ScriptedUpstream::write(size_t request_index, std::string_view bytes) {
  send_on(peers_.at(requests_.at(request_index).connection).get(), bytes);
}

void ScriptedUpstream::close(size_t request_index) {
  close_peer(peers_.at(requests_.at(request_index).connection).get());
}

void ScriptedUpstream::close_peers() {
  for (auto& p : peers_) close_peer(p.get());
}

bool ScriptedUpstream::connection_closed(size_t connection) const { return peers_.at(connection)->closed; }

int ScriptedUpstream::open_connections() const {
  return static_cast<int>(std::count_if(peers_.begin(), peers_.end(), [](const auto& p) { return !p->closed; }));
}

uint16_t refused_port(uv_loop_t* loop) {
  UvHandle<uv_tcp_t> tcp;
  tcp.init([loop](uv_tcp_t* h) { return uv_tcp_init(loop, h); }, nullptr);
  sockaddr_in a{};
  uv_ip4_addr("127.0.0.1", 0, &a);
  uv_tcp_bind(tcp.get(), reinterpret_cast<sockaddr*>(&a), 0);
  return bound_port(tcp.get());  // closed with `tcp`: never listened on
}

}  // namespace tlsfront::harness
