// Http3Stream: one client-initiated bidirectional QUIC stream carrying an
// HTTP/3 request (RFC 9114 §4.1): the HTTP/3 codec (StreamCodec) of one
// RequestStream (data/http/request_stream.h), as Http2Stream is for HTTP/2.
// The request head comes from nghttp3's decoded fields (pseudo-header rules
// of §4.3.1 already checked by nghttp3: :method, :scheme, :path present,
// no connection-specific fields), assembled as HTTP/2's are
// (data/http/field_section_head.h); a malformed one is a stream error
// H3_MESSAGE_ERROR (§4.1.2). The response goes out as a HEADERS frame and DATA
// frames read from chunks kept until the client acknowledged them.
//
// WebSocket over HTTP/3 (RFC 9220): the connection sends
// SETTINGS_ENABLE_CONNECT_PROTOCOL; an extended CONNECT (`:protocol`) goes
// up as the HTTP/1.1 Upgrade request it maps to, as over HTTP/2
// (RequestStream::map_extended_connect), and the upstream's 101 comes back
// as a 200 whose DATA carries the tunnel. The stream's request DATA is the
// tunnel's client side (held, unacknowledged, until the 200), its FIN the
// client's end; the upstream's close ends the response (FIN). A tunnel
// idle for timeouts.tunnel is reset (H3_REQUEST_CANCELLED).
//
// Trust: every field comes from the client.
// Thread affinity: the worker's loop.
#pragma once

#include <nghttp3/nghttp3.h>

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "data/http/field_section_head.h"
#include "data/http/request_stream.h"
#include "util/lazy_timer.h"
#include "util/loop_context.h"

namespace tlsfront::quic {

using http::Header;
using http::HeaderToken;
using http::RequestHead;
using http::ResponseHead;

class QuicConnection;

class Http3Stream final : public Deletable, public Flushable, private http::StreamCodec {
 public:
  // The request:  Head -> Body -> Complete (FIN), or Head -> Complete.
  // (An extended CONNECT's Body is its tunnel's client side.)
  enum class RequestPhase { Head, Body, Complete };
  // The response: None -> Head -> Ended, None -> Ended (no body),
  // None -> Tunnel -> Ended (the upstream closed the tunnel);
  // any -> Reset (cut short: RESET_STREAM H3_INTERNAL_ERROR).
  enum class ResponsePhase { None, Head, Tunnel, Ended, Reset };

  Http3Stream(QuicConnection* conn, int64_t id);
  ~Http3Stream() override;

  int64_t id() const { return id_; }
  // One field of the request head; views valid during the call.
  void on_header(std::string_view name, std::string_view value);
  // The head ended (`fin`: no body follows): admission; an admitted request's
  // exchange starts at once. A head read in early data whose admission the
  // connection defers (QuicConnection::may_admit) waits, its body kept
  // unacknowledged (bounded by the stream window), until admit().
  void on_request_head(bool fin);
  bool waiting() const { return waiting_; }
  void admit();
  // The handshake completed after the request was read in early data.
  void on_handshake_done() { stream_.on_handshake_done(); }
  void on_request_data(std::string_view data);
  void on_request_end();
  // nghttp3 closed the stream (all acknowledged, or reset): the line is
  // written unless it was already.
  void on_closed(uint64_t app_error_code);
  // The access-log line, at the end of the loop iteration in which the
  // response's end went to nghttp3 with the request complete, as over TCP
  // when the last byte reaches the client transport (not when the client
  // acknowledges it: a lost last ACK would hold the line until the idle
  // timeout).
  void flush() override;
  // The client acknowledged `n` more response octets.
  void on_acked(uint64_t n);
  nghttp3_ssize read_data(nghttp3_vec* vec, size_t veccnt, uint32_t* pflags);

 private:
  // StreamCodec
  void encode_informational(const ResponseHead& head) override;
  void encode_head(ResponseHead&& head, bool has_body) override;
  void encode_tunnel_open(const ResponseHead& head, std::string_view protocol) override;
  void encode_body(std::string_view data) override;
  void encode_trailers(const std::vector<Header>& trailers) override;
  void encode_end() override;
  bool answerable() const override { return response_ == ResponsePhase::None && !closed_; }
  void abort_response() override;
  bool output_congested() const override;
  void on_request_body_writable() override;
  const http::ConnectionInfo& connection_info() const override;

  http::RequestRecord& record() { return stream_.record(); }
  // Admission of the complete head; true when its exchange started.
  bool admit_head();
  // `held`: `head` is held_head_, whose fields nghttp3 points at uncopied.
  void submit(const ResponseHead& head, bool has_body, bool informational, bool held = false);
  void resume();
  void schedule_log();
  void log_line();
  // An extended CONNECT's request DATA: to the tunnel once open, held
  // before, dropped after.
  void on_tunnel_data(std::string_view data);
  void forward_tunnel(std::string_view data);
  void on_tunnel_idle();

  QuicConnection* conn_;
  int64_t id_;
  RequestPhase request_ = RequestPhase::Head;
  ResponsePhase response_ = ResponsePhase::None;
  bool closed_ = false;
  http::RequestStream stream_;
  http::FieldSectionHead head_;  // the request head from its fields
  size_t header_bytes_ = 0;
  size_t unconsumed_ = 0;  // request body octets not yet acknowledged (flow control)
  // Response body: chunks handed to nghttp3 stay until acknowledged.
  std::deque<std::string> chunks_;
  size_t handed_chunks_ = 0;    // chunks_[0..handed_chunks_) were given to nghttp3
  uint64_t unacked_front_ = 0;  // octets of chunks_[0] already acknowledged
  uint64_t buffered_ = 0;       // octets in chunks_ not yet acknowledged
  uint64_t bytes_out_ = 0;      // body octets handed to nghttp3
  bool deferred_ = false;       // read_data said WOULDBLOCK
  bool end_handed_ = false;     // the response's end (FIN, or trailers) went to nghttp3
  bool logged_ = false;
  bool waiting_ = false;        // a head waiting for admission (early data)
  bool head_fin_ = false;       // the head came with FIN (no body)
  std::string waiting_body_;    // request body read while waiting
  std::string early_tunnel_;    // an extended CONNECT's DATA before its 200: unacknowledged
  LazyTimer tunnel_timer_;      // timeouts.tunnel, from encode_tunnel_open on
  std::vector<Header> trailers_;
  // The final head, names lowercased (RFC 9114 §4.2), for this stream's
  // life: nghttp3 encodes its fields (NGHTTP3_NV_FLAG_NO_COPY_*) when it
  // writes the HEADERS frame, which it does not once the stream is closed.
  ResponseHead held_head_;
};

}  // namespace tlsfront::quic
