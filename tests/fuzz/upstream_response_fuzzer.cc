// Fuzz target upstream_response: the bytes are what a backend answers. The
// first byte picks the request that gets this answer:
//   bit 0  the client speaks HTTP/2 (else HTTP/1.1)
//   bit 1  HEAD (else GET)
//   bit 2  the backend keeps the connection open after answering (else it
//          closes: close-delimited bodies end there)
//   bit 3  the HTTP/1.1 GET asks for "Upgrade: websocket" (a 101 opens a
//          tunnel; the client's bytes after its head go through it)
// A client sends that one request through the session (DataPathRig); the
// upstream answers the rest of the bytes as soon as the request is read.
// Covers UpstreamConnection's llhttp response parser and its checks (bare
// CR, 101, no-body statuses, trailers), ProxyExchange (502 on an invalid
// response) and both sessions' response writers (framing, hop-by-hop).
#include <nghttp2/nghttp2.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "data_path_rig.h"

namespace {

// The frames of an HTTP/2 client's SETTINGS and one request, without the
// connection preface (DataPathRig sends it).
std::string h2_request(bool head) {
  nghttp2_session_callbacks* cb = nullptr;
  nghttp2_session_callbacks_new(&cb);
  nghttp2_session* s = nullptr;
  nghttp2_session_client_new(&s, cb, nullptr);
  nghttp2_session_callbacks_del(cb);
  nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, nullptr, 0);
  auto nv = [](const char* n, const char* v) {
    return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(n)), reinterpret_cast<uint8_t*>(const_cast<char*>(v)),
                      std::char_traits<char>::length(n), std::char_traits<char>::length(v), NGHTTP2_NV_FLAG_NONE};
  };
  nghttp2_nv nva[] = {nv(":method", head ? "HEAD" : "GET"), nv(":scheme", "https"), nv(":path", "/"),
                      nv(":authority", "example.test")};
  nghttp2_submit_request(s, nullptr, nva, 4, nullptr, nullptr);
  std::string out;
  const uint8_t* p = nullptr;
  for (ssize_t n; (n = nghttp2_session_mem_send(s, &p)) > 0;) out.append(reinterpret_cast<const char*>(p), n);
  nghttp2_session_del(s);
  return out.substr(NGHTTP2_CLIENT_MAGIC_LEN);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tlsfront::fuzz::DataPathRig;
  using tlsfront::harness::Reply;
  if (size < 1) return 0;
  static const std::string kH2Get = h2_request(false), kH2Head = h2_request(true);
  const uint8_t flags = data[0];
  const bool h2 = flags & 1, head = flags & 2, keep_open = flags & 4, upgrade = flags & 8;
  std::string answer(reinterpret_cast<const char*>(data + 1), size - 1);
  std::string request =
      h2     ? (head ? kH2Head : kH2Get)
      : head ? "HEAD / HTTP/1.1\r\nHost: example.test\r\n\r\n"
      : upgrade
          ? "GET / HTTP/1.1\r\nHost: example.test\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n\x81\x80\0\0\0\0"
          : "GET / HTTP/1.1\r\nHost: example.test\r\n\r\n";
  DataPathRig::get().run(h2 ? DataPathRig::Protocol::Http2 : DataPathRig::Protocol::Http1, request,
                         [&](tlsfront::harness::ScriptedUpstream& upstream) {
                           upstream.script(Reply{{}, false, std::move(answer), !keep_open});
                         });
  return 0;
}
