// H2Pool: one worker's HTTP/2 connections (H2Sessions; h2c, or h2 over TLS)
// to one upstream server.
// A request joins the open session with the most streams that still has
// room (so load packs onto few connections and idle ones time out; one
// whose server's SETTINGS have not arrived yet takes every stream); when
// none has room a new session opens, at most `keepalive` usable (not
// draining) sessions per worker per server; past that the least loaded
// usable session takes the stream anyway and nghttp2 holds it until one of
// its streams closes. A session with no stream closes after
// keepalive_timeout, and PINGs the server meanwhile when h2_ping_interval
// is set (H2Session); sessions with no stream are the server's idle gauge.
// Thread affinity: owning worker only (every worker has its own).
#pragma once

#include <netinet/in.h>
#include <uv.h>

#include <memory>
#include <vector>

#include "config/config.h"
#include "data/upstream/h2_session.h"
#include "data/upstream/h2_stream.h"
#include "message/header_rewrite.h"
#include "message/request.h"
#include "metrics/counters.h"
#include "util/result.h"

namespace tlsfront::upstream {

class H2Pool {
 public:
  // `cfg`, `counters` (may be null) borrowed; they outlive the pool.
  // `address`: the server as configured ("127.0.0.1:50051"), for logs.
  // `tls`: the owning UpstreamPool's (borrowed; its ctx null for h2c).
  H2Pool(uv_loop_t* loop, const config::Upstream& cfg, const sockaddr_storage& addr, std::string address,
         metrics::UpstreamServerCounters* counters, TlsTarget* tls = nullptr);
  ~H2Pool();
  H2Pool(const H2Pool&) = delete;
  H2Pool& operator=(const H2Pool&) = delete;

  struct Lease {
    std::unique_ptr<H2Stream> stream;
    bool reused = false;  // joined a connection that was already open
  };
  // A new stream for `handler`, submitted with `fields`
  // (http::H2RequestFields) on a session chosen as above; the fields' names
  // and values must outlive the stream (H2Session::submit).
  // Errc::Upstream when no connection could be started.
  [[nodiscard]] Result<Lease> open_stream(UpstreamHandler* handler, const std::vector<http::FieldView>& fields,
                                          bool has_body);

  // Called by a session that closed: freed after the current callback.
  void remove(H2Session* session);
  // A session's stream count went to or from zero, or it closed: the idle
  // gauge is set to the sessions connected with no stream.
  void update_idle_gauge();
  // A session closes because its PING went unanswered (`why`): counted
  // and logged.
  void count_ping_timeout(const std::string& why);
  // A session closed because the server flooded control frames (H2Session::end_flood).
  void count_flood(const std::string& why);
  // Closes the sessions that carry no stream (shutdown).
  void close_idle();
  // Every open session takes no new stream and closes after its last one
  // (a reload replaced the TLS context they were made with).
  void drain();
  size_t sessions() const { return sessions_.size(); }

 private:
  uv_loop_t* loop_;
  const config::Upstream& cfg_;
  sockaddr_storage addr_;
  std::string address_;
  metrics::UpstreamServerCounters* counters_;
  TlsTarget* tls_;
  std::vector<std::unique_ptr<H2Session>> sessions_;
};

}  // namespace tlsfront::upstream
