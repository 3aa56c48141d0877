// Http2Session: the HTTP/2 server side of one client connection (RFC 9113)
// after ALPN "h2", on an nghttp2 server session. Each client stream becomes
// one Http2Stream and one ProxyExchange over the worker's upstream pools.
//
// What nghttp2 enforces (its defaults, kept on): the connection preface,
// frame sizes, HPACK (RFC 7541) with a 4 KiB dynamic table, §8.2-8.3 header
// validation (lowercase names, no connection-specific fields, TE only
// "trailers", pseudo-headers present once and first), Content-Length
// against DATA (§8.1.1), stream ids not reused, MAX_CONCURRENT_STREAMS
// (§5.1.2: REFUSED_STREAM before our SETTINGS are acknowledged, a connection
// error after), WINDOW_UPDATE overflow (§6.9.1, FLOW_CONTROL_ERROR),
// SETTINGS/PING ACK queue floods
// (nghttp2_option_set_max_outbound_ack), CONTINUATION floods
// (nghttp2_option_set_max_continuations) and its own RST_STREAM rate limit
// (nghttp2_option_set_stream_reset_rate_limit).
// What this class adds: the SETTINGS from [http2] (config.h), and
// SETTINGS_ENABLE_CONNECT_PROTOCOL = 1 when some route allows an upgrade
// (RFC 8441 §3; its extended CONNECT streams: Http2Stream); HEADERS on a
// lower, never opened stream id is a connection error (§5.1.1; nghttp2 1.52
// ignores it); PRIORITY on stream 0 is a connection error PROTOCOL_ERROR
// (§6.3; nghttp2 drops PRIORITY unseen under NO_RFC7540_PRIORITIES); a
// SETTINGS_INITIAL_WINDOW_SIZE that overflows an open stream's window is a
// connection error FLOW_CONTROL_ERROR (§6.9.2; nghttp2 only resets the
// stream); RFC 9113 §5.1 "closed": DATA or HEADERS after the client's own
// RST_STREAM is a stream error STREAM_CLOSED, after END_STREAM both ways a
// connection error STREAM_CLOSED, after our RST_STREAM ignored; a PRIORITY
// frame whose stream depends on itself is a stream error PROTOCOL_ERROR
// (§5.3.1; H2FrameScanner reads what nghttp2 drops unread); a header
// block not ended within timeouts.header (HEADERS or
// CONTINUATION without END_HEADERS, then silence) ends the connection with
// GOAWAY PROTOCOL_ERROR, as a slow HTTP/1.1 head gets 408; request header
// lists over max_header_list_size (HPACK bombs) answered 431 (Http2Stream);
// rapid reset
// (CVE-2023-44487: streams reset by the client before their response ended,
// token bucket) and control frame floods (H2ControlBudget: SETTINGS, PING,
// PRIORITY, GOAWAY, empty DATA, WINDOW_UPDATE that opens no exhausted
// window, unknown frame types, STREAM_CLOSED answers) answered with GOAWAY
// ENHANCE_YOUR_CALM and close, counted in tlsfront_client_floods_total; each
// GOAWAY tlsfront decides is logged once, at info;
// 421 for an :authority the certificate does not cover (RFC 9110 §15.5.20);
// GOAWAY NO_ERROR after timeouts.keepalive without streams, and on shutdown
// with the last stream id honoured (streams in flight finish); a stream whose
// response waits timeouts.send for a window the client never opens is reset
// (CANCEL), so a non-reading client cannot hold upstream connections.
//
// Output: frames are produced by nghttp2_session_mem_send once per loop
// iteration (Flushable), and only while the connection holds less than
// kOutputHighWatermark unsent bytes; input is not taken while above it.
// Memory per connection is bounded by max_concurrent_streams ×
// (initial_window_size + Http2Stream::kResponseHighWatermark + one upstream read).
// Errors: none returned; peer misbehaviour ends a stream (RST_STREAM) or the
// connection (GOAWAY, then ClientTransport::close) and is logged at info
// with the peer address.
// Thread affinity: owning worker only.
#pragma once

#include <nghttp2/nghttp2.h>
#include <openssl/x509.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "data/http/client_session.h"
#include "data/http/client_transport.h"
#include "data/http/exchange_sink.h"
#include "data/http/h2_frame_scanner.h"
#include "data/http/http2_stream.h"
#include "data/http/session_env.h"
#include "metrics/counters.h"
#include "util/h2_control_budget.h"
#include "util/loop_context.h"
#include "util/nghttp2_memory.h"
#include "util/nghttp2_ptr.h"
#include "util/token_bucket.h"

namespace tlsfront::http {

class Http2Session final : public ClientSession, public Flushable {
 public:
  static constexpr size_t kOutputHighWatermark = 64 * 1024;

