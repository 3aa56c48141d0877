// OcspFetcher: HTTP/1.1 GET/POST exchanges with OCSP responders on the
// control loop, with libcurl's multi_socket interface driven by libuv
// (curl's docs/examples/multi-uv.c shape): libcurl owns the sockets, DNS
// (threaded resolver) and HTTP framing; this class turns its socket and timer
// requests into uv_poll/uv_timer handles on one loop. Nothing blocks the loop.
//
// Limits per fetch, so a hostile responder (huge, slow, garbage) costs at most
// `timeout` and `max_bytes`: whole-transfer timeout, response body limit
// (CURLOPT_MAXFILESIZE plus a write callback that aborts past it), response
// header bytes limit (kMaxHeaderBytes), http:// only, no redirects, no proxy,
// no content decoding, a fresh connection each time. Each fetch is independent: one hung
// responder never delays another.
//
// Thread affinity: control loop only (the loop given to create()).
#pragma once

#include <uv.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "tls/ocsp_response.h"
#include "util/result.h"
#include "util/uv_handle.h"

namespace tlsfront::tls {

class OcspFetcher {
 public:
  // The body of a 200 response, or the reason there is none.
  using Callback = std::function<void(Result<std::vector<uint8_t>>)>;
  static constexpr size_t kMaxHeaderBytes = 32 * 1024;

  // Builds the curl multi handle on `loop` (borrowed; must outlive the
  // fetcher). Calls curl_global_init once per process. Errors: Errc::Internal
  // when libcurl cannot be initialised.
  [[nodiscard]] static Result<std::unique_ptr<OcspFetcher>> create(uv_loop_t* loop);
  ~OcspFetcher();
  OcspFetcher(const OcspFetcher&) = delete;
  OcspFetcher& operator=(const OcspFetcher&) = delete;

  // Starts `request` (url: http:// only) and returns an id for cancel().
  // `done` runs later on the loop, exactly once unless cancel()ed or
  // stop()ped first; never from inside fetch(). Errors of fetch() itself
  // (then `done` never runs): Errc::Internal (libcurl refused the handle).
  // Errors given to `done`: Errc::Timeout (nothing complete within
  // `timeout`), Errc::ResourceExhausted (body over `max_bytes` or headers
  // over kMaxHeaderBytes), Errc::Upstream (connect/DNS/HTTP failure or a
  // status other than 200, an empty body).
  [[nodiscard]] Result<uint64_t> fetch(const OcspHttpRequest& request, std::chrono::milliseconds timeout, size_t max_bytes,
                 Callback done);
  // Abandons fetch `id` without calling its callback; no-op when it is done.
  void cancel(uint64_t id);
  // Abandons every fetch and closes every handle (before the loop is drained).
  void stop();

  size_t active_for_test() const { return transfers_.size(); }

 private:
  struct Transfer;
  struct Socket;
  explicit OcspFetcher(uv_loop_t* loop);
  static int socket_cb(void* easy, int fd, int what, void* userp, void* socketp) noexcept;
  static int timer_cb(void* multi, long timeout_ms, void* userp) noexcept;
  void on_socket_event(int fd, int status, int events);
  void on_timeout();
  void drain_finished();
  void release(Transfer& t);

  uv_loop_t* loop_;
  void* multi_ = nullptr;  // CURLM*
  UvHandle<uv_timer_t> timer_;
  std::map<int, std::unique_ptr<Socket>> sockets_;
  std::map<uint64_t, std::unique_ptr<Transfer>> transfers_;
  uint64_t next_id_ = 1;
};

}  // namespace tlsfront::tls
