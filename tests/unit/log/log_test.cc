// Tests for the error log: levels, parsing, timestamp and line format, and
// the single-write emit to stderr (captured by pointing fd 2 at a temp file).
#include "log/log.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "stderr_capture.h"

// A value whose formatting is observable, to prove disabled levels skip it.
struct CountsFormatting {
  int* count;
};

template <>
struct fmt::formatter<CountsFormatting> : fmt::formatter<int> {
  auto format(CountsFormatting c, fmt::format_context& ctx) const {
    return fmt::formatter<int>::format(++*c.count, ctx);
  }
};

namespace tlsfront::log {
namespace {

using namespace std::chrono;
using namespace std::string_literals;

// Restores the process-wide level after each test.
class LogTest : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = level(); }
  void TearDown() override { set_level(saved_); }
  Level saved_ = Level::Info;
};

const std::regex kLine(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \[(debug|info|warn|error)\] [^\n]*)");

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

TEST_F(LogTest, ParseLevel) {
  EXPECT_EQ(*parse_level("debug"), Level::Debug);
  EXPECT_EQ(*parse_level("info"), Level::Info);
  EXPECT_EQ(*parse_level("warn"), Level::Warn);
  EXPECT_EQ(*parse_level("error"), Level::Error);
  for (const std::string_view bad : {"", "INFO", "warning", "trace", "info ", "err"}) {
    const auto r = parse_level(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, Errc::InvalidArgument);
    EXPECT_NE(r.error().detail.find("\"" + std::string(bad) + "\""), std::string::npos) << r.error().detail;
  }
}

TEST_F(LogTest, ToStringRoundTrips) {
  for (const Level l : {Level::Debug, Level::Info, Level::Warn, Level::Error}) {
    EXPECT_EQ(*parse_level(to_string(l)), l);
  }
}

TEST_F(LogTest, DefaultIsInfoAndThresholdApplies) {
  // The default is only observable before any test changed it; the fixture
  // restores it, so this holds in any order.
  EXPECT_EQ(saved_, Level::Info);
  set_level(Level::Warn);
  EXPECT_EQ(level(), Level::Warn);
  EXPECT_FALSE(enabled(Level::Debug));
  EXPECT_FALSE(enabled(Level::Info));
  EXPECT_TRUE(enabled(Level::Warn));
  EXPECT_TRUE(enabled(Level::Error));
  set_level(Level::Debug);
  EXPECT_TRUE(enabled(Level::Debug));
  set_level(Level::Error);
  EXPECT_FALSE(enabled(Level::Warn));
  EXPECT_TRUE(enabled(Level::Error));
}

