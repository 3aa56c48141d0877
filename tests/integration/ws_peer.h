// The WebSocket server the tunnel tests put behind tlsfront:
// tests/integration/peers/ws_peer.py (python3-websockets, RFC 6455), whose
// modes that file's docstring lists; and the RFC 6455 framing the tests that
// drive a tunnel by hand share.
// Thread affinity: the test thread only.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "h2_frames.h"
#include "harness.h"
#include "shared/process.h"

namespace tlsfront::itest {

inline const std::string kWsPeer = std::string(TLSFRONT_SOURCE_DIR) + "/tests/integration/peers/ws_peer.py";

// Starts ws_peer.py's server on 127.0.0.1:0 as `p` (stdout in dir/ws.out,
// stderr in dir/ws.err), with `extra` after its port file (--tls CERT KEY);
// its port, or 0 after adding a test failure.
inline int start_ws_server(Process& p, const TempDir& dir, const std::vector<std::string>& extra = {}) {
  const std::string port_file = dir.file("ws.port");
  std::vector<std::string> argv = {kPython, kWsPeer, "server", port_file};
  argv.insert(argv.end(), extra.begin(), extra.end());
  if (!p.start(argv, dir.file("ws.out"), dir.file("ws.err"))) return 0;
  if (!wait_until([&] { return read_file(port_file).ends_with("\n"); })) {
    ADD_FAILURE() << "ws_peer did not start: " << read_file(dir.file("ws.err"));
    return 0;
  }
  return std::atoi(read_file(port_file).c_str());
}

// Runs ws_peer.py's client mode args[0] against wss://localhost:<port><args[1]>
// with the rest of `args` (dir/client.out, dir/client.err): its stdout and
// stderr, once it exits or `timeout` passes.
inline std::string run_ws_client(const TempDir& dir, int port, const std::vector<std::string>& args,
                                 std::chrono::milliseconds timeout) {
  std::vector<std::string> argv = {kPython, kWsPeer, args[0], "wss://localhost:" + std::to_string(port) + args[1]};
  argv.insert(argv.end(), args.begin() + 2, args.end());
  Process p;
  const std::string out = dir.file("client.out");
  if (!p.start(argv, out, dir.file("client.err"))) return "";
  if (!p.wait_exit(timeout)) p.stop();
  return read_file(out) + read_file(dir.file("client.err"));
}

// An HTTP/1.1 WebSocket upgrade request for `path` (RFC 6455 §4.1, the
// RFC's sample key: its accept is s3pPLMBiTxaQ9kYGzzhZRbK+xOo=).
inline std::string upgrade_request(std::string_view path) {
  return "GET " + std::string(path) +
         " HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
         "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
}

// Reads from `c` until `buf` holds `want` (bounded by `timeout`).
inline bool read_until(TlsClient& c, std::string& buf, std::string_view want,
                       milliseconds timeout = milliseconds(10'000)) {
  const auto deadline = Clock::now() + timeout;
  while (buf.find(want) == std::string::npos) {
    if (Clock::now() > deadline || c.closed()) return false;
    buf += c.read_available(milliseconds(200));
  }
  return true;
}

// RFC 6455 §5.2 framing, FIN set. A client frame is masked (§5.3) with a
// fixed key.
inline std::string ws_frame(uint8_t opcode, std::string_view payload, bool masked = true) {
  std::string f;
  f += static_cast<char>(0x80 | opcode);
  const uint8_t mask_bit = masked ? 0x80 : 0;
  const size_t n = payload.size();
  if (n < 126) {
    f += static_cast<char>(mask_bit | n);
  } else if (n < 65536) {
    f += static_cast<char>(mask_bit | 126);
    f += static_cast<char>(n >> 8);
    f += static_cast<char>(n);
  } else {
    f += static_cast<char>(mask_bit | 127);
    for (int shift = 56; shift >= 0; shift -= 8) f += static_cast<char>(static_cast<uint64_t>(n) >> shift);
  }
  if (!masked) return f.append(payload);
  const char key[4] = {0x1f, 0x2e, 0x3d, 0x4c};
  f.append(key, 4);
  for (size_t i = 0; i < n; ++i) f += static_cast<char>(payload[i] ^ key[i % 4]);
  return f;
}

struct WsMessage {
  uint8_t opcode = 0;
  std::string payload;
};

// Takes one whole server frame (unmasked) off the front of `buf`.
inline std::optional<WsMessage> take_ws_frame(std::string& buf) {
  if (buf.size() < 2) return std::nullopt;
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(buf[i]); };
  size_t len = byte(1) & 0x7f;
  size_t at = 2;
  if (len == 126) {
    if (buf.size() < 4) return std::nullopt;
    len = size_t{byte(2)} << 8 | byte(3);
    at = 4;
  } else if (len == 127) {
    if (buf.size() < 10) return std::nullopt;
    len = 0;
    for (size_t i = 2; i < 10; ++i) len = len << 8 | byte(i);
    at = 10;
  }
  if (buf.size() < at + len) return std::nullopt;
  WsMessage m{static_cast<uint8_t>(byte(0) & 0x0f), buf.substr(at, len)};
  buf.erase(0, at + len);
  return m;
}

// WebSocket over HTTP/2 (RFC 8441) with the frame-level client (h2_frames.h).

// An extended CONNECT's fields for `path`.
inline h2::Fields extended_connect(const std::string& path, const std::string& protocol = "websocket") {
  return {{":method", "CONNECT"},      {":protocol", protocol}, {":scheme", "https"},
          {":authority", "localhost"}, {":path", path},         {"sec-websocket-version", "13"}};
}

// Opens a tunnel on `stream` to `path`: the response HEADERS, or its
// RST_STREAM (nullopt if neither came).
inline std::optional<h2::Frame> open_h2_tunnel(h2::Client& c, uint32_t stream, const std::string& path) {
  if (!c.send_headers(stream, extended_connect(path), false)) return std::nullopt;
  return c.wait_for([stream](const h2::Frame& x) {
    return x.stream == stream && (x.type == h2::kHeaders || x.type == h2::kRstStream);
  });
}

// Sends `payload` as one masked WebSocket message on `stream` (split over
// DATA frames of at most 16 KiB, the default SETTINGS_MAX_FRAME_SIZE).
inline bool send_h2_ws(h2::Client& c, uint32_t stream, uint8_t opcode, std::string_view payload,
                       bool end_stream = false) {
  const std::string f = ws_frame(opcode, payload);
  for (size_t at = 0; at < f.size(); at += 16384) {
    const bool last = at + 16384 >= f.size();
    if (!c.send_frame(h2::kData, last && end_stream ? h2::kEndStream : 0, stream, f.substr(at, 16384))) return false;
  }
  return true;
}

// The :status of a HEADERS frame (0: none).
inline int status_of(const h2::Frame& f) {
  for (const auto& [k, v] : f.fields) {
    if (k == ":status") return std::atoi(v.c_str());
  }
  return 0;
}

// The server's side of one tunnel stream: its DATA as WebSocket messages.
struct H2WsReader {
  std::string buf;               // tunnel bytes from the server not yet taken as frames
  std::optional<h2::Frame> end;  // the frame that ended the stream (END_STREAM or RST_STREAM)

