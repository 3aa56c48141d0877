#include "control/health_checker.h"

#include <algorithm>
#include <set>

#include "data/upstream/upstream_pool.h"
#include "log/log.h"
#include "util/lazy_timer.h"

namespace tlsfront::control {

struct HealthChecker::Group {
  struct Target {
    std::shared_ptr<upstream::ServerHealth> health;  // the board's
    std::unique_ptr<HealthProbe> probe;              // the check in flight
    Verdict verdict;
  };

  Group(HealthChecker* o, uv_loop_t* l, std::unique_ptr<upstream::UpstreamGroup> s)
      : owner(o), loop(l), servers(std::move(s)) {
    timer.init(loop, [](void* g) { static_cast<Group*>(g)->owner->check(*static_cast<Group*>(g)); }, this);
  }
  ~Group() {
    for (auto& [address, target] : targets) drop_probe(target);
  }
  const config::Upstream& cfg() const { return servers->config(); }
  // Cancelled now, freed after the current callback (it may be the probe's).
  void drop_probe(Target& target) {
    if (!target.probe) return;
    target.probe->cancel();
    LoopContext::of(loop).defer_delete(std::move(target.probe));
  }

  HealthChecker* owner;
  uv_loop_t* loop;
  // Its own pools (none of the workers'), refreshed from the directory
  // each round; their balancer is unused.
  std::unique_ptr<upstream::UpstreamGroup> servers;
  LazyTimer timer;
  std::map<std::string, Target> targets;  // by address
};

HealthChecker::HealthChecker(const upstream::ServerDirectory* directory, upstream::HealthBoard* board)
    : directory_(directory), board_(board) {}

HealthChecker::~HealthChecker() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  uv_async_send(wake_.get());
  thread_.join();
}

void HealthChecker::configure(std::shared_ptr<const data::Generation> gen) {
  const auto& ups = gen->config.upstreams;
  const bool any = std::any_of(ups.begin(), ups.end(), [](const auto& u) { return u.health_check.enabled; });
  if (!any && !thread_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    pending_ = std::move(gen);
  }
  if (!thread_.joinable()) {
    uv_loop_init(&loop_);
    ctx_ = std::make_unique<LoopContext>(&loop_);
    wake_.init([this](uv_async_t* h) { return uv_async_init(&loop_, h, [](uv_async_t* a) {
                                        if (a->data) static_cast<HealthChecker*>(a->data)->on_wake();
                                      }); },
               this);
    thread_ = std::thread([this] { run(); });
  }
  uv_async_send(wake_.get());
}

void HealthChecker::run() {
  uv_run(&loop_, UV_RUN_DEFAULT);
  ctx_->run_deferred();
  uv_run(&loop_, UV_RUN_DEFAULT);  // the close callbacks of what the deferred held
  ctx_.reset();
  uv_loop_close(&loop_);
}

void HealthChecker::on_wake() {
  std::shared_ptr<const data::Generation> gen;
  bool stopping;
  {
    std::lock_guard lock(mu_);
    gen = std::move(pending_);
    stopping = stopping_;
  }
  if (stopping) {
    groups_.clear();
    ctx_->run_deferred();
    wake_.close();
    ctx_->close();
    return;
  }
  if (gen) apply(*gen);
}

void HealthChecker::apply(const data::Generation& gen) {
  std::vector<std::unique_ptr<Group>> next;
  const auto& ups = gen.config.upstreams;
  for (size_t i = 0; i < ups.size(); ++i) {
    if (!ups[i].health_check.enabled) continue;
    const auto& tls = gen.upstream_tls.at(i);
    auto same = std::find_if(groups_.begin(), groups_.end(), [&](const auto& g) { return g && g->cfg() == ups[i]; });
    if (same != groups_.end()) {
      (*same)->servers->set_tls(tls);
      next.push_back(std::move(*same));
      continue;
    }
    next.push_back(std::make_unique<Group>(
        this, &loop_, std::make_unique<upstream::UpstreamGroup>(&loop_, ups[i], nullptr, tls, directory_, nullptr)));
    next.back()->timer.arm(std::chrono::milliseconds(0));  // the first round now
  }
  // Groups no longer checked: their servers' verdicts are lifted (nothing
  // would ever bring them back up).
  for (auto& old : groups_) {
    if (!old) continue;
    const std::string& name = old->cfg().name;
    if (std::any_of(next.begin(), next.end(), [&](const auto& g) { return g->cfg().name == name; })) continue;
    for (auto& [address, target] : old->targets) {
      if (target.health) target.health->set_down(false, upstream::ServerHealth::Clock::now());
    }
    std::lock_guard lock(report_mu_);
    std::erase_if(verdicts_, [&](const auto& v) { return v.first.first == name; });
  }
  groups_ = std::move(next);
}

