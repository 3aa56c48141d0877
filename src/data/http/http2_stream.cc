#include "data/http/http2_stream.h"

#include <charconv>
#include <cstring>
#include <vector>

#include "data/http/alt_svc.h"
#include "data/http/extended_connect.h"
#include "data/http/http2_session.h"
#include "log/log.h"
#include "message/error_response.h"
#include "message/header_token.h"
#include "util/nghttp2_fields.h"

namespace tlsfront::http {
namespace {

ssize_t response_read_cb(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* data_flags,
                         nghttp2_data_source* source, void*) noexcept {
  return static_cast<Http2Stream*>(source->ptr)->read_response(buf, length, data_flags);
}

}  // namespace

Http2Stream::Http2Stream(Http2Session* session, int32_t id)
    : session_(session), loop_(session->env().loop), id_(id), stream_(session->env(), this) {
  record().begin();
}

Http2Stream::~Http2Stream() = default;  // the session may be gone already (its streams are freed after it)

const ConnectionInfo& Http2Stream::connection_info() const { return session_->info(); }

bool Http2Stream::head_too_large() const {
  return header_bytes_ > session_->env().config->http2.max_header_list_size;
}

void Http2Stream::on_header(std::string_view name, std::string_view value) {
  // RFC 9113 §6.5.2: the size of a field is name + value + 32.
  header_bytes_ += name.size() + value.size() + 32;
  record().bytes_received += name.size() + value.size() + 4;
  if (head_too_large()) return;
  head_.add(record(), name, value);
}

bool Http2Stream::on_request_head(bool end_stream) {
  transition(request_, end_stream ? RequestPhase::Complete : RequestPhase::Body);
  if (head_too_large()) {
    stream_.respond_local(431);
    return false;
  }
  RequestHead& req = record().head;
  // RFC 8441 §4 (nghttp2 checked :scheme, :path and :authority are there).
  if (req.method == "CONNECT" && !head_.protocol().empty()) stream_.map_extended_connect(head_.protocol());
  LocalAnswer answer = stream_.admit([&]() -> int {
    const int status = head_.finish(record(), end_stream);
    if (status == FieldSectionHead::kMalformed) {
      reset(NGHTTP2_PROTOCOL_ERROR);
      return -1;
    }
    if (status != 0) return status;
    // RFC 9110 §15.5.20: coalesced onto the wrong connection.
    return session_->certificate_covers(req.host) ? 0 : 421;
  });
  if (answer.status != 0) {
    if (answer.status > 0) stream_.respond_local(std::move(answer));
    return false;
  }
  transition(upstream_, UpstreamPhase::Pending);
  return true;
}

void Http2Stream::start() {
  if (upstream_ != UpstreamPhase::Pending || !stream_.has_exchange() || closed()) return;
  transition(upstream_, UpstreamPhase::Started);
  stream_.start();
  if (!stream_.has_exchange()) return;
  if (!early_body_.empty() && !record().head.extended_connect) {
    std::string body = std::move(early_body_);
    early_body_.clear();
    stream_.on_request_body(body);
    if (!stream_.request_body_congested()) on_request_body_writable();
  }
  if (request_ == RequestPhase::Complete) {
    if (!request_trailers_.empty()) stream_.on_request_trailers(std::move(request_trailers_));
    stream_.on_request_complete();
  }
}

void Http2Stream::consume(size_t n) {
  if (n > 0) nghttp2_session_consume_stream(session_->ng(), id_, n);
}

void Http2Stream::drop_held_body() {
  early_body_.clear();
  consume(unconsumed_);
  unconsumed_ = 0;
}

void Http2Stream::on_request_data(std::string_view data) {
  record().bytes_received += data.size();
  if (record().head.extended_connect) {
    on_tunnel_data(data);
    return;
  }
  if (!record().add_body(data.size(), session_->env().config->limits.max_body_bytes) &&
      response_ == ResponsePhase::None) {
    stream_.respond_local(413);
  }
  if (!stream_.has_exchange() || response_ == ResponsePhase::EndSent) {
    // Nobody wants these bytes (a local answer, or the response is complete):
    // acknowledged and dropped, so the client can finish its upload, up to
    // kMaxDiscardBytes; then the stream is reset once its response is out.
    consume(data.size());
    discarded_ += data.size();
    if (response_ == ResponsePhase::EndSent && discarded_ > kMaxDiscardBytes) reset(NGHTTP2_NO_ERROR);
    return;
  }
  if (upstream_ == UpstreamPhase::Pending) {
    early_body_.append(data);  // bounded by the stream window: not yet consumed
    unconsumed_ += data.size();
    return;
  }
  stream_.on_request_body(data);
  if (stream_.request_body_congested()) {
    unconsumed_ += data.size();
  } else {
    consume(data.size());
  }
}

void Http2Stream::on_trailer(std::string_view name, std::string_view value) {
  header_bytes_ += name.size() + value.size() + 32;
  record().bytes_received += name.size() + value.size() + 4;
  if (head_too_large()) return;  // dropped: the request already went up
  request_trailers_.push_back(Header{std::string(name), std::string(value), classify_header(name)});
}

void Http2Stream::on_tunnel_data(std::string_view data) {
  if (request_ == RequestPhase::Tunnel && response_ == ResponsePhase::Tunnel &&
      (stream_.has_exchange() || stream_.has_tunnel())) {
    forward_tunnel(data);
    if (stream_.upstream_congested()) {
      unconsumed_ += data.size();  // acknowledged by on_request_body_writable()
    } else {
      consume(data.size());
    }
    return;
  }
  if (stream_.has_exchange() && response_ == ResponsePhase::None) {
    // Sent before the tunnel opened: held, unacknowledged (so bounded by the
    // stream window), until the 101 (open_tunnel) or another answer.
    early_body_.append(data);
    unconsumed_ += data.size();
    return;
  }
  // No tunnel (an ordinary answer, or the upstream closed it): dropped.
  consume(data.size());
  discarded_ += data.size();
  if (response_ == ResponsePhase::EndSent && discarded_ > kMaxDiscardBytes) reset(NGHTTP2_NO_ERROR);
}

void Http2Stream::forward_tunnel(std::string_view data) {
  tunnel_timer_.arm(session_->env().config->timeouts.tunnel);
  stream_.send_tunnel(data);
  session_->release_buffers();
}

void Http2Stream::encode_tunnel_open(const ResponseHead& head, std::string_view) {
  if (!record().head.extended_connect) {
    abort_response();  // no tunnel without RFC 8441's CONNECT (never asked for)
    return;
  }
  transition(response_, ResponsePhase::Tunnel);
  if (request_ == RequestPhase::Body) transition(request_, RequestPhase::Tunnel);
  submit_head(head, true, false);
  // What only the request's routing needed goes: a tunnel may stay open for hours.
  head_.release();
  tunnel_timer_.init(
      session_->env().loop, [](void* self) { static_cast<Http2Stream*>(self)->on_tunnel_idle(); }, this);
  tunnel_timer_.arm(session_->env().config->timeouts.tunnel);
  if (!early_body_.empty()) {
    std::string early = std::move(early_body_);
    early_body_.clear();
    forward_tunnel(early);
    if (!stream_.upstream_congested()) on_request_body_writable();
  }
  // END_STREAM came with or right after the CONNECT: the client's half is over.
  if (request_ == RequestPhase::Complete) stream_.end_tunnel();
}

void Http2Stream::on_tunnel_idle() {
  if (closed() || !record().tunnel) return;
  const ConnectionInfo& info = session_->info();
  log::info("conn={} client={}:{} h2 stream {}: tunnel idle for {} ms; RST_STREAM", info.id, info.remote_addr,
            info.remote_port, id_, session_->env().config->timeouts.tunnel.count());
  stream_.retire();  // logged when the reset closes the stream
  reset(NGHTTP2_CANCEL);
}

void Http2Stream::on_request_end() {
  if (request_ == RequestPhase::Complete) return;  // the request already ended
  if (request_ == RequestPhase::Tunnel) {
    transition(request_, RequestPhase::Complete);
    stream_.end_tunnel();
    return;
  }
  transition(request_, RequestPhase::Complete);
  if (upstream_ == UpstreamPhase::Started) {
    if (!request_trailers_.empty()) stream_.on_request_trailers(std::move(request_trailers_));
    stream_.on_request_complete();
  }
}

void Http2Stream::on_request_body_writable() {
  if (closed() || upstream_ != UpstreamPhase::Started) return;
  consume(unconsumed_);
  unconsumed_ = 0;
  session_->schedule_send();
}

void Http2Stream::submit_head(const ResponseHead& head, bool has_body, bool informational, bool held) {
  FieldBlock& block = FieldBlock::start();
  char status[12];
  const auto status_end = std::to_chars(status, status + sizeof status, head.status).ptr;
  block.add(":status", std::string_view(status, static_cast<size_t>(status_end - status)));
  for (const auto& h : head.headers) {
    if (held) {
      block.add_view(h.name, h.value, h.no_index, true);
    } else {
      block.add(h.name, h.value, h.no_index);
    }
  }
  AltSvcBuffer alt_svc;
  if (!informational) {
    if (std::string_view value = alt_svc_value(session_->info(), head, alt_svc); !value.empty()) {
      block.add("alt-svc", value);
    }
  }
  if (!informational && head.states_length()) {
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, *head.content_length).ptr;
    block.add("content-length", std::string_view(digits, static_cast<size_t>(end - digits)));
  }
  nghttp2_nv* nva = block.nva();
  const uint64_t bytes = block.octets();
  record().bytes_sent += bytes;
  ++heads_submitted_;
  if (!informational) {
    final_head_ = heads_submitted_;
    final_head_bytes_ = bytes;
  }
  if (informational) {
    nghttp2_submit_headers(session_->ng(), NGHTTP2_FLAG_NONE, id_, nullptr, nva, block.size(), nullptr);
  } else if (has_body) {
    nghttp2_data_provider provider;
    provider.source.ptr = this;
    provider.read_callback = response_read_cb;
    nghttp2_submit_response(session_->ng(), id_, nva, block.size(), &provider);
  } else {
    nghttp2_submit_response(session_->ng(), id_, nva, block.size(), nullptr);
  }
  session_->schedule_send();
}

