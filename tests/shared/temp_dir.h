// TempDir: a fresh directory under /tmp for one test, removed with all it
// holds when the TempDir goes (also when an ASSERT ended the test early);
// read_file for what the code under test wrote there. Both test binaries
// use them (tests/shared).
// Thread affinity: any.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

namespace tlsfront {

class TempDir {
 public:
  // "/tmp/<prefix>.XXXXXX" (mkdtemp); a failure fails the test.
  explicit TempDir(std::string_view prefix = "tlsfront-test") {
    std::string tmpl = "/tmp/" + std::string(prefix) + ".XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
      ADD_FAILURE() << "mkdtemp " << tmpl << " failed";
      return;
    }
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string file(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_;
};

// The bytes of `path`; "" when it cannot be read.
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace tlsfront
