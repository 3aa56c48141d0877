// DataPathRig: the data path of one worker for the fuzz targets that drive a
// client session (h1_request, h2_session, upstream_response): a uv loop with
// its LoopContext (kept), and per input a ScriptedUpstream on 127.0.0.1:0
// and a DataPathEnv (tests/unit/support) routing "/" to it. Nothing carries
// over from one input to the next: a reproducer replays alone, and every
// allocation of an input is freed by its end, so libFuzzer's leak check
// (which runs whenever an input's mallocs and frees differ) only fires on a
// real leak.
//
// run() makes one client connection (a FakeTransport and a new session),
// feeds it the bytes and turns the loop until the session closes, or until
// nothing moves any more (no new output, no new upstream request or body
// byte for kQuietIterations non-blocking iterations); then the session's
// armed timer fires (the timeout paths), at most kMaxTimerFires times, and
// whatever is still open is torn down. Everything is bounded in loop
// iterations, never in time.
// Thread affinity: the fuzzer's thread.
#pragma once

#include <uv.h>

#include <functional>
#include <memory>
#include <string_view>

#include "data/http/client_session.h"
#include "support/data_path_env.h"
#include "support/data_path_transport.h"
#include "support/data_path_upstream.h"
#include "util/loop_context.h"

namespace tlsfront::fuzz {

class DataPathRig {
 public:
  static constexpr int kMaxIterations = 4000;
  static constexpr int kQuietIterations = 4;
  static constexpr int kMaxTimerFires = 3;

  enum class Protocol { Http1, Http2 };

  // The rig for this process; built on first use.
  static DataPathRig& get();

  // One client connection carrying `client_bytes` (HTTP/2: after the
  // connection preface, which run() sends first). `before`, when given, is
  // called with the upstream before any byte is fed (to script its replies).
  void run(Protocol protocol, std::string_view client_bytes,
           const std::function<void(harness::ScriptedUpstream&)>& before = nullptr);

 private:
  DataPathRig();
  ~DataPathRig();
  // The upstream and the env of one input, and their teardown (bounded).
  void build();
  void teardown();
  // Turns the loop until the transport closes or nothing moves.
  void drive(harness::FakeTransport& transport);

  uv_loop_t loop_{};
  std::unique_ptr<LoopContext> ctx_;
  std::unique_ptr<harness::ScriptedUpstream> upstream_;
  std::unique_ptr<harness::DataPathEnv> env_;
};

}  // namespace tlsfront::fuzz
