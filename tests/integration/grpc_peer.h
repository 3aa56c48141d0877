// The gRPC service and client the gRPC tests use:
// tests/integration/peers/grpc_peer.py (python3-grpcio), whose modes that
// file's docstring lists.
// Thread affinity: the test thread only.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "harness.h"
#include "shared/process.h"

namespace tlsfront::itest {

inline const std::string kGrpcPeer = std::string(TLSFRONT_SOURCE_DIR) + "/tests/integration/peers/grpc_peer.py";
inline constexpr const char* kGrpcPython = "/usr/bin/python3";  // Debian's, which has python3-grpcio

// Starts grpc_peer.py's service as `p` (stdout in dir/grpc.out, stderr in
// dir/grpc.err), writing its port to `port_file`, with `args` after it
// (--max-age-ms N, --tls CERT KEY, ...); its port, or 0 after adding a
// test failure.
inline int start_grpc_server(Process& p, const TempDir& dir, const std::string& port_file,
                             const std::vector<std::string>& args = {}) {
  std::vector<std::string> argv = {kGrpcPython, kGrpcPeer, "server", port_file};
  argv.insert(argv.end(), args.begin(), args.end());
  if (!p.start(argv, dir.file("grpc.out"), dir.file("grpc.err"))) return 0;
  if (!wait_until([&] { return read_file(port_file).ends_with("\n"); }, milliseconds(20'000))) {
    ADD_FAILURE() << "grpc_peer did not start: " << p.err();
    return 0;
  }
  return std::atoi(read_file(port_file).c_str());
}

// One grpc_peer client call (`args`: the call and its arguments) to
// tlsfront on `port` over TLS with the test CA; its output line (its
// stderr when it printed none).
inline std::string grpc_call(const TempDir& dir, int port, const std::vector<std::string>& args,
                             milliseconds timeout = milliseconds(90'000)) {
  std::vector<std::string> argv = {kGrpcPython, kGrpcPeer, args[0], "localhost:" + std::to_string(port),
                                   pki("root.pem")};
  argv.insert(argv.end(), args.begin() + 1, args.end());
  Process p;
  const std::string out = dir.file("client.out");
  if (!p.start(argv, out, dir.file("client.err"))) return "";
  if (!p.wait_exit(timeout)) p.stop();
  std::string text = read_file(out);
  if (text.empty()) text = read_file(dir.file("client.err"));
  return text;
}

}  // namespace tlsfront::itest
