// Request limits of a [[route]] (docs/configuration.md, "Access and
// limits"), checked by admit() once the route is known, before any upstream
// is touched, in this order (each may answer alone):
//   access      the route's allow/deny rules on the request's client
//               address (RequestRecord::client(): the real client's) -> 403
//   limit_req   each zone in turn (GCRA, util/gcra_table.h): rejected ->
//               429 with Retry-After; passed -> possibly a wait before the
//               exchange starts (the longest of the zones'), on a timer of
//               the worker's loop (ProxyExchange Phase::Delayed). A zone
//               with store = "redis" is checked by the worker's
//               RemoteLimiter once the exchange starts (its verdict comes
//               back on the loop; the exchange waits in Delayed), after the
//               local zones passed: a refusal then goes out as a 429 from
//               the exchange; a Redis that fails lets the request through.
//   limit_conn  each zone in turn (util/concurrency_table.h): at its max ->
//               503 (nginx's limit_conn_status); else a slot held by the
//               exchange until it ends (a tunnel's, once its 101 is read)
// nginx checks limit_req and limit_conn before allow/deny (preaccess before
// access); here a denied client costs no zone anything.
//
// RequestLimits: the node-wide state of one Generation's zones, shared by
// every worker through it; a reload keeps a zone's state (its keys, counts
// and counters) when its name and size are unchanged
// (control/generation_builder.cc).
// Thread affinity: the zones' tables and counters are thread-safe; the
// check runs on a worker's thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "data/http/exchange_sink.h"
#include "data/http/request_record.h"
#include "util/concurrency_table.h"
#include "util/gcra_table.h"

namespace tlsfront::http {

struct RateZone {
  explicit RateZone(uint64_t bytes) : table(bytes) {}
  GcraTable table;
  // Requests checked: let through at once, let through after a wait,
  // answered 429.
  std::atomic<uint64_t> passed{0}, delayed{0}, rejected{0};
  // store = "redis": checks that Redis did not answer (the request went on).
  std::atomic<uint64_t> failed_open{0};
};

struct ConnZone {
  explicit ConnZone(uint64_t bytes) : table(std::make_shared<ConcurrencyTable>(bytes)) {}
  std::shared_ptr<ConcurrencyTable> table;
  std::atomic<uint64_t> passed{0}, rejected{0};
};

// The worker's checks of store = "redis" zones (data/redis_rate_limiter.h).
class RemoteLimiter {
 public:
  virtual ~RemoteLimiter() = default;
  // The verdict of one request of `key` in `zone`; nullopt: Redis did not
  // answer usably (counted, logged by the limiter): the request goes on.
  using Done = std::function<void(std::optional<GcraVerdict>)>;
  // `done` is called later, on the loop (never from inside check()), unless
  // check() returns false: refused at once (Redis in its backoff), which
  // fails open as nullopt would.
  virtual bool check(const config::LimitReqZone& zone, std::string_view key, Done done) = 0;
};

struct RequestLimits {
  std::vector<std::shared_ptr<RateZone>> req;   // indexed like Config::limit_req
  std::vector<std::shared_ptr<ConnZone>> conn;  // indexed like Config::limit_conn
};

// What the route's limits decided. status 0: go on, after `wait_ms`, holding
// `slots`; else answer `status` (403, 429 with Retry-After `retry_after_s`,
// 503). record.limit names what acted ("access" or a zone's name).
struct LimitDecision {
  int status = 0;
  uint32_t retry_after_s = 0;
  uint64_t wait_ms = 0;
  std::vector<ConcurrencySlot> slots;
  // store = "redis" zones to ask (indices into Config::limit_req) with the
  // request's key for each.
  std::vector<std::pair<size_t, std::string>> remote;
};

// The checks above for `route`; `limits` null (unit tests): zones are not
// checked.
LimitDecision check_route_limits(const config::Config& config, const RequestLimits* limits, const config::Route& route,
                                 const ConnectionInfo& info, RequestRecord& record);

}  // namespace tlsfront::http
