#include "data/quic/http3_stream.h"

#include <ngtcp2/ngtcp2.h>

#include <charconv>
#include <cstring>
#include <utility>

#include "data/quic/quic_connection.h"
#include "log/log.h"
#include "message/header_token.h"

namespace tlsfront::quic {
namespace {

// RFC 9114 §8.1.
constexpr uint64_t kH3InternalError = 0x0102;
constexpr uint64_t kH3RequestCancelled = 0x010c;
constexpr uint64_t kH3MessageError = 0x010e;

// `held`: nghttp3 keeps pointing at name (lowercase) and value instead of
// copying them.
nghttp3_nv nv(std::string_view name, std::string_view value, bool held = false) {
  return nghttp3_nv{
      reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
      reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
      static_cast<uint8_t>(held ? NGHTTP3_NV_FLAG_NO_COPY_NAME | NGHTTP3_NV_FLAG_NO_COPY_VALUE : NGHTTP3_NV_FLAG_NONE)};
}

}  // namespace

Http3Stream::Http3Stream(QuicConnection* conn, int64_t id)
    : conn_(conn), id_(id), stream_(conn->env(), static_cast<http::StreamCodec*>(this)) {
  record().begin();
}

Http3Stream::~Http3Stream() { LoopContext::of(conn_->loop()).cancel_flush(this); }

const http::ConnectionInfo& Http3Stream::connection_info() const { return conn_->info(); }

void Http3Stream::on_header(std::string_view name, std::string_view value) {
  header_bytes_ += name.size() + value.size() + 32;  // RFC 9114 §4.2.2
  record().bytes_received += name.size() + value.size() + 4;
  if (header_bytes_ > conn_->env().config->limits.max_header_bytes) return;
  head_.add(record(), name, value);
}

void Http3Stream::on_request_head(bool fin) {
  request_ = fin ? RequestPhase::Complete : RequestPhase::Body;
  head_fin_ = fin;
  if (!conn_->may_admit()) {
    waiting_ = true;
    return;
  }
  admit();
}

void Http3Stream::admit() {
  waiting_ = false;
  if (!conn_->handshake_done()) conn_->take_tls_facts();  // admitted in early data
  const std::string body = std::exchange(waiting_body_, {});
  const bool started = admit_head();
  // The body read while waiting: to the exchange, or acknowledged and
  // dropped when the request was answered locally.
  if (!body.empty()) on_request_data(body);
  if (started && request_ == RequestPhase::Complete) stream_.on_request_complete();
}

bool Http3Stream::admit_head() {
  if (header_bytes_ > conn_->env().config->limits.max_header_bytes) {
    stream_.respond_local(431);
    return false;
  }
  // RFC 9220 §3 / RFC 8441 §4 (nghttp3 checked :protocol came with CONNECT
  // and that we enabled it).
  const RequestHead& req = record().head;
  if (req.method == "CONNECT" && !head_.protocol().empty()) stream_.map_extended_connect(head_.protocol());
  http::LocalAnswer answer = stream_.admit([&]() -> int {
    const int status = head_.finish(record(), head_fin_);
    if (status == http::FieldSectionHead::kMalformed) {
      // RFC 9114 §4.1.2: a malformed request is a stream error H3_MESSAGE_ERROR.
      ngtcp2_conn_shutdown_stream(conn_->conn(), id_, kH3MessageError);
      conn_->schedule_write();
      return -1;
    }
    if (status != 0) return status;
    // RFC 9110 §15.5.20: coalesced onto a connection whose certificate
    // does not cover the authority.
    return conn_->certificate_covers(record().head.host) ? 0 : 421;
  });
  if (answer.status != 0) {
    if (answer.status > 0) stream_.respond_local(std::move(answer));
    return false;
  }
  stream_.start();
  return true;
}

void Http3Stream::on_request_data(std::string_view data) {
  if (waiting_) {
    waiting_body_.append(data);  // acknowledged once admitted
    return;
  }
  record().bytes_received += data.size();
  if (record().head.extended_connect) {
    on_tunnel_data(data);
    return;
  }
  if (!record().add_body(data.size(), conn_->env().config->limits.max_body_bytes) && answerable()) {
    stream_.respond_local(413);
  }
  if (!stream_.has_exchange()) {
    conn_->consume(id_, data.size());  // nobody wants them: acknowledged and dropped
    return;
  }
  stream_.on_request_body(data);
  if (stream_.request_body_congested()) {
    unconsumed_ += data.size();
  } else {
    conn_->consume(id_, data.size());
  }
}

void Http3Stream::on_request_end() {
  if (request_ == RequestPhase::Complete) return;
  request_ = RequestPhase::Complete;
  if (record().head.extended_connect) {
    // The client's half of the tunnel is over (before the 200: once it is open).
    if (response_ == ResponsePhase::Tunnel) stream_.end_tunnel();
  } else if (!waiting_) {
    stream_.on_request_complete();
  }
  schedule_log();
}

void Http3Stream::on_tunnel_data(std::string_view data) {
  if (response_ == ResponsePhase::Tunnel && (stream_.has_exchange() || stream_.has_tunnel())) {
    forward_tunnel(data);
    if (stream_.upstream_congested()) {
      unconsumed_ += data.size();  // acknowledged by on_request_body_writable()
    } else {
      conn_->consume(id_, data.size());
    }
    return;
  }
  if (stream_.has_exchange() && response_ == ResponsePhase::None) {
    // Sent before the tunnel opened: held, unacknowledged (so bounded by the
    // stream window), until the 200 or another answer.
    early_tunnel_.append(data);
    unconsumed_ += data.size();
    return;
  }
  conn_->consume(id_, data.size());  // no tunnel (an ordinary answer, or it closed): dropped
}

void Http3Stream::forward_tunnel(std::string_view data) {
  tunnel_timer_.arm(conn_->env().config->timeouts.tunnel);
  stream_.send_tunnel(data);
}

void Http3Stream::encode_tunnel_open(const ResponseHead& head, std::string_view) {
  if (!record().head.extended_connect || !answerable()) {
    abort_response();  // no tunnel without RFC 9220's CONNECT (never asked for)
    return;
  }
  response_ = ResponsePhase::Tunnel;
  submit(head, true, false);
  // What only the request's routing needed goes: a tunnel may stay open for hours.
  head_.release();
  tunnel_timer_.init(
      conn_->loop(), [](void* self) { static_cast<Http3Stream*>(self)->on_tunnel_idle(); }, this);
  tunnel_timer_.arm(conn_->env().config->timeouts.tunnel);
  if (!early_tunnel_.empty()) {
    const std::string early = std::exchange(early_tunnel_, {});
    unconsumed_ -= std::min(unconsumed_, early.size());
    on_tunnel_data(early);
  }
  // The FIN came with or right after the CONNECT: the client's half is over.
  if (request_ == RequestPhase::Complete) stream_.end_tunnel();
}

void Http3Stream::on_tunnel_idle() {
  if (closed_ || response_ != ResponsePhase::Tunnel) return;
  const http::ConnectionInfo& info = conn_->info();
  log::info("conn={} client={}:{} h3 stream {}: tunnel idle for {} ms; RESET_STREAM", info.id, info.remote_addr,
            info.remote_port, id_, conn_->env().config->timeouts.tunnel.count());
  stream_.retire();  // the upstream side closes; logged when the reset closes the stream
  response_ = ResponsePhase::Reset;
  ngtcp2_conn_shutdown_stream(conn_->conn(), id_, kH3RequestCancelled);
  conn_->schedule_write();
}

void Http3Stream::on_request_body_writable() {
  if (closed_ || unconsumed_ == 0) return;
  if (record().head.extended_connect && response_ != ResponsePhase::Tunnel) return;  // held for the 200
  conn_->consume(id_, unconsumed_);
  unconsumed_ = 0;
  conn_->schedule_write();
}

void Http3Stream::submit(const ResponseHead& head, bool has_body, bool informational, bool held) {
  // The array itself nghttp3 copies before returning: a per-thread scratch.
  thread_local std::vector<nghttp3_nv> nva;
  nva.clear();
  char status[12];
  const auto status_end = std::to_chars(status, status + sizeof status, head.status).ptr;
  nva.push_back(nv(":status", std::string_view(status, static_cast<size_t>(status_end - status))));
  uint64_t bytes = 0;
  for (const auto& h : head.headers) {
    nva.push_back(nv(h.name, h.value, held));
    bytes += h.name.size() + h.value.size() + 4;
  }
  char digits[24];
  if (!informational && head.states_length()) {
    const auto end = std::to_chars(digits, digits + sizeof digits, *head.content_length).ptr;
    nva.push_back(nv("content-length", std::string_view(digits, static_cast<size_t>(end - digits))));
  }
  record().bytes_sent += bytes + 12;
  if (informational) {
    nghttp3_conn_submit_info(conn_->h3(), id_, nva.data(), nva.size());
  } else {
    nghttp3_data_reader reader{[](nghttp3_conn*, int64_t, nghttp3_vec* vec, size_t veccnt, uint32_t* pflags, void*,
                                  void* stream) -> nghttp3_ssize {
      return static_cast<Http3Stream*>(stream)->read_data(vec, veccnt, pflags);
    }};
    nghttp3_conn_submit_response(conn_->h3(), id_, nva.data(), nva.size(), has_body ? &reader : nullptr);
    if (!has_body) {
      end_handed_ = true;
      schedule_log();
    }
  }
  conn_->schedule_write();
}

void Http3Stream::encode_informational(const ResponseHead& head) {
  if (!answerable()) return;
  submit(head, false, true);
}

void Http3Stream::encode_head(ResponseHead&& head, bool has_body) {
  if (!answerable()) return;
  response_ = has_body ? ResponsePhase::Head : ResponsePhase::Ended;
  held_head_ = std::move(head);
  for (Header& h : held_head_.headers) http::lowercase_in_place(h.name);
  submit(held_head_, has_body, false, true);
}

void Http3Stream::encode_body(std::string_view data) {
  if (closed_ || data.empty()) return;
  if (response_ == ResponsePhase::Tunnel) {
    tunnel_timer_.arm(conn_->env().config->timeouts.tunnel);
  } else if (response_ != ResponsePhase::Head) {
    return;
  }
  chunks_.emplace_back(data);
  buffered_ += data.size();
  resume();
}

void Http3Stream::encode_trailers(const std::vector<Header>& trailers) {
  if (!closed_ && response_ == ResponsePhase::Head) trailers_ = trailers;
}

void Http3Stream::encode_end() {
  if (closed_) return;
  if (response_ == ResponsePhase::Head || response_ == ResponsePhase::Tunnel) response_ = ResponsePhase::Ended;
  resume();
}

void Http3Stream::resume() {
  if (deferred_) {
    deferred_ = false;
    nghttp3_conn_resume_stream(conn_->h3(), id_);
  }
  conn_->schedule_write();
}

nghttp3_ssize Http3Stream::read_data(nghttp3_vec* vec, size_t veccnt, uint32_t* pflags) {
  size_t n = 0;
  while (n < veccnt && handed_chunks_ < chunks_.size()) {
    std::string& c = chunks_[handed_chunks_++];
    vec[n].base = reinterpret_cast<uint8_t*>(c.data());
    vec[n].len = c.size();
    bytes_out_ += c.size();
    ++n;
  }
  if (handed_chunks_ == chunks_.size() && response_ == ResponsePhase::Ended) {
    *pflags |= NGHTTP3_DATA_FLAG_EOF;
    end_handed_ = true;
    schedule_log();
    if (!trailers_.empty()) {
      std::vector<nghttp3_nv> nva;
      for (const auto& h : trailers_) nva.push_back(nv(h.name, h.value));
      if (nghttp3_conn_submit_trailers(conn_->h3(), id_, nva.data(), nva.size()) == 0) {
        *pflags |= NGHTTP3_DATA_FLAG_NO_END_STREAM;
      }
      trailers_.clear();
    }
    return static_cast<nghttp3_ssize>(n);
  }
  if (n == 0) {
    deferred_ = true;
    return NGHTTP3_ERR_WOULDBLOCK;
  }
  return static_cast<nghttp3_ssize>(n);
}

void Http3Stream::on_acked(uint64_t n) {
  buffered_ -= std::min(buffered_, n);
  while (n > 0 && !chunks_.empty() && handed_chunks_ > 0) {
    const uint64_t left = chunks_.front().size() - unacked_front_;
    if (n < left) {
      unacked_front_ += n;
      break;
    }
    n -= left;
    unacked_front_ = 0;
    chunks_.pop_front();
    --handed_chunks_;
  }
  if (!output_congested()) stream_.on_output_drained();
}

bool Http3Stream::output_congested() const { return buffered_ > QuicConnection::kResponseHighWatermark; }

void Http3Stream::abort_response() {
  if (closed_ || response_ == ResponsePhase::Reset) return;
  response_ = ResponsePhase::Reset;
  ngtcp2_conn_shutdown_stream(conn_->conn(), id_, kH3InternalError);
  conn_->schedule_write();
}

void Http3Stream::schedule_log() {
  if (!logged_ && !closed_) LoopContext::of(conn_->loop()).schedule_flush(this);
}

void Http3Stream::flush() {
  if (!logged_ && !closed_ && !waiting_ && end_handed_ && request_ == RequestPhase::Complete) log_line();
}

void Http3Stream::log_line() {
  logged_ = true;
  http::RequestRecord& rec = record();
  rec.bytes_sent += bytes_out_;
  // A tunnel ends when either side ends it (the client's FIN or reset too).
  rec.response_complete =
      (response_ == ResponsePhase::Ended && end_handed_) || (rec.tunnel && response_ == ResponsePhase::Tunnel);
  if (!rec.response_complete && rec.status == 0) rec.status = 499;
  stream_.log("HTTP/3.0", static_cast<uint32_t>(id_), conn_->first_access_log());
}

void Http3Stream::on_closed(uint64_t app_error_code) {
  if (closed_) return;
  closed_ = true;
  tunnel_timer_.close();
  stream_.retire();
  // A head that waited for the handshake and never got it (a replayed
  // early flight, or the client left): never admitted, no request to log.
  if (waiting_ || logged_) return;
  log_line();
}

}  // namespace tlsfront::quic