void Http2Stream::encode_informational(const ResponseHead& head) {
  if (closed() || response_ != ResponsePhase::None) return;
  submit_head(head, false, true);
}

void Http2Stream::encode_head(ResponseHead&& head, bool has_body) {
  if (closed() || response_ != ResponsePhase::None) return;
  transition(response_, has_body ? ResponsePhase::Head : ResponsePhase::Ended);
  held_head_ = std::move(head);
  // RFC 9113 §8.2.1, done in place (nghttp2 lowercases only what it copies).
  for (Header& h : held_head_.headers) lowercase_in_place(h.name);
  submit_head(held_head_, has_body, false, true);
}

void Http2Stream::resume_provider() {
  if (!provider_deferred_) return;
  provider_deferred_ = false;
  nghttp2_session_resume_data(session_->ng(), id_);
}

void Http2Stream::encode_body(std::string_view data) {
  if (closed() || data.empty()) return;
  if (response_ == ResponsePhase::Tunnel) tunnel_timer_.arm(session_->env().config->timeouts.tunnel);
  if (pending_output() == 0) {
    output_moved_at_ = uv_now(loop_);
    session_->note_pending_output(true);
  }
  out_.append(data);
  resume_provider();
  session_->schedule_send();
}

void Http2Stream::encode_trailers(const std::vector<Header>& trailers) {
  if (closed() || response_ != ResponsePhase::Head) return;  // no DATA provider to end with them
  trailers_ = trailers;
}

