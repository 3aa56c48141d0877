// NginxConf: an nginx configuration file read into a tree of directives, for
// `tlsfront import-nginx` (tools/nginx_import.h). Only the syntax is read
// here, as nginx's own reader does it (ngx_conf_read_token): words separated
// by whitespace; a directive ends with ";" or opens a block with "{" that "}"
// closes; "#" at the start of a word comments to the end of the line; "..."
// and '...' quote a word; in every word \" \' \\ \t \r \n are escapes and
// any other backslash is kept with the byte after it (so the regex `\.` stays
// `\.`), and outside quotes the byte after a backslash ends nothing (`a\;b`
// is one word, backslash kept); "${" inside a word does not open a block.
// No directive is interpreted except `include`, which is replaced by the
// directives of the files it names.
//
// `include PATTERN;` (any context): a relative PATTERN resolves against the
// directory of the main file (nginx resolves it against its configuration
// prefix, the main file's directory in the usual layouts, e.g. /etc/nginx).
// A pattern with glob characters (* ? [) matches any number of files, in
// sorted order, none included; one without must name a readable file.
// At most kMaxIncludeDepth nested includes, kMaxFiles files and kMaxFileBytes
// per file; a file that includes itself, directly or not, is an error.
//
// Errors: Errc::InvalidArgument with the detail "file:line:column: message"
// (line and column from 1, column in bytes), e.g. `a.conf:3:1: unexpected "}"`;
// Errc::Io for an unreadable file, also with the place of its include.
// Thread affinity: none (pure functions of the files).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "util/result.h"

namespace tlsfront::tools::nginx {

struct Directive {
  std::string name;
  std::vector<std::string> args;  // unquoted, escapes resolved
  std::string file;               // as opened: the main path, or its directory joined with an include pattern
  int line = 0, column = 0;       // of the name
  bool block = false;             // "name args { ... }"
  std::vector<Directive> children;

  std::string where() const { return file + ":" + std::to_string(line); }
};

inline constexpr int kMaxIncludeDepth = 16;
inline constexpr size_t kMaxFiles = 1000;
inline constexpr size_t kMaxFileBytes = 16 << 20;

// Parses `text` as the file `file`, includes resolved against `base_dir`.
[[nodiscard]] Result<std::vector<Directive>> parse_string(const std::string& text, const std::string& file,
                                                          const std::string& base_dir);

// Reads and parses the file at `path` (includes against its directory).
[[nodiscard]] Result<std::vector<Directive>> parse_file(const std::string& path);

}  // namespace tlsfront::tools::nginx
