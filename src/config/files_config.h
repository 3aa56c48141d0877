// FileRoute: a [[route]] that answers from files beneath a directory
// (root = "..." or alias = "..."), nginx's root/alias, index, try_files,
// expires, types and gzip_static (precompressed) and Caddy's file_server.
// Parsed by config/parse_files.cc; served by data/files/.
// Thread affinity: any thread (immutable after load).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tlsfront::config {

struct FileRoute {
  // The directory (absolute, no trailing "/"). root: the request path is
  // appended ("/a/b.css" -> <dir>/a/b.css); alias: the route's path_prefix
  // is replaced by it (nginx alias; "/static/a.css" under path_prefix
  // "/static/" -> <dir>/a.css).
  std::string dir;
  bool alias = false;
  // index = ["index.html"]: tried in order for a path ending in "/".
  std::vector<std::string> index{"index.html"};
  // try_files = ["$uri", "$uri/", "/index.html"] without its last entry:
  // each a path with "$uri" (the request path) substituted; one ending in
  // "/" names a directory, answered with its index file. Empty: "$uri" and,
  // for a directory, its index ("/dir" without the slash: 301 to "/dir/").
  std::vector<std::string> try_files;
  // The last try_files entry, one of: a path routed again, as nginx's
  // internal redirect (fallback_path, "/index.html"), a status (fallback_status,
  // "=404"), or a named route with an upstream (fallback_route, "@api",
  // an index into Config::routes).
  std::string fallback_path;
  int fallback_status = 404;
  std::string fallback_route_name;        // as written, without "@"
  std::optional<size_t> fallback_route;
  // expires = "30d": Expires and Cache-Control: max-age=N on 200, 206 and
  // 304 (nginx expires); nullopt: none.
  std::optional<uint64_t> expires_s;
  // precompressed = ["br", "gzip"]: the order preferred; a file's ".br" /
  // ".gz" sibling is served when the request accepts the coding.
  std::vector<std::string> precompressed;
  // types = { ext = "type/subtype" }: lowercase extension -> Content-Type,
  // before the built-in table (data/files/mime_types.h).
  std::vector<std::pair<std::string, std::string>> types;
  // follow_symlinks = true: symbolic links are followed, even out of dir;
  // false (default): a path with a symbolic link in it is refused (403).
  bool follow_symlinks = false;
  // dotfiles = true: a path with a segment starting with "." is served;
  // false (default): 404.
  bool dotfiles = false;
};

// [open_file_cache]: what each worker keeps of the files its routes serve
// (data/files/open_file_cache.h), nginx's open_file_cache /
// open_file_cache_valid / open_file_cache_errors with h2o's per-thread
// file cache's response head. Read at each lookup, so a reload applies at
// once (entries beyond a lowered max go at the next insertion).
struct OpenFileCache {
  // Entries per worker (a file's holds its open descriptor); 0: no cache,
  // every request opens its file (nginx open_file_cache off).
  uint32_t max = 1000;
  // An entry's path is opened again after this (nginx open_file_cache_valid);
  // its file is fstat'ed at every hit, so a file deleted, replaced by
  // rename or changed in size or mtime is never answered from the entry.
  std::chrono::milliseconds valid{1000};
  // Files of at most content_max octets are kept in memory, read once
  // (only from the page cache: the loop never waits for the disk), up to
  // `memory` octets per worker; 0: none.
  uint64_t content_max = 64 * 1024;
  uint64_t memory = 16 * 1024 * 1024;
};

// The loader's rules for these keys' values (config/parse_files.cc), shared
// with import-nginx so that what it writes always loads: "" when the value
// is fine, else why not.
std::string file_dir_error(std::string_view dir);     // root, alias: absolute, no NUL
std::string index_name_error(std::string_view name);  // a file name: no "/", not "." or ".."
// A try_files entry: before the last, a path starting with "/" or "$uri"
// (no other variable, no ".."); the last may also be "=200".."=599" or "@route".
std::string try_files_entry_error(std::string_view entry, bool last);

}  // namespace tlsfront::config
