// ReplayRecorder: the node-wide recording of 0-RTT ClientHellos that makes
// early data acceptable at most once per node (RFC 8446 §8.1, "at most once
// per server instance"); tls/EARLY_DATA_REPLAY.md gives the design. One
// per process (node()), shared by every worker thread.
//
// A record is the ClientHello's first PSK binder (32 or 48 bytes, an HMAC
// over the ClientHello: distinct for every ClientHello, the same in a
// replay), kept for the recorder's window: kWindow for the TCP listeners
// (OpenSSL's ticket-age check), kQuicWindow for the QUIC ones (GnuTLS's
// anti-replay window, data/quic/quic_tls.h), each with its own recorder. Bounded: at most kMaxRecords records; when
// full, claims fail closed (Full: the early data is rejected, the handshake
// goes on).
// Thread affinity: any thread (sharded, one mutex per shard).
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>

namespace tlsfront::tls {

class ReplayRecorder {
 public:
  using Clock = std::chrono::steady_clock;
  // How long a record is kept: OpenSSL accepts one ClientHello's early data
  // only within 11 s of real time (its ticket-age check:
  // tls/EARLY_DATA_REPLAY.md), plus 9 s for clock differences between nodes.
  static constexpr std::chrono::seconds kWindow{20};
  // The QUIC listeners' recording: GnuTLS accepts one ClientHello's early
  // data while its ticket age is within AntiReplayWindows::kWindow (600 s)
  // of the client's, plus the same 10 s for clock differences.
  static constexpr std::chrono::seconds kQuicWindow{610};
  static constexpr size_t kMaxRecords = 1 << 18;  // ~30 MiB at most
  static constexpr size_t kShards = 16;

  enum class Claim {
    First,     // recorded now: this ClientHello's early data may be accepted
    Seen,      // recorded already: a replay
    Full,      // no room: rejected, fail closed
    Starting,  // within kWindow of the start: what came before it is unknown (RFC 8446 §8.2)
  };

  // `started`: when the recording began (records from before it were lost);
  // `window`: how long a record is kept.
  explicit ReplayRecorder(Clock::time_point started, Clock::duration window = kWindow)
      : started_(started), window_(window) {}

  // The process's recorders, created at the first call (main calls node()
  // at start-up): the TCP listeners' and the QUIC listeners'.
  static ReplayRecorder& node();
  static ReplayRecorder& quic_node();
  Clock::duration window() const { return window_; }

  // Claims `binder` at `now`. `after_start_window`: whether a claim within
  // kWindow of the start is refused (Starting); false when a shared store
  // that outlived this process is asked as well.
  Claim claim(std::string_view binder, Clock::time_point now, bool after_start_window = true);

  size_t size() const;

 private:
  struct Shard {
    mutable std::mutex mu;
    std::unordered_set<std::string> keys;
    std::deque<std::pair<Clock::time_point, std::string>> by_age;  // oldest first
  };
  Clock::time_point started_;
  Clock::duration window_;
  std::array<Shard, kShards> shards_;
};

}  // namespace tlsfront::tls
