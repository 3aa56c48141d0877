// UpstreamResolver: resolves the [[upstream]] servers given by DNS name, once
// per process on the control loop, with c-ares (asynchronous: never a
// blocking getaddrinfo on a loop), and publishes each name's addresses in
// the ServerDirectory every worker's groups read (Envoy's strict DNS: every
// A/AAAA answer is a server of the group).
//
// Each name is resolved again when its answer expires: its TTL clamped to
// [resolver] min_ttl..max_ttl, or `valid` when set (nginx's valid=). An
// error, NXDOMAIN, SERVFAIL or an empty answer keeps the last addresses (the
// trap of "0 answers = 0 servers" that takes a whole API down) and is
// retried after min_ttl (at least 1 s); a name's state changes (resolved,
// failing, resolved again, its addresses changed) are logged once each, at
// info (changes) or warn (failures).
// Per name:
//   Unresolved -> Resolved (an answer with addresses) | Failing (none)
//   Resolved   -> Resolved (answered again; published when it differs) |
//                 Failing (an error or no address: the last ones stay)
//   Failing    -> Resolved | Failing
// Thread affinity: the control loop's thread only.
#pragma once

#include <ares.h>
#include <uv.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "data/upstream/server_directory.h"
#include "util/result.h"
#include "util/uv_handle.h"

namespace tlsfront::control {

class UpstreamResolver {
 public:
  enum class NameState { Unresolved, Resolved, Failing };

  // `directory` borrowed, outlives the resolver; `on_change` runs (on the
  // loop) after a publish that changed some name's addresses.
  UpstreamResolver(uv_loop_t* loop, upstream::ServerDirectory* directory, std::function<void()> on_change);
  ~UpstreamResolver();
  UpstreamResolver(const UpstreamResolver&) = delete;
  UpstreamResolver& operator=(const UpstreamResolver&) = delete;

  // Resolves the names of `cfg`'s [[upstream]] servers with its [resolver]
  // settings from now on (start-up, and each reload): new names are
  // queried at once, names gone stop being resolved, names kept keep their
  // state. A change of [resolver] starts a new c-ares channel.
  // Errors: Errc::Config when c-ares cannot be set up (its message).
  [[nodiscard]] Status configure(const config::Config& cfg);

  // Start-up: runs the loop until every name has its first answer or
  // failure (bounded by c-ares' timeouts). Errc::Config for the first name
  // an upstream with resolve_at_start did not resolve:
  // "file:line:column: upstream[i].servers[j]: "name:port" does not resolve: why".
  [[nodiscard]] Status wait_first_answers(const config::Config& cfg);

  size_t names() const { return names_.size(); }
  NameState state(const std::string& key) const;
  // Why `key` last failed to resolve ("" when it did not).
  std::string last_error(const std::string& key) const;
  // Prometheus text: tlsfront_upstream_dns_resolutions_total{name,result=
  // "ok"|"nxdomain"|"servfail"|"timeout"|"no_address"|"error"} and
  // tlsfront_upstream_dns_answer_age_seconds{name} (since the last answer
  // with addresses: what a stale name looks like).
  std::string metrics() const;

 private:
  struct Name;
  struct Poll;
  static void on_sock_state(void* data, ares_socket_t fd, int readable, int writable);
  static void on_answer(void* arg, int status, int timeouts, struct ares_addrinfo* result);
  void query(Name& name);
  void answered(Name& name, int status, struct ares_addrinfo* result);
  // Re-arms the c-ares timeout timer after any c-ares call.
  void arm_ares_timer();
  void schedule(Name& name, std::chrono::milliseconds after);
  std::chrono::milliseconds lifetime(int ttl_seconds) const;
  void destroy_channel();

  uv_loop_t* loop_;
  upstream::ServerDirectory* directory_;
  std::function<void()> on_change_;
  config::Resolver settings_;
  ares_channel channel_ = nullptr;
  UvHandle<uv_timer_t> ares_timer_;
  std::map<ares_socket_t, std::unique_ptr<Poll>> polls_;
  std::map<std::string, std::unique_ptr<Name>> names_;  // by "name:port"
};

}  // namespace tlsfront::control
