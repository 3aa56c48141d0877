#include "control/upstream_resolver.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "config/units.h"
#include "log/log.h"

namespace tlsfront::control {
namespace {

// Queries per DNS server before c-ares gives up on it.
constexpr int kTries = 2;
// A failed name is asked again after min_ttl, but never sooner than this.
constexpr std::chrono::milliseconds kMinRetry{1'000};

std::string join(const upstream::AddressList& list) {
  std::string out;
  for (const auto& a : list) {
    if (!out.empty()) out += ", ";
    out += a.text;
  }
  return out;
}

// The addresses of `result`, port `port`, sorted and without duplicates.
upstream::AddressList addresses_of(const ares_addrinfo* result, uint16_t port, int& min_ttl) {
  upstream::AddressList out;
  min_ttl = -1;
  for (const ares_addrinfo_node* n = result ? result->nodes : nullptr; n != nullptr; n = n->ai_next) {
    upstream::ResolvedAddress a;
    char text[INET6_ADDRSTRLEN] = {};
    if (n->ai_family == AF_INET && n->ai_addrlen >= static_cast<ares_socklen_t>(sizeof(sockaddr_in))) {
      sockaddr_in sin;
      std::memcpy(&sin, n->ai_addr, sizeof sin);
      sin.sin_port = htons(port);
      std::memcpy(&a.addr, &sin, sizeof sin);
      inet_ntop(AF_INET, &sin.sin_addr, text, sizeof text);
      a.text = std::string(text) + ":" + std::to_string(port);
    } else if (n->ai_family == AF_INET6 && n->ai_addrlen >= static_cast<ares_socklen_t>(sizeof(sockaddr_in6))) {
      sockaddr_in6 sin6;
      std::memcpy(&sin6, n->ai_addr, sizeof sin6);
      sin6.sin6_port = htons(port);
      std::memcpy(&a.addr, &sin6, sizeof sin6);
      inet_ntop(AF_INET6, &sin6.sin6_addr, text, sizeof text);
      a.text = "[" + std::string(text) + "]:" + std::to_string(port);
    } else {
      continue;
    }
    if (min_ttl < 0 || n->ai_ttl < min_ttl) min_ttl = n->ai_ttl;
    out.push_back(std::move(a));
  }
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.text < y.text; });
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

namespace {
// A failed resolution's label (metrics()).
std::string_view result_name(int ares_status) {
  switch (ares_status) {
    case ARES_SUCCESS:
    case ARES_ENODATA: return "no_address";
    case ARES_ENOTFOUND: return "nxdomain";
    case ARES_ESERVFAIL: return "servfail";
    case ARES_ETIMEOUT: return "timeout";
    default: return "error";
  }
}
}  // namespace

struct UpstreamResolver::Name {
  UpstreamResolver* owner = nullptr;
  std::string key;   // "name:port", the ServerDirectory's key
  std::string host;  // the name
  uint16_t port = 0;
  NameState state = NameState::Unresolved;
  upstream::AddressList last;
  std::string last_error;
  std::map<std::string_view, uint64_t> results;  // resolutions by result (metrics())
  std::chrono::steady_clock::time_point answered_at{};  // the last answer with addresses
  bool in_flight = false;
  bool wanted = true;  // still configured (a reload may drop it while a query is out)
  UvHandle<uv_timer_t> timer;
};

// One socket c-ares asked to be watched.
struct UpstreamResolver::Poll {
  UpstreamResolver* owner = nullptr;
  ares_socket_t fd = ARES_SOCKET_BAD;
  UvHandle<uv_poll_t> handle;
};

// What a query's callback gets: the name is looked up again by key, since a
// reload may have dropped it meanwhile.
struct Pending {
  UpstreamResolver* owner;
  std::string key;
};

UpstreamResolver::UpstreamResolver(uv_loop_t* loop, upstream::ServerDirectory* directory,
                                   std::function<void()> on_change)
    : loop_(loop), directory_(directory), on_change_(std::move(on_change)) {
  static const int library = ares_library_init(ARES_LIB_INIT_ALL);
  (void)library;
  ares_timer_.init([loop](uv_timer_t* t) { return uv_timer_init(loop, t); }, this);
}

UpstreamResolver::~UpstreamResolver() {
  destroy_channel();
  names_.clear();
}

void UpstreamResolver::destroy_channel() {
  if (channel_ == nullptr) return;
  // Pending queries are called back with ARES_EDESTRUCTION (and forget us).
  ares_destroy(std::exchange(channel_, nullptr));
  polls_.clear();
  uv_timer_stop(ares_timer_.get());
  for (auto& [key, n] : names_) n->in_flight = false;
}

Status UpstreamResolver::configure(const config::Config& cfg) {
  if (channel_ == nullptr || !(settings_ == cfg.resolver)) {
    destroy_channel();
    settings_ = cfg.resolver;
    ares_options opts{};
    int mask = ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES | ARES_OPT_SOCK_STATE_CB;
    opts.timeout = static_cast<int>(settings_.timeout.count());
    opts.tries = kTries;
    opts.sock_state_cb = on_sock_state;
    opts.sock_state_cb_data = this;
    char dns_only[] = "b";
    if (!settings_.addresses.empty()) {
      // The configured servers only, as nginx's resolver: not /etc/hosts.
      mask |= ARES_OPT_LOOKUPS;
      opts.lookups = dns_only;
    }
    if (int rc = ares_init_options(&channel_, &opts, mask); rc != ARES_SUCCESS) {
      channel_ = nullptr;
      return make_error(Errc::Config, std::string("[resolver]: c-ares: ") + ares_strerror(rc));
    }
    if (!settings_.addresses.empty()) {
      std::string csv;
      for (const auto& a : settings_.addresses) {
        if (!csv.empty()) csv += ",";
        csv += a.to_string();
      }
      if (int rc = ares_set_servers_ports_csv(channel_, csv.c_str()); rc != ARES_SUCCESS) {
        return make_error(Errc::Config, "[resolver] addresses: c-ares: " + std::string(ares_strerror(rc)));
      }
    }
  }
  for (auto& [key, n] : names_) n->wanted = false;
  for (const auto& u : cfg.upstreams) {
    for (const auto& s : u.servers) {
      if (config::is_ip_literal(s.host)) continue;
      const std::string key = s.to_string();
      auto& slot = names_[key];
      if (!slot) {
        slot = std::make_unique<Name>();
        slot->owner = this;
        slot->key = key;
        slot->host = s.host;
        slot->port = s.port;
        slot->timer.init([this](uv_timer_t* t) { return uv_timer_init(loop_, t); }, slot.get());
      }
      slot->wanted = true;
    }
  }
  for (auto it = names_.begin(); it != names_.end();) {
    it = it->second->wanted ? std::next(it) : names_.erase(it);
  }
  // New names, and all of them on a new channel, are asked now.
  for (auto& [key, n] : names_) {
    if (!n->in_flight && (n->state == NameState::Unresolved || !uv_is_active(n->timer.handle()))) query(*n);
  }
  return {};
}

void UpstreamResolver::query(Name& name) {
  if (channel_ == nullptr || name.in_flight) return;
  uv_timer_stop(name.timer.get());
  ares_addrinfo_hints hints{};
  hints.ai_family = settings_.ipv4 && settings_.ipv6 ? AF_UNSPEC : settings_.ipv4 ? AF_INET : AF_INET6;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = ARES_AI_NOSORT;
  name.in_flight = true;
  ares_getaddrinfo(channel_, name.host.c_str(), nullptr, &hints, on_answer, new Pending{this, name.key});
  arm_ares_timer();
}

void UpstreamResolver::on_answer(void* arg, int status, int, struct ares_addrinfo* result) {
  std::unique_ptr<Pending> pending(static_cast<Pending*>(arg));
  if (status != ARES_EDESTRUCTION) {
    auto it = pending->owner->names_.find(pending->key);
    if (it != pending->owner->names_.end()) pending->owner->answered(*it->second, status, result);
  }
  if (result != nullptr) ares_freeaddrinfo(result);
}

void UpstreamResolver::answered(Name& name, int status, struct ares_addrinfo* result) {
  name.in_flight = false;
  int ttl = -1;
  upstream::AddressList list = status == ARES_SUCCESS ? addresses_of(result, name.port, ttl) : upstream::AddressList{};
  ++name.results[list.empty() ? result_name(status) : "ok"];
  if (list.empty()) {
    const std::string why = status == ARES_SUCCESS ? "no A/AAAA record" : ares_strerror(status);
    if (name.state != NameState::Failing || why != name.last_error) {
      if (name.last.empty()) {
        log::warn("upstream server {}: does not resolve: {}; it has no address yet", name.key, why);
      } else {
        log::warn("upstream server {}: does not resolve: {}; keeping its last addresses ({})", name.key, why,
                  join(name.last));
      }
    }
    name.state = NameState::Failing;
    name.last_error = why;
    schedule(name, std::max(kMinRetry, settings_.min_ttl));
    return;
  }
  const std::chrono::milliseconds next = lifetime(ttl);
  if (name.state != NameState::Resolved) {
    log::info("upstream server {}: resolves to {} (again in {} ms)", name.key, join(list), next.count());
  } else if (list != name.last) {
    log::info("upstream server {}: now resolves to {} (was {})", name.key, join(list), join(name.last));
  }
  name.state = NameState::Resolved;
  name.answered_at = std::chrono::steady_clock::now();
  name.last_error.clear();
  name.last = list;
  const bool changed = directory_->publish(name.key, std::move(list));
  schedule(name, next);
  if (changed && on_change_) on_change_();
}

std::chrono::milliseconds UpstreamResolver::lifetime(int ttl_seconds) const {
  if (settings_.valid) return *settings_.valid;
  const std::chrono::milliseconds ttl{static_cast<int64_t>(std::max(ttl_seconds, 0)) * 1000};
  return std::clamp(ttl, settings_.min_ttl, settings_.max_ttl);
}

void UpstreamResolver::schedule(Name& name, std::chrono::milliseconds after) {
  uv_timer_start(
      name.timer.get(),
      [](uv_timer_t* t) {
        if (auto* n = static_cast<Name*>(t->data)) n->owner->query(*n);
      },
      static_cast<uint64_t>(after.count()), 0);
}

void UpstreamResolver::arm_ares_timer() {
  if (channel_ == nullptr) return;
  timeval tv{};
  if (ares_timeout(channel_, nullptr, &tv) == nullptr) {
    uv_timer_stop(ares_timer_.get());
    return;
  }
  const uint64_t ms = static_cast<uint64_t>(tv.tv_sec) * 1000 + static_cast<uint64_t>(tv.tv_usec) / 1000 + 1;
  uv_timer_start(
      ares_timer_.get(),
      [](uv_timer_t* t) {
        auto* self = static_cast<UpstreamResolver*>(t->data);
        if (self == nullptr || self->channel_ == nullptr) return;
        ares_process_fd(self->channel_, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
        self->arm_ares_timer();
      },
      ms, 0);
}

void UpstreamResolver::on_sock_state(void* data, ares_socket_t fd, int readable, int writable) {
  auto* self = static_cast<UpstreamResolver*>(data);
  if (!readable && !writable) {
    self->polls_.erase(fd);
    return;
  }
  auto& slot = self->polls_[fd];
  if (!slot) {
    slot = std::make_unique<Poll>();
    slot->owner = self;
    slot->fd = fd;
    if (slot->handle.init([self, fd](uv_poll_t* p) { return uv_poll_init_socket(self->loop_, p, fd); }, slot.get()) !=
        0) {
      self->polls_.erase(fd);
      return;  // c-ares times the query out
    }
  }
  const int events = (readable ? UV_READABLE : 0) | (writable ? UV_WRITABLE : 0);
  uv_poll_start(slot->handle.get(), events, [](uv_poll_t* p, int status, int ev) {
    auto* poll = static_cast<Poll*>(p->data);
    if (poll == nullptr || poll->owner->channel_ == nullptr) return;
    UpstreamResolver* owner = poll->owner;
    const ares_socket_t sock = poll->fd;  // `poll` may go inside ares_process_fd
    const bool all = status < 0;          // an error: let c-ares find out which
    ares_process_fd(owner->channel_, all || (ev & UV_READABLE) ? sock : ARES_SOCKET_BAD,
                    all || (ev & UV_WRITABLE) ? sock : ARES_SOCKET_BAD);
    owner->arm_ares_timer();
  });
}

Status UpstreamResolver::wait_first_answers(const config::Config& cfg) {
  auto waiting = [this] {
    return std::any_of(names_.begin(), names_.end(),
                       [](const auto& e) { return e.second->state == NameState::Unresolved && e.second->in_flight; });
  };
  // Bounded by c-ares: every query ends, answered or timed out.
  while (waiting()) uv_run(loop_, UV_RUN_ONCE);
  for (size_t i = 0; i < cfg.upstreams.size(); ++i) {
    const config::Upstream& u = cfg.upstreams[i];
    if (!u.resolve_at_start) continue;
    for (size_t j = 0; j < u.servers.size(); ++j) {
      auto it = names_.find(u.servers[j].to_string());
      if (it == names_.end() || it->second->state == NameState::Resolved) continue;
      const std::string where = j < u.server_positions.at.size() ? u.server_positions.at[j] + ": " : "";
      return make_error(Errc::Config, where + "upstream[" + std::to_string(i) + "].servers[" + std::to_string(j) +
                                          "]: " + config::quote(it->first) + " does not resolve: " +
                                          it->second->last_error +
                                          " (resolve_at_start = false starts without it)");
    }
  }
  return {};
}

std::string UpstreamResolver::last_error(const std::string& key) const {
  auto it = names_.find(key);
  return it == names_.end() ? std::string() : it->second->last_error;
}

UpstreamResolver::NameState UpstreamResolver::state(const std::string& key) const {
  auto it = names_.find(key);
  return it == names_.end() ? NameState::Unresolved : it->second->state;
}

std::string UpstreamResolver::metrics() const {
  if (names_.empty()) return {};
  const auto now = std::chrono::steady_clock::now();
  std::string results =
      "# HELP tlsfront_upstream_dns_resolutions_total Resolutions of upstream server names, by result.\n"
      "# TYPE tlsfront_upstream_dns_resolutions_total counter\n";
  std::string ages =
      "# HELP tlsfront_upstream_dns_answer_age_seconds Time since a name last resolved to addresses.\n"
      "# TYPE tlsfront_upstream_dns_answer_age_seconds gauge\n";
  for (const auto& [key, name] : names_) {
    for (const auto& [result, n] : name->results) {
      results += fmt::format("tlsfront_upstream_dns_resolutions_total{{name=\"{}\",result=\"{}\"}} {}\n", key, result, n);
    }
    if (name->answered_at != std::chrono::steady_clock::time_point{}) {
      ages += fmt::format("tlsfront_upstream_dns_answer_age_seconds{{name=\"{}\"}} {:.3f}\n", key,
                          std::chrono::duration<double>(now - name->answered_at).count());
    }
  }
  return results + ages;
}

}  // namespace tlsfront::control
