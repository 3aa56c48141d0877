// What the static-file tests (static_files_*_test.cc) share: writing a file
// under the test's directory, a deterministic body of n octets, and one
// request to the proxy over HTTP/1.1 or HTTP/2.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "harness.h"

namespace tlsfront::itest {

// Writes `content` to `path`, making its directories.
inline void put(const std::string& path, const std::string& content) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << content;
}

// n octets of lowercase letters, no run repeating within 4 KiB.
inline std::string pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + i / 4096) % 26);
  return s;
}

// `method` `path` with `headers`; `accept_encoding` non-empty: libcurl sends
// it and decodes the body.
inline HttpResponse get(int port, const std::string& path, bool h2, std::vector<std::string> headers = {},
                        std::string method = "GET", const std::string& accept_encoding = "") {
  HttpRequest req;
  req.path = path;
  req.http2 = h2;
  req.method = method;
  req.no_body = method == "HEAD";
  req.headers = std::move(headers);
  if (!accept_encoding.empty()) req.accept_encoding = accept_encoding;
  return http(port, req);
}

}  // namespace tlsfront::itest
