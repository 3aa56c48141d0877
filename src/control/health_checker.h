// HealthChecker: the active health checks of every [[upstream]] with a
// health_check table, run once per process (not per worker) on a thread
// of their own, with its own libuv loop: a slow TLS handshake to a server
// never delays the control loop's signals and scrapes, and the data
// plane's upstream pools run there as on a worker.
// Each round (every `interval`), each server of a checked group (each
// address of its names, as the ServerDirectory holds them now) gets one
// HealthProbe; verdicts count per server:
//   up   -> down   `fall` failed checks in a row
//   down -> up     `rise` passed checks in a row (slow_start from then)
// and are written to the server's ServerHealth on the HealthBoard, which
// every worker's balancer reads (ServerHealth::out). A server starts up
// (as HAProxy's and nginx's); a reload keeps the verdicts of the servers
// that stay (the board outlives generations), and a group whose settings
// did not change keeps its counts.
// Thread affinity: configure(), metrics() and the destructor from the
// control thread; everything else on the checker's thread.
#pragma once

#include <uv.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "control/health_probe.h"
#include "data/generation.h"
#include "data/upstream/server_directory.h"
#include "data/upstream/server_health.h"
#include "util/loop_context.h"
#include "util/uv_handle.h"

namespace tlsfront::control {

class HealthChecker {
 public:
  // `directory` and `board` are borrowed and outlive the checker.
  HealthChecker(const upstream::ServerDirectory* directory, upstream::HealthBoard* board);
  ~HealthChecker();  // stops the thread (probes in flight are cancelled)
  HealthChecker(const HealthChecker&) = delete;
  HealthChecker& operator=(const HealthChecker&) = delete;

  // The groups to check are `gen`'s with a health_check (at start-up and
  // at each reload); the thread starts at the first call.
  void configure(std::shared_ptr<const data::Generation> gen);

  // Prometheus text: tlsfront_upstream_health_checks_total{upstream,server,
  // result="passed"|"failed"}.
  std::string metrics() const;

  struct Verdict {
    bool down = false;
    uint32_t passes = 0;  // in a row
    uint32_t fails = 0;   // in a row
    std::string last;     // the last check's outcome: "status 200", "timeout", ...
  };
  // Each checked server's state, by (upstream, address): for GET /upstreams.
  std::map<std::pair<std::string, std::string>, Verdict> verdicts() const;

 private:
  struct Group;

  void run();
  void on_wake();
  void apply(const data::Generation& gen);
  void check(Group& group);
  // A check of `address` in `g` ended as `o`: its verdict moves.
  void record(Group& g, const std::string& address, const HealthProbe::Outcome& o);

  const upstream::ServerDirectory* directory_;
  upstream::HealthBoard* board_;
  uv_loop_t loop_{};
  std::unique_ptr<LoopContext> ctx_;
  UvHandle<uv_async_t> wake_;
  std::thread thread_;

  std::mutex mu_;  // guards pending_, stopping_
  std::shared_ptr<const data::Generation> pending_;
  bool stopping_ = false;

  std::vector<std::unique_ptr<Group>> groups_;  // checker thread only

  mutable std::mutex report_mu_;  // guards checks_, verdicts_ (written once per check)
  std::map<std::tuple<std::string, std::string, bool>, uint64_t> checks_;
  std::map<std::pair<std::string, std::string>, Verdict> verdicts_;
};

}  // namespace tlsfront::control