  // `transport` is borrowed (the connection owns this session);
  // `certificate` is the connection's leaf, borrowed (kept alive by the
  // connection's Generation), used for 421; null disables that check.
  Http2Session(const SessionEnv& env, ClientTransport* transport, ConnectionInfo info, X509* certificate);
  ~Http2Session() override;
  Http2Session(const Http2Session&) = delete;
  Http2Session& operator=(const Http2Session&) = delete;

  // ClientSession
  void on_data(std::string_view data) override;
  bool wants_input() const override;
  void on_timer() override;
  void on_output_drained() override;
  void on_client_closed() override;
  void on_handshake_done(double tls_handshake_ms) override;
  void on_shutdown() override;
  bool close_if_idle() override;

  // Flushable: nghttp2_session_mem_send into the transport while under the
  // high watermark; closes once nghttp2 wants neither to read nor to write.
  void flush() override;

  // For Http2Stream.
  nghttp2_session* ng() const { return session_.get(); }
  const SessionEnv& env() const { return env_; }
  const ConnectionInfo& info() const { return info_; }
  bool output_congested() const { return transport_->buffered_output() > kOutputHighWatermark; }
  void schedule_send();
  // A tunnel stream passed bytes on: the connection's buffers go once
  // written (ClientTransport::release_buffers), so an idle tunnel keeps none.
  void release_buffers() { transport_->release_buffers(); }
  // An idle session's share of the same, once it has been idle (no stream)
  // for kFrameBufferRelease: the pages nghttp2's outbound frame buffer
  // touched (Nghttp2Memory::discard), when nothing is being sent or received
  // and a frame was written since the last release. Not at once: the
  // madvise and the page fault of the next frame cost more than a small
  // request (measured: about a fifth of the rate of one client sending one
  // request at a time), so only a pause longer than a client's think time
  // pays it.
  static constexpr std::chrono::milliseconds kFrameBufferRelease{1000};
  void release_frame_buffer();
  // For tests: pages of nghttp2's large buffers resident now.
  size_t frame_buffer_pages() const { return memory_.resident_pages(); }
  // True when the certificate covers `host` (lowercase, no port; "[v6]" or
  // IPv4 literal or DNS name), or there is no certificate to check.
  bool certificate_covers(std::string_view host) const;
  // True once per connection: the access-log line that carries tls_handshake_ms.
  bool first_access_log() { return std::exchange(first_log_, false); }
  // Counts a stream the client (or its protocol error) ended before its
  // response did; over the budget the connection ends with ENHANCE_YOUR_CALM.
  void count_reset();
  // A response DATA frame with octets went out: the client's WINDOW_UPDATEs
  // returning its octets are not charged as a flood (H2ControlBudget).
  void note_data_sent(size_t octets) { control_frames_.sent_data(octets); }
  // A stream's response went out whole (its END_STREAM frame was sent).
  void note_response_finished() { ++finished_streams_; }
  // A stream's response output became pending (true) or was all taken by
  // nghttp2 (false): the counts that let the timer's purpose be chosen
  // without visiting every stream on every event.
  void note_pending_output(bool pending) { pending ? ++pending_streams_ : --pending_streams_; }
  // Stream `id` found the connection's output congested and paused its
  // upstream: on_output_drained tells it, and only the streams so enrolled.
  void wait_drained(int32_t id) { drain_waiting_.push_back(id); }
  // Entries on that list (tests: at most one per stream).
  size_t drain_waiting() const { return drain_waiting_.size(); }

  // nghttp2 callbacks (trampolines in http2_session.cc).
  int on_begin_frame(const nghttp2_frame_hd* hd);
  int on_begin_headers(const nghttp2_frame* frame);
  int on_header(const nghttp2_frame* frame, std::string_view name, std::string_view value);
  int on_frame_recv(const nghttp2_frame* frame);
  int on_data_chunk(int32_t stream_id, std::string_view data);
  int on_stream_close(int32_t stream_id, uint32_t error_code);
  int on_frame_send(const nghttp2_frame* frame);
  // RFC 9113 §6.9.2: a SETTINGS_INITIAL_WINDOW_SIZE that takes any stream's
  // window past 2^31-1 is a connection error FLOW_CONTROL_ERROR (nghttp2
  // resets only the stream). True when `frame` did that; replays its
  // entries over windows_before_settings_ (which it uses up).
  bool settings_overflow_window(const nghttp2_frame* frame);

 private:
  // Rapid reset (CVE-2023-44487): streams the client ends before their
  // response did. nghttp2's own RST_STREAM limiter (1000 burst, 33/s) stays
  // on behind it.
  static constexpr double kResetBurst = 200;
  static constexpr double kResetPerSecond = 33;
  // Stream ids remembered after close (recently_closed_), so a late frame
  // on one gets the answer §5.1 asks and is not taken for a stream id going
  // backwards.
  static constexpr size_t kRecentlyClosed = 256;