void Http2Stream::encode_end() {
  if (closed()) return;
  if (response_ == ResponsePhase::Head || response_ == ResponsePhase::Tunnel) {
    transition(response_, ResponsePhase::Ended);
  }
  resume_provider();
  session_->schedule_send();
}

void Http2Stream::abort_response() {
  // RFC 9113 §8.5: a tunnel whose upstream connection failed is CONNECT_ERROR.
  reset(response_ == ResponsePhase::Tunnel ? NGHTTP2_CONNECT_ERROR : NGHTTP2_INTERNAL_ERROR);
}

bool Http2Stream::output_congested() const {
  if (pending_output() > kResponseHighWatermark) return true;  // read_response() tells when it drains
  if (!session_->output_congested()) return false;
  if (!drain_waiting_) {
    drain_waiting_ = true;
    session_->wait_drained(id_);
  }
  return true;
}

void Http2Stream::on_output_drained() {
  // Cheap when the upstream is not paused (ProxyExchange pauses it itself
  // whenever output_congested() holds after a sink call).
  if (closed() || output_congested()) return;
  stream_.on_output_drained();
}

ssize_t Http2Stream::read_response(uint8_t* buf, size_t length, uint32_t* data_flags) {
  size_t n = std::min(length, pending_output());
  if (n > 0) {
    std::memcpy(buf, out_.data() + out_off_, n);
    output_moved_at_ = uv_now(loop_);
    session_->note_data_sent(n);
  }
  out_off_ += n;
  bytes_out_ += n;
  if (n > 0 && out_off_ == out_.size()) session_->note_pending_output(false);
  if (out_off_ == out_.size()) {
    if (response_ == ResponsePhase::Tunnel) {
      std::string().swap(out_);  // an idle tunnel keeps no buffer
      session_->release_buffers();
    } else {
      out_.clear();
    }
    out_off_ = 0;
  } else if (out_off_ > kResponseHighWatermark) {
    out_.erase(0, out_off_);
    out_off_ = 0;
  }
  if (pending_output() == 0 && response_ == ResponsePhase::Ended) {
    *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    if (!trailers_.empty()) {
      // RFC 9113 §8.1: a trailing HEADERS frame ends the stream instead.
      FieldBlock& block = FieldBlock::start();
      for (const auto& h : trailers_) block.add(h.name, h.value);
      if (nghttp2_submit_trailer(session_->ng(), id_, block.nva(), block.size()) == 0) {
        *data_flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
      }
      trailers_.clear();
    }
  } else if (n == 0) {
    provider_deferred_ = true;
    return NGHTTP2_ERR_DEFERRED;
  }
  on_output_drained();
  return static_cast<ssize_t>(n);
}

