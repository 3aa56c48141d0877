// The error log: human-readable lines on stderr (the journal under systemd),
// one per event, `2026-11-30T00:38:31.123Z [info] message`. Each line is
// built in memory and emitted with a single write(2), so lines from several
// threads never interleave. Messages are formatted with {fmt}; formatting is
// skipped entirely when the level is disabled.
//
// Trust: messages often carry peer-controlled text (SNI, header values,
// addresses). Control bytes in the formatted message are escaped (`\n`,
// `\x1b`, ...) so a peer cannot forge or split log lines.
//
// The threshold level is the one piece of process-wide mutable state in
// tlsfront (the one exception to "no global mutable state", docs/ARCHITECTURE.md): every thread
// (workers, control loop, log writer, library callbacks with no context
// pointer) must be able to log, and threading a logger through every C
// callback would buy nothing. It is a single relaxed atomic, written only on
// startup and reload.
//
// Thread affinity: every function here is safe from any thread.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include <fmt/core.h>

#include "util/result.h"

namespace tlsfront::log {

enum class Level { Debug, Info, Warn, Error };

// Sets the threshold: lines below `level` are discarded. Default: Info.
void set_level(Level level);

// The current threshold.
Level level();

// True when a line at `level` would be emitted.
bool enabled(Level level);

// Parses "debug", "info", "warn" or "error" (the [log] level config values).
// Errc::InvalidArgument for anything else.
[[nodiscard]] Result<Level> parse_level(std::string_view text);

// "debug", "info", "warn", "error".
std::string_view to_string(Level level);

// Appends `time` as RFC 3339 UTC with milliseconds (truncated), e.g.
// "2026-11-30T00:38:31.123Z", to `out`. Shared with the access log.
void append_timestamp(std::string& out, std::chrono::system_clock::time_point time);

// Appends one complete line, `<timestamp> [<level>] <message>\n`, to `out`,
// escaping control bytes in `message`. This is what write_line() emits.
void append_line(std::string& out, Level level, std::chrono::system_clock::time_point time,
                 std::string_view message);

// Emits one line at `level` with the already formatted `message` (control
// bytes escaped), regardless of the threshold. Callers normally use the
// helpers below, which check enabled() first.
void write_line(Level level, std::string_view message);

namespace detail {
void vlog(Level level, fmt::string_view format, fmt::format_args args);
}  // namespace detail

// Formats with {fmt} (format string checked at compile time) and emits one
// line if `Level::Debug` (resp. Info, Warn, Error) is enabled.
template <typename... Args>
void debug(fmt::format_string<Args...> format, Args&&... args) {
  if (enabled(Level::Debug)) detail::vlog(Level::Debug, format, fmt::make_format_args(args...));
}
template <typename... Args>
void info(fmt::format_string<Args...> format, Args&&... args) {
  if (enabled(Level::Info)) detail::vlog(Level::Info, format, fmt::make_format_args(args...));
}
template <typename... Args>
void warn(fmt::format_string<Args...> format, Args&&... args) {
  if (enabled(Level::Warn)) detail::vlog(Level::Warn, format, fmt::make_format_args(args...));
}
template <typename... Args>
void error(fmt::format_string<Args...> format, Args&&... args) {
  if (enabled(Level::Error)) detail::vlog(Level::Error, format, fmt::make_format_args(args...));
}

}  // namespace tlsfront::log