  // How a stream ended, for the frames that may still name it (§5.1).
  enum class ClosedBy {
    Us,           // our RST_STREAM (or refusal): late frames are ignored
    ClientReset,  // the client's RST_STREAM: DATA/HEADERS → RST_STREAM STREAM_CLOSED
    BothEnded,    // END_STREAM both ways: DATA/HEADERS → GOAWAY STREAM_CLOSED
  };
  struct ClosedStream {
    int32_t id;
    ClosedBy by;
  };
  // Header: a header block is open (HEADERS without END_HEADERS, waiting for
  // CONTINUATION; timeouts.header, then GOAWAY). Idle: no streams
  // (timeouts.keepalive). Send: our output is not drained (timeouts.send).
  // Stall: some stream's response waits for a window the client does not
  // open (timeouts.send without progress).
  enum class TimerPurpose { None, Header, Idle, Send, Stall };

  Http2Stream* find(int32_t stream_id) const;
  void remember_closed(int32_t stream_id, ClosedBy by);
  // recently_closed_'s entry for `stream_id`, or nullptr.
  const ClosedStream* recently_closed(int32_t stream_id) const;
  // HEADERS on `stream_id`, at or below the highest one opened and no
  // longer open: the answer §5.1 asks (a callback result).
  int on_headers_for_closed_stream(int32_t stream_id);
  // The client flooded (`what`, counted as `kind`): GOAWAY ENHANCE_YOUR_CALM
  // once input stops. Returns NGHTTP2_ERR_CALLBACK_FAILURE.
  int flood(const char* what, metrics::Flood kind);
  // RST_STREAM PROTOCOL_ERROR for each stream H2FrameScanner found
  // depending on itself in the last read.
  void reset_self_dependent();
  // Of the streams the read's DATA frames name, those already closed (in
  // recently_closed_) before nghttp2 reads it; answered after it did
  // (answer_closed_data), as on_headers_for_closed_stream answers HEADERS.
  void find_closed_data();
  void answer_closed_data();
  // The answer §5.1 asks for a frame of `type` on `closed`: 0 when ignored
  // or answered with RST_STREAM STREAM_CLOSED, else the connection error
  // (set as terminate_code_).
  uint32_t answer_closed_stream(const ClosedStream& closed, const char* type);
  // GOAWAY with `error_code`, stop reading, close once it is written.
  void terminate(uint32_t error_code);
  void close_now(bool notify);
  void update_timer();

  const SessionEnv& env_;  // the connection's WorkerGeneration's (outlives the session)
  ClientTransport* transport_;
  ConnectionInfo info_;
  X509* certificate_;
  mutable std::string covered_host_;  // the last host certificate_covers() said yes to
  Nghttp2Memory memory_;              // before session_: nghttp2 frees into it when the session is deleted
  Nghttp2SessionPtr session_;
  std::unordered_map<int32_t, std::unique_ptr<Http2Stream>> streams_;
  std::vector<int32_t> to_start_;
  int32_t last_stream_id_ = 0;                // highest client stream opened
  // At most kRecentlyClosed, then a ring (the oldest overwritten at
  // closed_next_): grows with the streams a connection closed, so a
  // connection that had one request holds one entry.
  std::vector<ClosedStream> recently_closed_;
  size_t closed_next_ = 0;
  // Streams to tell when the output drains (wait_drained): with hundreds of
  // streams, visiting each one after every write was a share of the CPU.
  std::vector<int32_t> drain_waiting_;
  size_t finished_streams_ = 0;             // of streams_: response_finished()
  size_t pending_streams_ = 0;              // of streams_: has_pending_output()
  std::optional<uint32_t> terminate_code_;  // set by a callback that stops input
  bool header_block_open_ = false;          // HEADERS without END_HEADERS seen, CONTINUATION due
  // Each open stream's send window when a SETTINGS frame began (for §6.9.2).
  std::vector<int64_t> windows_before_settings_;
  uint32_t initial_window_before_settings_ = NGHTTP2_INITIAL_WINDOW_SIZE;
  TokenBucket resets_{kResetBurst, kResetPerSecond};
  H2ControlBudget control_frames_;
  H2FrameScanner frame_scanner_;
  std::vector<int32_t> self_dependent_;    // found by frame_scanner_ in the current read
  std::vector<int32_t> data_streams_;      // likewise
  std::vector<ClosedStream> closed_data_;  // find_closed_data()'s
  TimerPurpose timer_ = TimerPurpose::None;
  bool input_stopped_ = false;
  bool goaway_sent_ = false;
  bool closed_ = false;
  bool first_log_ = true;
  bool frames_written_ = false;  // nghttp2 serialized a frame since release_frame_buffer()
  bool release_due_ = false;     // the Idle timer's first firing releases the frame buffer
};

}  // namespace tlsfront::http