  // A frame of the tunnel's stream: its DATA into buf, its end into end.
  void take(const h2::Frame& f) {
    if (f.type == h2::kData) buf += f.payload;
    if (f.type == h2::kRstStream || (f.type == h2::kData && (f.flags & h2::kEndStream))) end = f;
  }
  // The next WebSocket message from the server on `stream`; nullopt when the
  // stream ended (end is set) or the deadline passed.
  std::optional<WsMessage> next(h2::Client& c, uint32_t stream, milliseconds timeout = kDefaultDeadline) {
    const auto deadline = Clock::now() + timeout;
    while (true) {
      if (auto m = take_ws_frame(buf)) return m;
      if (end || Clock::now() >= deadline) return std::nullopt;
      auto f = c.wait_for([stream](const h2::Frame& x) { return x.stream == stream; },
                          std::chrono::duration_cast<milliseconds>(deadline - Clock::now()));
      if (!f) return std::nullopt;
      take(*f);
    }
  }
  // Reads `stream` until it ends (END_STREAM or RST_STREAM: end).
  bool wait_end(h2::Client& c, uint32_t stream, milliseconds timeout = kDefaultDeadline) {
    const auto deadline = Clock::now() + timeout;
    while (!end && Clock::now() < deadline) {
      auto f = c.wait_for([stream](const h2::Frame& x) { return x.stream == stream; },
                          std::chrono::duration_cast<milliseconds>(deadline - Clock::now()));
      if (!f) break;
      take(*f);
    }
    return end.has_value();
  }
};

}  // namespace tlsfront::itest
