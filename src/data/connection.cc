#include "data/connection.h"

#include <netinet/in.h>
#include <openssl/ssl.h>

#include <utility>

#include "data/http/http1_session.h"
#include "data/http/http2_session.h"
#include "log/log.h"
#include "data/worker.h"
#include "message/proxy_protocol.h"
#include "tls/ticket_key_ring.h"
#include "tls/tls_context.h"

namespace tlsfront::data {
namespace {

constexpr size_t kPlaintextChunk = 16 * 1024;  // one TLS record
constexpr size_t kOutputLowWatermark = 16 * 1024;
constexpr size_t kPlaintextReserve = 2 * 1024;
// Output this large with nothing buffered before it is encrypted in place
// (one copy less); above an HTTP/2 frame's 16 KiB, which are still gathered.
constexpr size_t kDirectEncrypt = 32 * 1024;
constexpr size_t kMaxBufferedInput = 64 * 1024;
constexpr std::chrono::milliseconds kLingerTimeout{2'000};
// And at most this much input discarded: a client that keeps sending (a
// flooder told GOAWAY, at loopback speed a gigabyte a second) costs recv
// copies for every byte of it, so past this it gets RST at once.
constexpr size_t kLingerMaxBytes = 4 << 20;

void peer_address(uv_tcp_t* tcp, std::string& addr, uint16_t& port) {
  sockaddr_storage ss{};
  int len = sizeof(ss);
  if (uv_tcp_getpeername(tcp, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return;
  char buf[INET6_ADDRSTRLEN] = {0};
  if (ss.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    uv_ip6_name(a, buf, sizeof(buf));
    port = ntohs(a->sin6_port);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    uv_ip4_name(a, buf, sizeof(buf));
    port = ntohs(a->sin_port);
  }
  addr = buf;
}

}  // namespace

Connection::Connection(Worker& worker, std::shared_ptr<const WorkerGeneration> generation, uint64_t id)
    : worker_(worker), generation_(std::move(generation)), id_(id), accepted_at_(std::chrono::steady_clock::now()) {}

Connection::~Connection() {
  LoopContext::of(worker_.loop()).cancel_flush(this);
  session_.reset();
  writer_.detach();
}

Status Connection::accept(UniqueFd fd, const config::Endpoint* address) {
  worker_.counters().connections_accepted.add();  // closed: finish_close(), whatever happens
  uv_loop_t* loop = worker_.loop();
  if (int rc = tcp_.init([loop](uv_tcp_t* h) { return uv_tcp_init(loop, h); }, this); rc != 0) {
    return make_error(Errc::Io, std::string("uv_tcp_init: ") + uv_strerror(rc));
  }
  if (int rc = uv_tcp_open(tcp_.get(), fd.get()); rc != 0) {
    return make_error(Errc::Io, std::string("uv_tcp_open: ") + uv_strerror(rc));
  }
  fd.release();  // the handle owns it now
  peer_address(tcp_.get(), remote_addr_, remote_port_);
  timer_.init(
      loop, [](void* self) { static_cast<Connection*>(self)->on_timer(); }, this);
  for (const auto& l : generation_->gen->config.listeners) {
    // The generation outlives the connection, so the entry may be borrowed.
    if (address && l.address == *address) listener_ = &l;
  }
  writer_.attach(
      tcp_.stream(), [](void* self, int status, size_t) { static_cast<Connection*>(self)->on_write_done(status); }, this);
  if (listener_ != nullptr && listener_->proxy_protocol) {
    const auto peer = IpAddress::parse(remote_addr_);
    if (!listener_->proxy_protocol_from.empty() && (!peer || !contains_any(listener_->proxy_protocol_from, *peer))) {
      refuse_proxy(metrics::ProxyRefusal::Source, "the peer is not in proxy_protocol_from");
      return {};  // closed: the worker drops it
    }
    proxy_ = std::make_unique<http::ProxyHeaderReader>();
    state_ = State::ProxyHeader;  // the first state on such a listener
  } else if (!admit_client()) {
    return {};  // closed: the worker drops it
  }
  if (listener_ != nullptr && !listener_->tls) {
    stream_.emplace(ClientStream::cleartext());
    if (proxy_) {
      // The session starts once the header is read (read_proxy_header).
      arm_timer(generation_->gen->config.timeouts.handshake);
      update_reading();
      return {};
    }
    state_ = State::Open;  // the first state of a cleartext connection (no handshake)
    open_session(connection_facts(), false);
    update_reading();
    return {};
  }
  auto tls = ClientStream::tls(generation_->gen->tls->initial_context());
  if (!tls) return tls.take_error();
  stream_.emplace(std::move(tls).value());
  SSL* ssl = stream_->tls_stream().ssl();
  // The ALPN list is borrowed from the generation, which outlives the SSL.
  if (listener_ != nullptr) tls::set_alpn_protocols(ssl, &listener_->alpn);
  tls::RemoteSessionStore* store = worker_.session_store();
  if (store != nullptr) {
    lookup_ = std::make_shared<tls::SessionLookup>(store, [this] { on_client_hello_resumed(); });
    if (!lookup_->attach(ssl)) lookup_.reset();  // sessions then stay local for this connection
  }
  // On a proxy_protocol listener once the header named the client.
  if (state_ != State::ProxyHeader && !attach_handshake_budget()) return {};
  if (SSL_get_max_early_data(ssl) > 0) {
    // Auto ticket keys are new with each start: no ticket (and no early
    // data) from before it decrypts, so the start window is not needed.
    const bool start_window =
        store == nullptr && generation_->gen->config.tls.ticket_keys.source != config::TicketKeySource::Auto;
    gate_ = std::make_shared<tls::EarlyDataGate>(tls::ReplayRecorder::node(), store, start_window,
                                                 [this] { on_client_hello_resumed(); });
    // Without the gate OpenSSL's allow-early-data callback says no: early
    // data is then rejected, never taken unchecked.
    if (!gate_->attach(ssl)) gate_.reset();
  }
  const auto handshake_timeout = generation_->gen->config.timeouts.handshake;
  handshake_due_ = uv_now(loop) + static_cast<uint64_t>(handshake_timeout.count());  // also in Early
  arm_timer(handshake_timeout);
  update_reading();
  return {};
}

void Connection::update_reading() {
  if (closing()) {
    if (reading_) uv_read_stop(tcp_.stream());
    reading_ = false;
    return;
  }
  // While the session takes no input (a response pending) the socket is still
  // read into the TLS input buffer up to kMaxBufferedInput: stopping and
  // restarting reads around every request costs two epoll_ctl calls, and a
  // client that closes early is noticed at once (499, as nginx).
  // The same bound holds during the handshake (a client hello paused for a
  // session lookup must not let a client pile up input).
  const bool room = stream_->pending_input() < kMaxBufferedInput;
  bool want = session_ ? (session_->wants_input() || room) : room;
  if (want && !reading_) {
    int rc = uv_read_start(tcp_.stream(), LoopContext::alloc_cb, [](uv_stream_t* s, ssize_t n, const uv_buf_t* b) {
      if (s->data) static_cast<Connection*>(s->data)->on_read(n, b);
    });
    reading_ = rc == 0;
  } else if (!want && reading_) {
    uv_read_stop(tcp_.stream());
    reading_ = false;
  }
}

void Connection::on_read(ssize_t nread, const uv_buf_t* buf) {
  if (nread == 0 || closing()) return;
  if (nread < 0) {
    if (nread == UV_EOF) client_done_ = true;
    if (state_ == State::ProxyHeader) {
      refuse_proxy(proxy_->consumed() == 0 ? metrics::ProxyRefusal::Empty : metrics::ProxyRefusal::Truncated,
                   nread == UV_EOF ? "the peer closed before the header ended" : uv_strerror(static_cast<int>(nread)));
      return;
    }
    if (state_ == State::Handshake || state_ == State::Early) count_handshake_failure(metrics::HandshakeFailure::Closed);
    if (session_) {
      session_->on_client_closed();
    } else {
      close(false);
    }
    return;
  }
  std::string_view in(buf->base, static_cast<size_t>(nread));
  if (state_ == State::ProxyHeader) {
    if (!read_proxy_header(in)) return;
    if (in.empty()) {  // the ClientHello (or request) is still to come
      update_reading();
      return;
    }
  }
  stream_->feed(in);
  if (state_ == State::Handshake || state_ == State::Early) {
    // Paused for the shared store: the input waits in the BIO until it answers.
    if (client_hello_paused()) {
      update_reading();
      return;
    }
    if (!advance_handshake()) return;
  }
  pump();
}

bool Connection::client_hello_paused() const {
  return (lookup_ && lookup_->state() == tls::SessionLookup::State::Pending) ||
         (gate_ && gate_->state() == tls::EarlyDataGate::State::Pending);
}

bool Connection::advance_handshake() {
  auto done = stream_->tls_stream().handshake();
  if (!done) {
    if (budget_ && budget_->refused()) {
      handshake_failure_counted_ = true;  // a refusal, not a failure
      worker_.report_connection_refusal(metrics::ConnectionRefusal::HandshakeRate, remote_addr_, remote_port_);
      close(false);  // the handshake_failure alert is flushed first
      return false;
    }
    count_handshake_failure(metrics::HandshakeFailure::Error);
    log::debug("conn={} {}:{} {}", id_, remote_addr_, remote_port_, done.error().message());
    close(false);  // the alert OpenSSL queued is flushed before the close
    return false;
  }
  if (*done) {
    on_handshake_done();
    return true;
  }
  // Still in progress: more input needed, paused by the client hello
  // callback (on_client_hello_resumed() resumes it), or in early data.
  LoopContext::of(worker_.loop()).schedule_flush(this);
  if (!stream_->tls_stream().in_early_data()) return false;
  if (state_ == State::Handshake) on_early_data();
  return true;  // early data may have been read: the session takes it
}

// Called from the store's reply or timeout callback on this worker's loop.
// Never deletes `this`: close() only starts the deferred teardown.
void Connection::on_client_hello_resumed() {
  if (state_ != State::Handshake || !stream_) return;
  if (advance_handshake()) {
    pump();
  } else if (state_ == State::Handshake) {
    update_reading();  // reading may have stopped at the input bound while paused
  }
}

void Connection::on_early_data() {
  transition(state_, State::Early);  // the handshake deadline stays on the timer, beside the session's
  session_due_ = UINT64_MAX;
  http::ConnectionInfo info = tls_info();
  info.early_data = true;
  const bool h2 = info.alpn == "h2";
  open_session(std::move(info), h2);
}

void Connection::on_handshake_done() {
  const bool early = state_ == State::Early;
  transition(state_, State::Open);
  if (early && session_due_ != UINT64_MAX) {
    const uint64_t now = uv_now(worker_.loop());
    timer_.arm(std::chrono::milliseconds(session_due_ > now ? session_due_ - now : 0));
  } else {
    stop_timer();
  }
  SSL* ssl = stream_->tls_stream().ssl();
  if (budget_) budget_->on_handshake_done(ssl);
  http::ConnectionInfo info = tls_info();
  const bool ticket = info.ssl_resumption == std::string_view("ticket");
  const auto handshake_time = std::chrono::steady_clock::now() - accepted_at_;
  info.tls_handshake_ms = std::chrono::duration<double, std::milli>(handshake_time).count();
  metrics::WorkerCounters& counters = worker_.counters();
  const auto kind = !info.ssl_session_reused ? metrics::HandshakeKind::Full
                    : ticket                 ? metrics::HandshakeKind::ResumedTicket
                                             : metrics::HandshakeKind::ResumedCache;
  counters.handshakes[static_cast<size_t>(kind)].add();
  counters.handshake_duration[static_cast<size_t>(kind)].observe(handshake_time);
  counters.negotiated.add(SSL_get_version(ssl), SSL_CIPHER_get_name(SSL_get_current_cipher(ssl)));
  count_client_hello();
  count_early_data();
  if ((SSL_get_verify_mode(ssl) & SSL_VERIFY_FAIL_IF_NO_PEER_CERT) != 0 &&
      (info.client_cert == nullptr || !info.client_cert->verified())) {
    // verify_client = "required" on a session resumed without a verified
    // certificate: only possible with session_id_context = "nginx", whose
    // context does not cover verify_client (tls/client_auth.h).
    log::debug("conn={} {}:{} resumed without the verified client certificate its name requires", id_, remote_addr_,
               remote_port_);
    close(false);
    return;
  }
  if (early) {
    session_->on_handshake_done(info.tls_handshake_ms);  // the session started in early data
  } else {
    const bool h2 = info.alpn == "h2";
    open_session(std::move(info), h2);
  }
  // TLS 1.3 NewSessionTicket messages go out with the handshake's last flight.
  LoopContext::of(worker_.loop()).schedule_flush(this);
}

void Connection::open_session(http::ConnectionInfo info, bool h2) {
  metrics::WorkerCounters& counters = worker_.counters();
  if (h2) {
    counters.connections_h2.add();
    session_ = std::make_unique<http::Http2Session>(generation_->env, this, std::move(info),
                                                    SSL_get_certificate(stream_->tls_stream().ssl()));
  } else {
    counters.connections_http1.add();
    session_ = std::make_unique<http::Http1Session>(generation_->env, this, std::move(info));
  }
}

void Connection::pump() {
  LoopContext& ctx = LoopContext::of(worker_.loop());
  char buf[kPlaintextChunk];
  while (session_ && (state_ == State::Open || state_ == State::Early) && session_->wants_input()) {
    auto n = stream_->read(buf, sizeof(buf));
    if (!n) {
      if (n.error().code == Errc::Closed) {
        client_done_ = true;  // close_notify: nothing follows it (RFC 8446 §6.1)
        session_->on_client_closed();
      } else if (stream_->is_tls() && stream_->tls_stream().post_handshake_flood()) {
        log::info("conn={} client={}:{} {}; unexpected_message alert", id_, remote_addr_, remote_port_,
                  n.error().message());
        worker_.counters().count_flood(metrics::Flood::TlsPostHandshake);
        close(false);  // the alert is in the stream's output
      } else {
        log::debug("conn={} {}:{} {}", id_, remote_addr_, remote_port_, n.error().message());
        close(false);
      }
      break;
    }
    if (*n == 0) break;
    session_->on_data(std::string_view(buf, *n));
  }
  // Reading may have produced output (alerts, key updates) as well as input.
  if (stream_ && stream_->pending_output() > 0) ctx.schedule_flush(this);
  update_reading();
}

void Connection::resume_input() {
  if (state_ != State::Open && state_ != State::Early) return;
  pump();
}

void Connection::replace_session(std::unique_ptr<http::ClientSession> next) {
  LoopContext::of(worker_.loop()).defer_delete(std::move(session_));  // the caller is still running
  session_ = std::move(next);
  if (session_->wants_input()) resume_input();
}

void Connection::send(std::string_view plaintext) {
  if (state_ != State::Open && state_ != State::Early) return;
  if (plaintext.size() >= kDirectEncrypt && plaintext_out_.empty() && !write_failed_ && stream_ &&
      stream_->is_tls()) {
    // A failure closes from flush(), not within the session's call.
    if (auto st = stream_->tls_stream().write(plaintext); !st) write_failed_ = true;
    LoopContext::of(worker_.loop()).schedule_flush(this);
    return;
  }
  // A head and a small body: one allocation (the buffer is freed when idle).
  if (plaintext_out_.capacity() < kPlaintextReserve) plaintext_out_.reserve(kPlaintextReserve);
  plaintext_out_.append(plaintext);
  LoopContext::of(worker_.loop()).schedule_flush(this);
}

size_t Connection::buffered_output() const {
  return plaintext_out_.size() + (stream_ ? stream_->pending_output() : 0) + writer_.buffered_bytes();
}

bool Connection::encrypt_pending() {
  if (write_failed_) {  // send()'s own write failed
    finish_close();
    return false;
  }
  if (plaintext_out_.empty()) return true;
  auto st = stream_->write(plaintext_out_);
  if (!st) {
    log::debug("conn={} {}", id_, st.error().message());
    finish_close();
    return false;
  }
  return true;
}

void Connection::flush() {
  if (state_ == State::Closed || !stream_) return;
  if (!encrypt_pending()) return;
  if (int rc = writer_.send_from(stream_->output()); rc != 0) {
    finish_close();
    return;
  }
  if (release_pending_ && state_ == State::Open) {
    release_pending_ = false;
    std::string().swap(plaintext_out_);
    stream_->release_buffers();
    writer_.release_buffer();
  }
  if (state_ == State::Closing && writer_.idle()) {
    start_linger();
  } else if ((state_ == State::Open || state_ == State::Early) && session_ &&
             buffered_output() < kOutputLowWatermark) {
    // Written at once (no write callback will come): let a paused upstream go on.
    session_->on_output_drained();
  }
}

void Connection::on_write_done(int status) {
  if (status != 0) {
    finish_close();
    return;
  }
  if (closing()) {
    if (state_ == State::Closing && writer_.idle()) start_linger();
    return;
  }
  if (session_ && buffered_output() < kOutputLowWatermark) session_->on_output_drained();
}

void Connection::close(bool notify) {
  if (closing()) return;
  const bool handshake_done = state_ == State::Open;
  const bool session_output = handshake_done || state_ == State::Early;  // 0.5-RTT data is still sent
  // Closed in early data (the request said Connection: close, or was
  // refused) before the client's Finished: the handshake never completes,
  // and the early data it accepted is counted here.
  if (state_ == State::Early) count_handshake_failure(metrics::HandshakeFailure::Closed);
  transition(state_, State::Closing);
  update_reading();
  if (session_output && !encrypt_pending()) return;
  if (notify && handshake_done) stream_->shutdown();
  // Bound how long a client that does not read can hold us while we flush.
  arm_timer(generation_->gen->config.timeouts.send);
  flush();
}

// Lingering close (as nginx's lingering_close): send FIN, then read and
// discard until the client closes, kLingerTimeout passes or kLingerMaxBytes
// were discarded. Closing with
// unread input would make the kernel send RST, which can destroy a response
// (a 400, say) the client has not read yet.
void Connection::start_linger() {
  if (state_ != State::Closing) return;
  if (client_done_ && stream_ && stream_->pending_input() == 0) {
    finish_close();  // nothing unread and nothing more to come: close() sends FIN, not RST
    return;
  }
  transition(state_, State::Lingering);
  arm_timer(kLingerTimeout);
  auto* req = new uv_shutdown_t{};
  req->data = this;
  shutdown_req_ = req;
  int rc = uv_shutdown(req, tcp_.stream(), [](uv_shutdown_t* r, int status) {
    auto* self = static_cast<Connection*>(r->data);
    delete r;
    if (!self) return;
    self->shutdown_req_ = nullptr;
    if (status != 0) {
      self->finish_close();
      return;
    }
    int rc = uv_read_start(self->tcp_.stream(), LoopContext::alloc_cb, [](uv_stream_t* s, ssize_t n, const uv_buf_t*) {
      if (s->data == nullptr) return;
      auto* c = static_cast<Connection*>(s->data);
      if (n < 0 || (c->lingered_bytes_ += static_cast<uint32_t>(n)) > kLingerMaxBytes) c->finish_close();
    });
    if (rc != 0) self->finish_close();
  });
  if (rc != 0) {
    delete req;
    shutdown_req_ = nullptr;
    finish_close();
  }
}

// A handshake in progress goes on (the client connected before the stop and
// gets its first request served; the session sees the worker draining); the
// handshake timeout and the drain deadline bound it.
void Connection::shutdown() {
  if (session_) session_->on_shutdown();
}

void Connection::abort() { finish_close(); }

bool Connection::close_if_idle() { return state_ == State::Open && session_ && session_->close_if_idle(); }

static_assert(static_cast<int>(tls::HandshakeRefusal::ProtocolVersion) - 1 ==
                  static_cast<int>(metrics::Refusal::ProtocolVersion) &&
              static_cast<int>(tls::HandshakeRefusal::SniRefused) - 1 == static_cast<int>(metrics::Refusal::SniRefused) &&
              static_cast<int>(tls::HandshakeRefusal::ClientCertificate) - 1 ==
                  static_cast<int>(metrics::Refusal::ClientCertificate));

void Connection::count_handshake_failure(metrics::HandshakeFailure reason) {
  if (std::exchange(handshake_failure_counted_, true)) return;
  metrics::WorkerCounters& counters = worker_.counters();
  count_early_data();
  counters.handshake_failures[static_cast<size_t>(reason)].add();
  const tls::HandshakeRefusal refusal = stream_->tls_stream().refusal();
  if (reason == metrics::HandshakeFailure::Error && refusal != tls::HandshakeRefusal::None) {
    counters.handshakes_refused[static_cast<size_t>(refusal) - 1].add();
  }
  count_client_hello();
}

// Once per connection, when its handshake ended (either way), if a
// ClientHello arrived.
void Connection::count_client_hello() {
  if (const uint16_t v = tls::client_max_version(stream_->tls_stream().ssl())) {
    worker_.counters().client_hello_versions[static_cast<size_t>(metrics::offered_version(v))].add();
  }
}

// Once per connection, when its handshake ended (either way).
void Connection::count_early_data() {
  SSL* ssl = stream_->tls_stream().ssl();
  const int status = SSL_get_early_data_status(ssl);
  if (status == SSL_EARLY_DATA_NOT_SENT) return;
  metrics::WorkerCounters& counters = worker_.counters();
  counters.early_data_offered.add();
  if (status == SSL_EARLY_DATA_ACCEPTED) {
    if (stream_->tls_stream().early_data_overflow()) {
      counters.early_data_rejected[static_cast<size_t>(metrics::EarlyRejection::TooLarge)].add();
    } else {
      counters.early_data_accepted.add();
    }
    return;
  }
  auto reason = metrics::EarlyRejection::Ticket;  // OpenSSL's own checks said no
  if (!gate_) {
    reason = metrics::EarlyRejection::Disabled;
  } else if (gate_->verdict() == tls::EarlyDataGate::Verdict::Replay) {
    reason = metrics::EarlyRejection::Replay;
  } else if (gate_->verdict() == tls::EarlyDataGate::Verdict::StoreUnavailable) {
    reason = metrics::EarlyRejection::RedisUnavailable;
  }
  counters.early_data_rejected[static_cast<size_t>(reason)].add();
}

void Connection::release_buffers() {
  release_pending_ = true;
  LoopContext::of(worker_.loop()).schedule_flush(this);
}

void Connection::finish_close() {
  if (state_ == State::Closed) return;
  transition(state_, State::Closed);
  worker_.counters().connections_closed.add();
  reading_ = false;
  if (shutdown_req_) shutdown_req_->data = nullptr;  // freed by its own (cancelled) callback
  shutdown_req_ = nullptr;
  writer_.detach();
  timer_.close();
  tcp_.close();
  worker_.remove(this);
}

// In Early the one timer also keeps the handshake deadline: the session's
// timer is armed no later than it, and stopping the session's re-arms it.
void Connection::arm_timer(std::chrono::milliseconds ms) {
  if (state_ != State::Early) {
    timer_.arm(ms);
    return;
  }
  const uint64_t now = uv_now(worker_.loop());
  session_due_ = now + static_cast<uint64_t>(ms.count());
  timer_.arm(std::chrono::milliseconds(std::min(session_due_, handshake_due_) - now));
}

void Connection::stop_timer() {
  if (state_ != State::Early) {
    timer_.stop();
    return;
  }
  session_due_ = UINT64_MAX;
  const uint64_t now = uv_now(worker_.loop());
  timer_.arm(std::chrono::milliseconds(handshake_due_ > now ? handshake_due_ - now : 0));
}

void Connection::on_timer() {
  switch (state_) {
    case State::ProxyHeader:
      refuse_proxy(metrics::ProxyRefusal::Timeout, "no complete PROXY protocol header within timeouts.handshake");
      break;
    case State::Handshake:
      log::debug("conn={} {}:{} TLS handshake timed out", id_, remote_addr_, remote_port_);
      count_handshake_failure(metrics::HandshakeFailure::Timeout);
      finish_close();
      break;
    case State::Early:
      if (uv_now(worker_.loop()) >= handshake_due_) {
        log::debug("conn={} {}:{} TLS handshake timed out in early data", id_, remote_addr_, remote_port_);
        count_handshake_failure(metrics::HandshakeFailure::Timeout);
        finish_close();
        break;
      }
      stop_timer();  // the session's fired: the deadline again
      [[fallthrough]];
    case State::Open:
      if (session_) session_->on_timer();
      LoopContext::of(worker_.loop()).schedule_flush(this);
      break;
    case State::Closing:
      finish_close();  // the client stopped reading while we flushed
      break;
    case State::Lingering:
      finish_close();  // kLingerTimeout: the client never closed its end
      break;
    case State::Closed:
      break;
  }
}

}  // namespace tlsfront::data
