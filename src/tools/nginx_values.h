// The value syntax of nginx directives and what tlsfront makes of it, for
// `tlsfront import-nginx` (tools/nginx_import.h).
//
// nginx writes times as one or more "<digits><unit>" groups, optionally
// separated by spaces, units ms s m h d w M (30 days) y (365 days), bare
// digits meaning seconds ("10m" = 10 minutes, "1h 30m", "30"); sizes as
// digits with an optional k/K, m/M or g/G suffix (powers of 1024: "10m" =
// 10 MiB) — ngx_parse_time and ngx_parse_size. The same "10m" is therefore
// a time or a size by directive, and each directive's value is read as the
// kind nginx reads it. tlsfront's own syntax (config/units.h) is produced by
// config::format_duration / format_size.
// Thread affinity: none (pure functions and constant tables).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace tlsfront::tools::nginx {

// nullopt when `text` is not an nginx time or is over ~290 million years.
std::optional<config::Millis> parse_time(std::string_view text);
// nullopt when `text` is not an nginx size.
std::optional<uint64_t> parse_size(std::string_view text);

// Why a directive that import-nginx does not otherwise handle is not carried
// over, for the common ones ("not needed: ...", "no equivalent: ..."); "" for
// the rest (reported as having no equivalent).
std::string_view known_reason(std::string_view directive);
namespace detail {
// The reason for a grpc_* directive not carried over (nginx_import_grpc.cc).
std::string_view grpc_reason(std::string_view directive);
}  // namespace detail

// The access-log field of tlsfront's JSON line holding what the nginx
// variable `name` (without "$") logs, or "" when there is none.
std::string_view log_field_of(std::string_view name);

// Why a `log_format NAME STRING...` (its arguments, NAME first) is not
// carried over, with the fields that hold its variables and those that
// have none ("$request → method, path, protocol", "$gzip_ratio").
std::string log_format_reason(const std::vector<std::string>& args);

// True when `text` is well-formed UTF-8 (what a TOML file must be).
bool valid_utf8(std::string_view text);

// `text` as a TOML basic string ("...", with \" \\ and control bytes escaped).
std::string toml_string(std::string_view text);

}  // namespace tlsfront::tools::nginx