TEST_F(LogTest, Timestamp) {
  const auto ts = [](system_clock::time_point t) {
    std::string out = "x";
    append_timestamp(out, t);
    return out;
  };
  EXPECT_EQ(ts(system_clock::time_point{}), "x1970-01-01T00:00:00.000Z");
  EXPECT_EQ(ts(sys_days{year{2026} / 11 / 30} + minutes{38} + seconds{31} + milliseconds{123}),
            "x2026-11-30T00:38:31.123Z");
  EXPECT_EQ(ts(sys_days{year{2024} / 2 / 29} + hours{23} + minutes{59} + seconds{59} + microseconds{999'999}),
            "x2024-02-29T23:59:59.999Z");
  EXPECT_EQ(ts(sys_days{year{1999} / 12 / 31} + hours{12} + milliseconds{7}), "x1999-12-31T12:00:00.007Z");
  EXPECT_EQ(ts(system_clock::time_point{} - milliseconds{1}), "x1969-12-31T23:59:59.999Z");
  // system_clock counts nanoseconds in 64 bits: about 1678..2262.
  EXPECT_EQ(ts(sys_days{year{2262} / 1 / 1}), "x2262-01-01T00:00:00.000Z");
  EXPECT_EQ(ts(sys_days{year{1700} / 3 / 1} + seconds{1}), "x1700-03-01T00:00:01.000Z");
}

TEST_F(LogTest, LineFormat) {
  const auto t = sys_days{year{2026} / 11 / 30} + minutes{38} + seconds{31} + milliseconds{123};
  std::string out;
  append_line(out, Level::Info, t, "message");
  EXPECT_EQ(out, "2026-11-30T00:38:31.123Z [info] message\n");
  out.clear();
  append_line(out, Level::Debug, t, "");
  EXPECT_EQ(out, "2026-11-30T00:38:31.123Z [debug] \n");
  out.clear();
  append_line(out, Level::Warn, t, "w");
  append_line(out, Level::Error, t, "e");
  EXPECT_EQ(out, "2026-11-30T00:38:31.123Z [warn] w\n2026-11-30T00:38:31.123Z [error] e\n");
}

TEST_F(LogTest, LineEscapesControlBytes) {
  std::string out;
  append_line(out, Level::Warn, system_clock::time_point{},
              "sni=\"evil\n1970-01-01T00:00:00.000Z [error] forged\r\x1b[2J\x7f\0 tab\tok caf\xc3\xa9"s);
  EXPECT_EQ(out,
            "1970-01-01T00:00:00.000Z [warn] sni=\"evil\\n1970-01-01T00:00:00.000Z [error] forged"
            "\\r\\x1b[2J\\x7f\\x00 tab\tok caf\xc3\xa9\n");
}

TEST_F(LogTest, HelpersFormatAndWriteOneLine) {
  set_level(Level::Info);
  StderrCapture capture;
  info("listening on {}:{}", "127.0.0.1", 8443);
  debug("hidden {}", 1);  // below the threshold
  warn("peer {} sent {} bytes", "[::1]:5000", 12u);
  error("multi\nline");
  capture.restore();

  const auto lines = split_lines(capture.contents());
  ASSERT_EQ(lines.size(), 3u) << capture.contents();
  for (const auto& l : lines) EXPECT_TRUE(std::regex_match(l, kLine)) << l;
  EXPECT_EQ(lines[0].substr(24), " [info] listening on 127.0.0.1:8443");
  EXPECT_EQ(lines[1].substr(24), " [warn] peer [::1]:5000 sent 12 bytes");
  EXPECT_EQ(lines[2].substr(24), " [error] multi\\nline");
}

TEST_F(LogTest, DisabledLevelSkipsFormatting) {
  int formatted = 0;
  set_level(Level::Error);
  StderrCapture capture;
  debug("{}", CountsFormatting{&formatted});
  info("{}", CountsFormatting{&formatted});
  warn("{}", CountsFormatting{&formatted});
  EXPECT_EQ(formatted, 0);
  error("{}", CountsFormatting{&formatted});
  EXPECT_EQ(formatted, 1);
  capture.restore();
  const auto lines = split_lines(capture.contents());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].substr(24), " [error] 1");
}

TEST_F(LogTest, ConcurrentLinesDoNotInterleave) {
  set_level(Level::Info);
  constexpr int kThreads = 8;
  constexpr int kLines = 300;
  StderrCapture capture;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      const std::string payload(200, static_cast<char>('a' + t));
      for (int i = 0; i < kLines; ++i) info("t{} i{} {}", t, i, payload);
    });
  }
  for (auto& th : threads) th.join();
  capture.restore();

  const auto lines = split_lines(capture.contents());
  ASSERT_EQ(lines.size(), static_cast<size_t>(kThreads * kLines));
  std::vector<int> next(kThreads, 0);
  for (const auto& l : lines) {
    ASSERT_TRUE(std::regex_match(l, kLine)) << l;
    int t = -1, i = -1;
    ASSERT_EQ(std::sscanf(l.c_str() + 32, "t%d i%d", &t, &i), 2) << l;
    ASSERT_EQ(i, next[t]++);
    EXPECT_EQ(l.substr(l.size() - 200), std::string(200, static_cast<char>('a' + t))) << l;
  }
}

}  // namespace
}  // namespace tlsfront::log
