// Access-log rotation: rename + SIGUSR1 (what systemd/tlsfront.logrotate's
// postrotate does) loses no line, and the snippet itself is valid logrotate
// syntax (checked with the real logrotate in debug mode).
#include <curl/curl.h>
#include <signal.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "harness.h"

namespace tlsfront::itest {
namespace {

std::vector<std::string> lines_of(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

class LogRotate : public ProxyTest {};

TEST_F(LogRotate, RenameThenUsr1LosesNoLine) {
  ASSERT_TRUE(start_proxy());
  const std::string log = proxy_.access_log();
  const std::string rotated = log + ".1";
  auto get = [this](const std::string& path) {
    HttpResponse r = http_get(port(), path);
    ASSERT_EQ(r.curl_code, CURLE_OK) << r.error;
    EXPECT_EQ(r.status, 200);
  };
  for (int i = 0; i < 25; ++i) get("/before/" + std::to_string(i));
  // Rotate at once: some lines may still be buffered in a worker or queued
  // for the writer thread; they must end up in one of the two files.
  ASSERT_EQ(std::rename(log.c_str(), rotated.c_str()), 0);
  proxy_.process().signal(SIGUSR1);
  get("/after-usr1");
  // The writer reopens the path before its next write: the new file appears.
  ASSERT_TRUE(wait_until([&] {
    for (const auto& l : lines_of(log)) {
      if (json_string(l, "path") == "/after-usr1") return true;
    }
    return false;
  })) << "no new access log at " << log;
  for (int i = 0; i < 25; ++i) get("/after/" + std::to_string(i));

  std::map<std::string, int> seen_old, seen_new;
  ASSERT_TRUE(wait_until([&] {
    seen_old.clear();
    seen_new.clear();
    for (const auto& l : lines_of(rotated)) ++seen_old[json_string(l, "path").value_or("?")];
    for (const auto& l : lines_of(log)) ++seen_new[json_string(l, "path").value_or("?")];
    return seen_old.size() + seen_new.size() >= 51;
  }));
  for (int i = 0; i < 25; ++i) {
    const std::string before = "/before/" + std::to_string(i);
    EXPECT_EQ(seen_old[before] + seen_new[before], 1) << before;
    // Written after the reopen: only in the new file.
    const std::string after = "/after/" + std::to_string(i);
    EXPECT_EQ(seen_new[after], 1) << after;
    EXPECT_EQ(seen_old.count(after), 0u) << after;
  }
  EXPECT_EQ(seen_new["/after-usr1"] + seen_old["/after-usr1"], 1);
  EXPECT_GE(seen_old.size(), 1u) << "nothing reached the rotated file";
}

TEST_F(LogRotate, SnippetIsValidLogrotateConfig) {
  const char* logrotate = "/usr/sbin/logrotate";
  struct stat st {};
  if (::stat(logrotate, &st) != 0) GTEST_SKIP() << "logrotate is not installed";
  const std::filesystem::path snippet = std::filesystem::path(TLSFRONT_SOURCE_DIR) / "systemd/tlsfront.logrotate";
  std::ifstream in(snippet);
  ASSERT_TRUE(in) << snippet;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Point it at a file of ours; -d (debug) parses and plans without rotating
  // or running scripts.
  const std::string log = dir_.file("access.log");
  std::ofstream(log) << "{}\n";
  const std::string from = "/var/log/tlsfront/access.log";
  text.replace(text.find(from), from.size(), log);
  const std::string conf = dir_.file("logrotate.conf");
  std::ofstream(conf) << text;
  RunResult r = run_command(dir_, {logrotate, "-d", "-s", dir_.file("logrotate.state"), conf});
  EXPECT_EQ(r.status.code, 0) << r.err << r.out;
  EXPECT_EQ(r.err.find("error"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tlsfront::itest
