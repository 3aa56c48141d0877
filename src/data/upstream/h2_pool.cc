#include "data/upstream/h2_pool.h"

#include <algorithm>

#include "log/log.h"

namespace tlsfront::upstream {

H2Pool::H2Pool(uv_loop_t* loop, const config::Upstream& cfg, const sockaddr_storage& addr, std::string address,
               metrics::UpstreamServerCounters* counters, TlsTarget* tls)
    : loop_(loop), cfg_(cfg), addr_(addr), address_(std::move(address)), counters_(counters), tls_(tls) {}

H2Pool::~H2Pool() { sessions_.clear(); }

Result<H2Pool::Lease> H2Pool::open_stream(UpstreamHandler* handler, const std::vector<http::FieldView>& fields,
                                          bool has_body) {
  H2Session* chosen = nullptr;
  size_t usable = 0;
  H2Session* least = nullptr;
  for (const auto& s : sessions_) {
    if (!s->usable()) continue;
    ++usable;
    if (s->has_room() && (chosen == nullptr || s->open_streams() > chosen->open_streams())) chosen = s.get();
    if (least == nullptr || s->open_streams() < least->open_streams()) least = s.get();
  }
  if (chosen == nullptr && usable >= std::max<size_t>(cfg_.keepalive, 1)) chosen = least;
  bool reused = chosen != nullptr && chosen->state() == H2Session::State::Open;
  if (chosen == nullptr) {
    auto session = std::make_unique<H2Session>(loop_, this, cfg_, tls_);
    if (counters_) counters_->connections_created.add();
    if (auto st = session->connect(addr_); !st) return st.take_error();
    chosen = session.get();
    sessions_.push_back(std::move(session));
  } else if (reused && counters_) {
    counters_->connections_reused.add();
  }
  auto stream = std::make_unique<H2Stream>(loop_, handler, cfg_);
  if (auto st = chosen->submit(stream.get(), fields, has_body); !st) return st.take_error();
  return Lease{std::move(stream), reused};
}

void H2Pool::remove(H2Session* session) {
  auto it = std::find_if(sessions_.begin(), sessions_.end(), [session](const auto& p) { return p.get() == session; });
  if (it == sessions_.end()) return;
  std::unique_ptr<H2Session> owned = std::move(*it);
  sessions_.erase(it);
  LoopContext::of(loop_).defer_delete(std::move(owned));
  update_idle_gauge();
}

void H2Pool::update_idle_gauge() {
  if (!counters_) return;
  counters_->idle.set(std::count_if(sessions_.begin(), sessions_.end(), [](const auto& s) { return s->idle(); }));
}

void H2Pool::count_ping_timeout(const std::string& why) {
  if (counters_) counters_->h2_ping_timeouts.add();
  // At most one line per session per h2_ping_interval + h2_ping_timeout.
  log::warn("upstream {} server {}: HTTP/2 connection closed: {} (RFC 9113 §6.7)", cfg_.name, address_, why);
}

void H2Pool::count_flood(const std::string& why) {
  if (counters_) counters_->floods.add();
  // One line per connection: each costs the server a new connection.
  log::warn("upstream {} server {}: HTTP/2 connection closed: {}", cfg_.name, address_, why);
}

void H2Pool::drain() {
  for (const auto& s : sessions_) s->start_draining();
}

void H2Pool::close_idle() {
  std::vector<H2Session*> idle;
  for (const auto& s : sessions_) {
    if (s->open_streams() == 0) idle.push_back(s.get());
  }
  for (H2Session* s : idle) s->close_idle();
}

}  // namespace tlsfront::upstream