void HealthChecker::check(Group& g) {
  g.servers->refresh_servers();
  const std::string& name = g.cfg().name;
  std::set<std::string> live;
  for (const auto& pool : g.servers->pools()) {
    const std::string& address = pool->address();
    live.insert(address);
    Group::Target& t = g.targets[address];
    if (!t.health) {
      t.health = board_->find_or_add(name, address);
      t.verdict.down = t.health->down();  // a reload keeps what was known
    }
    if (t.probe) continue;  // still waiting for its timeout
    t.probe = std::make_unique<HealthProbe>(&loop_, pool, g.cfg(), [this, &g, address](const HealthProbe::Outcome& o) {
      auto it = g.targets.find(address);
      if (it == g.targets.end()) return;
      g.drop_probe(it->second);
      record(g, address, o);
    });
    t.probe->start();
  }
  for (auto it = g.targets.begin(); it != g.targets.end();) {
    if (live.count(it->first) != 0) {
      ++it;
      continue;
    }
    g.drop_probe(it->second);  // the address left the group
    std::lock_guard lock(report_mu_);
    verdicts_.erase({name, it->first});
    it = g.targets.erase(it);
  }
  g.timer.arm(g.cfg().health_check.interval);
}

void HealthChecker::record(Group& g, const std::string& address, const HealthProbe::Outcome& o) {
  Group::Target& t = g.targets.at(address);
  const config::HealthCheck& hc = g.cfg().health_check;
  const std::string& name = g.cfg().name;
  Verdict& v = t.verdict;
  v.last = o.detail;
  if (o.passed) {
    v.fails = 0;
    ++v.passes;
    if (v.down && v.passes >= static_cast<uint64_t>(hc.rise)) {
      v.down = false;
      t.health->set_down(false, upstream::ServerHealth::Clock::now());
      log::info("upstream {}: server {} is up after {} passed health check(s)", name, address, v.passes);
    }
  } else {
    v.passes = 0;
    ++v.fails;
    if (!v.down && v.fails >= static_cast<uint64_t>(hc.fall)) {
      v.down = true;
      t.health->set_down(true, upstream::ServerHealth::Clock::now());
      log::warn("upstream {}: server {} is down after {} failed health check(s), the last: {}", name, address, v.fails,
                o.detail);
    }
  }
  std::lock_guard lock(report_mu_);
  ++checks_[{name, address, o.passed}];
  verdicts_[{name, address}] = v;
}

std::map<std::pair<std::string, std::string>, HealthChecker::Verdict> HealthChecker::verdicts() const {
  std::lock_guard lock(report_mu_);
  return verdicts_;
}

std::string HealthChecker::metrics() const {
  std::lock_guard lock(report_mu_);
  if (checks_.empty()) return {};
  std::string out =
      "# HELP tlsfront_upstream_health_checks_total Active health checks of each upstream server, by result.\n"
      "# TYPE tlsfront_upstream_health_checks_total counter\n";
  for (const auto& [key, n] : checks_) {
    const auto& [upstream, server, passed] = key;
    out += "tlsfront_upstream_health_checks_total{upstream=\"" + upstream + "\",server=\"" + server +
           "\",result=\"" + (passed ? "passed" : "failed") + "\"} " + std::to_string(n) + "\n";
  }
  return out;
}

}  // namespace tlsfront::control
