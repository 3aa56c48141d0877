// H2FrameScanner: PRIORITY frames depending on their own stream, and the
// streams DATA frames name, are found
// wherever the reads split the input (preface, headers, payloads), and no
// other frame is taken for one.
#include "data/http/h2_frame_scanner.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tlsfront::http {
namespace {

std::string be32(uint32_t v) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i) s[i] = static_cast<char>(v >> (24 - 8 * i));
  return s;
}

std::string frame(uint8_t type, uint32_t stream, const std::string& payload) {
  std::string f;
  f += static_cast<char>(payload.size() >> 16);
  f += static_cast<char>(payload.size() >> 8);
  f += static_cast<char>(payload.size());
  f += static_cast<char>(type);
  f += '\0';
  f += be32(stream);
  return f + payload;
}

std::string priority(uint32_t stream, uint32_t depends_on, bool exclusive = false) {
  return frame(0x2, stream, be32(depends_on | (exclusive ? 0x80000000u : 0)) + std::string(1, '\x0f'));
}

// The input a client might send: preface, SETTINGS, a DATA frame whose
// payload looks like a self-dependent PRIORITY, good and bad PRIORITY frames.
std::string input() {
  std::string in = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  in += frame(0x4, 0, "");
  in += frame(0x0, 1, priority(1, 1));       // octets of a DATA frame: not a frame
  in += frame(0x0, 1, "");                   // the same stream again: listed once
  in += priority(3, 1);                      // fine
  in += priority(5, 5);                      // depends on itself
  in += frame(0x2, 7, be32(7));              // wrong length: nghttp2's to refuse
  in += priority(9, 9, /*exclusive=*/true);  // itself, with the E bit
  in += frame(0x8, 0, be32(1));
  return in;
}

TEST(H2FrameScanner, FindsSelfDependencyInOneRead) {
  H2FrameScanner scanner;
  std::vector<int32_t> found, data;
  scanner.scan(input(), found, data);
  EXPECT_EQ(found, (std::vector<int32_t>{5, 9}));
  EXPECT_EQ(data, (std::vector<int32_t>{1}));
}

TEST(H2FrameScanner, FindsTheSameWhateverTheReadsSplit) {
  const std::string in = input();
  for (size_t chunk = 1; chunk <= 13; ++chunk) {
    SCOPED_TRACE(chunk);
    H2FrameScanner scanner;
    std::vector<int32_t> found, data;
    for (size_t off = 0; off < in.size(); off += chunk)
      scanner.scan(std::string_view(in).substr(off, chunk), found, data);
    EXPECT_EQ(found, (std::vector<int32_t>{5, 9}));
    EXPECT_EQ(data, (std::vector<int32_t>{1}));
  }
}

}  // namespace
}  // namespace tlsfront::http