void Http2Stream::abort_stalled() {
  stream_.retire();  // logged when the reset closes the stream
  reset(NGHTTP2_CANCEL);
}

void Http2Stream::reset(uint32_t error_code) {
  if (closed()) return;
  nghttp2_submit_rst_stream(session_->ng(), NGHTTP2_FLAG_NONE, id_, error_code);
  session_->schedule_send();
}

void Http2Stream::on_response_end_sent() {
  transition(response_, ResponsePhase::EndSent);
  session_->note_response_finished();
  drop_held_body();  // bytes held back for an upstream that no longer wants them
  // RFC 9113 §8.1: the response is complete and the rest of the request is
  // not wanted: RST_STREAM NO_ERROR, unless the client may still finish the
  // upload cheaply (libcurl, for one, fails a transfer whose upload is cut).
  // An extended CONNECT answered without a tunnel has nothing left to send.
  if (request_ != RequestPhase::Complete &&
      (discarded_ > kMaxDiscardBytes || (record().head.extended_connect && !record().tunnel))) {
    reset(NGHTTP2_NO_ERROR);
  }
}

void Http2Stream::on_client_reset() {
  if (end_ == StreamEnd::Open) transition(end_, StreamEnd::ClientReset);
}

void Http2Stream::on_closed(uint32_t error_code) {
  if (closed()) return;
  const bool client_reset = end_ == StreamEnd::ClientReset;
  const bool by_client = client_reset || error_code == NGHTTP2_CANCEL;
  transition(end_, StreamEnd::Closed);
  tunnel_timer_.close();
  stream_.retire();
  record().bytes_sent += bytes_out_;
  // A tunnel ends when either side ends it: a client's RST_STREAM too.
  record().response_complete = response_ == ResponsePhase::EndSent || (record().tunnel && client_reset);
  if (!record().response_complete && !final_head_sent()) {
    // Cut short before the client had a status: it went away (nginx's
    // 499), or we reset the stream after a failure, dropping a queued head.
    record().bytes_sent -= final_head_bytes_;
    if (by_client) {
      record().status = 499;
    } else if (response_ != ResponsePhase::None) {
      record().status = 502;
    } else if (record().status == 0) {
      record().status = 400;
    }
  }
  stream_.log("HTTP/2.0", static_cast<uint32_t>(id_), session_->first_access_log());
}

}  // namespace tlsfront::http
