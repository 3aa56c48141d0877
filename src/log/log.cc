// The error log: threshold, line formatting and the single-write emit.
#include "log/log.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>

#include <fmt/format.h>

namespace tlsfront::log {
namespace {

// The process-wide threshold; see log.h for why this global exists.
std::atomic<Level> g_level{Level::Info};

constexpr char kHex[] = "0123456789abcdef";

void append_2digits(std::string& out, unsigned v) {
  out.push_back(static_cast<char>('0' + v / 10));
  out.push_back(static_cast<char>('0' + v % 10));
}

bool needs_escape(unsigned char c) { return (c < 0x20 && c != '\t') || c == 0x7f; }

void append_escaped_message(std::string& out, std::string_view message) {
  size_t run = 0;
  for (size_t i = 0; i < message.size(); ++i) {
    const auto c = static_cast<unsigned char>(message[i]);
    if (!needs_escape(c)) continue;
    out.append(message.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '\n': out.append("\\n"); break;
      case '\r': out.append("\\r"); break;
      default: {
        const char esc[] = {'\\', 'x', kHex[c >> 4], kHex[c & 0xf]};
        out.append(esc, sizeof esc);
      }
    }
  }
  out.append(message.data() + run, message.size() - run);
}

// Writes all of `data` to stderr, retrying on EINTR and partial writes. A
// failure (stderr closed, EPIPE) loses the line: there is nowhere to report it.
void write_stderr(std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(STDERR_FILENO, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

void set_level(Level level) { g_level.store(level, std::memory_order_relaxed); }

Level level() { return g_level.load(std::memory_order_relaxed); }

bool enabled(Level level) { return level >= g_level.load(std::memory_order_relaxed); }

Result<Level> parse_level(std::string_view text) {
  if (text == "debug") return Level::Debug;
  if (text == "info") return Level::Info;
  if (text == "warn") return Level::Warn;
  if (text == "error") return Level::Error;
  return make_error(Errc::InvalidArgument,
                    fmt::format("unknown log level \"{}\" (expected debug, info, warn or error)", text));
}

std::string_view to_string(Level level) {
  switch (level) {
    case Level::Debug: return "debug";
    case Level::Info: return "info";
    case Level::Warn: return "warn";
    case Level::Error: return "error";
  }
  return "unknown";
}

void append_timestamp(std::string& out, std::chrono::system_clock::time_point time) {
  using namespace std::chrono;
  const auto ms = floor<milliseconds>(time);
  const auto day = floor<days>(ms);
  const year_month_day ymd{day};
  const hh_mm_ss hms{ms - day};
  const int y = static_cast<int>(ymd.year());
  if (y >= 0 && y <= 9999) {
    out.push_back(static_cast<char>('0' + y / 1000));
    append_2digits(out, static_cast<unsigned>(y / 10 % 100));
    out.push_back(static_cast<char>('0' + y % 10));
  } else {
    // Outside RFC 3339's range; only a broken clock gets here. Keep it readable.
    fmt::format_to(std::back_inserter(out), "{:04}", y);
  }
  out.push_back('-');
  append_2digits(out, static_cast<unsigned>(ymd.month()));
  out.push_back('-');
  append_2digits(out, static_cast<unsigned>(ymd.day()));
  out.push_back('T');
  append_2digits(out, static_cast<unsigned>(hms.hours().count()));
  out.push_back(':');
  append_2digits(out, static_cast<unsigned>(hms.minutes().count()));
  out.push_back(':');
  append_2digits(out, static_cast<unsigned>(hms.seconds().count()));
  out.push_back('.');
  const auto millis = static_cast<unsigned>(hms.subseconds().count());
  out.push_back(static_cast<char>('0' + millis / 100));
  append_2digits(out, millis % 100);
  out.push_back('Z');
}

void append_line(std::string& out, Level level, std::chrono::system_clock::time_point time,
                 std::string_view message) {
  append_timestamp(out, time);
  out.append(" [");
  out.append(to_string(level));
  out.append("] ");
  append_escaped_message(out, message);
  out.push_back('\n');
}

void write_line(Level level, std::string_view message) {
  std::string line;
  line.reserve(message.size() + 40);
  append_line(line, level, std::chrono::system_clock::now(), message);
  write_stderr(line);
}

namespace detail {

void vlog(Level level, fmt::string_view format, fmt::format_args args) {
  fmt::memory_buffer message;
  fmt::vformat_to(std::back_inserter(message), format, args);
  write_line(level, std::string_view(message.data(), message.size()));
}

}  // namespace detail
}  // namespace tlsfront::log
