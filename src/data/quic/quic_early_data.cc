// QuicConnection's early data (0-RTT): the node's and the cluster's claim
// on the ClientHello and what waits for it (the Early machine documented in
// quic_connection.h; tls/EARLY_DATA_REPLAY.md, "HTTP/3").
#include "data/quic/http3_stream.h"
#include "data/quic/quic_connection.h"
#include "tls/replay_recorder.h"

namespace tlsfront::quic {

bool QuicConnection::claim_early_data(std::string_view binder) {
  if (handshake_done_ || early_ != Early::None) return false;  // one ClientHello per connection
  metrics::WorkerCounters* counters = env().counters;
  if (counters) counters->early_data_offered.add();
  if (tls::ReplayRecorder::quic_node().claim(binder, tls::ReplayRecorder::Clock::now(), false) !=
      tls::ReplayRecorder::Claim::First) {
    count_early_rejected(metrics::EarlyRejection::Replay);
    return false;
  }
  if (lease_.session_store == nullptr) {
    transition(early_, Early::Accepted);
    info_.early_data = true;
    if (counters) counters->early_data_accepted.add();
    return true;
  }
  std::weak_ptr<bool> alive = alive_;
  const auto window = std::chrono::duration_cast<std::chrono::milliseconds>(tls::ReplayRecorder::quic_node().window());
  const bool asked =
      lease_.session_store->claim(std::string(binder), window, [this, alive](tls::RemoteSessionStore::Claim c) {
        if (!alive.expired()) on_early_claimed(c);
      });
  if (!asked) {
    count_early_rejected(metrics::EarlyRejection::RedisUnavailable);
    return false;
  }
  transition(early_, Early::Claiming);
  return true;
}

void QuicConnection::on_early_claimed(tls::RemoteSessionStore::Claim claim) {
  if (early_ != Early::Claiming || state_ == State::Closed) return;
  if (claim == tls::RemoteSessionStore::Claim::First) {
    transition(early_, Early::Accepted);
    if (env().counters) env().counters->early_data_accepted.add();
    if (!handshake_done_) {
      info_.early_data = true;
      admit_waiting();
    }
  } else {
    transition(early_, Early::Held);
    count_early_rejected(claim == tls::RemoteSessionStore::Claim::Seen ? metrics::EarlyRejection::Replay
                                                                       : metrics::EarlyRejection::RedisUnavailable);
  }
  schedule_write();
}

void QuicConnection::count_early_rejected(metrics::EarlyRejection reason) {
  if (env().counters) env().counters->early_data_rejected[static_cast<size_t>(reason)].add();
}

void QuicConnection::admit_waiting() {
  if (!may_admit()) return;
  std::vector<Http3Stream*> waiting;
  for (auto& [id, s] : streams_) {
    if (s->waiting()) waiting.push_back(s.get());
  }
  for (Http3Stream* s : waiting) {
    if (state_ == State::Closed) return;
    s->admit();
  }
}

}  // namespace tlsfront::quic
