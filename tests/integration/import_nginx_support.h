// What the `tlsfront import-nginx` integration tests share: the fixtures of
// tests/data/nginx copied into a test directory next to the test PKI files
// their relative paths name (pki/), and an empty logs/ directory.
#pragma once

#include <filesystem>
#include <string>

#include "harness.h"

namespace tlsfront::itest {

inline const std::string kNginxFixtures = std::string(TLSFRONT_SOURCE_DIR) + "/tests/data/nginx/";

// `fixture` (a file or a directory of tests/data/nginx; "" for none) copied
// into `dir`, with pki/ (the test PKI's files the fixtures name, a ticket key
// file) and logs/ beside it.
inline void stage(const TempDir& dir, const std::string& fixture) {
  namespace fs = std::filesystem;
  if (!fixture.empty()) {
    fs::copy(kNginxFixtures + fixture, dir.path() + (fs::is_directory(kNginxFixtures + fixture) ? "" : "/" + fixture),
             fs::copy_options::recursive);
  }
  fs::create_directories(dir.file("pki"));
  fs::create_directories(dir.file("logs"));
  for (const char* f : {"localhost.chain.pem", "localhost.key", "rsa.chain.pem", "rsa.key", "other-name.chain.pem",
                        "other-name.key", "wildcard.chain.pem", "wildcard.key", "root.pem"}) {
    fs::copy_file(std::string(TLSFRONT_TEST_PKI_DIR) + "/" + f, dir.file(std::string("pki/") + f));
    if (std::string(f).ends_with(".key")) {
      fs::permissions(dir.file(std::string("pki/") + f), fs::perms::owner_read | fs::perms::owner_write);
    }
  }
  write_file(dir.file("pki/ticket.key"), std::string(80, '\x5a'));
  fs::permissions(dir.file("pki/ticket.key"), fs::perms::owner_read | fs::perms::owner_write);
}

// `toml` (an imported configuration) made to pass `--test` and start in the
// test directory `dir`: [tls] trusted_ca set to the test PKI's private root
// (a real site's chain ends at a root of the system store, the test PKI's
// at a root no store holds), and the default access log
// /var/log/tlsfront/access.log (the systemd unit's LogsDirectory on a real
// node) moved to dir/access.log (where Proxy::wait_log_lines reads).
inline std::string runnable_here(std::string toml, const TempDir& dir) {
  const size_t tls = toml.find("\n[tls]\n");
  if (tls != std::string::npos) toml.insert(tls + 7, "trusted_ca = \"" + dir.file("pki/root.pem") + "\"\n");
  const std::string log = "\"/var/log/tlsfront/access.log\"";
  if (size_t at = toml.find(log); at != std::string::npos) {
    toml.replace(at, log.size(), "\"" + dir.file("access.log") + "\"");
  }
  return toml;
}

}  // namespace tlsfront::itest
