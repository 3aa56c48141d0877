// AdminServer: the admin listener ([admin] address, default 127.0.0.1:9901):
// plain HTTP/1.1, one request per connection, off the data path (it runs on
// the control loop, never in a worker).
//   GET /metrics  200, Prometheus text format 0.0.4 (the `metrics` callback)
//   GET /healthz  200 "ok" while serving, 503 "draining" once stopping
//   GET /upstreams  200, the upstreams and their servers' state as JSON
//                 (control/upstreams_report.h)
//   other paths   404; other methods 405 (HEAD is answered like GET, no body)
// Bounded: request head at most 8 KiB (else 431), 5 s to send it (else the
// connection is closed), at most 64 admin connections at once: a new one
// then closes the oldest that is still sending its head (idle connections
// cannot lock a health checker out), or is itself closed when all 64 are
// being answered. The answer always carries Connection: close. A failed
// accept (at the open-files limit) pauses accepting for kBackoffMs
// (util/acceptor.h), with one warning per kReportInterval.
// Thread affinity: the loop's thread only.
#pragma once

#include <uv.h>

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "config/config.h"
#include "log/log_throttle.h"
#include "util/acceptor.h"
#include "util/result.h"
#include "util/uv_handle.h"

namespace tlsfront::control {

class AdminServer {
 public:
  struct Handlers {
    std::function<std::string()> metrics;  // the /metrics body
    std::function<bool()> healthy;         // false: /healthz answers 503
    std::function<std::string()> upstreams;  // the /upstreams body (JSON); null: 404
  };

  // Listens on `address` on `loop` (borrowed; outlives the server).
  // Errors: Errc::Io naming the address (in use, cannot bind).
  [[nodiscard]] static Result<std::unique_ptr<AdminServer>> start(uv_loop_t* loop, const config::Endpoint& address,
                                                                  Handlers handlers);
  ~AdminServer();  // closes the listener and every admin connection

  // The address it listens on: the configured one, with the port the kernel
  // picked when that was 0.
  const config::Endpoint& address() const { return address_; }
  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;

  static constexpr size_t kMaxRequestBytes = 8 * 1024;
  static constexpr uint64_t kRequestTimeoutMs = 5'000;
  static constexpr size_t kMaxConnections = 64;
  static constexpr int kBacklog = 64;
  static constexpr uint64_t kBackoffMs = 500;
  static constexpr std::chrono::seconds kReportInterval{10};

 private:
  class Conn;
  AdminServer(uv_loop_t* loop, Handlers handlers);
  void on_connection(UniqueFd fd);
  void on_accept_failed(int err);
  void remove(Conn* c);

  uv_loop_t* loop_;
  Handlers handlers_;
  std::map<Conn*, std::unique_ptr<Conn>> conns_;
  Acceptor acceptor_;
  UvHandle<uv_timer_t> backoff_;
  log::LogThrottle report_{kReportInterval};
  config::Endpoint address_;
  uint64_t next_seq_ = 0;
};

}  // namespace tlsfront::control
